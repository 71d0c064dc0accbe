"""dbt on a standalone Spark cluster (session method, ``spark.master: spark://...``) whose
executors' Python has pyspark, pandas, numpy and pyarrow but not dbt or this plugin, named
by the profile's ``spark.pyspark.python``: clustered builds (curves and balanced),
incremental runs, the index, ``zspark_scan`` and ``skip_coverage`` all run through it,
with the warehouse on S3 (a local S3-compatible server) as docs/cluster.md profiles it.

A clustered Delta and a clustered Iceberg incremental model run on the same cluster, the
warehouse on the same S3 (marked slow: ``make test-slow``): the format's jars and S3's
connector reach the executors from the driver, the keys are Spark SQL, and the
re-clustering commit's files are written by the executors.

dbt runs in a subprocess: a process has one SparkContext, and this one's is local.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dbt.adapters.zspark.reach.session.object_stores import s3a_jars, s3a_settings, with_jars
from tests.functional.dbt_project import (
    CITY_BRAND_ROWS,
    FORMAT_STRATEGY_MODELS,
    STRATEGY_QUERIES,
    STRATEGY_ROWS,
    STRATEGY_RUNS,
    skip_coverage_yml,
    write_project,
)
from tests.harness.servers import BUCKET, S3_KEYS, executor_python, s3_server, standalone_cluster

pytestmark = pytest.mark.spark

REPO = Path(__file__).resolve().parents[2]
PREDICATES = ("city = 'CITY007'", "brand = 42")
MODELS = {
    "events.sql": "{{ config(materialized='table', hilbert_by=['city', 'brand'], "
                  "file_count=8) }}" + CITY_BRAND_ROWS,
    "events_inc.sql": "{{ config(materialized='incremental', incremental_strategy='append', "
                      "zorder_by=['city', 'brand'], file_count=8) }}" + CITY_BRAND_ROWS,
    "events_bal.sql": "{{ config(materialized='incremental', incremental_strategy='append', "
                      "balanced_by=['city', 'brand'], file_count=8) }}" + CITY_BRAND_ROWS,
    "coverage.yml": skip_coverage_yml(["events", "events_inc", "events_bal"], PREDICATES),
}

MODELS_BUILT = ("events", "events_inc", "events_bal")


def run_on_cluster(project: str) -> None:
    """The driver's side, run in the subprocess: dbt run, an incremental run and dbt test
    on the cluster, then what the executors are and what each scan returns and opens."""
    from dbt.cli.main import dbtRunner

    from dbt.adapters.zspark.reach.session import hadoop_files
    from dbt.adapters.zspark.reach.session.embedded import active_session
    from tests.functional.dbt_project import files_read

    # The executors read and parse every index's footers (zspark's jar shipped to them),
    # however few.
    hadoop_files.DRIVER_PARSES_UP_TO = 0
    runner = dbtRunner()

    def dbt(*args: str) -> Any:
        result = runner.invoke([*args, "--project-dir", project, "--profiles-dir", project])
        assert result.success, (args, result.exception)
        return result.result

    dbt("run")
    dbt("run", "--select", "events_inc", "events_bal", "--vars", "{start: 4000, stop: 5000}")
    dbt("test")
    spark = active_session()

    def executor(_: Any) -> list[Any]:
        import importlib.util
        import sys

        return [sys.executable, importlib.util.find_spec("dbt") is not None]

    report: dict[str, Any] = {
        "master": spark.sparkContext.master,
        "executors": spark.sparkContext.parallelize(range(4), 4).map(executor).collect(),
        "scans": []}
    for model in MODELS_BUILT:
        table = f"zspark_test.{model}"
        spark.catalog.refreshTable(table)
        for predicate in PREDICATES:
            compiled = dbt("compile", "--inline",
                           f'select * from {{{{ zspark_scan(ref("{model}"), "{predicate}") }}}} t')
            scan = str(compiled.results[0].node.compiled_code)
            rows, opened = files_read(spark, scan)
            expected = sorted(spark.sql(f"select * from {table} where {predicate}").collect())
            report["scans"].append({
                "model": model, "predicate": predicate, "rows": rows, "opened": opened,
                "files": len(spark.table(table).inputFiles()),
                "exact": sorted(spark.sql(scan).collect()) == expected})
    report["rows"] = {m: spark.table(f"zspark_test.{m}").count() for m in MODELS_BUILT}
    report["locations"] = [
        str(row[1]) for m in MODELS_BUILT
        for row in spark.sql(f"describe table extended zspark_test.{m}").collect()
        if row[0] == "Location"]
    report["indexed"] = [str(row[0]) for row in spark.sql(
        "select distinct file_path from zspark_test.events__zindex").collect()]
    print("RESULT " + json.dumps(report))


FORMAT_MODELS = {
    "fmt_events.sql": "{{ config(materialized='table', hilbert_by=['city', 'brand'], "
                      "file_count=8, file_format=var('format')) }}" + CITY_BRAND_ROWS,
    "fmt_events_inc.sql": "{{ config(materialized='incremental', incremental_strategy='merge', "
                          "unique_key='id', zorder_by=['city', 'brand'], file_count=8, "
                          "file_format=var('format')) }}" + CITY_BRAND_ROWS,
    "coverage.yml": skip_coverage_yml(["fmt_events", "fmt_events_inc"], PREDICATES),
    **FORMAT_STRATEGY_MODELS,
}


def run_format_on_cluster(project: str, file_format: str) -> None:
    """The driver's side of a Delta or Iceberg project on the cluster: a build, a merge
    of new and matched rows, a full re-clustering on demand and dbt test; then each
    table's rows, the files a plain ``where`` opens, and the re-clustering's commit."""
    from dbt.cli.main import dbtRunner

    from dbt.adapters.zspark.reach.session.embedded import active_session
    from tests.harness.scan_metrics import files_opened

    runner = dbtRunner()
    given = ["--project-dir", project, "--profiles-dir", project,
             "--vars", json.dumps({"format": file_format})]

    def dbt(*args: str, more: dict[str, Any] | None = None) -> Any:
        extra = ["--vars", json.dumps({"format": file_format, **(more or {})})] if more else []
        result = runner.invoke([*args, *given, *extra])
        assert result.success, (args, result.exception)
        return result.result

    dbt("run", "--select", "fmt_events", "fmt_events_inc")
    dbt("run", "--select", "fmt_events_inc", more={"start": 3000, "stop": 5000})
    for args, variables in STRATEGY_RUNS:
        dbt("run", *args, more=variables)
    spark = active_session()
    table = "zspark_test.fmt_events_inc"
    before = spark.table(table).count()
    dbt("run-operation", "zspark_recluster", "--args",
        json.dumps({"relation": table, "full": True}))
    tested = dbt("test")
    spark.catalog.refreshTable(table)
    if file_format == "delta":
        history = spark.sql(f"describe history {table}").orderBy("version").collect()
        last, previous = history[-1]["operation"], history[-2]["version"]
        earlier = spark.sql(f"select count(*) from {table} version as of {previous}").first()
    else:
        snapshots = spark.sql(f"select snapshot_id, operation from {table}.snapshots "
                              f"order by committed_at").collect()
        last, previous = snapshots[-1]["operation"], snapshots[-2]["snapshot_id"]
        earlier = spark.sql(f"select count(*) from {table} version as of {previous}").first()
    def has_dbt(_: Any) -> bool:
        import importlib.util

        return importlib.util.find_spec("dbt") is not None

    report: dict[str, Any] = {
        "executors": spark.sparkContext.parallelize(range(4), 4).map(has_dbt).collect(),
        "reclustered_by": last, "rows_before_recluster": [before, int(earlier[0])],
        "tests": sorted(str(r.status) for r in tested.results), "scans": []}
    for model in ("fmt_events", "fmt_events_inc"):
        relation = f"zspark_test.{model}"
        spark.catalog.refreshTable(relation)
        files = (spark.table(relation).inputFiles() if file_format == "delta"
                 else spark.table(f"{relation}.files").collect())  # Iceberg: no inputFiles
        for predicate in PREDICATES:
            frame = spark.sql(f"select * from {relation} where {predicate}")
            rows = frame.collect()
            expected = [r for r in spark.table(relation).collect()
                        if _matches(r, predicate)]
            report["scans"].append({
                "model": model, "predicate": predicate, "rows": len(rows),
                "opened": files_opened(frame), "files": len(files),
                "exact": sorted(rows) == sorted(expected)})
    report["rows"] = {m: spark.table(f"zspark_test.{m}").count()
                      for m in ("fmt_events", "fmt_events_inc")}
    report["locations"] = [next(str(row[1]) for row in spark.sql(
        f"describe table extended zspark_test.{m}").collect() if row[0] == "Location")
        for m in ("fmt_events", "fmt_events_inc")]
    report["ids"] = spark.sql(f"select count(distinct id) from {table}").first()[0]
    report["strategies"] = {
        model: sorted([list(row) for row in spark.sql(query.format(table=f"zspark_test.{model}"))
                       .collect()]) for model, query in STRATEGY_QUERIES.items()}
    print("RESULT " + json.dumps(report))


def _matches(row: Any, predicate: str) -> bool:
    """A point predicate of ``PREDICATES`` checked in Python: the expected rows come from
    every row, not from a scan that could skip wrongly."""
    column, value = (part.strip() for part in predicate.split("="))
    return str(row[column]) == value.strip("'")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    root = tmp_path_factory.mktemp("cluster")
    python = executor_python(root / "executor-venv")
    with standalone_cluster(root) as url:
        yield url, python


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """An S3 server's endpoint: the warehouse every machine of the cluster shares."""
    assert s3a_jars(), "hadoop-aws and the AWS SDK bundle missing: `make setup` fetches them"
    with s3_server(tmp_path_factory.mktemp("s3")) as endpoint:
        yield endpoint


