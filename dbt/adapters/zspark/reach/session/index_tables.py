"""A Parquet table's ``__zindex`` in a session: read from the files' footers and written.

The executors read the footers through the session's Hadoop file systems
(``hadoop_files.py``: one listing per folder by the driver, one ranged read per footer, a
few in flight in each task), so an index is built wherever the session's storage settings
reach. Up to a few thousand footers the driver parses them (a few MB, and no Python
workers to start); more, the executors parse, and the driver's work grows with folders,
not with files' footers.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from dbt.adapters.zspark.core.sql_text import quote
from dbt.adapters.zspark.reach.folders import SessionFolders
from dbt.adapters.zspark.reach.session import hadoop_files
from dbt.adapters.zspark.reach.session.hadoop_files import (
    HadoopFiles,
    executor_footers,
    input_files,
)
from dbt.adapters.zspark.skipping.index import (
    FILE_COLUMNS,
    IndexSummary,
    index_columns,
    indexable_columns,
)
from dbt.adapters.zspark.skipping.pruning import indexed_columns, path_name, stat_column
from dbt.adapters.zspark.skipping.stats import (
    ColumnRef,
    footer_batches,
    footer_rows,
    index_batch,
    index_fields,
    spark_cast,
    spark_path,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def index_frame(spark: SparkSession, files: list[str], columns: Sequence[ColumnRef],
                description: str) -> DataFrame:
    """The index rows of ``files``, from their footers: read by the executors
    (:func:`hadoop_files.executor_footers`) and parsed by them and held there, or (up to
    :data:`hadoop_files.DRIVER_PARSES_UP_TO` files) parsed by the driver; or, without
    zspark's JVM classes, read by the driver."""
    fields = index_fields(columns)
    # The bounds arrive as text, each cast to its column's type.
    bound_types = {stat_column(path_name(c.parts), stat): c.spark_type
                   for c in columns for stat in ("min", "max")}
    casts = [f"{spark_cast(quote(name), bound_types[name])} as {quote(name)}"
             if name in bound_types else quote(name) for name, _ in fields]
    schema = ", ".join(f"{quote(name)} {kind}" for name, kind in fields)
    chosen = list(columns)
    spark.sparkContext.setJobDescription(description)
    tails = executor_footers(spark, files)
    if tails is not None and len(files) > hadoop_files.DRIVER_PARSES_UP_TO:
        rows = tails.mapInArrow(functools.partial(footer_batches, columns=chosen,
                                                  fields=fields), schema)
        # Read once, here: a failure reading footers surfaces now, before any swap.
        return rows.selectExpr(*casts).localCheckpoint(eager=True)
    tuples: Iterable[tuple[Any, ...]]
    if tails is not None:
        # Read by the executors, parsed here: the footers of a few thousand files are a
        # few MB, and Python workers started only to parse them cost about a second.
        read = tails.toArrow()
        tuples = zip(*(read.column(i).to_pylist() for i in range(4)), strict=True)
    else:
        tuples = ((t.identity.path, t.identity.size, t.identity.mtime, t.footer)
                  for t in HadoopFiles(spark).footers(files))
    # Handed over as Arrow: pyspark re-pickles a list of rows in a map task, which starts
    # Python workers (a second of the index step) to copy them.
    batch = index_batch(list(footer_rows(tuples, chosen)), fields)
    return spark.createDataFrame(pa.Table.from_batches([batch])).selectExpr(*casts)


def path_frame(spark: SparkSession, paths: Sequence[str]) -> DataFrame:
    """File paths as a one-column frame (``file_path``), built without Python workers."""
    return spark.createDataFrame(pa.table({"file_path": pa.array(list(paths), pa.string())}))


def _write(spark: SparkSession, rows: DataFrame, index_table: str) -> IndexSummary:
    _save(rows, index_table)
    return _summary(spark, index_table)


