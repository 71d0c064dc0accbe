"""Re-clustering on Spark: rewrite some runs of a table, keep the rest.

Parquet tables have no transaction log. A re-clustering writes its rows with Spark, counts
them from the footers (they must equal the rows rewritten plus the new rows) and only then
changes the table: a full one swaps in a new version (``swap.py``); a partial one in a
session publishes its files in place of those it rewrote (``table_versions.py``); a server,
which writes only through SQL, copies the files that stay into a new version and swaps it
in. Until then the table and its index are untouched; a failure leaves a staging table
that the next build or re-clustering drops.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Collection, Iterable, Mapping, Sequence

from dbt.adapters.zspark.core.sql_text import property_list, quote, sql_string
from dbt.adapters.zspark.layouts.layout_state import CLUSTERED_WRITES_KEY, PREFIX, write_id
from dbt.adapters.zspark.versions.recluster import Run

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


def whole_partitions(replaced: Collection[str], kept: Collection[str],
                     partition_by: Sequence[str] | None) -> bool:
    """Whether the files ``replaced`` are every file of the table partitions they lie in:
    no file ``kept`` shares one of them (never on an unpartitioned table).

    >>> whole_partitions(["t/b=1/x", "t/b=1/y"], ["t/b=2/z"], ["b"])
    True
    >>> whole_partitions(["t/b=1/x"], ["t/b=1/y", "t/b=2/z"], ["b"])
    False
    >>> whole_partitions(["t/x"], ["t/y"], [])
    False
    """
    if not partition_by:
        return False
    touched = {file_partition(path, partition_by) for path in replaced}
    return all(file_partition(path, partition_by) not in touched for path in kept)


def in_partitions(index_rows: Iterable[tuple[str, int, int]], partition_by: Sequence[str],
                  partitions: Collection[Partition]) -> list[tuple[str, int, int]]:
    """The index rows (path, rows, modification time) of files in ``partitions``."""
    return [row for row in index_rows if file_partition(row[0], partition_by) in partitions]


def table_runs(index_rows: Iterable[tuple[str, int, int]],
               clustered_writes: set[str],
               commits: Mapping[str, str] | None = None) -> list[Run]:
    """The runs of a table from its index rows (path, rows, modification time in ms):
    files grouped by the write that made them; a file of unknown write is its own run.
    ``commits`` (file name -> commit, a Delta table's): a file outside the clustered
    writes is of the commit that added it, where its name tells no shared write.

    >>> [r.rows for r in table_runs([("t/a1", 5, 1), ("t/a2", 5, 1), ("t/b", 7, 2)],
    ...                             {"t/b"}, {"a1": "c1", "a2": "c1", "b": "c0"})]
    [10, 7]
    """
    grouped: dict[str, list[tuple[str, int, int]]] = {}
    for path, rows, mtime in index_rows:
        write = write_id(path) or path
        if commits and write not in clustered_writes:
            write = commits.get(path.rsplit("/", 1)[-1], write)
        grouped.setdefault(write, []).append((path, rows, mtime))
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


def stale_layout_keys(properties: Mapping[str, str],
                      new_layout: Mapping[str, str] | None) -> list[str]:
    """The layout keys of ``properties`` that ``new_layout`` (set over them) leaves behind:
    parts past its count, unread but kept out of the table's properties.

    >>> stale_layout_keys({"zspark.layout.parts": "3", "zspark.layout.2": "c", "x": "y"},
    ...                   {"zspark.layout.parts": "2"})
    ['zspark.layout.2']
    """
    if not new_layout:
        return []
    return sorted(k for k in properties
                  if k.startswith(f"{PREFIX}.") and k not in new_layout
                  and k[len(PREFIX) + 1:].isdigit())


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
