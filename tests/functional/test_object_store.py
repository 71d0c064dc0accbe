"""Tables in an object store: the warehouse on S3 (moto's server on 127.0.0.1, reached by
Hadoop's s3a connector with its standard settings only), for Parquet, Delta and Iceberg
models. Clustered builds and their statistics, ``zspark_scan`` fetching only the files it
must (counted in the store's own request log), ``skip_coverage``, incremental runs, full
re-clusterings killed and not, a change of layout by ``cluster_by='auto'`` killed
before its commit, an append killed amid its moves (one of them stopped
between its copy and its delete), an overwrite killed while it sets aside what it
replaces, a full refresh killed between its renames, and a rebuild killed amid its
commit; each killed run recovered by the next."""

from __future__ import annotations

import json
import os
import re
import signal
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

from dbt.adapters.zspark.formats.settings import table_format
from dbt.adapters.zspark.layouts.layout_state import StoredLayout
from dbt.adapters.zspark.reach.session.object_stores import s3a_jars, s3a_settings, with_jars
from tests.functional.dbt_project import thrift_profile, write_project
from tests.functional.format_project import QUERY_MACRO, FormatProject, new_project, release
from tests.functional.test_connect import connect_profile
from tests.functional.test_format_increments import _auto_relayout as auto_relayout
from tests.functional.test_thrift import SPARK_ENV
from tests.functional.test_thrift import _dbt as thrift_dbt
from tests.functional.test_thrift import _sql as thrift_sql
from tests.functional.test_thrift_formats import (
    check_delta_log_replayed,
    check_delta_reclustering_by_sql,
    check_killed_iceberg_reclustering_by_sql,
    check_partitions_reclustered_by_sql,
    format_models,
)
from tests.harness.servers import (
    BUCKET,
    S3_KEYS,
    connect_client,
    connect_server,
    is_data_file_of,
    own_metastore,
    s3_requests,
    s3_server,
    thrift_server,
)

pytestmark = pytest.mark.spark

ROWS, FILES = 4000, 8
ROWS_OF = """
    select id, cast(id % 50 as int) as a,
           concat('s', lpad(cast((id * 7) % 40 as string), 3, '0')) as s,
           cast({{{{ var('v', 0) }}}} as int) as v
    from range({range})
"""
#: The clustered table: ``n`` rows; the incremental model: the ids from ``lo`` to ``hi``.
CLUSTERED_ROWS = ROWS_OF.format(range=f"{{{{ var('n', {ROWS}) }}}}")
GROWING_ROWS = ROWS_OF.format(range="{{ var('lo', 0) }}, {{ var('hi', 1000) }}")
POINT = "a = 17"
#: Each format's incremental strategy that updates rows (Parquet tables have no MERGE).
UPDATING = {"parquet": "insert_overwrite", "delta": "merge", "iceberg": "merge"}


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """The S3 server's endpoint and its request log."""
    assert s3a_jars(), "hadoop-aws and the AWS SDK bundle missing: `make setup` fetches them"
    home = tmp_path_factory.mktemp("s3")
    with s3_server(home) as endpoint:
        yield endpoint, home / "s3.log"


def _project(root: Path, endpoint: str, file_format: str) -> FormatProject:
    settings = with_jars({**s3a_settings(endpoint, *S3_KEYS),
                          "spark.sql.warehouse.dir": f"s3a://{BUCKET}/{file_format}"},
                         s3a_jars())
    profile = "" if file_format == "parquet" else f"table_format: {file_format}"
    project = new_project(root / "project", root / "session", profile, settings)
    project.write("macros/query.sql", QUERY_MACRO)
    project.write("models/clustered.sql", f"""
        {{{{ config(materialized='table', file_format='{file_format}',
                    hilbert_by=['a', 's'], file_count={FILES}) }}}}
        {CLUSTERED_ROWS}
    """)
    for name, source in (("points", f"{{{{ zspark_scan(ref('clustered'), \"{POINT}\") }}}}"),
                         ("plain_points", f"(select * from {{{{ ref('clustered') }}}} "
                                          f"where {POINT})")):
        project.write(f"models/{name}.sql", f"""
            {{{{ config(materialized='table', file_format='{file_format}') }}}}
            select count(*) as n, sum(id) as total from {source} t
        """)
    partitioned = ", partition_by=['p']" if file_format == "parquet" else ""
    project.write("models/grows.sql", f"""
        {{{{ config(materialized='incremental', file_format='{file_format}',
                    hilbert_by=['a', 's'], file_count=4, unique_key='id'{partitioned},
                    zspark_recluster=false,
                    incremental_strategy=var('strategy', 'append')) }}}}
        select *, cast(id % 2 as int) as p from ({GROWING_ROWS}) rows
    """)
    project.write("models/schema.yml", f"""
        version: 2
        models:
          - name: clustered
            data_tests:
              - skip_coverage:
                  arguments:
                    predicates: {json.dumps([POINT])}
                    min_skip_ratio: 0.5
    """)
    return project


