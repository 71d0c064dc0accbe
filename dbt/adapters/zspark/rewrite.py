"""Re-clustering on Spark: rewrite some runs of a table, keep the rest, swap atomically.

Parquet tables have no transaction log, so a re-clustering builds the table's next version
beside it: a staging table created like it holds the rewritten rows, written by Spark, and
the files that stay, linked in under the same relative paths (hard links on a local file
system: no byte is copied; other file systems copy the file and keep its modification
time). Its rows are counted from the footers and must equal the table's plus the new rows
before the staging table replaces the table by the same two renames as a table build.
Until then the table and its index are untouched; a failure leaves a staging table that
the next build or re-clustering drops.
"""

from __future__ import annotations

import os
import urllib.parse
from collections.abc import Collection, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from dbt.adapters.zspark.layout_state import CLUSTERED_WRITES_KEY, PREFIX, write_id
from dbt.adapters.zspark.recluster import Run
from dbt.adapters.zspark.sqltext import property_list, quote, sql_string

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

#: Table properties Spark keeps for itself; everything else moves to the next version.
_SPARK_PROPERTIES = ("option.", "spark.sql.", "transient_lastDdlTime", "is_managed_location")
#: The directory value Spark writes for a null table partition value.
NULL_PARTITION = "__HIVE_DEFAULT_PARTITION__"

#: A table partition: its values as Spark casts them to strings (None: null).
Partition = tuple[str | None, ...]


def file_partition(path: str, partition_by: Sequence[str]) -> Partition:
    """The table partition a data file lies in, from its ``column=value`` directories.

    Paths are URIs (``%`` and reserved characters escaped) over Spark's escaping of the
    value inside the directory name, so a value is unescaped twice.
    """
    directories = urllib.parse.urlsplit(path).path.split("/")[-1 - len(partition_by):-1]
    values: list[str | None] = []
    for directory in directories:
        _, _, value = urllib.parse.unquote(directory).partition("=")
        decoded = urllib.parse.unquote(value)
        values.append(None if decoded == NULL_PARTITION else decoded)
    return tuple(values)


def in_partitions(index_rows: Iterable[tuple[str, int, int]], partition_by: Sequence[str],
                  partitions: Collection[Partition]) -> list[tuple[str, int, int]]:
    """The index rows (path, rows, modification time) of files in ``partitions``."""
    return [row for row in index_rows if file_partition(row[0], partition_by) in partitions]


def table_runs(index_rows: Iterable[tuple[str, int, int]],
               clustered_writes: set[str]) -> list[Run]:
    """The runs of a table from its index rows (path, rows, modification time in ms):
    files grouped by the write that made them; a file of unknown write is its own run."""
    grouped: dict[str, list[tuple[str, int, int]]] = {}
    for path, rows, mtime in index_rows:
        grouped.setdefault(write_id(path) or path, []).append((path, rows, mtime))
    return [Run(write=write, paths=tuple(sorted(p for p, _, _ in files)),
                rows=sum(r for _, r, _ in files), written_at=min(m for _, _, m in files),
                clustered=write in clustered_writes)
            for write, files in grouped.items()]


def carried_properties(properties: dict[str, str], new_layout: dict[str, str] | None,
                       clustered_writes: dict[str, str] | None) -> dict[str, str]:
    """The table properties of the next version: the user's and the stored layout, the
    layout replaced by ``new_layout`` (a full re-clustering) and the clustered writes by
    ``clustered_writes`` when given."""
    carried = {k: v for k, v in properties.items() if not k.startswith(_SPARK_PROPERTIES)}
    if new_layout is not None:
        carried = {k: v for k, v in carried.items() if not k.startswith(PREFIX)}
        carried.update(new_layout)
    if clustered_writes is not None:
        carried.pop(CLUSTERED_WRITES_KEY, None)
        carried.update(clustered_writes)
    return carried


def set_properties_sql(table: str, properties: dict[str, str]) -> str:
    return f"alter table {table} set tblproperties {property_list(properties)}"


def rows_of_files_sql(table: str, columns: Sequence[str], paths: Sequence[str] | None) -> str:
    """The rows of some of a Parquet table's data files (all of them for None), in its
    column order; Spark opens only the files named (a Delta or Iceberg scan prunes no file
    by a row's file: its rewrite is given a scan of its files instead)."""
    select = f"select {', '.join(quote(c) for c in columns)} from {table}"
    if paths is None:
        return select
    return f"{select} where _metadata.file_path in ({', '.join(map(sql_string, paths))})"


#: Settings of a statement that copies files one to one: every file read whole by a task
#: of its own (a split as large as any file, and opening a file costs a whole split), and
#: written uncut.
FILE_PER_TASK = {"spark.sql.files.maxPartitionBytes": str(2**40),
                 "spark.sql.files.openCostInBytes": str(2**40),
                 "spark.sql.files.maxRecordsPerFile": "0"}


def copy_files_sql(table: str, target: str, columns: Sequence[str], paths: Sequence[str],
                   partition_by: Sequence[str]) -> str:
    """Copy some data files of ``table`` into ``target``, each to one file with its rows in
    the same order (run with :data:`FILE_PER_TASK`): for servers that write files only
    through SQL, where a file cannot be linked."""
    order = [*(quote(p) for p in partition_by), "_metadata.row_index"]
    return (f"insert into {target} {rows_of_files_sql(table, columns, paths)} "
            f"sort by {', '.join(order)}")


def link_files(spark: SparkSession, paths: Sequence[str], source_root: str,
               target_root: str) -> list[str]:
    """Make each file under ``source_root`` also appear under ``target_root`` at the same
    relative path; returns the new paths."""
    linked = []
    for path in paths:
        if not path.startswith(source_root + "/"):
            raise ValueError(f"{path} is not under {source_root}")
        target = target_root + path[len(source_root):]
        _link_or_copy(spark, path, target)
        linked.append(target)
    return linked


def _local(path: str) -> str | None:
    if path.startswith("file:"):
        return "/" + path[len("file:"):].lstrip("/")
    return None


def _link_or_copy(spark: SparkSession, source: str, target: str) -> None:
    local_source, local_target = _local(source), _local(target)
    if local_source is not None and local_target is not None:
        os.makedirs(os.path.dirname(local_target), exist_ok=True)
        try:
            os.link(local_source, local_target)
            return
        except OSError:  # another device, or links not allowed: copy it
            import shutil

            shutil.copy2(local_source, local_target)
            return
    jvm: Any = spark.sparkContext._jvm
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    source_path, target_path = jvm.org.apache.hadoop.fs.Path(source), \
        jvm.org.apache.hadoop.fs.Path(target)
    source_fs, target_fs = source_path.getFileSystem(conf), target_path.getFileSystem(conf)
    jvm.org.apache.hadoop.fs.FileUtil.copy(source_fs, source_path, target_fs, target_path,
                                           False, conf)
    mtime = source_fs.getFileStatus(source_path).getModificationTime()
    target_fs.setTimes(target_path, mtime, -1)  # the index knows a file by path, size, mtime
