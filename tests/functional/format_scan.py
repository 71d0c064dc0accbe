"""Point queries on a Delta or Iceberg table read by a Spark of their own (a new JVM
with the format's jars, the metastore of a dbt project's session): the rows and the data
files Spark opened, from its scan metrics. Run as
``python -m tests.functional.format_scan <format> <session_dir> <queries as JSON>``;
prints per query [rows, files opened, the first row's values], or for
``bounds of <table>`` the check of :func:`bound_violations`, for ``snapshots of <table>``
the rows of each Iceberg snapshot (:func:`snapshot_rows`), for ``replay of <table>`` a
Delta log replayed by SQL against the snapshot (:func:`replayed_logs`)."""

from __future__ import annotations

import json
import sys
from typing import Any

from pyspark.sql import SparkSession

from dbt.adapters.zspark.connections import with_session_defaults
from dbt.adapters.zspark.formats.settings import with_table_format
from dbt.adapters.zspark.reach.session.jvm import SessionJvm
from tests.harness.scan_metrics import files_opened

#: "Queries" that ask for the checks below rather than rows.
BOUNDS, SNAPSHOTS, SAMPLE, REPLAY = "bounds of ", "snapshots of ", "sample of ", "replay of "
#: Files an advice's sample reads in :func:`sample_of_files` (the adapter's bound is
#: 1,024; a test's tables hold a few dozen).
SAMPLED_FILES = 4


def bound_violations(spark: SparkSession, table_format: str, table: str) -> list[Any]:
    """[files, how many (file, column) bounds zspark reads from the format's statistics
    that a file's rows lie outside of, the columns checked]: every column's actual
    min / max per file (Spark reading the rows) against the bounds."""
    from dbt.adapters.zspark.formats import format_table, stats_columns
    from dbt.adapters.zspark.reach.frames.clustering import model_schema

    schema = model_schema(spark, f"select * from {table}")
    columns = [name for name, _ in stats_columns(schema, [], list(schema))]
    written_as = format_table(table_format)
    stats = written_as.active_files(SessionJvm(spark), table,
                                    stats_columns(schema, [], columns)).toPandas()
    picked = ", ".join(f"min(`{c}`) as `{c}__lo`, max(`{c}`) as `{c}__hi`" for c in columns)
    actual = spark.sql(f"select input_file_name() as f, {picked} from {table} group by 1")

    found = {_plain(r["f"]): r for r in actual.collect()}
    violations = 0
    for _, row in stats.iterrows():
        rows = found[_plain(row["file_path"])]
        for c in columns:
            low, high = row[f"{c}__min"], row[f"{c}__max"]
            lo, hi = rows[f"{c}__lo"], rows[f"{c}__hi"]
            if low is not None and low == low and lo is not None and low > lo:
                violations += 1
            if high is not None and high == high and hi is not None and high < hi:
                violations += 1
    return [len(stats), violations, columns]


def snapshot_rows(spark: SparkSession, table: str) -> list[list[Any]]:
    """Each snapshot of an Iceberg table with an ``id`` column, oldest first: [its
    operation ('build' for one without a parent: a create or replace), its rows, its
    distinct ids], read by time travel."""
    found = []
    for snapshot_id, parent, operation in spark.sql(
            f"select snapshot_id, parent_id, operation from {table}.snapshots "
            f"order by committed_at").collect():
        rows, ids = spark.sql(f"select count(*), count(distinct id) from {table} "
                              f"version as of {snapshot_id}").first()
        found.append(["build" if parent is None else operation, rows, ids])
    return found


def sample_of_files(spark: SparkSession, table_format: str, table: str) -> list[Any]:
    """An advice's sample of a Delta or Iceberg table from :data:`SAMPLED_FILES` of its
    live files, read as the advisor reads them (its data files as Parquet,
    ``table_sample.data_files_source``): [live files, the files Spark opened for the
    sample's count, that count, the rows of the same files read through the table]."""
    from dbt.adapters.zspark.advice.table_sample import (
        count_sql,
        data_files_source,
        sampled_files,
    )
    from dbt.adapters.zspark.formats import format_table, stats_columns
    from dbt.adapters.zspark.reach.frames.clustering import model_schema

    schema = model_schema(spark, f"select * from {table}")
    paths = sorted(str(r[0]) for r in format_table(table_format).active_files(
        SessionJvm(spark), table, stats_columns(schema, [], list(schema)[:1]))
        .select("file_path").collect())
    properties = {str(r[0]): str(r[1]) for r in
                  spark.sql(f"show tblproperties {table}").collect()}
    source = data_files_source(properties, paths)
    assert source is not None, (properties, paths[:3])
    chosen = sampled_files(paths, SAMPLED_FILES)
    counted = spark.sql(count_sql(source, chosen))
    [(rows,)] = counted.collect()
    per_file = spark.sql(f"select input_file_name(), count(*) from {table} group by 1")
    wanted = {_plain(p) for p in chosen}
    through_table = sum(n for path, n in per_file.collect() if _plain(path) in wanted)
    return [len(paths), files_opened(counted), rows, through_table]