def _ok(project: FormatProject, *args: str) -> str:
    done = project.dbt(*args)
    assert done.returncode == 0, done.stdout[-5000:]
    return done.stdout


def _rows(project: FormatProject, table: str) -> list[int]:
    """Rows, distinct ids, sum of ids and of v: what a lost or doubled row would change."""
    [row] = project.query(f"select count(*), count(distinct id), sum(id), sum(v) "
                          f"from zspark_formats.{table}")
    return [int(x or 0) for x in row]


def _fetched(log: Path, since: int, table: str) -> set[str]:
    """The data files of ``table`` the store served a read of after ``since`` log lines."""
    return {path for method, path in s3_requests(log, since)
            if method == "GET" and is_data_file_of(table, path)}


def _lines(log: Path) -> int:
    return len(log.read_text().splitlines())


# A class per format: the suite's workers take a class each (``--dist loadscope``).
class TestParquet:
    def test_every_capability_with_the_warehouse_on_s3(self, tmp_path: Path,
                                                       store: tuple[str, Path]) -> None:
        _every_capability(tmp_path, store, "parquet")


@pytest.mark.slow  # Delta's commits on S3: the longest of the three (make test-slow)
class TestDelta:
    def test_every_capability_with_the_warehouse_on_s3(self, tmp_path: Path,
                                                       store: tuple[str, Path]) -> None:
        _every_capability(tmp_path, store, "delta")


class TestIceberg:
    def test_every_capability_with_the_warehouse_on_s3(self, tmp_path: Path,
                                                       store: tuple[str, Path]) -> None:
        _every_capability(tmp_path, store, "iceberg")


