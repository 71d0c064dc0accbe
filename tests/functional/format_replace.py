"""A replacement commit of each format checked in a Spark of its own (the format's jars
load when a JVM starts): ``python -m tests.functional.format_replace <format> <dir>``
prints ``FORMAT_REPLACE`` and a JSON of what it found.

Three inserts make three files; the first two are replaced by their rows (read from those
two files alone) sorted the other way, and while that rewrite is under way (inside its
``rewrite``) another insert commits: it must be kept, every row seen once, the commit
must change no data, and time travel to the version before must give that version's
rows."""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

from dbt.adapters.zspark.connections import with_session_defaults
from dbt.adapters.zspark.formats import committing_table
from dbt.adapters.zspark.formats.settings import with_table_format
from dbt.adapters.zspark.reach.session.jvm import SessionJvm
from tests.harness.scan_metrics import files_opened


def main(table_format: str, session_dir: str) -> dict[str, Any]:
    builder = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
    for key, value in with_session_defaults(with_table_format({}, table_format),
                                            session_dir).items():
        builder = builder.config(key, str(value))
    spark = builder.enableHiveSupport().getOrCreate()
    table = "default.replaced"
    spark.sql(f"drop table if exists {table}")
    spark.sql(f"create table {table} (id bigint, a int) using {table_format}")
    for low in (0, 100, 200):
        spark.sql(f"insert into {table} select id, cast(id % 7 as int) from "
                  f"range({low}, {low + 100}) order by id")
    written_as = committing_table(table_format)
    files = sorted(str(r[0]) for r in
                   written_as.active_files(SessionJvm(spark), table, [("id", "bigint")])
                   .where("id__min < 200").select("file_path").collect())

    opened: list[int] = []

    def rewrite(rows: DataFrame, concurrent: int | None = None) -> DataFrame:
        read = rows.select("id")
        read.collect()
        # The rewritten files alone, not the table's. Iceberg's staged scan reports no
        # files, but the splits its tasks read: one per file this small.
        opened.append(files_opened(read, ("numFiles",) if table_format == "delta"
                                   else ("numSplits",)))
        if concurrent is not None:  # another writer commits while this one is under way
            spark.sql(f"insert into {table} select id, 9 from "
                      f"range({concurrent}, {concurrent + 10})")
        return rows.repartition(1).sortWithinPartitions("a", "id")

    def live(low: int, high: int) -> list[str]:
        return sorted(str(r[0]) for r in
                      written_as.active_files(SessionJvm(spark), table, [("id", "bigint")])
                      .where(f"id__min >= {low} and id__max < {high}")
                      .select("file_path").collect())

    before = _version(spark, table, table_format)
    version = written_as.replace_files(SessionJvm(spark), table, files,
                                       lambda rows: rewrite(rows, concurrent=300))
    found: dict[str, Any] = {"files_rewritten": len(files), "version": version,
                             "files_read": opened[0]}
    found["rows"] = _rows(spark, table)
    path = "_metadata.file_path" if table_format == "delta" else "_file"
    found["files_after"] = spark.sql(
        f"select count(distinct {path}) from {table}").collect()[0][0]
    found["history"] = _history(spark, table, table_format)
    found["before_rows"] = _rows_at(spark, table, table_format, before)
    try:
        written_as.replace_files(SessionJvm(spark), table, files, rewrite)
    except Exception as error:  # the files are gone: refused, nothing committed
        found["stale"] = type(error).__name__ + ": " + str(error)[:200]
    found["history_after_stale"] = len(_history(spark, table, table_format))

    # Table properties made of the new files, set in the same commit: alone, and with
    # another writer committing meanwhile (Delta: a conflict, nothing of it committed).
    def new_files(paths: list[str]) -> dict[str, str]:
        return {"zspark.test.new_files": str(len(paths))}

    written_as.replace_files(SessionJvm(spark), table, live(0, 200), rewrite, new_files)
    found["property"] = _properties(spark, table).get("zspark.test.new_files")
    try:
        written_as.replace_files(SessionJvm(spark), table, live(0, 200),
                                 lambda rows: rewrite(rows, concurrent=400), new_files)
        found["with_properties_and_a_writer"] = "committed"
    except Exception as error:
        found["with_properties_and_a_writer"] = type(error).__name__ + ": " + str(error)[:300]
    found["rows_at_end"] = _rows(spark, table)
    found["history_at_end"] = _history(spark, table, table_format)
    if table_format == "delta":
        found["by_sql"] = _delta_by_sql(spark, table, Path(session_dir) / "gate")
    return found