def _run_project(url: str, python: Path, tmp_path: Path, models: dict[str, str],
                 driver: str, *args: str, profile_lines: str = "",
                 settings: dict[str, str] | None = None) -> tuple[dict[str, Any], str]:
    """Write a dbt project of ``models`` whose profile runs on the cluster, with more
    ``settings`` in its server_side_parameters; run ``driver`` (a function of this
    module) on it in a subprocess; its report and its output."""
    project = tmp_path / "project"
    more = "".join(f"\n              {key}: {json.dumps(value)}"
                   for key, value in (settings or {}).items())
    write_project(project, "on_cluster", models, f"""
        target: dev
        outputs:
          dev:
            type: zspark
            method: session
            schema: zspark_test
            session_dir: {tmp_path / 'session'}
            {profile_lines}
            server_side_parameters:
              spark.master: {url}
              spark.pyspark.python: {python}
              spark.executor.memory: 1g
              spark.driver.memory: 1g
              spark.sql.shuffle.partitions: "4"{more}
    """)
    # Nothing in the environment names a Python: the profile alone must reach executors.
    env = {k: v for k, v in os.environ.items() if k != "PYSPARK_PYTHON"}
    result = subprocess.run(
        [sys.executable, "-c", f"import sys; from tests.functional.test_cluster import "
                               f"{driver}; {driver}(*sys.argv[1:])", str(project), *args],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=900, check=False)
    output = result.stdout + result.stderr
    causes = [line for line in output.splitlines() if "Exception" in line or "Error" in line]
    assert result.returncode == 0, "\n".join(causes[:30]) + "\n...\n" + output[-3000:]
    report = json.loads(next(line for line in result.stdout.splitlines()
                             if line.startswith("RESULT ")).removeprefix("RESULT "))
    return report, output