def _every_capability(tmp_path: Path, store: tuple[str, Path], file_format: str) -> None:
    endpoint, log = store
    project = _project(tmp_path, endpoint, file_format)
    since = _lines(log)
    _ok(project, "run")
    if file_format == "parquet":
        # With spark-hadoop-cloud on the class path Spark 4.1 commits s3a writes by the
        # S3A magic committer (files uploaded to their final names), not by renames.
        written = [path for method, path in s3_requests(log, since) if method == "PUT"]
        assert any("/__magic_job-" in path for path in written), written[:20]
        assert not any("/_temporary/" in path for path in written), written[:20]
    matching = [i for i in range(ROWS) if i % 50 == 17]

    # The point query through zspark_scan: exact, and fetching few of the files.
    before = _lines(log)
    _ok(project, "run", "--select", "points")
    scanned = _fetched(log, before, "clustered")
    before = _lines(log)
    _ok(project, "run", "--select", "plain_points")
    plain = _fetched(log, before, "clustered")
    expected = [len(matching), sum(matching)]
    assert project.query("select n, total from zspark_formats.points") == [expected]
    assert project.query("select n, total from zspark_formats.plain_points") == [expected]
    assert 0 < len(scanned) <= FILES // 2, scanned
    # Parquet's plain `where` opens every file's footer; the formats skip by their stats.
    assert len(plain) == (FILES if file_format == "parquet" else len(scanned)), plain
    _ok(project, "test", "--select", "clustered")
    if file_format == "parquet":
        [[indexed]] = project.query("select count(distinct file_path) from "
                                    "zspark_formats.clustered__zindex "
                                    f"where file_path like 's3a://{BUCKET}/%'")
        assert indexed == FILES

    # Appends. (A format's re-clustering is one commit of the format's own, killed on
    # local disk in test_format_increments.)
    _ok(project, "run", "--select", "grows", "--vars", "{lo: 1000, hi: 1600}")
    assert _rows(project, "grows") == [1600, 1600, sum(range(1600)), 0]
    if file_format == "parquet":
        _parquet_append_killed_amid_its_moves(project, endpoint)
        _parquet_reclusterings(project, log)
        _parquet_overwrite_killed_while_setting_aside(project, endpoint)
    else:
        _format_reclustering_killed_before_its_commit(project)
        # cluster_by='auto' changing a table's layout, killed before its commit and made
        # by the next run, as on local disk: the same commit, with the new layout's files
        # and properties in the store.
        auto_relayout(project, file_format)
        relaid = _location(project, "auto_grows")
        assert relaid.startswith(f"s3a://{BUCKET}/"), relaid

    updating = UPDATING[file_format]
    _ok(project, "run", "--select", "grows", "--vars",
        json.dumps({"lo": 1200, "hi": 1800, "v": 1, "strategy": updating}))
    # insert_overwrite replaces the partitions it writes (both p): the rows it selected.
    kept = range(1200, 1800) if updating == "insert_overwrite" else range(1800)
    assert _rows(project, "grows") == [len(kept), len(kept), sum(kept), 600]
    if file_format == "parquet":
        _parquet_full_refresh_killed_between_its_renames(project, endpoint)

    # A rebuild killed amid its commit; the next run recovers and builds it.
    stop = "swap:previous_renamed" if file_format == "parquet" else "format:committed"
    killed = project.dbt("run", "--select", "clustered", "--vars", "{n: 4500}", stop_at=stop)
    assert killed.returncode == -signal.SIGKILL, killed.stdout[-3000:]
    before = _lines(log)
    _ok(project, "run", "--select", "clustered", "--vars", "{n: 4500}")
    assert _rows(project, "clustered") == [4500, 4500, sum(range(4500)), 0]
    if file_format == "parquet":
        # Each version is written once into a folder of its own, which no step moves:
        # nothing is written under a name's own folder (a rename would copy there).
        moved = {path for method, path in s3_requests(log, before) if method == "PUT"
                 and any(f"/clustered{suffix}/" in path
                         for suffix in ("", "__zspark_old", "__zspark_new"))}
        assert moved == set(), sorted(moved)[:5]
        location = _location(project, "clustered")
        assert "/clustered__zspark_versions/" in location, location
    # The AWS SDK's log goes to Spark's log file, not to stderr (zspark's SLF4J binding).
    errors = (project.root / "dbt_worker.err").read_text()
    assert "SLF4J:" not in errors, errors[:3000]


def _parquet_append_killed_amid_its_moves(project: FormatProject, endpoint: str) -> None:
    """An append killed once the first of its batch's files moved into the table (on S3
    a copy, then a delete), and a second file left copied but not deleted, as a kill
    inside a move leaves it: the next run moves the rest in, each file once, then
    appends its own rows."""
    killed = project.dbt("run", "--select", "grows", "--vars", "{lo: 1600, hi: 1700}",
                         stop_at="append:publishing")
    assert killed.returncode == -signal.SIGKILL, killed.stdout[-3000:]
    batch, table = (_location(project, name) for name in ("grows__zspark_batch", "grows"))
    s3 = _s3(endpoint)
    prefix = batch.removeprefix(f"s3a://{BUCKET}/") + "/"
    left = [item["Key"] for item in s3.list_objects_v2(Bucket=BUCKET, Prefix=prefix)["Contents"]
            if item["Key"].endswith(".parquet")]
    assert left, "the killed append's batch has no file left to move"
    target = table.removeprefix(f"s3a://{BUCKET}/") + "/" + left[0].removeprefix(prefix)
    s3.copy_object(Bucket=BUCKET, Key=target, CopySource={"Bucket": BUCKET, "Key": left[0]})
    done = _ok(project, "run", "--select", "grows", "--vars", "{lo: 1700, hi: 1800}")
    assert "an append stopped while its files moved into the table: the rest moved in" in done
    assert _rows(project, "grows") == [1800, 1800, sum(range(1800)), 0]


