"""zspark_scan over dbt-spark's `thrift` method: a Spark Thrift Server on loopback, dbt as a
client. Clustering and the footer index run Python inside Spark and need `session`; the scan
only queries the index and writes SQL, so it must work over any connection.

The data and its index are written by a short-lived embedded session (the real
`build_index`, in a subprocess with its own warehouse) and registered over thrift as
external Parquet tables, as a team indexing with one job and querying from another would.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pyhive import hive  # dbt-spark[PyHive]: the thrift method's client

pytestmark = pytest.mark.spark

BIN = Path(sys.executable).parent
REPO = Path(__file__).resolve().parents[2]
SCHEMA = "zt"
# The string condition holds for every row and prunes no file; it makes the scan read the
# index's string statistics too, and a wrong one would prune a file and lose rows.
PREDICATE = "id >= 350 and city between 'city0' and 'city9'"
SPARK_ENV = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}


def write_indexed_parquet(root: Path) -> None:
    """The pyspark step, run in a subprocess: four files with disjoint `id` ranges in
    `root/events`, and their index as `build_index` writes it in `root/index`."""
    from pyspark.sql import SparkSession

    from dbt.adapters.zspark.connections import session_defaults
    from dbt.adapters.zspark.index import build_index

    # In-memory catalog: nothing here outlives the process but the Parquet files.
    builder = SparkSession.builder.master("local[1]")
    for key, value in {**session_defaults(str(root / "session")),
                       "spark.driver.memory": "1g"}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    data = root / "events"
    (spark.range(400).selectExpr("id", "concat('city', id % 7) as city")
     .repartitionByRange(4, "id").write.parquet(str(data)))
    spark.sql(f"create table events using parquet location '{data}'")
    summary = build_index(spark, "events", "events__zindex")
    assert (summary.files, summary.rows) == (4, 400), summary
    (root / "session" / "warehouse" / "events__zindex").rename(root / "index")
    spark.stop()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def thrift_port(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    home = tmp_path_factory.mktemp("thrift_server")
    port = _free_port()
    log_path = home / "server.log"
    with log_path.open("w") as log:
        server = subprocess.Popen(
            [str(BIN / "spark-submit"), "--class",
             "org.apache.spark.sql.hive.thriftserver.HiveThriftServer2",
             "--master", "local[2]", "--driver-memory", "1g",
             "--conf", "spark.ui.enabled=false",
             "--conf", f"spark.sql.warehouse.dir={home / 'warehouse'}",
             "--conf", f"spark.driver.extraJavaOptions=-Dderby.system.home={home}",
             "--conf", "spark.hadoop.javax.jdo.option.ConnectionURL="
                       f"jdbc:derby:;databaseName={home / 'metastore_db'};create=true",
             "--hiveconf", "hive.server2.thrift.bind.host=127.0.0.1",
             "--hiveconf", f"hive.server2.thrift.port={port}", "spark-internal"],
            stdout=log, stderr=subprocess.STDOUT, cwd=home, env=SPARK_ENV,
        )
    try:
        deadline = time.monotonic() + 180  # slow when another Spark job shares the cores
        while "HiveThriftServer2 started" not in log_path.read_text():
            assert server.poll() is None, log_path.read_text()[-3000:]
            assert time.monotonic() < deadline, "Thrift server did not start in 180 s"
            time.sleep(0.5)
        yield port
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def _sql(port: int, statement: str) -> list[tuple[Any, ...]]:
    connection = hive.connect(host="127.0.0.1", port=port, username="dbt")
    try:
        cursor = connection.cursor()
        cursor.execute(statement)
        return [tuple(row) for row in cursor.fetchall()] if cursor.description else []
    finally:
        connection.close()


@pytest.fixture(scope="module")
def project(thrift_port: int, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The indexed Parquet files as tables of the Thrift server, and a dbt project on it."""
    files = tmp_path_factory.mktemp("thrift_files")
    subprocess.run([sys.executable, "-m", "tests.functional.test_thrift", str(files)],
                   cwd=REPO, env=SPARK_ENV, check=True, timeout=300)
    port = thrift_port
    _sql(port, f"create schema if not exists {SCHEMA}")
    # The same files twice: once with its index, once without one.
    _sql(port, f"create table {SCHEMA}.events using parquet location '{files / 'events'}'")
    _sql(port, f"create table {SCHEMA}.events_unindexed using parquet "
               f"location '{files / 'events'}'")
    _sql(port, f"create table {SCHEMA}.events__zindex using parquet "
               f"location '{files / 'index'}'")

    root = tmp_path_factory.mktemp("thrift_project")
    texts = {
        "dbt_project.yml": """
            name: zspark_thrift
            version: "1.0"
            config-version: 2
            profile: zspark_thrift
            flags:
              send_anonymous_usage_stats: false
        """,
        "profiles.yml": f"""
            zspark_thrift:
              target: dev
              outputs:
                dev:
                  type: zspark
                  method: thrift
                  host: 127.0.0.1
                  port: {port}
                  user: dbt
                  schema: {SCHEMA}
        """,
        "models/sources.yml": f"""
            version: 2
            sources:
              - name: zt
                schema: {SCHEMA}
                tables: [{{name: events}}, {{name: events_unindexed}}]
        """,
        "models/high_ids.sql": f"""
            {{{{ config(materialized='table') }}}}
            select * from {{{{ zspark_scan(source('zt', 'events'), "{PREDICATE}") }}}} t
        """,
        "models/high_ids_unindexed.sql": """
            {{ config(materialized='table') }}
            select * from {{ zspark_scan(source('zt', 'events_unindexed'), 'id >= 350') }} t
        """,
    }
    for name, text in texts.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(textwrap.dedent(text).lstrip())
    return root