def test_dbt_runs_on_a_cluster_whose_executors_lack_the_plugin_with_the_warehouse_on_s3(
        cluster: tuple[str, Path], store: str, tmp_path: Path) -> None:
    """The profile of docs/cluster.md: the warehouse on S3, shared by every machine, the
    store's standard s3a settings and its connector in spark.jars (shipped to the
    executors, which write the files)."""
    url, python = cluster
    settings = with_jars({**s3a_settings(store, *S3_KEYS),
                          "spark.sql.warehouse.dir": f"s3a://{BUCKET}/warehouse"}, s3a_jars())
    report, output = _run_project(url, python, tmp_path, MODELS, "run_on_cluster",
                                  settings=settings)

    assert report["master"] == url
    assert len(report["locations"]) == len(MODELS_BUILT)
    assert all(where.startswith(f"s3a://{BUCKET}/warehouse/") for where in report["locations"])
    assert len(report["indexed"]) == report["scans"][0]["files"]  # events, every file
    assert all(path.startswith(f"s3a://{BUCKET}/warehouse/") for path in report["indexed"])
    assert {tuple(e) for e in report["executors"]} == {(str(python), False)}
    assert report["rows"] == {"events": 4000, "events_inc": 5000, "events_bal": 5000}
    assert "skip_coverage" in output
    for scan in report["scans"]:
        assert scan["exact"], scan
        assert scan["rows"] > 0, scan
        # A point query on a clustering column opens at most half the files of a build;
        # after an append fewer than all: the new run is a few wide pieces (at most a
        # quarter of a rebuild's files) until a merge or a full re-clustering.
        if scan["model"] == "events":
            assert scan["opened"] <= scan["files"] / 2, scan
        else:
            assert scan["opened"] < scan["files"], scan