def _parquet_overwrite_killed_while_setting_aside(project: FormatProject,
                                                  endpoint: str) -> None:
    """insert_overwrite killed once the first file of the partitions it replaces moved
    out of the table (on S3 a copy, then a delete): the next run, an append, first sets
    the rest aside and moves the batch in, then appends its own rows; nothing set aside
    is left in the store."""
    replacing = json.dumps({"lo": 1100, "hi": 1700, "v": 2, "strategy": "insert_overwrite"})
    killed = project.dbt("run", "--select", "grows", "--vars", replacing,
                         stop_at="overwrite:set_aside")
    assert killed.returncode == -signal.SIGKILL, killed.stdout[-3000:]
    done = _ok(project, "run", "--select", "grows", "--vars", "{lo: 1800, hi: 1900}")
    assert "what it replaces is set aside and the rest moved in" in done, done[-3000:]
    # Both partitions (p) replaced by the overwrite's rows, then the append's.
    ids = [*range(1100, 1700), *range(1800, 1900)]
    assert _rows(project, "grows") == [len(ids), len(ids), sum(ids), 2 * 600]
    s3 = _s3(endpoint)
    keys = [item["Key"] for page in s3.get_paginator("list_objects_v2").paginate(
        Bucket=BUCKET, Prefix="parquet/") for item in page.get("Contents", [])]
    assert keys, "the warehouse's listing is empty"
    assert [key for key in keys if "__zspark_replac" in key] == []


def _parquet_full_refresh_killed_between_its_renames(project: FormatProject,
                                                     endpoint: str) -> None:
    """A full refresh killed once the table was renamed away (``swap:previous_renamed``),
    then an incremental run: it sees the table its repair restores (zspark's
    ``is_incremental``) and appends its rows once; the next version the killed run wrote
    is deleted with its name."""
    killed = project.dbt("run", "--select", "grows", "--full-refresh",
                         "--vars", "{lo: 0, hi: 500}", stop_at="swap:previous_renamed")
    assert killed.returncode == -signal.SIGKILL, killed.stdout[-3000:]
    done = _ok(project, "run", "--select", "grows", "--vars", "{lo: 1800, hi: 1900}")
    assert "the previous version is the table again" in done, done[-3000:]
    ids = range(1200, 1900)
    assert _rows(project, "grows") == [len(ids), len(ids), sum(ids), 600]
    location = _location(project, "grows").removeprefix(f"s3a://{BUCKET}/")
    versions = location.rsplit("/", 1)[0] + "/"
    keys = [item["Key"] for page in _s3(endpoint).get_paginator("list_objects_v2").paginate(
        Bucket=BUCKET, Prefix=versions) for item in page.get("Contents", [])]
    assert [key for key in keys if key != versions and not key.startswith(location + "/")] == []


def _s3(endpoint: str) -> Any:
    """A client of the store, for what a test does or checks beside Spark."""
    return boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=S3_KEYS[0],
                        aws_secret_access_key=S3_KEYS[1], region_name="us-east-1")


def _location(project: FormatProject, table: str) -> str:
    return str(next(row[1] for row in project.query(
        f"describe table extended zspark_formats.{table}") if row[0] == "Location"))


def _format_reclustering_killed_before_its_commit(project: FormatProject) -> None:
    """A full re-clustering of a Delta or Iceberg table killed once its files are written
    but not committed: the table is as it was; the next one commits."""
    grown = [1600, 1600, sum(range(1600)), 0]
    full = json.dumps({"relation": "zspark_formats.grows", "full": True})
    killed = project.dbt("run-operation", "zspark_recluster", "--args", full,
                         stop_at="format:rewritten")
    assert killed.returncode == -signal.SIGKILL, killed.stdout[-3000:]
    assert _rows(project, "grows") == grown
    _ok(project, "run-operation", "zspark_recluster", "--args", full)
    assert _rows(project, "grows") == grown