def replayed_logs(spark: SparkSession, table: str) -> list[list[Any]]:
    """A Delta table's live files as its log replayed by SQL gives them (what a reach
    without the JVM reads) against the session's snapshot of it: for ``table``, then for
    each step of a table of its own in the same schema (commits alone, a checkpoint in
    parts, OPTIMIZE, a delete, a partition overwritten, deletion vectors): [step, live
    files, how the SQL read them ('log' or 'rows'), whether its rows equal the
    snapshot's (read from the rows: its files)]."""
    from dbt.adapters.zspark.formats import stats_columns
    from dbt.adapters.zspark.formats.delta import DeltaTable
    from dbt.adapters.zspark.reach.frames.clustering import model_schema

    def fetch(sql: str) -> list[tuple[Any, ...]]:
        return [tuple(row) for row in spark.sql(sql).collect()]

    def compared(step: str, name: str) -> list[Any]:
        schema = model_schema(spark, f"select * from {name}")
        columns = stats_columns(schema, [], list(schema))
        sql = DeltaTable().active_files_sql(name, columns, fetch)
        live = DeltaTable().active_files(SessionJvm(spark), name, columns).collect()
        replayed = spark.sql(sql).collect()
        read = "log" if "_delta_log" in sql else "rows"
        if read == "rows":  # exact bounds from the rows: the same files, other figures
            live, replayed = ([row["file_path"] for row in rows] for rows in (live, replayed))
        # repr: a NaN bound equals itself
        return [step, len(live), read, sorted(map(repr, live)) == sorted(map(repr, replayed))]

    found = [compared("model", table)]
    own = f"{table.rsplit('.', 1)[0]}.zspark_replayed"
    spark.sql(f"drop table if exists {own}")
    spark.sql(f"create table {own} (id bigint, s string, t timestamp, p int) using delta "
              f"partitioned by (p)")
    rows = ("select id, repeat(cast(id as string), 9), timestamp_millis(id * 1000003), "
            "cast(id % 3 as int) from range({}, {})")
    for lo in (0, 100, 200):
        spark.sql(f"insert into {own} {rows.format(lo, lo + 100)}")
    found.append(compared("commits", own))
    spark.conf.set("spark.databricks.delta.checkpoint.partSize", "4")
    spark.sql(f"alter table {own} set tblproperties ('delta.checkpointInterval' = '2')")
    spark.sql(f"insert into {own} {rows.format(300, 400)}")
    found.append(compared("checkpoint in parts", own))
    spark.conf.unset("spark.databricks.delta.checkpoint.partSize")
    spark.sql(f"optimize {own}")
    found.append(compared("optimize", own))
    spark.sql(f"delete from {own} where id % 7 = 0")
    spark.sql(f"insert overwrite {own} partition (p = 1) select id, "
              f"repeat(cast(id as string), 9), timestamp_millis(id) from range(1000, 1010)")
    found.append(compared("delete, overwrite", own))
    spark.sql(f"alter table {own} set tblproperties ('delta.enableDeletionVectors' = 'true')")
    spark.sql(f"delete from {own} where id % 5 = 0")
    found.append(compared("deletion vectors", own))
    spark.sql(f"drop table {own}")
    return found


def _plain(path: str) -> str:
    """A local file's path however Spark or a format spells its URI."""
    return "/" + path.removeprefix("file:").lstrip("/")


def main(table_format: str, session_dir: str, queries: list[str]) -> list[list[Any]]:
    builder = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
    for key, value in with_session_defaults(with_table_format({}, table_format),
                                            session_dir).items():
        builder = builder.config(key, str(value))
    spark = builder.enableHiveSupport().getOrCreate()
    found = []
    for sql in queries:
        if sql.startswith(BOUNDS):
            found.append(bound_violations(spark, table_format, sql.removeprefix(BOUNDS)))
            continue
        if sql.startswith(SAMPLE):
            found.append(sample_of_files(spark, table_format, sql.removeprefix(SAMPLE)))
            continue
        if sql.startswith(REPLAY):
            found.append(replayed_logs(spark, sql.removeprefix(REPLAY)))
            continue
        if sql.startswith(SNAPSHOTS):
            found.append(snapshot_rows(spark, sql.removeprefix(SNAPSHOTS)))
            continue
        frame = spark.sql(sql)
        rows = frame.collect()
        first = [str(v) if v is not None else None for v in rows[0]] if rows else []
        found.append([len(rows), files_opened(frame), first])
    spark.stop()
    return found


if __name__ == "__main__":
    print("FORMAT_SCAN " + json.dumps(main(sys.argv[1], sys.argv[2], json.loads(sys.argv[3]))))