@pytest.mark.slow
@pytest.mark.parametrize("file_format", ["delta", "iceberg"])
def test_clustered_format_models_run_on_a_cluster_whose_executors_lack_the_plugin(
        cluster: tuple[str, Path], store: str, tmp_path: Path, file_format: str) -> None:
    """Delta and Iceberg models on the cluster, the warehouse on S3 as in docs/cluster.md
    (the format's jar and S3's connector shipped to the executors by spark.jars)."""
    url, python = cluster
    warehouse = f"s3a://{BUCKET}/{file_format}-warehouse"
    settings = with_jars({**s3a_settings(store, *S3_KEYS),
                          "spark.sql.warehouse.dir": warehouse}, s3a_jars())
    report, output = _run_project(url, python, tmp_path, FORMAT_MODELS,
                                  "run_format_on_cluster", file_format,
                                  profile_lines=f"table_format: {file_format}",
                                  settings=settings)

    assert all(where.startswith(f"{warehouse}/") for where in report["locations"]), \
        report["locations"]
    assert set(report["executors"]) == {False}
    # The merge added ids 4000..4999 and matched 3000..3999: each id once.
    assert report["rows"] == {"fmt_events": 4000, "fmt_events_inc": 5000}
    assert report["ids"] == 5000
    # Appends (every row kept, the re-clustering policy at work), a merge, whole
    # partitions replaced and daily batches, one day run again: each id once.
    assert report["strategies"] == {model: [list(row) for row in rows]
                                    for model, rows in STRATEGY_ROWS.items()}
    # The re-clustering is one commit that changes no data: the version before it has
    # the same rows.
    assert report["reclustered_by"] == ("OPTIMIZE" if file_format == "delta" else "replace")
    assert report["rows_before_recluster"] == [5000, 5000]
    assert report["tests"] == ["pass", "pass"], output[-3000:]  # skip_coverage per model
    for scan in report["scans"]:
        assert scan["exact"], scan
        assert scan["rows"] > 0, scan
        # Spark's own plain `where` skips by the format's statistics.
        assert scan["opened"] <= scan["files"] / 2, scan