def _parquet_reclusterings(project: FormatProject, log: Path) -> None:
    """A merge of the pending runs, published in place of their files, killed once its
    first file moved in (a copy and a delete on S3); the next run, a full re-clustering,
    finishes it first and is killed once its new version is written; then run again. The
    files that stay are neither read nor written by the merge."""
    grown = [1800, 1800, sum(range(1800)), 0]
    before = {str(r[0]).rsplit("/", 1)[-1] for r in project.query(
        "select distinct input_file_name() from zspark_formats.grows")}
    since = _lines(log)
    merge = json.dumps({"relation": "zspark_formats.grows", "full": False})
    killed = project.dbt("run-operation", "zspark_recluster", "--args", merge,
                         stop_at="recluster:publishing")
    assert killed.returncode == -signal.SIGKILL, killed.stdout[-3000:]
    merged_requests = s3_requests(log, since)
    full = json.dumps({"relation": "zspark_formats.grows", "full": True})
    killed = project.dbt("run-operation", "zspark_recluster", "--args", full,
                         stop_at="rewrite:written")
    assert killed.returncode == -signal.SIGKILL, killed.stdout[-3000:]
    assert "the rest moved in and the files it rewrote are deleted" in killed.stdout
    assert _rows(project, "grows") == grown
    after = {str(r[0]).rsplit("/", 1)[-1] for r in project.query(
        "select distinct input_file_name() from zspark_formats.grows")}
    kept = before & after
    assert kept, (before, after)
    assert before - after, (before, after)
    touched = {name for _, path in merged_requests for name in kept if path.endswith(name)}
    assert touched == set(), touched
    _ok(project, "run-operation", "zspark_recluster", "--args", full)
    assert _rows(project, "grows") == grown


def test_a_warehouse_the_session_cannot_reach_is_named_before_anything_is_written(
        tmp_path: Path) -> None:
    """A warehouse on s3a:// in a session without Hadoop's S3 connector: the run stops at
    its first statement, saying what to add."""
    project = new_project(tmp_path / "project", tmp_path / "session", "",
                          {"spark.sql.warehouse.dir": f"s3a://{BUCKET}/unreachable"})
    project.write("models/m.sql", """
        {{ config(materialized='table', hilbert_by=['id'], file_count=2) }}
        select id from range(10)
    """)
    done = project.dbt("run")
    assert done.returncode != 0
    assert "no file system for s3a:// locations" in done.stdout, done.stdout[-3000:]
    assert "hadoop-aws 3.4.2" in done.stdout


class TestThrift:
    # Slow: TestConnect runs the same server reach (keys and index in SQL) over Connect.
    @pytest.mark.slow
    def test_a_thrift_server_with_its_warehouse_on_s3_builds_indexes_and_skips(
            self, tmp_path: Path, store: tuple[str, Path]) -> None:
        """dbt over thrift, the server's warehouse on S3 (its own s3a settings and the
        connector on its class path): no Python on the server, keys and index in SQL. A
        clustered build, its rebuild and an incremental model's append and full
        re-clustering, each table and indexed file in the store; ``zspark_scan`` exact
        and fetching at most half the files; ``skip_coverage`` passing."""
        endpoint, log = store
        home = tmp_path / "server"
        home.mkdir()
        with thrift_server(home, _server_conf(home, endpoint, "thrift"), SPARK_ENV) as port:
            _over_server(tmp_path / "project", thrift_profile(port, "zts3"),
                         lambda statement: thrift_sql(port, statement), endpoint, log,
                         "thrift")


class TestConnect:
    def test_a_connect_server_with_its_warehouse_on_s3_builds_indexes_and_skips(
            self, tmp_path: Path, store: tuple[str, Path]) -> None:
        """The same over a Spark Connect server whose warehouse is on S3: dbt's process a
        Connect client (no JVM, no s3a settings of its own), every file in the store."""
        endpoint, log = store
        home = tmp_path / "server"
        home.mkdir()
        conf = _server_conf(home, endpoint, "connect")
        with connect_server(home, conf, SPARK_ENV) as port, connect_client(port) as client:

            def sql(statement: str) -> list[tuple[Any, ...]]:
                # A Connect session keeps a table's file listing; dbt wrote from its own.
                for table in set(re.findall(r"zts3\.\w+", statement)):
                    client.sql(f"refresh table {table}").collect()
                return [tuple(row) for row in client.sql(statement).collect()]

            try:
                _over_server(tmp_path / "project", connect_profile(port, "zts3"), sql,
                             endpoint, log, "connect")
            finally:
                release(tmp_path / "project")  # its dbt process's Connect session