def _save(rows: DataFrame, index_table: str) -> None:
    spark = rows.sparkSession
    if not spark.catalog.tableExists(index_table):
        _delete_orphaned_folder(spark, index_table)
    rows.coalesce(1).write.mode("overwrite").format("parquet").saveAsTable(index_table)


def _delete_orphaned_folder(spark: SparkSession, index_table: str) -> None:
    """Delete the folder a managed ``index_table`` would take when no table names it. A
    run killed while it wrote the index, or while the old one's folder was deleted (on
    an object store, object by object), leaves that folder behind, and Spark refuses to
    create a managed table over it (LOCATION_ALREADY_EXISTS). An index is read from the
    table's footers again at will: its files are never a row's only copy."""
    schema, _, name = index_table.replace("`", "").rpartition(".")
    database = spark.catalog.getDatabase(schema or spark.catalog.currentDatabase())
    SessionFolders(spark).delete(f"{database.locationUri.rstrip('/')}/{name.lower()}")


def _summary(spark: SparkSession, index_table: str) -> IndexSummary:
    totals = spark.sql(
        f"select count(*), coalesce(sum(row_count), 0) from {index_table} where row_group is null"
    ).first()
    assert totals is not None
    return IndexSummary(index_table, int(totals[0]), int(totals[1]),
                        indexed_columns(spark.table(index_table).columns))


def read_index(spark: SparkSession, table: str, clustering: Sequence[str] = (),
               configured: Sequence[str] | None = None) -> DataFrame:
    """The index rows of every data file of ``table``, read from the footers once and held
    by the driver, ready to be written."""
    frame = spark.table(table)
    columns = index_columns(indexable_columns(frame.schema), clustering, configured)
    files = sorted(input_files(frame))
    sc = spark.sparkContext
    previous = sc.getLocalProperty("spark.job.description")
    try:
        rows = index_frame(spark, files, columns,
                           f"zspark: reading {len(files)} Parquet footers of {table}")
        return rows
    finally:
        sc.setJobDescription(previous)  # type: ignore[arg-type]


def build_index(spark: SparkSession, table: str, index_table: str,
                clustering: Sequence[str] = (),
                configured: Sequence[str] | None = None) -> IndexSummary:
    """Read every data file's footer and (re)write ``index_table``."""
    return _write(spark, read_index(spark, table, clustering, configured), index_table)


def update_index(spark: SparkSession, table: str, index_table: str, added: Sequence[str],
                 removed: Sequence[str], clustering: Sequence[str] = (),
                 configured: Sequence[str] | None = None) -> IndexSummary | None:
    """Bring ``index_table`` up to date after files were ``added`` to ``table`` and others
    ``removed``, reading the footers of the added files only. Returns None (and writes
    nothing) when there is no index, or its columns are not the ones asked for now."""
    from pyspark.sql import functions

    if not spark.catalog.tableExists(index_table):
        return None
    spark.catalog.refreshTable(index_table)
    existing = spark.table(index_table)
    columns = index_columns(indexable_columns(spark.table(table).schema), clustering,
                            configured)
    sc = spark.sparkContext
    previous = sc.getLocalProperty("spark.job.description")
    try:
        new_rows = index_frame(spark, sorted(added), columns,
                               f"zspark: reading {len(added)} new Parquet footers of {table}")
    finally:
        sc.setJobDescription(previous)  # type: ignore[arg-type]
    if existing.schema.simpleString() != new_rows.schema.simpleString():
        return None
    if not removed:
        if added:
            new_rows.coalesce(1).write.insertInto(index_table)
        return _summary(spark, index_table)
    # Parquet tables have no DELETE: the kept rows and the new ones are held by the
    # executors, then written over the old index in one overwrite.
    gone = path_frame(spark, removed)
    kept = existing.join(functions.broadcast(gone), "file_path", "left_anti")
    return _write(spark, kept.unionByName(new_rows).localCheckpoint(eager=True), index_table)