def _dbt(root: Path, *args: str, expect_pass: bool = True) -> str:
    # A subprocess: dbt's adapter is a per-process singleton, and other tests in this
    # process may already hold one on the session profile.
    result = subprocess.run(
        [str(BIN / "dbt"), *args, "--project-dir", str(root), "--profiles-dir", str(root)],
        capture_output=True, text=True, check=False, cwd=root, timeout=300,
        env={**SPARK_ENV, "DBT_SEND_ANONYMOUS_USAGE_STATS": "false"},
    )
    output = result.stdout + result.stderr
    assert (result.returncode == 0) == expect_pass, output[-4000:]
    return output


def test_scan_over_thrift_returns_the_plain_rows_and_excludes_files(
        project: Path, thrift_port: int) -> None:
    output = _dbt(project, "run", "-s", "high_ids")
    assert "Completed successfully" in output
    assert "index unusable" not in output

    plain = sorted(_sql(thrift_port, f"select * from {SCHEMA}.events where {PREDICATE}"))
    assert len(plain) == 50
    assert sorted(_sql(thrift_port, f"select * from {SCHEMA}.high_ids")) == plain

    # The compiled SQL names exactly the files the index proves hold no id >= 350, so the
    # Thrift server's Spark never opens them; row-group rows of the index are not files.
    compiled = next(project.glob("target/compiled/**/high_ids.sql")).read_text()
    assert "_metadata.file_path" in compiled
    index = _sql(thrift_port, f"select file_path, file_size, file_mtime, id__max from "
                              f"{SCHEMA}.events__zindex where row_group is null")
    assert len(index) == 4
    assert sum(highest < 350 for *_, highest in index) == 3
    for path, size, mtime, highest in index:
        assert path.startswith("file:/")
        assert (f"'{path}#{size}#{mtime}'" in compiled) == (highest < 350), (path, highest)


def test_missing_index_over_thrift_is_a_full_scan_with_a_warning(
        project: Path, thrift_port: int) -> None:
    output = _dbt(project, "run", "-s", "high_ids_unindexed")
    assert "index unusable" in output
    assert "full scan" in output
    compiled = next(project.glob("target/compiled/**/high_ids_unindexed.sql")).read_text()
    assert "_metadata" not in compiled

    plain = sorted(_sql(thrift_port, f"select * from {SCHEMA}.events where id >= 350"))
    assert sorted(_sql(thrift_port, f"select * from {SCHEMA}.high_ids_unindexed")) == plain


@pytest.mark.parametrize("materialized", ["table", "incremental"])
def test_clustering_over_thrift_stops_before_writing_with_a_clear_error(
        project: Path, thrift_port: int, materialized: str) -> None:
    name = f"clustered_{materialized}"
    (project / "models" / f"{name}.sql").write_text(
        f"{{{{ config(materialized='{materialized}', hilbert_by=['id', 'city']) }}}}\n"
        f"select * from {{{{ source('zt', 'events') }}}}\n")
    try:
        output = _dbt(project, "run", "-s", name, expect_pass=False)
    finally:
        (project / "models" / f"{name}.sql").unlink()
    assert (f"Model '{name}': clustering (zorder_by / hilbert_by / linear_by) runs Python "
            f"(curve-key UDFs, footer reads) inside Spark and needs `method: session`; this "
            f"profile uses `method: thrift`.") in " ".join(output.split())
    tables = {row[1] for row in _sql(thrift_port, f"show tables in {SCHEMA}")}
    assert not {t for t in tables if t.startswith(name)}


if __name__ == "__main__":  # the `project` fixture's pyspark step
    write_indexed_parquet(Path(sys.argv[1]))