class TestConnectFormats:
    # Slow: a Connect server of its own with the format's jars; the suite runs the same
    # re-clusterings by SQL on local disk (test_connect_formats.py).
    @pytest.mark.slow
    @pytest.mark.parametrize("file_format", ["iceberg", "delta"])
    def test_reclusterings_by_sql_over_connect_with_the_warehouse_on_s3(
            self, tmp_path: Path, store: tuple[str, Path], file_format: str) -> None:
        """A table re-clustered by SQL over a Connect server whose warehouse is on S3,
        every row once and every data file in the store (``test_thrift_formats.py``'s
        checks). Iceberg: a run killed before main's fast-forward and one killed after
        it, the next re-clustering the whole table. Delta: a run held between keying and
        its overwrite while another writer appends, a full one killed before its base is
        recorded, the next re-clustering the whole table. Then a partitioned model's one
        partition."""
        from pyarrow.fs import S3FileSystem

        endpoint, _ = store
        # The files' keys are read back through the store, as the test's own client.
        files = S3FileSystem(access_key=S3_KEYS[0], secret_key=S3_KEYS[1],
                             endpoint_override=endpoint, region="us-east-1")
        home = tmp_path / "server"
        home.mkdir()
        wanted = table_format(file_format)
        folder = f"connect_{file_format}"
        conf = _server_conf(home, endpoint, folder)
        conf.update({**wanted.settings, "spark.driver.extraClassPath": os.pathsep.join(
            map(str, [*s3a_jars(), *wanted.jar_files()]))})
        root = tmp_path / "project"
        with connect_server(home, conf, SPARK_ENV) as port, connect_client(port) as client:
            client.sql("create schema if not exists zci3").collect()
            write_project(root, f"zspark_connect_{file_format}_s3", format_models(file_format),
                          connect_profile(port, "zci3"))
            project = FormatProject(root, root)
            table = "zci3.fmt_inc"

            def sql(statement: str) -> list[tuple[Any, ...]]:
                # A Connect session keeps a table's snapshot; dbt wrote from its own.
                # (Not a folder of the store named like a table: zci3.db.)
                for name in set(re.findall(r"(?<![/\w])zci3\.\w+", statement)):
                    client.sql(f"refresh table {name}").collect()
                return [tuple(row) for row in client.sql(statement).collect()]

            try:
                _ok(project, "run", "--select", "fmt_inc")
                _ok(project, "run", "--select", "fmt_inc", "--vars",
                    json.dumps({"start": 4000, "stop": 4500}))
                if file_format == "delta":
                    check_delta_reclustering_by_sql(project, sql, table, files)
                    check_delta_log_replayed(sql, table)  # its log read through s3a
                else:
                    check_killed_iceberg_reclustering_by_sql(project, sql, table, files)
                check_partitions_reclustered_by_sql(project, sql, "zci3", files, file_format)
                for model in ("fmt_inc", "fmt_parts"):
                    listed = (f"select file_path from zci3.{model}.files" if file_format ==
                              "iceberg" else f"select distinct _metadata.file_path from "
                              f"zci3.{model}")
                    paths = [str(r[0]) for r in sql(listed)]
                    assert paths, model
                    assert all(p.startswith(f"s3a://{BUCKET}/{folder}/") for p in paths), \
                        paths[:3]
            finally:
                release(root)  # its dbt process's Connect session


def _server_conf(home: Path, endpoint: str, folder: str) -> dict[str, str]:
    """A server's settings with its warehouse in ``folder`` of the bucket (its own s3a
    settings and the connector on its class path)."""
    return {**own_metastore(home), **s3a_settings(endpoint, *S3_KEYS),
            "spark.sql.warehouse.dir": f"s3a://{BUCKET}/{folder}",
            "spark.sql.shuffle.partitions": "4",
            "spark.driver.extraClassPath": os.pathsep.join(map(str, s3a_jars()))}


