"""Measurements shared by the demo and the benchmark: footer skip ratios and Spark scan metrics."""

from __future__ import annotations

import statistics
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bench.footers import FileBounds, read_bounds, skip_share
from bench.plots import as_boxes
from tests.harness.scan_metrics import metric


@dataclass
class Ranks:
    """Sorted distinct values of the two plotted columns, to turn values into ranks."""

    x: np.ndarray
    y: np.ndarray

    def rank_x(self, value: Any, side: int) -> int:
        return _rank(self.x, value, side)

    def rank_y(self, value: Any, side: int) -> int:
        return _rank(self.y, value, side)


def _rank(values: np.ndarray, value: Any, side: int) -> int:
    if value is None:  # unknown bound: the file spans the whole axis
        return 0 if side == 0 else len(values)
    return int(np.searchsorted(values, value, side="left" if side == 0 else "right"))


def footer_report(files: Sequence[str | Path], columns: Sequence[str],
                  probes: Mapping[str, Sequence[Any]], literals: Mapping[str, Any],
                  ranks: Ranks | None = None) -> dict[str, Any]:
    """Rows, files, bytes and point-query skip shares of one layout, from its footers."""
    bounds: FileBounds = read_bounds(files, columns)
    report: dict[str, Any] = {
        "files": bounds.files,
        "rows": int(bounds.rows.sum()),
        "bytes": int(bounds.sizes.sum()),
        # Spread of file sizes: the largest file over the mean (1.0: all equal).
        "size_max_over_mean": float(bounds.sizes.max() / bounds.sizes.mean())
        if bounds.files else 0.0,
        "rows_max_over_mean": float(bounds.rows.max() / bounds.rows.mean())
        if bounds.files and bounds.rows.mean() else 0.0,
        "skip_sampled": {c: skip_share(bounds, c, list(probes[c])) for c in columns},
        "skip_literal": {c: skip_share(bounds, c, [literals[c]]) for c in columns},
    }
    if ranks is not None:
        x, y = columns[0], columns[1]
        report["boxes"] = as_boxes(bounds.low[x], bounds.high[x], bounds.low[y], bounds.high[y],
                                   ranks.rank_x, ranks.rank_y)
    return report


@dataclass
class ScanRun:
    """One query's scan metrics (summed over its file scans) and timings."""

    files_read: int
    bytes_read: int
    rows_scanned: int
    # Where the time goes: Spark's "scan time" (task time spent opening files and decoding
    # rows, summed over tasks) and "metadata time" (listing the table's files).
    scan_ms: int
    listing_ms: int
    result: list[tuple[Any, ...]]
    seconds: list[float]

    @property
    def median(self) -> float:
        return statistics.median(self.seconds) if self.seconds else float("nan")

    def summary(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("result")
        data["result_rows"] = len(self.result)
        data["median_s"] = self.median
        return data


def _scan_nodes(node: Any) -> list[Any]:
    """FileSourceScanExec nodes of an executed plan, through AQE's wrappers."""
    kind = node.getClass().getSimpleName()
    found = [node] if kind == "FileSourceScanExec" else []
    inner = []
    if kind == "AdaptiveSparkPlanExec":
        inner.append(node.executedPlan())  # the final plan; its innerChildren are empty
    elif kind.endswith("QueryStageExec"):
        inner.append(node.plan())
    children = node.children().iterator()
    while children.hasNext():
        inner.append(children.next())
    for child in inner:
        found += _scan_nodes(child)
    return found


def run_query(spark: Any, sql: str) -> ScanRun:
    """Run once: the result and the scan metrics (summed over the plan's file scans)."""
    frame = spark.sql(sql)
    result = [tuple(row) for row in frame.collect()]
    scans = _scan_nodes(frame._jdf.queryExecution().executedPlan())
    return ScanRun(
        files_read=sum(metric(n, "numFiles") for n in scans),
        bytes_read=sum(metric(n, "filesSize") for n in scans),
        rows_scanned=sum(metric(n, "numOutputRows") for n in scans),
        scan_ms=sum(metric(n, "scanTime") for n in scans),
        listing_ms=sum(metric(n, "metadataTime") for n in scans),
        result=result,
        seconds=[],
    )


def time_interleaved(spark: Any, runs: Sequence[tuple[str, ScanRun]], repetitions: int) -> None:
    """Time each query ``repetitions`` times, taking turns, so that drift in the machine's
    load (other processes, JIT, page cache) hits every query alike."""
    for _ in range(repetitions):
        for sql, run in runs:
            started = time.perf_counter()
            spark.sql(sql).collect()
            run.seconds.append(time.perf_counter() - started)


def time_sql(spark: Any, sql: str, repetitions: int) -> float:
    """Median seconds of a small query (after one warm-up run)."""
    spark.sql(sql).collect()
    seconds = []
    for _ in range(max(1, repetitions)):
        started = time.perf_counter()
        spark.sql(sql).collect()
        seconds.append(time.perf_counter() - started)
    return statistics.median(seconds)
