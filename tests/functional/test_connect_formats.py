"""Clustered Delta and Iceberg models over ``method: connect``: a Spark Connect server with
the format's jars and settings, dbt as a Connect client with no JVM of its own. Builds and
appends key rows in Spark SQL on the server and write through the format's own
``create or replace`` and ``insert``; ``skip_coverage`` reads each file's bounds by SQL.
A whole table is re-clustered by SQL, as over Thrift (``test_thrift_formats.py``): a
Delta table by one ``insert overwrite`` that keeps another writer's append, then killed
before its new base is recorded; an Iceberg table killed before its fast-forward; each
recovered by the next run.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dbt.adapters.zspark.formats.settings import table_format
from tests.functional.dbt_project import write_project
from tests.functional.format_project import SMALL_DATA, FormatProject, release
from tests.functional.test_connect import SPARK_ENV, _rows, connect_profile
from tests.functional.test_thrift_formats import (
    check_clustered_format_table,
    check_delta_log_replay_steps,
    check_delta_log_replayed,
    check_delta_reclustering_by_sql,
    check_killed_iceberg_reclustering_by_sql,
    check_partitions_reclustered_by_sql,
    city_brand_rows,
    format_models,
)
from tests.harness.servers import connect_client, connect_server, own_metastore

pytestmark = pytest.mark.spark

SCHEMA = "zcf"


@pytest.fixture(scope="module", params=["delta", "iceberg"])
def server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
           ) -> Iterator[tuple[str, int, Any]]:
    """A Connect server set up for one format (its jars, extensions and catalog), and a
    Connect client session of the test's own on it."""
    file_format = str(request.param)
    home = tmp_path_factory.mktemp(f"connect_{file_format}")
    wanted = table_format(file_format)
    # On the server's own class path, as a server's jars folder would hold them.
    jars = os.pathsep.join(str(jar) for jar in wanted.jar_files())
    conf = {**own_metastore(home), **wanted.settings, **SMALL_DATA,
            "spark.driver.extraClassPath": jars}
    with connect_server(home, conf, SPARK_ENV) as port, connect_client(port) as client:
        client.sql(f"create schema if not exists {SCHEMA}").collect()
        yield file_format, port, client


def _expected(client: Any, start: int, stop: int) -> list[tuple[Any, ...]]:
    return _rows(client, city_brand_rows(start, stop))


def _data_files(client: Any, table: str, file_format: str) -> list[str]:
    """The table's live data files, from the format's own listing."""
    if file_format == "iceberg":
        return sorted(str(r[0]) for r in client.sql(f"select file_path from {table}.files")
                      .collect())
    return sorted(str(r[0]) for r in client.sql(
        f"select distinct _metadata.file_path from {table}").collect())


def _dbt(project: FormatProject, *args: str) -> str:
    done = project.dbt(*args)
    assert done.returncode == 0, done.stdout[-4000:]
    return " ".join(done.stdout.split())


def test_clustered_format_models_build_and_append_over_connect(
        server: tuple[str, int, Any], tmp_path: Path) -> None:
    """A clustered Delta or Iceberg table model and an incremental one over Connect: the
    rows exact after the build and after an append, every file sorted by the stored
    layout's key, the format keeping statistics on the clustering columns,
    `skip_coverage` passing."""
    file_format, port, client = server
    write_project(tmp_path, "connect_formats", format_models(file_format),
                  connect_profile(port, SCHEMA))
    project = FormatProject(tmp_path, tmp_path)
    try:
        built = _dbt(project, "run")
        assert "PASS=2" in built, built[-3000:]
        assert "keys in Spark SQL on the server" in built
        assert f"in its {file_format} statistics" in built
        for model in ("fmt_table", "fmt_inc"):
            table = f"{SCHEMA}.{model}"
            assert _rows(client, f"select * from {table}", table) == _expected(client, 0, 4000)
            properties = {str(k): str(v) for k, v in
                          client.sql(f"show tblproperties {table}").collect()}
            check_clustered_format_table(properties, _data_files(client, table, file_format),
                                         file_format)

        appended = _dbt(project, "run", "-s", "fmt_inc", "--vars",
                        json.dumps({"start": 4000, "stop": 4500}))
        assert "keyed with the table's stored layout" in appended
        table = f"{SCHEMA}.fmt_inc"
        assert _rows(client, f"select * from {table}", table) == _expected(client, 0, 4500)

        tested = _dbt(project, "test")
        assert "PASS=2" in tested, tested[-3000:]

        def sql(statement: str) -> list[tuple[Any, ...]]:
            client.sql(f"refresh table {table}").collect()  # its cached snapshot
            return [tuple(row) for row in client.sql(statement).collect()]

        # Re-clustered whole by SQL, killed and recovered.
        if file_format == "delta":
            check_delta_reclustering_by_sql(project, sql, table)
            check_delta_log_replayed(sql, table)
            # A table of the client's own: no other session's snapshot to refresh.
            check_delta_log_replay_steps(
                lambda statement: [tuple(row) for row in client.sql(statement).collect()],
                SCHEMA)
        else:  # Delta's partitions: over thrift (slow)
            check_killed_iceberg_reclustering_by_sql(project, sql, table)
            table = f"{SCHEMA}.fmt_parts"  # refreshed by sql() from here on
            check_partitions_reclustered_by_sql(project, sql, SCHEMA)
    finally:
        release(tmp_path)  # its dbt process ends its Connect session while the server runs