def _delta_by_sql(spark: SparkSession, table: str, gate: Path) -> dict[str, Any]:
    """A Delta table replaced by SQL alone (a server's way): held inside its statement
    while another engine (delta-rs) appends 5 rows, it fails and commits nothing; then
    it replaces every file, the new ones handed to ``properties``."""
    from deltalake import write_deltalake

    gate.mkdir(parents=True, exist_ok=True)
    location = str(spark.sql(f"describe detail {table}").collect()[0]["location"])

    def held(value: int) -> int:  # on an executor: waits for the other engine's append
        (gate / "started").touch()
        while not (gate / "go").exists():
            time.sleep(0.05)
        return value

    spark.udf.register("zspark_test_held", held, "bigint")

    def append_meanwhile() -> None:
        while not (gate / "started").exists():
            time.sleep(0.05)
        write_deltalake(location, pa.table({"id": pa.array(range(500, 505), pa.int64()),
                                            "a": pa.array([9] * 5, pa.int32())}),
                        mode="append")
        (gate / "go").touch()

    def execute(sql: str) -> Any:
        return spark.sql(sql).collect()

    def fetch(sql: str) -> list[tuple[Any, ...]]:
        return [tuple(row) for row in spark.sql(sql).collect()]

    def overwrite(select: str) -> Callable[[str, str, bool], None]:
        return lambda target, source, dynamic: execute(
            f"insert overwrite {target} select {select}, a from {source}")

    found: dict[str, Any] = {}
    writer = threading.Thread(target=append_meanwhile)
    writer.start()
    try:
        committing_table("delta").replace_by_sql(fetch, execute, table,
                                                 overwrite("zspark_test_held(id) as id"),
                                                 location=lambda: location)
        found["held"] = "committed"
    except Exception as error:
        found["held"] = str(error)[:300]
    writer.join()
    found["rows_after_held"] = _rows(spark, table)
    handed: list[str] = []

    def new_files(paths: list[str]) -> dict[str, str]:
        handed.extend(paths)
        return {"zspark.test.by_sql": str(len(paths))}

    found["version"] = committing_table("delta").replace_by_sql(
        fetch, execute, table, overwrite("id"), new_files, location=lambda: location)
    found["rows"] = _rows(spark, table)
    live = {str(r[0]) for r in spark.sql(f"select _metadata.file_path from {table}").collect()}
    found["handed_are_live"] = sorted(handed) == sorted(live)
    found["handed"] = len(handed)
    found["property"] = _properties(spark, table).get("zspark.test.by_sql")
    found["last"] = [(str(r[0]), str(r[1])) for r in spark.sql(
        f"describe history {table} limit 2").select("version", "operation").collect()]
    return found


def _rows(spark: SparkSession, table: str) -> list[list[int]]:
    return [[int(v) for v in r] for r in spark.sql(
        f"select count(*), count(distinct id), sum(id) from {table}").collect()]


def _properties(spark: SparkSession, table: str) -> dict[str, str]:
    return {str(r[0]): str(r[1]) for r in spark.sql(f"show tblproperties {table}").collect()}


def _version(spark: SparkSession, table: str, table_format: str) -> str:
    if table_format == "delta":
        return str(spark.sql(f"describe history {table}").collect()[0]["version"])
    return str(spark.sql(f"select snapshot_id from {table}.snapshots order by committed_at "
                         f"desc limit 1").collect()[0][0])


def _history(spark: SparkSession, table: str, table_format: str) -> list[str]:
    if table_format == "delta":
        return [str(r[0]) for r in spark.sql(f"describe history {table}")
                .orderBy("version").select("operation").collect()]
    return [str(r[0]) for r in spark.sql(
        f"select operation from {table}.snapshots order by committed_at").collect()]


def _rows_at(spark: SparkSession, table: str, table_format: str, version: str) -> int:
    return int(spark.sql(f"select count(*) from {table} version as of {version}")
               .collect()[0][0])


if __name__ == "__main__":
    print("FORMAT_REPLACE " + json.dumps(main(sys.argv[1], sys.argv[2]), default=str))
