"""zspark_scan over dbt-spark's `thrift` method: a Spark Thrift Server on loopback, dbt as a
client. Clustering and the footer index run Python inside Spark and need `session`; the scan
only queries the index and writes SQL, so it must work over any connection."""

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
SCHEMA = "zt"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def thrift_port(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    home = tmp_path_factory.mktemp("thrift_server")
    port = _free_port()
    log = (home / "server.log").open("w")
    server = subprocess.Popen(
        [str(BIN / "spark-submit"), "--class",
         "org.apache.spark.sql.hive.thriftserver.HiveThriftServer2",
         "--master", "local[2]", "--driver-memory", "1g", "--conf", "spark.ui.enabled=false",
         "--conf", f"spark.sql.warehouse.dir={home / 'warehouse'}",
         "--conf", f"spark.driver.extraJavaOptions=-Dderby.system.home={home}",
         "--conf", "spark.hadoop.javax.jdo.option.ConnectionURL="
                   f"jdbc:derby:;databaseName={home / 'metastore_db'};create=true",
         "--hiveconf", "hive.server2.thrift.bind.host=127.0.0.1",
         "--hiveconf", f"hive.server2.thrift.port={port}", "spark-internal"],
        stdout=log, stderr=subprocess.STDOUT, cwd=home,
        env={**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"},
    )
    try:
        deadline = time.monotonic() + 120
        while "HiveThriftServer2 started" not in (home / "server.log").read_text():
            assert server.poll() is None, (home / "server.log").read_text()[-3000:]
            assert time.monotonic() < deadline, "Thrift server did not start in 120 s"
            time.sleep(0.5)
        yield port
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()


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
    """Four files with disjoint `id` ranges, an index of them, and a dbt project over thrift."""
    port = thrift_port
    _sql(port, f"create schema if not exists {SCHEMA}")
    for table in ("events", "events_unindexed"):
        _sql(port, f"create table {SCHEMA}.{table} using parquet as "
                   "select /*+ REPARTITION_BY_RANGE(4, id) */ id, concat('city', id % 7) as city "
                   "from range(0, 400)")
    # The index an on-demand zspark_build_index writes (one row per file, row_group NULL),
    # made here in SQL: building it from footers needs the session method.
    _sql(port, f"create table {SCHEMA}.events__zindex using parquet as "
               "select _metadata.file_path as file_path, _metadata.file_size as file_size, "
               "cast(null as int) as row_group, count(*) as row_count, "
               "min(id) as id__min, max(id) as id__max, count_if(id is null) as id__nulls "
               f"from {SCHEMA}.events group by 1, 2")

    root = tmp_path_factory.mktemp("thrift_project")
    files = {
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
        "models/high_ids.sql": """
            {{ config(materialized='table') }}
            select * from {{ zspark_scan(source('zt', 'events'), 'id >= 350') }} t
        """,
        "models/high_ids_unindexed.sql": """
            {{ config(materialized='table') }}
            select * from {{ zspark_scan(source('zt', 'events_unindexed'), 'id >= 350') }} t
        """,
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(textwrap.dedent(text).lstrip())
    return root


def _dbt(root: Path, *args: str) -> str:
    result = subprocess.run(
        [str(BIN / "dbt"), *args, "--project-dir", str(root), "--profiles-dir", str(root)],
        capture_output=True, text=True, check=False, cwd=root,
        env={**os.environ, "DBT_SEND_ANONYMOUS_USAGE_STATS": "false"},
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-4000:]
    return output


def test_scan_over_thrift_returns_the_plain_rows_and_excludes_files(
        project: Path, thrift_port: int) -> None:
    output = _dbt(project, "run")
    assert "Completed successfully" in output

    plain = sorted(_sql(thrift_port, f"select * from {SCHEMA}.events where id >= 350"))
    assert len(plain) == 50
    assert sorted(_sql(thrift_port, f"select * from {SCHEMA}.high_ids")) == plain
    assert sorted(_sql(thrift_port, f"select * from {SCHEMA}.high_ids_unindexed")) == plain

    # The compiled SQL names the three files the index proves hold no id >= 350, not the
    # fourth: the Thrift server's Spark never opens them.
    compiled = next(project.glob("target/compiled/**/high_ids.sql")).read_text()
    index = _sql(thrift_port, f"select file_path, file_size, id__max from {SCHEMA}.events__zindex")
    assert len(index) == 4
    for path, size, highest in index:
        assert (f"'{path}#{size}'" in compiled) == (highest < 350), (path, highest)


def test_missing_index_over_thrift_is_a_full_scan_with_a_warning(project: Path) -> None:
    output = _dbt(project, "run", "-s", "high_ids_unindexed")
    assert "index unusable" in output
    assert "full scan" in output
    compiled = next(project.glob("target/compiled/**/high_ids_unindexed.sql")).read_text()
    assert "_metadata" not in compiled
