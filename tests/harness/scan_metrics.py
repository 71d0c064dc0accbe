"""Spark's own scan metrics of an executed query: the data files its scans opened, the
figure the tests and the benchmarks trust for "files not opened" (py4j: a session's)."""

from __future__ import annotations

from typing import Any


def metric(node: Any, name: str) -> int:
    """A plan node's metric ``name`` (0 where it has none)."""
    metrics = node.metrics()
    return int(metrics.apply(name).value()) if metrics.contains(name) else 0


#: Scan metrics that count the data files a scan opened: Spark's file scans, Iceberg's.
OPENED_METRICS = ("numFiles", "resultDataFiles")


def files_opened(frame: Any, metrics: tuple[str, ...] = OPENED_METRICS) -> int:
    """Data files the scans of an executed DataFrame opened (file sources and Iceberg's
    batch scans), through AQE's wrappers; ``metrics``: the scan metrics summed."""
    opened = 0

    def walk(node: Any) -> None:
        nonlocal opened
        name = node.nodeName()
        if name.startswith("AdaptiveSparkPlan"):
            walk(node.executedPlan())
            return
        if "QueryStage" in name:
            walk(node.plan())
            return
        if "Scan" in name:
            opened += sum(metric(node, m) for m in metrics)
        children = node.children().iterator()
        while children.hasNext():
            walk(children.next())

    walk(frame._jdf.queryExecution().executedPlan())
    return opened
