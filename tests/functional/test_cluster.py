"""dbt on a standalone Spark cluster (session method, ``spark.master: spark://...``) whose
executors' Python has pyspark, pandas, numpy and pyarrow but not dbt or this plugin, named
by the profile's ``spark.pyspark.python``: clustered builds (curves and balanced),
incremental runs, the index, ``zspark_scan`` and ``skip_coverage`` all run through it.

dbt runs in a subprocess: a process has one SparkContext, and this one's is local.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bench.servers import executor_python, standalone_cluster

pytestmark = pytest.mark.spark

REPO = Path(__file__).resolve().parents[2]
PREDICATES = ("city = 'CITY007'", "brand = 42")
COLUMNS = """
select id,
       concat('CITY', lpad(cast(pmod(hash(id, 1), 50) as string), 3, '0')) as city,
       cast(pmod(hash(id, 2), 1000) as int) as brand
from range({{ var('start', 0) }}, {{ var('stop', 4000) }})
"""
MODELS = {
    "events.sql": "{{ config(materialized='table', hilbert_by=['city', 'brand'], "
                  "file_count=8) }}" + COLUMNS,
    "events_inc.sql": "{{ config(materialized='incremental', incremental_strategy='append', "
                      "zorder_by=['city', 'brand'], file_count=8) }}" + COLUMNS,
    "events_bal.sql": "{{ config(materialized='incremental', incremental_strategy='append', "
                      "balanced_by=['city', 'brand'], file_count=8) }}" + COLUMNS,
    "coverage.yml": textwrap.dedent(f"""
        version: 2
        models:
          - name: events
            data_tests:
              - skip_coverage: {{predicates: {list(PREDICATES)}, min_skip_ratio: 0.3}}
          - name: events_inc
            data_tests:
              - skip_coverage: {{predicates: {list(PREDICATES)}, min_skip_ratio: 0.3}}
          - name: events_bal
            data_tests:
              - skip_coverage: {{predicates: {list(PREDICATES)}, min_skip_ratio: 0.3}}
    """),
}

MODELS_BUILT = ("events", "events_inc", "events_bal")


def run_on_cluster(project: str) -> None:
    """The driver's side, run in the subprocess: dbt run, an incremental run and dbt test
    on the cluster, then what the executors are and what each scan returns and opens."""
    from dbt.cli.main import dbtRunner

    from dbt.adapters.zspark.session import active_session
    from tests.functional.dbt_project import files_read

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
    print("RESULT " + json.dumps(report))


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    root = tmp_path_factory.mktemp("cluster")
    python = executor_python(root / "executor-venv")
    with standalone_cluster(root) as url:
        yield url, python


def test_dbt_runs_on_a_cluster_whose_executors_lack_the_plugin(
        cluster: tuple[str, Path], tmp_path: Path) -> None:
    url, python = cluster
    project = tmp_path / "project"
    for name, text in MODELS.items():
        (project / "models" / name).parent.mkdir(parents=True, exist_ok=True)
        (project / "models" / name).write_text(text)
    (project / "dbt_project.yml").write_text(
        "name: on_cluster\nversion: '1.0'\nconfig-version: 2\nprofile: cluster\n")
    (project / "profiles.yml").write_text(textwrap.dedent(f"""
        cluster:
          target: dev
          outputs:
            dev:
              type: zspark
              method: session
              schema: zspark_test
              session_dir: {tmp_path / 'session'}
              server_side_parameters:
                spark.master: {url}
                spark.pyspark.python: {python}
                spark.executor.memory: 1g
                spark.driver.memory: 1g
                spark.sql.shuffle.partitions: "4"
    """))
    # Nothing in the environment names a Python: the profile alone must reach executors.
    env = {k: v for k, v in os.environ.items() if k != "PYSPARK_PYTHON"}
    result = subprocess.run(
        [sys.executable, "-c", "import sys; from tests.functional.test_cluster import "
                               "run_on_cluster; run_on_cluster(sys.argv[1])", str(project)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=900, check=False)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-5000:]
    report = json.loads(next(line for line in result.stdout.splitlines()
                             if line.startswith("RESULT ")).removeprefix("RESULT "))

    assert report["master"] == url
    assert {tuple(e) for e in report["executors"]} == {(str(python), False)}
    assert report["rows"] == {"events": 4000, "events_inc": 5000, "events_bal": 5000}
    assert "skip_coverage" in output
    for scan in report["scans"]:
        assert scan["exact"], scan
        assert scan["rows"] > 0, scan
        # A point query on a clustering column opens at most half the files.
        assert scan["opened"] <= scan["files"] / 2, scan
