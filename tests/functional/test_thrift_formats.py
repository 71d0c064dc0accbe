"""Clustered Delta and Iceberg models over dbt-spark's `thrift` method: a Spark Thrift
Server with the format's jars and settings, no Python on it. Builds and appends key rows
in Spark SQL and write through the format's own `create or replace` and `insert`; the
layout figures and `skip_coverage` read each file's bounds by SQL. A whole table is
re-clustered by SQL, also when the run doing it was killed before: a Delta table by one
`insert overwrite`, an Iceberg one written on a branch and main fast-forwarded to it. A
re-clustering of some of a table's files is refused by name.
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from dbt.adapters.zspark.formats.settings import table_format
from dbt.adapters.zspark.layouts.layout_state import clustered_writes, write_id
from tests.functional.dbt_project import (
    CITY_BRAND_ROWS,
    FORMAT_STRATEGY_MODELS,
    STRATEGY_QUERIES,
    STRATEGY_ROWS,
    STRATEGY_RUNS,
    skip_coverage_yml,
    thrift_profile,
    write_project,
)
from tests.functional.format_project import SMALL_DATA, FormatProject
from tests.functional.test_format_increments import _auto_relayout
from tests.functional.test_thrift import SPARK_ENV, _dbt, _file_keys, _sql
from tests.harness.servers import own_metastore, thrift_server

pytestmark = [pytest.mark.spark, pytest.mark.slow]

SCHEMA = "zf"
PREDICATES = ("city = 'CITY007'", "brand = 42")


@pytest.fixture(scope="module", params=["delta", "iceberg"])
def server(request: pytest.FixtureRequest,
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int]]:
    """A Thrift server set up for one format (its jars, extensions and catalog)."""
    file_format = str(request.param)
    home = tmp_path_factory.mktemp(f"thrift_{file_format}")
    wanted = table_format(file_format)
    # On the server's own class path, as a server's jars folder would hold them: jars
    # added at run time are not seen by the classes Spark generates for its queries.
    jars = os.pathsep.join(str(jar) for jar in wanted.jar_files())
    conf = {**own_metastore(home), **wanted.settings, **SMALL_DATA,
            "spark.driver.extraClassPath": jars}
    with thrift_server(home, conf, SPARK_ENV) as port:
        _sql(port, f"create schema if not exists {SCHEMA}")
        yield file_format, port


def format_models(file_format: str) -> dict[str, str]:
    """A clustered table model and a clustered incremental one of ``file_format`` (the
    incremental one's format a var, to turn it into another), with `skip_coverage`."""
    return {
        "fmt_table.sql": "{{ config(materialized='table', hilbert_by=['city', 'brand'], "
                         f"file_count=8, file_format='{file_format}') }}}}" + CITY_BRAND_ROWS,
        "fmt_inc.sql": "{{ config(materialized='incremental', incremental_strategy='append', "
                       f"zorder_by=['city', 'brand'], file_count=8, "
                       f"file_format=var('file_format', '{file_format}')) }}}}" + CITY_BRAND_ROWS,
        "coverage.yml": skip_coverage_yml(["fmt_table", "fmt_inc"], PREDICATES),
    }


def _project(root: Path, port: int, file_format: str) -> Path:
    write_project(root, "thrift_formats", format_models(file_format),
                  thrift_profile(port, SCHEMA))
    return root


def _data_files(port: int, table: str, file_format: str) -> list[str]:
    """The table's live data files, from the format's own listing."""
    if file_format == "iceberg":
        return sorted(str(r[0]) for r in _sql(port, f"select file_path from {table}.files"))
    return sorted(str(r[0]) for r in _sql(port, f"select distinct input_file_name() from {table}")
                  if r[0])


def city_brand_rows(start: int, stop: int) -> str:
    """The models' rows with ids in [start, stop), as a query."""
    return CITY_BRAND_ROWS.replace("{{ var('start', 0) }}", str(start)).replace(
        "{{ var('stop', 4000) }}", str(stop))


def _expected(port: int, start: int, stop: int) -> list[tuple[object, ...]]:
    return sorted(_sql(port, city_brand_rows(start, stop)))


def check_clustered_format_table(properties: dict[str, str], files: list[str],
                                 file_format: str) -> None:
    """The format's statistics kept on the clustering columns, every engine skipping by
    them, and 4-8 files each sorted by the stored layout's key."""
    if file_format == "delta":
        assert properties["delta.dataSkippingStatsColumns"].startswith("`city`,`brand`")
    else:
        assert properties["write.metadata.metrics.column.city"] == "full"
    assert 4 <= len(files) <= 8, files
    for path in files:  # every file sorted by the stored layout's key
        keys = _file_keys(properties, path)
        assert keys == sorted(keys), path


def test_clustered_format_models_build_and_append_over_thrift(
        server: tuple[str, int], tmp_path: Path) -> None:
    file_format, port = server
    project = _project(tmp_path, port, file_format)

    built = " ".join(_dbt(project, "run").split())
    assert "keys in Spark SQL: no Python on the server" in built
    assert f"in its {file_format} statistics" in built
    assert "city depth" in built  # the layout figures, from the bounds read by SQL
    for model in ("fmt_table", "fmt_inc"):
        table = f"{SCHEMA}.{model}"
        assert sorted(_sql(port, f"select * from {table}")) == _expected(port, 0, 4000)
        properties = {str(k): str(v) for k, v in _sql(port, f"show tblproperties {table}")}
        check_clustered_format_table(properties, _data_files(port, table, file_format),
                                     file_format)

    # An append small against the table: the new rows' own run, keyed by the stored layout.
    appended = " ".join(_dbt(project, "run", "-s", "fmt_inc", "--vars",
                             json.dumps({"start": 4000, "stop": 4500})).split())
    assert "keyed with the table's stored layout" in appended
    # One larger than the table: the policy re-clusters it in full, by SQL.
    table = f"{SCHEMA}.fmt_inc"
    total = 12100 if file_format == "delta" else 12110  # Iceberg's: two writes more
    kept = FormatProject(project, project)
    if file_format == "delta":
        check_delta_reclustering_by_sql(kept, partial(_sql, port), table)
        check_partitions_reclustered_by_sql(kept, partial(_sql, port), SCHEMA,
                                            file_format=file_format)
        _auto_relayout(kept, file_format, SCHEMA, before_commit="format:keyed")
    else:
        check_killed_iceberg_reclustering_by_sql(kept, partial(_sql, port), table)
        check_iceberg_reclustering_by_sql_keeps_another_writer(kept, partial(_sql, port),
                                                               table)
        # cluster_by='auto' changing the table's layout by SQL, killed and then made.
        _auto_relayout(kept, file_format, SCHEMA)

    refused = " ".join(_dbt(project, "run-operation", "zspark_recluster", "--args",
                            json.dumps({"relation": table}), expect_pass=False).split())
    assert f"zspark_recluster: {table}: re-clustering some files of a {file_format} table needs " \
           f"`method: session`" in refused
    assert "--full-refresh --select fmt_inc" in refused
    assert sorted(_sql(port, f"select * from {table}")) == _expected(port, 0, total)

    # The model turned Parquet over its Delta or Iceberg table: refused, nothing written.
    other = " ".join(_dbt(project, "run", "-s", "fmt_inc", "--vars", json.dumps(
        {"start": 12000, "stop": 13000, "file_format": "parquet"}), expect_pass=False).split())
    assert f"Model 'fmt_inc': config 'file_format' is 'parquet' but {table} is a " \
           f"{file_format} table; run `dbt run --full-refresh --select fmt_inc`" in other
    assert sorted(_sql(port, f"select * from {table}")) == _expected(port, 0, total)

    tested = " ".join(_dbt(project, "test").split())
    assert "PASS=2" in tested, tested[-3000:]

    # A full refresh rebuilds it clustered over thrift, in one commit of the format.
    _dbt(project, "run", "-s", "fmt_inc", "--full-refresh", "--vars",
         json.dumps({"start": 0, "stop": 12000}))
    assert sorted(_sql(port, f"select * from {table}")) == _expected(port, 0, 12000)
    properties = {str(k): str(v) for k, v in _sql(port, f"show tblproperties {table}")}
    for path in _data_files(port, table, file_format):
        keys = _file_keys(properties, path)
        assert keys == sorted(keys), path


#: A statement run on the server, its rows returned (none for a statement without).
Sql = Callable[[str], list[tuple[Any, ...]]]


def branches(sql: Sql, table: str) -> list[str]:
    """An Iceberg table's references (main, and any branch a re-clustering left)."""
    return sorted(str(row[0]) for row in sql(f"select name from {table}.refs"))


def check_killed_iceberg_reclustering_by_sql(project: FormatProject, sql: Sql,
                                             table: str, store: Any = None) -> None:
    """Rows 4500-12000 appended to the Iceberg model of 0-4500: the run killed once its
    whole-table re-clustering was written on its branch leaves the table with every row
    once and the branch; the next (50 rows more), killed once main was fast-forwarded
    and before the new base is recorded, leaves every row once and no branch; the next
    (50 more) re-clusters the table by SQL again, every file sorted by the new base's
    key."""
    killed = project.dbt("run", "-s", "fmt_inc", "--vars",
                         json.dumps({"start": 4500, "stop": 12000}), stop_at="format:rewritten")
    assert killed.returncode == -signal.SIGKILL, killed.stdout[-3000:]
    assert sorted(sql(f"select * from {table}")) == sorted(sql(city_brand_rows(0, 12000)))
    assert [name for name in branches(sql, table) if name != "main"], "the killed run's branch"

    killed = project.dbt("run", "-s", "fmt_inc", "--vars",
                         json.dumps({"start": 12000, "stop": 12050}),
                         stop_at="format:fast_forwarded")
    assert killed.returncode == -signal.SIGKILL, killed.stdout[-3000:]
    assert sorted(sql(f"select * from {table}")) == sorted(sql(city_brand_rows(0, 12050)))
    assert branches(sql, table) == ["main"]
    operations = sql(f"select operation from {table}.snapshots order by committed_at")
    assert str(operations[-1][0]) == "overwrite", operations

    again = project.dbt("run", "-s", "fmt_inc", "--vars",
                        json.dumps({"start": 12050, "stop": 12100}))
    log = " ".join(again.stdout.split())
    assert again.returncode == 0, log[-3000:]
    assert "appended; the whole table re-clustered" in log, log[-3000:]
    assert "deferred" not in log, log[-3000:]
    check_whole_iceberg_table(sql, table, 12100, store)


def check_delta_reclustering_by_sql(project: FormatProject, sql: Sql, table: str,
                                    store: Any = None) -> None:
    """Rows 4500-12000 appended to the Delta model of 0-4500, the policy re-clustering the
    whole table by one ``insert overwrite``: another writer's append committed after
    the run keyed its rows and before its statement is read by that statement and kept.
    Another writer's 5 rows more, and ``zspark_recluster`` with ``full``, killed once its
    overwrite committed and before the new base is recorded, leaves every row once; the
    next run (90 rows more) finds
    the table unrecorded and re-clusters it again: every file sorted by the new base's
    key and recorded as the base, 12,100 rows."""
    gate = project.root / "gate_delta"
    run = project.paused("format:keyed", gate, "run", "-s", "fmt_inc", "--vars",
                         json.dumps({"start": 4500, "stop": 12000}))
    try:
        sql(f"insert into {table} {city_brand_rows(12000, 12005)}")
    finally:
        (gate / "resume").touch()
        output, _ = run.communicate(timeout=600)
    grown = " ".join(output.split())
    assert run.returncode == 0, grown[-5000:]
    assert "appended; the whole table re-clustered" in grown, grown[-3000:]
    assert "deferred" not in grown, grown[-3000:]
    check_whole_delta_table(sql, table, 12005, store)

    sql(f"insert into {table} {city_brand_rows(12005, 12010)}")  # rows to re-cluster
    killed = project.dbt("run-operation", "zspark_recluster", "--args",
                         json.dumps({"relation": table, "full": True}),
                         stop_at="format:overwritten")
    assert killed.returncode == -signal.SIGKILL, killed.stdout[-3000:]
    assert sorted(sql(f"select * from {table}")) == sorted(sql(city_brand_rows(0, 12010)))
    history = sql(f"describe history {table} limit 1")
    assert "Overwrite" in str(history[0]), history

    again = project.dbt("run", "-s", "fmt_inc", "--vars",
                        json.dumps({"start": 12010, "stop": 12100}))
    log = " ".join(again.stdout.split())
    assert again.returncode == 0, log[-3000:]
    assert "appended; the whole table re-clustered" in log, log[-3000:]
    check_whole_delta_table(sql, table, 12100, store)


def check_delta_log_replayed(sql: Sql, table: str, read: str = "log") -> None:
    """A Delta table's live files as dbt reads them over a server (``FormatTable.
    active_files_sql``: the log replayed by SQL, or with ``read='rows'`` the rows
    aggregated) against the table's own rows: exactly the files that hold rows, each
    one's row count exact, every bound one the file's rows lie within."""
    from dbt.adapters.zspark.formats import stats_columns
    from dbt.adapters.zspark.formats.delta import DeltaTable
    from dbt.adapters.zspark.reach.base import described
    from dbt.adapters.zspark.skipping.pruning import stat_column
    from dbt.adapters.zspark.skipping.sql_index import index_sql
    from dbt.adapters.zspark.skipping.stats import ColumnRef

    schema = described(sql(f"describe table {table}"))
    columns = stats_columns(schema, [], list(schema))
    replay = DeltaTable().active_files_sql(table, columns, sql)
    assert ("_delta_log" in replay) == (read == "log"), replay
    exact = index_sql(table, [ColumnRef((name,), kind) for name, kind in columns])
    picked = ", ".join(f"`{stat_column(name, stat)}`" for name, _ in columns
                       for stat in ("min", "max"))
    replayed, actual = ({str(row[0]): row[1:] for row in
                         sql(f"select file_path, row_count, {picked} from ({query}) z")}
                        for query in (replay, exact))
    assert set(replayed) == set(actual), (sorted(replayed), sorted(actual))
    bounded = 0
    for path, (rows, *bounds) in replayed.items():
        assert rows == actual[path][0], path
        for i, bound in enumerate(bounds):
            row_bound = actual[path][1 + i]
            if bound is not None and row_bound is not None:
                bounded += 1
                assert (bound <= row_bound) if i % 2 == 0 else (bound >= row_bound), \
                    (path, columns[i // 2], bound, row_bound)
    assert bounded > 0, replayed


def check_delta_log_replay_steps(sql: Sql, schema: str) -> None:
    """:func:`check_delta_log_replayed` on a table of its own: commits alone; a checkpoint
    in parts, then OPTIMIZE, a delete and a partition overwritten after it; a shallow
    clone of it appended to; with deletion vectors the rows are read instead."""
    table = f"{schema}.zspark_replayed"
    sql(f"drop table if exists {table}")
    sql(f"create table {table} (id bigint, s string, t timestamp, p int) using delta "
        f"partitioned by (p)")
    rows = ("select id, repeat(cast(id as string), 9), timestamp_millis(id * 1000003), "
            "cast(id % 3 as int) from range({}, {})")
    for lo in (0, 100, 200):
        sql(f"insert into {table} {rows.format(lo, lo + 100)}")
    check_delta_log_replayed(sql, table)  # versions 0-3: commits alone
    # Version 5's checkpoint in parts; then OPTIMIZE, a delete and a partition overwritten
    # in the commits after it (their removes replayed over the checkpoint's adds).
    sql("set spark.databricks.delta.checkpoint.partSize=4")
    try:
        sql(f"alter table {table} set tblproperties ('delta.checkpointInterval' = '5')")
        sql(f"insert into {table} {rows.format(300, 400)}")
    finally:
        sql("reset spark.databricks.delta.checkpoint.partSize")
    sql(f"optimize {table}")
    sql(f"delete from {table} where id % 7 = 0")
    sql(f"insert overwrite {table} partition (p = 1) select id, "
        f"repeat(cast(id as string), 9), timestamp_millis(id) from range(1000, 1010)")
    assert any("05.checkpoint.0000000001." in str(row[0]) for row in sql(
        f"select path from binaryFile.`{_location(sql, table)}/_delta_log`"))
    check_delta_log_replayed(sql, table)
    clone = f"{table}_clone"  # its log names the files it shares by their absolute paths
    sql(f"drop table if exists {clone}")
    sql(f"create table {clone} shallow clone {table}")
    sql(f"insert into {clone} {rows.format(2000, 2010)}")
    check_delta_log_replayed(sql, clone)
    sql(f"drop table {clone}")
    sql(f"alter table {table} set tblproperties ('delta.enableDeletionVectors' = 'true')")
    sql(f"delete from {table} where id % 5 = 0")
    check_delta_log_replayed(sql, table, read="rows")
    sql(f"drop table {table}")


def _location(sql: Sql, table: str) -> str:
    return next(str(row[1]) for row in sql(f"describe table extended {table}")
                if row[0] == "Location")


def check_whole_delta_table(sql: Sql, table: str, rows: int, store: Any = None) -> None:
    """Every row once, and every live file recorded as the clustered base and sorted by
    its key."""
    assert sorted(sql(f"select * from {table}")) == sorted(sql(city_brand_rows(0, rows)))
    check_recorded_and_sorted(sql, table, f"select distinct _metadata.file_path from {table}",
                              store)


def check_recorded_and_sorted(sql: Sql, table: str, listed: str, store: Any = None) -> None:
    """Every file the ``listed`` query gives recorded as the clustered base and sorted by
    its key."""
    properties = {str(k): str(v) for k, v in sql(f"show tblproperties {table}")}
    files = [str(r[0]) for r in sql(listed)]
    assert set(clustered_writes(properties)) == {write_id(path) for path in files}
    for path in files:
        keys = _file_keys(properties, path, store)
        assert keys == sorted(keys), path


def check_iceberg_reclustering_by_sql_keeps_another_writer(project: FormatProject, sql: Sql,
                                                           table: str) -> None:
    """``zspark_recluster`` with ``full`` over the model of 12,100 rows: deferred by
    another writer's append while it ran, then done; 12,110 rows in the end."""
    # Another writer's appends, the second while ``zspark_recluster`` holds its rows on
    # the branch: main has moved, the fast-forward is refused, nothing of it shows.
    recluster = ("run-operation", "zspark_recluster", "--args",
                 json.dumps({"relation": table, "full": True}))
    sql(f"insert into {table} {city_brand_rows(12100, 12105)}")  # rows to merge
    gate = project.root / "gate"
    run = project.paused("format:rewritten", gate, *recluster)
    try:
        sql(f"insert into {table} {city_brand_rows(12105, 12110)}")
    finally:
        (gate / "resume").touch()
        output, _ = run.communicate(timeout=600)
    assert run.returncode == 0, output[-5000:]
    assert "re-clustering deferred to a later zspark_recluster: another writer committed" \
        in " ".join(output.split()), output[-5000:]
    assert sorted(sql(f"select * from {table}")) == sorted(sql(city_brand_rows(0, 12110)))
    assert branches(sql, table) == ["main"]

    full = project.dbt(*recluster)
    assert full.returncode == 0, full.stdout[-3000:]
    assert "deferred" not in full.stdout, full.stdout[-3000:]
    check_whole_iceberg_table(sql, table, 12110)


#: A partitioned clustered Iceberg model: ids below 2000 in partitions of a thousand, the
#: rest in partition 2.
def partitioned_rows(rows: str) -> str:
    """``rows`` (of CITY_BRAND_ROWS) with their partition."""
    return f"select *, cast(least(id div 1000, 2) as int) as part from ({rows}) zspark_rows"


def partitioned_model(file_format: str) -> str:
    """A partitioned clustered incremental model of ``file_format``."""
    return ("{{ config(materialized='incremental', incremental_strategy='append', "
            f"zorder_by=['city', 'brand'], file_count=3, file_format='{file_format}', "
            "partition_by=['part']) }}\n" + partitioned_rows(CITY_BRAND_ROWS))


def check_partitions_reclustered_by_sql(project: FormatProject, sql: Sql, schema: str,
                                        store: Any = None, file_format: str = "iceberg",
                                        ) -> None:
    """A partitioned model over a server, built with ids 0-3000: an append of 600 rows,
    all in partition 2 (its base 1000 rows), re-clusters that partition alone by SQL (a
    dynamic overwrite; Iceberg's on a branch): partitions 0 and 1 keep their files, every
    row is there once, partition 2's files are new, each sorted by the key, and every
    live file is recorded as the clustered base."""
    table = f"{schema}.fmt_parts"
    project.write("models/fmt_parts.sql", partitioned_model(file_format))

    def run(start: int, stop: int) -> str:
        done = project.dbt("run", "-s", "fmt_parts", "--vars",
                           json.dumps({"start": start, "stop": stop}))
        assert done.returncode == 0, done.stdout[-3000:]
        return " ".join(done.stdout.split())

    listed = (f"select file_path from {table}.files" if file_format == "iceberg"
              else f"select distinct _metadata.file_path from {table}")

    def files() -> dict[str, set[str]]:
        found: dict[str, set[str]] = {}
        for (path,) in sql(listed):
            found.setdefault(str(path).rsplit("/", 2)[-2], set()).add(str(path))
        return found

    run(0, 3000)
    before = files()
    assert sorted(before) == ["part=0", "part=1", "part=2"], before
    grown = run(10000, 10600)
    assert "deferred" not in grown, grown[-3000:]
    after = files()
    assert after["part=0"] == before["part=0"]
    assert after["part=1"] == before["part=1"]
    assert not after["part=2"] & before["part=2"], "partition 2 rewritten"
    expected = [*sql(partitioned_rows(city_brand_rows(0, 3000))),
                *sql(partitioned_rows(city_brand_rows(10000, 10600)))]
    assert sorted(sql(f"select * from {table}")) == sorted(expected)
    if file_format == "iceberg":
        assert branches(sql, table) == ["main"]
    properties = {str(k): str(v) for k, v in sql(f"show tblproperties {table}")}
    live = set().union(*after.values())
    assert set(clustered_writes(properties)) == {write_id(path) for path in live}
    for path in after["part=2"]:
        keys = _file_keys(properties, path, store)
        assert keys == sorted(keys), path


def check_whole_iceberg_table(sql: Sql, table: str, rows: int, store: Any = None) -> None:
    """Every row once, no branch of zspark's left, the last snapshot main's overwrite,
    and every file recorded as the clustered base and sorted by its key (``store``:
    pyarrow's file system of the warehouse, on S3)."""
    assert sorted(sql(f"select * from {table}")) == sorted(sql(city_brand_rows(0, rows)))
    assert branches(sql, table) == ["main"]
    operations = sql(f"select operation from {table}.snapshots order by committed_at")
    assert str(operations[-1][0]) == "overwrite", operations
    check_recorded_and_sorted(sql, table, f"select file_path from {table}.files", store)


def test_format_models_merge_overwrite_partitions_and_run_batches_over_thrift(
        server: tuple[str, int], tmp_path: Path) -> None:
    """Over thrift, clustered Delta or Iceberg models merge on their unique key, replace
    whole partitions and run daily batches, one day processed again: each id once, the
    rows a run replaced gone, the other partitions and days as built (rows checked by
    query; the files' keys are checked for builds and appends above)."""
    file_format, port = server
    write_project(tmp_path, "thrift_strategies", FORMAT_STRATEGY_MODELS,
                  thrift_profile(port, SCHEMA))
    # The server's schema is the module's: the test above left a Z-ordered fmt_parts of
    # its own (check_partitions_reclustered_by_sql), which this project's model is not.
    _sql(port, f"drop table if exists {SCHEMA}.fmt_parts")
    for args, variables in STRATEGY_RUNS:
        _dbt(tmp_path, "run", *args, "--vars", json.dumps({"format": file_format, **variables}))
    found = {model: sorted(_sql(port, query.format(table=f"{SCHEMA}.{model}")))
             for model, query in STRATEGY_QUERIES.items()}
    assert found == STRATEGY_ROWS
