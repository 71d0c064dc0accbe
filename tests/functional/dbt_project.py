"""A dbt project on the zspark session profile, with helpers to run dbt and read Spark."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dbt.tests.util import run_dbt

SCHEMA = "zspark_test"
#: Rows of the clustered models run on a server or a cluster: `city` of 50 values and
#: `brand` of 1000, for ids `start` to `stop`.
CITY_BRAND_ROWS = """
select id,
       concat('CITY', lpad(cast(pmod(hash(id, 1), 50) as string), 3, '0')) as city,
       cast(pmod(hash(id, 2), 1000) as int) as brand
from range({{ var('start', 0) }}, {{ var('stop', 4000) }})
"""
#: Clustered models of a table format (`var('format')`) by every strategy: appends (the
#: re-clustering policy at work), a merge on `id`, whole partitions replaced (`part`:
#: id % 4, from `from_part` on), and daily batches of hourly events.
FORMAT_STRATEGY_MODELS = {
    "fmt_appends.sql": "{{ config(materialized='incremental', incremental_strategy='append', "
                       "hilbert_by=['city', 'brand'], file_count=4, "
                       "file_format=var('format')) }}\n"
                       "select *, {{ var('v', 0) }} as v from (" + CITY_BRAND_ROWS + ") t",
    "fmt_merge.sql": "{{ config(materialized='incremental', incremental_strategy='merge', "
                     "unique_key='id', hilbert_by=['city', 'brand'], file_count=4, "
                     "file_format=var('format')) }}\n"
                     "select *, {{ var('v', 0) }} as v from (" + CITY_BRAND_ROWS + ") t",
    "fmt_parts.sql": "{{ config(materialized='incremental', "
                     "incremental_strategy='insert_overwrite', partition_by=['part'], "
                     "hilbert_by=['city', 'brand'], file_count=4, "
                     "file_format=var('format')) }}\n"
                     "select *, cast(id % 4 as int) as part, {{ var('v', 0) }} as v from ("
                     + CITY_BRAND_ROWS + ") t where id % 4 >= {{ var('from_part', 0) }}",
    "fmt_hours.sql": "{{ config(materialized='table', event_time='ts', "
                     "file_format=var('format')) }}\n"
                     "select id, timestamp_seconds(1767225600 + id * 3600) as ts "
                     "from range(96)",
    "fmt_days.sql": "{{ config(materialized='incremental', incremental_strategy='microbatch', "
                    "event_time='ts', batch_size='day', begin='2026-01-01', "
                    "partition_by=['day'], hilbert_by=['id'], file_count=2, "
                    "file_format=var('format')) }}\n"
                    "select id, ts, to_date(ts) as day, {{ var('v', 0) }} as v "
                    "from {{ ref('fmt_hours') }}",
}
#: The dbt runs of those models (arguments, vars besides `format`): the build (four daily
#: batches); 2000 rows appended and a merge matching 1000 ids (v = 1) and adding 1000;
#: partitions 2 and 3 replaced (v = 1); the second day's batch processed again (v = 1).
STRATEGY_RUNS: list[tuple[list[str], dict[str, Any]]] = [
    (["-s", "fmt_appends", "fmt_merge", "fmt_parts", "fmt_hours", "fmt_days",
      "--event-time-start", "2026-01-01", "--event-time-end", "2026-01-05"],
     {"start": 0, "stop": 2000}),
    (["-s", "fmt_appends", "fmt_merge"], {"start": 1000, "stop": 3000, "v": 1}),
    (["-s", "fmt_parts"], {"start": 0, "stop": 2000, "from_part": 2, "v": 1}),
    (["-s", "fmt_days", "--event-time-start", "2026-01-02", "--event-time-end", "2026-01-03"],
     {"v": 1}),
]
#: What each model holds then (a query of `{table}`, its rows sorted): every appended row
#: (ids 1000..1999 twice), and each id once in the others.
STRATEGY_QUERIES = {
    "fmt_appends": "select count(*), count(distinct id), sum(v) from {table}",
    "fmt_merge": "select count(*), count(distinct id), sum(v) from {table}",
    "fmt_parts": "select part, count(*), count(distinct id), sum(v) from {table} group by part",
    "fmt_days": "select cast(day as string), count(*), count(distinct id), sum(v) "
                "from {table} group by day",
}
STRATEGY_ROWS = {
    "fmt_appends": [(4000, 3000, 2000)],
    "fmt_merge": [(3000, 3000, 2000)],
    "fmt_parts": [(0, 500, 500, 0), (1, 500, 500, 0), (2, 500, 500, 500), (3, 500, 500, 500)],
    "fmt_days": [("2026-01-01", 24, 24, 0), ("2026-01-02", 24, 24, 24),
                 ("2026-01-03", 24, 24, 0), ("2026-01-04", 24, 24, 0)],
}


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
    #: The lines dbt's console shows (info and above) of the last command.
    console: list[str] = field(default_factory=list)

    def write(self, relative: str, text: str) -> None:
        path = self.root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())

    def dbt(self, *args: str, expect_pass: bool | None = True) -> Any:
        """Run the real dbt CLI in-process; captured log lines land in ``self.logs``."""
        self.logs.clear()
        self.console.clear()

        def capture(event: Any) -> None:
            self.logs.append(event.info.msg)
            if event.info.level != "debug":
                self.console.append(event.info.msg)

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
