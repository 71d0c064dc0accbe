"""A dbt project on the zspark session profile, with helpers to run dbt and read Spark."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dbt.tests.util import run_dbt

SCHEMA = "zspark_test"


def skip_coverage_yml(models: Sequence[str], predicates: Sequence[str],
                      min_skip_ratio: float = 0.3) -> str:
    """A schema file giving each of ``models`` a ``skip_coverage`` test of ``predicates``."""
    declared = "".join(
        f"  - name: {model}\n    data_tests:\n      - skip_coverage: "
        f"{{predicates: {list(predicates)}, min_skip_ratio: {min_skip_ratio}}}\n"
        for model in models)
    return "version: 2\nmodels:\n" + declared


def write_project(root: Path, name: str, models: Mapping[str, str], profile: str) -> None:
    """A dbt project ``name`` in ``root``: its ``models`` (file name -> text) and the
    profile ``name`` whose text (its targets, unindented) is ``profile``."""
    for file_name, text in models.items():
        (root / "models" / file_name).parent.mkdir(parents=True, exist_ok=True)
        (root / "models" / file_name).write_text(text)
    (root / "dbt_project.yml").write_text(
        f"name: {name}\nversion: '1.0'\nconfig-version: 2\nprofile: {name}\n"
        "flags:\n  send_anonymous_usage_stats: false\n")
    (root / "profiles.yml").write_text(
        f"{name}:\n" + textwrap.indent(textwrap.dedent(profile).strip() + "\n", "  "))


def thrift_profile(port: int, schema: str) -> str:
    """The targets of a profile that reaches the Thrift server on ``port`` of this machine
    (for :func:`write_project`)."""
    return f"""
        target: dev
        outputs:
          dev:
            type: zspark
            method: thrift
            host: 127.0.0.1
            port: {port}
            user: dbt
            schema: {schema}
    """


@dataclass
class DbtProject:
    root: Path
    spark: Any
    logs: list[str] = field(default_factory=list)

    def write(self, relative: str, text: str) -> None:
        path = self.root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())

    def dbt(self, *args: str, expect_pass: bool | None = True) -> Any:
        """Run the real dbt CLI in-process; captured log lines land in ``self.logs``."""
        self.logs.clear()

        def capture(event: Any) -> None:
            self.logs.append(event.info.msg)

        return run_dbt(
            [*args, "--project-dir", str(self.root), "--profiles-dir", str(self.root)],
            expect_pass=expect_pass,
            callbacks=[capture],
        )

    def log_text(self) -> str:
        return "\n".join(self.logs)

    def table(self, name: str) -> str:
        return f"{SCHEMA}.{name}"

    def files(self, name: str) -> list[str]:
        self.spark.catalog.refreshTable(self.table(name))
        return self.spark.table(self.table(name)).inputFiles()

    def rows(self, sql: str) -> list[tuple[Any, ...]]:
        """The rows of a query in a canonical order, NaN made comparable."""
        return sorted(
            (tuple("NaN" if v != v else v for v in r) for r in self.spark.sql(sql).collect()),
            key=repr,
        )


def files_read(spark: Any, sql: str) -> tuple[int, int]:
    """(rows, files Spark opened) for a query, from the scan node's own metrics."""
    frame = spark.sql(sql)
    rows = len(frame.collect())
    plan = frame._jdf.queryExecution().executedPlan()
    opened = 0

    def walk(node: Any) -> None:
        nonlocal opened
        name = node.nodeName()
        if name.startswith("AdaptiveSparkPlan"):  # adaptive execution wraps the real plan
            walk(node.executedPlan())
            return
        if "QueryStage" in name:
            walk(node.plan())
            return
        metrics = node.metrics()
        if "Scan" in name and metrics.contains("numFiles"):
            opened += int(metrics.apply("numFiles").value())
        children = node.children().iterator()
        while children.hasNext():
            walk(children.next())

    walk(plan)
    return rows, opened