def replace_index_rows(spark: SparkSession, index_table: str, removed: Sequence[str],
                       added: DataFrame, added_at: str, kept_at: str, location: str,
                       mtimes: Mapping[str, int] | None = None) -> IndexSummary:
    """Rewrite ``index_table`` without the rows of the ``removed`` files and with the
    ``added`` rows; the paths of the rows kept move from under ``kept_at``, and those of
    the added rows from under ``added_at``, to under ``location`` (where the table holds
    both once it is re-clustered). ``mtimes``: the modification times, by path under
    ``location``, of files a move dated anew (an object store's move is a copy)."""
    from pyspark.sql import functions

    def moved(rows: DataFrame, at: str) -> DataFrame:
        suffix = functions.substring("file_path", len(at) + 1, 1 << 30)
        return rows.withColumn("file_path", functions.concat(functions.lit(location), suffix))

    spark.catalog.refreshTable(index_table)
    existing = spark.table(index_table)
    gone = path_frame(spark, removed)
    kept = existing.join(functions.broadcast(gone), "file_path", "left_anti")
    rows = moved(kept, kept_at).unionByName(moved(added, added_at).select(*existing.columns))
    if mtimes:
        dates = spark.createDataFrame(pa.table({
            "file_path": pa.array(list(mtimes), pa.string()),
            "moved_mtime": pa.array(list(mtimes.values()), pa.int64())}))
        rows = rows.join(functions.broadcast(dates), "file_path", "left").withColumn(
            "file_mtime", functions.coalesce("moved_mtime", "file_mtime")
        ).select(*existing.columns)
    return _write(spark, rows.localCheckpoint(eager=True), index_table)


def table_location(spark: SparkSession, table: str) -> str:
    """A table's location in the form of its files' paths (``file:/...``, no trailing /)."""
    rows = spark.sql(f"describe table extended {table}").collect()
    location = next((r[1] for r in rows if r[0] == "Location"), None)
    if not location:
        raise LookupError(f"no location for {table}")
    return spark_path(str(location)).rstrip("/")


def file_rows(rows: DataFrame) -> list[tuple[str, int, int, int]]:
    """The file rows of index ``rows`` (path, size, modification time, rows), in one job."""
    return [(str(r[0]), int(r[1]), int(r[2] or 0), int(r[3])) for r in rows.where(
        "row_group is null").select(*FILE_COLUMNS, "row_count").collect()]


def relocate_index(spark: SparkSession, staged: DataFrame, index_table: str, table: str,
                   staged_location: str,
                   staged_files: Sequence[tuple[str, int, int, int]] | None = None,
                   ) -> IndexSummary | None:
    """Write the index of a renamed table from the rows read before the rename
    (``staged_files``: their files' path, size, modification time and rows, when read
    with them).

    Renaming a managed table moves its folder and keeps every file's name, size and
    modification time, so only the paths' prefix changes. Returns None (and writes nothing)
    unless the moved paths are exactly the table's files. A table whose location the
    rename kept (a build's version folder) keeps its files where they were read: they are
    not listed again (on an object store, a listing per thousand files).
    """
    from pyspark.sql import functions

    location = table_location(spark, table)
    suffix = functions.substring("file_path", len(staged_location) + 1, 1 << 30)
    rows = staged.withColumn("file_path", functions.concat(functions.lit(location), suffix))
    if staged_files is None:
        staged_files = file_rows(staged)
    moved = {(location + path[len(staged_location):], size, mtime)
             for path, size, mtime, _ in staged_files}
    if location != staged_location:
        spark.catalog.refreshTable(table)
        files = [spark_path(f) for f in input_files(spark.table(table))]
        present = {(i.path, i.size, i.mtime)
                   for i in HadoopFiles(spark).identities(files).values()}
        if moved != present:  # e.g. an object store whose rename copies and re-dates files
            return None
    _save(rows.select(*[quote(c) for c in staged.columns]), index_table)
    # Told from the rows just written: reading the new table back only to count them was
    # a Spark job of its own.
    return IndexSummary(index_table, len(staged_files),
                        sum(count for *_, count in staged_files),
                        indexed_columns(staged.columns))