def _over_server(root: Path, profile: str, sql: Callable[[str], list[tuple[Any, ...]]],
                 endpoint: str, log: Path, folder: str) -> None:
    # Over Connect the incremental model's keys are its key function's, run as the
    # server's Python UDF (curve_method='direct'); over thrift, Spark SQL's.
    direct = ", curve_method='direct'" if folder == "connect" else ""
    models = {
        "clustered.sql": "{{ config(materialized='table', hilbert_by=['a', 's'], "
                         f"file_count={FILES}) }}}}" + CLUSTERED_ROWS,
        "points.sql": "{{ config(materialized='table') }}\n"
                      f"select * from {{{{ zspark_scan(ref('clustered'), \"{POINT}\") }}}} t",
        "grows.sql": "{{ config(materialized='incremental', hilbert_by=['a', 's'], "
                     f"file_count=4, zspark_recluster=false{direct}) }}}}" + GROWING_ROWS,
        "schema.yml": f"""
            version: 2
            models:
              - name: clustered
                data_tests:
                  - skip_coverage:
                      arguments: {{predicates: {json.dumps([POINT])}, min_skip_ratio: 0.5}}
        """,
    }
    write_project(root, f"zspark_{folder}_s3",
                  {name: textwrap.dedent(text).lstrip() for name, text in models.items()},
                  profile)

    def dbt(*args: str) -> str:
        return thrift_dbt(root, *args)

    def rows(table: str) -> list[int]:
        [row] = sql(f"select count(*), count(distinct id), sum(id) from zts3.{table}")
        return [int(x or 0) for x in row]

    dbt("run", "--select", "clustered", "grows")
    before = _lines(log)
    dbt("run", "--select", "points")
    fetched = _fetched(log, before, "clustered")
    matching = [i for i in range(ROWS) if i % 50 == 17]
    assert rows("points") == [len(matching), len(matching), sum(matching)]
    assert 0 < len(fetched) <= FILES // 2, fetched
    files = {str(r[0]) for r in sql("select distinct _metadata.file_path from zts3.clustered")}
    indexed = {str(r[0]) for r in sql("select file_path from zts3.clustered__zindex")}
    assert indexed == files
    assert all(path.startswith(f"s3a://{BUCKET}/{folder}/") for path in files), files
    assert "skip_coverage" in dbt("test", "--select", "clustered")

    dbt("run", "--select", "clustered", "--vars", "{n: 4500}")
    assert rows("clustered") == [4500, 4500, sum(range(4500))]
    dbt("run", "--select", "grows", "--vars", json.dumps({"lo": 1000, "hi": 1500}))
    assert rows("grows") == [1500, 1500, sum(range(1500))]
    dbt("run-operation", "zspark_recluster", "--args",
        json.dumps({"relation": "zts3.grows", "full": True}))
    assert rows("grows") == [1500, 1500, sum(range(1500))]
    grown = {str(r[0]) for r in sql("select distinct _metadata.file_path from zts3.grows")}
    assert {str(r[0]) for r in sql("select file_path from zts3.grows__zindex")} == grown
    stored = StoredLayout.from_properties({str(k): str(v) for k, v in sql(
        "show tblproperties zts3.grows")})
    assert stored is not None
    assert stored.curve_method == ("direct" if folder == "connect" else "boundary"), stored

    # Every version was written once into a folder of its own and no rename moved a file
    # (on S3 a managed table's rename copies and deletes every object); each replaced
    # version's files went with its name, deleted by the server.
    moved = [(method, path) for method, path in s3_requests(log)
             if method in ("PUT", "POST", "DELETE")
             and re.search(r"/zts3\.db/(clustered|grows)(__zspark_new|__zspark_old)?/", path)]
    assert moved == []
    keys = [item["Key"] for page in _s3(endpoint).get_paginator("list_objects_v2").paginate(
        Bucket=BUCKET, Prefix=f"{folder}/zts3.db/") for item in page.get("Contents", [])]
    assert [key for key in keys if "__zspark_deleting" in key] == []
    for table in ("clustered", "grows"):
        stored = {key for key in keys if is_data_file_of(table, "/" + key)}
        current = {str(r[0]).split(f"s3a://{BUCKET}/", 1)[1] for r in sql(
            f"select distinct _metadata.file_path from zts3.{table}")}
        assert stored == current, (table, sorted(stored - current))
