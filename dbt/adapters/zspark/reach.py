"""The two ways the adapter reaches Spark: a Python session in this process, or a server
reached by SQL alone (thrift, http, odbc), each behind :class:`SparkReach`.

A session runs Python inside Spark (the ``direct`` curve method's UDFs, footer reads) and
reaches the JVM APIs a table format commits through; a server runs SQL only: keys in Spark
SQL, samples and file bounds fetched as rows. The adapter asks for one per step
(``reach_of``) and calls it without asking which it is.

A Parquet table's ``__zindex`` follows the same line: a session reads the files' footers
(``index.py``) and holds a staging table's rows in its executors until the swap; a server
aggregates the files' rows by SQL (``sql_index.py``) into a table of their own. Either
runs its statements through dbt's connection, so they are logged in the order they run.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from dbt.adapters.events.logging import AdapterLogger

from dbt.adapters.zspark.clustering import keyed_build, model_schema, sample_input
from dbt.adapters.zspark.folders import ServerFolders, SessionFolders
from dbt.adapters.zspark.index import (
    IndexSummary,
    StagedIndex,
    build_index,
    index_columns,
    read_index,
    relocate_index,
    table_location,
    update_index,
)
from dbt.adapters.zspark.layout_state import clustered_writes_property
from dbt.adapters.zspark.next_version import CopiedVersion, SessionVersion
from dbt.adapters.zspark.pruning import indexed_columns
from dbt.adapters.zspark.rewrite import set_properties_sql
from dbt.adapters.zspark.session import active_session
from dbt.adapters.zspark.sql_build import keyed_sql_build, sample_input_sql, thrift_value
from dbt.adapters.zspark.sql_index import (
    described_columns,
    index_sql,
    relocated_sql,
    unmatched_files_sql,
)
from dbt.adapters.zspark.sqltext import sql_string
from dbt.adapters.zspark.stats import spark_path

if TYPE_CHECKING:
    import pandas as pd

    from dbt.adapters.zspark.clustering import InputSample, PreparedBuild
    from dbt.adapters.zspark.folders import Folders
    from dbt.adapters.zspark.formats import FormatTable, TypedColumn
    from dbt.adapters.zspark.layout_state import StoredLayout
    from dbt.adapters.zspark.next_version import NextVersion
    from dbt.adapters.zspark.planning import ClusteringPlan

logger = AdapterLogger("zspark")

#: A query's column names and rows; a statement run for its effect.
Query = Callable[[str], tuple[list[str], list[tuple[Any, ...]]]]
Execute = Callable[[str], Any]
#: A dbt relation: ``str()`` is its name in SQL; ``schema`` and ``identifier`` its parts.
Relation = Any


class SparkReach(Protocol):
    """What a clustered build, a run's planning, the layout figures and the file-stats
    index ask of Spark."""

    #: Whether Python runs inside Spark (UDF keys, footer reads, a format's JVM API).
    runs_python: bool
    #: Whether an append, an overwrite or a partial re-clustering writes a batch table
    #: first and moves its files into the table (``table_versions.py``: the folders are
    #: at hand), rather than let Spark's own commit write into the table (or, for a
    #: re-clustering, copy the files that stay into a new version).
    journals_batches: bool
    #: The SparkSession (None over a server).
    spark: Any

    def schema(self, sql: str) -> dict[str, str]:
        """Output columns of ``sql`` and their Spark types, without running it."""
        ...

    def sample(self, plan: ClusteringPlan, sql: str, schema: Mapping[str, str],
               expected_rows: int | None) -> InputSample:
        """The first pass over ``sql``: a uniform sample and the row count."""
        ...

    def keyed(self, plan: ClusteringPlan, sql: str, sampled: InputSample,
              stored: StoredLayout | None, file_count: int, schema: Mapping[str, str],
              pieces: bool, file_per_partition: bool) -> PreparedBuild:
        """The clustered SELECT of a sampled input."""
        ...

    def frame(self, sql: str, types: Mapping[str, str]) -> pd.DataFrame:
        """A query's rows as a pandas frame (``types``: the Spark types of its columns that
        need converting from what a server returns)."""
        ...

    def files_view(self, written_as: FormatTable, table: str,
                   columns: Sequence[TypedColumn], view: str) -> None:
        """A temporary view ``view`` of a Delta or Iceberg table's live files, one
        ``__zindex`` file row each."""
        ...

    def folders(self) -> Folders:
        """The warehouse's folders as this connection sees them."""
        ...

    def location(self, table: Relation) -> str:
        """A table's location in the form of its files' paths (``file:/...``, no
        trailing /)."""
        ...

    def refresh(self, table: Relation) -> None:
        """Forget the files this connection remembers of ``table``, so the next read
        lists them afresh."""
        ...

    def table_files(self, table: Relation) -> set[str]:
        """A table's data files (holding rows), named as the index names them."""
        ...

    def fresh_rows(self, table: Relation, sql: str) -> list[tuple[Any, ...]] | None:
        """The rows of ``sql``, a query of ``table``, its files listed afresh; None when
        there is no ``table``."""
        ...

    def build_index(self, table: Relation, index: Relation, clustering: Sequence[str] | None,
                    configured: Sequence[str] | None) -> IndexSummary:
        """(Re)write ``index`` from every data file of ``table``: the ``clustering``
        columns first, then the ``configured`` ones (None: the first 32 indexable)."""
        ...

    def update_index(self, table: Relation, index: Relation, added: Sequence[str],
                     removed: Sequence[str], clustering: Sequence[str] | None,
                     configured: Sequence[str] | None) -> IndexSummary | None:
        """Add the rows of the files ``added`` to ``table`` to its ``index`` and drop those
        of the files ``removed``. None (nothing written) when there is no index, or its
        columns are not the ones asked for now."""
        ...

    def stage_index(self, table: Relation, index: Relation, clustering: Sequence[str] | None,
                    configured: Sequence[str] | None) -> StagedIndex:
        """The index of a build's staging ``table``, read before it replaces the model's
        table (over a server written to ``index``). With ``clustering``, the table's
        properties record its files as clustered writes, before the swap, so the table
        and that record appear together."""
        ...

    def publish_index(self, staged: StagedIndex, table: Relation, index: Relation,
                      clustering: Sequence[str] | None,
                      configured: Sequence[str] | None) -> IndexSummary:
        """After the swap: the ``staged`` rows, their paths moved to ``table``, written as
        its ``index``; should they not list exactly the table's files, or be gone, the
        index is built again."""
        ...

    def next_version(self, table: Relation, staging: Relation, index: Relation,
                     in_place: bool) -> NextVersion:
        """How a re-clustering's rows of a Parquet ``table`` (written as ``staging``: a
        batch published ``in_place``, or its next version) are checked and indexed, and
        how the next version gets the files that stay (``next_version.py``)."""
        ...


def reach_of(method: str, query: Query, execute: Execute,
             cores: Callable[[], int]) -> SparkReach:
    """How a profile's ``method`` reaches Spark: ``session`` is Spark in this process;
    every other method (thrift, http, odbc) reaches a server by SQL."""
    from dbt.adapters.spark.connections import SparkConnectionMethod

    if method == SparkConnectionMethod.SESSION:

        return SessionReach(active_session(), execute)
    return ServerReach(query, execute, cores)


class SessionReach:
    """Spark in this process: UDFs and the JVM are at hand. Statements still go through
    dbt's connection (``execute``), in the order a server's would."""

    runs_python = True
    journals_batches = True

    def __init__(self, spark: Any, execute: Execute) -> None:
        self.spark, self._execute = spark, execute

    def schema(self, sql: str) -> dict[str, str]:
        return model_schema(self.spark, sql)

    def sample(self, plan: ClusteringPlan, sql: str, schema: Mapping[str, str],
               expected_rows: int | None) -> InputSample:

        return sample_input(self.spark, plan, sql, expected_rows)

    def keyed(self, plan: ClusteringPlan, sql: str, sampled: InputSample,
              stored: StoredLayout | None, file_count: int, schema: Mapping[str, str],
              pieces: bool, file_per_partition: bool) -> PreparedBuild:

        return keyed_build(self.spark, plan, sql, sampled, stored, file_count, pieces,
                           file_per_partition)

    def frame(self, sql: str, types: Mapping[str, str]) -> pd.DataFrame:
        return self.spark.sql(sql).toPandas()

    def files_view(self, written_as: FormatTable, table: str,
                   columns: Sequence[TypedColumn], view: str) -> None:
        written_as.active_files(self.spark, table, columns).createOrReplaceTempView(view)

    def folders(self) -> Folders:
        return SessionFolders(self.spark)

    def location(self, table: Relation) -> str:
        return table_location(self.spark, str(table))

    def refresh(self, table: Relation) -> None:
        self.spark.catalog.refreshTable(str(table))

    def table_files(self, table: Relation) -> set[str]:
        self.refresh(table)
        return {spark_path(f) for f in self.spark.table(str(table)).inputFiles()}

    def fresh_rows(self, table: Relation, sql: str) -> list[tuple[Any, ...]] | None:
        if not self.spark.catalog.tableExists(str(table)):
            return None
        self.refresh(table)
        return [tuple(r) for r in self.spark.sql(sql).collect()]

    def build_index(self, table: Relation, index: Relation, clustering: Sequence[str] | None,
                    configured: Sequence[str] | None) -> IndexSummary:

        return build_index(self.spark, str(table), str(index), clustering or (), configured)

    def update_index(self, table: Relation, index: Relation, added: Sequence[str],
                     removed: Sequence[str], clustering: Sequence[str] | None,
                     configured: Sequence[str] | None) -> IndexSummary | None:

        return update_index(self.spark, str(table), str(index), added, removed,
                            clustering or (), configured)

    def stage_index(self, table: Relation, index: Relation, clustering: Sequence[str] | None,
                    configured: Sequence[str] | None) -> StagedIndex:
        """The rows wait in the executors' memory (a failure reading footers leaves the
        model's table and its index as they were)."""

        rows = read_index(self.spark, str(table), clustering or (), configured)
        staged = StagedIndex(self.location(table), rows)
        if clustering:
            files = [str(r[0]) for r in rows.where("row_group is null")
                     .select("file_path").collect()]
            self._execute(set_properties_sql(str(table), clustered_writes_property(files)))
        return staged

    def publish_index(self, staged: StagedIndex, table: Relation, index: Relation,
                      clustering: Sequence[str] | None,
                      configured: Sequence[str] | None) -> IndexSummary:

        summary = None
        try:
            summary = relocate_index(self.spark, staged.rows, str(index), str(table),
                                     staged.location)
        except Exception as error:  # e.g. an executor holding staged rows was lost
            logger.warning(f"zspark: {table.identifier}: staged index rows unusable "
                           f"({type(error).__name__}); reading footers again")
        else:
            if summary is None:
                logger.warning(f"zspark: {table.identifier}: staged index does not match "
                               f"the table's files after the swap; reading footers again")
        finally:
            staged.rows.unpersist()
        if summary is None:
            summary = self.build_index(table, index, clustering, configured)
        return summary

    def next_version(self, table: Relation, staging: Relation, index: Relation,
                     in_place: bool) -> NextVersion:

        return SessionVersion(self, table, staging, index, in_place)


class ServerReach:
    """A server reached by SQL alone: every step is a statement or a query."""

    runs_python = False
    journals_batches = False
    spark = None

    def __init__(self, query: Query, execute: Execute, cores: Callable[[], int]) -> None:
        self._query, self._execute, self._cores = query, execute, cores

    def fetch(self, sql: str) -> list[tuple[Any, ...]]:
        return self._query(sql)[1]

    def schema(self, sql: str) -> dict[str, str]:
        return described(self.fetch(f"describe query {sql}"))

    def sample(self, plan: ClusteringPlan, sql: str, schema: Mapping[str, str],
               expected_rows: int | None) -> InputSample:

        return sample_input_sql(self.fetch, plan, sql, schema, expected_rows)

    def keyed(self, plan: ClusteringPlan, sql: str, sampled: InputSample,
              stored: StoredLayout | None, file_count: int, schema: Mapping[str, str],
              pieces: bool, file_per_partition: bool) -> PreparedBuild:

        return keyed_sql_build(self.fetch, plan, sql, sampled, stored, file_count,
                               self._cores(), schema, pieces, file_per_partition)

    def frame(self, sql: str, types: Mapping[str, str]) -> pd.DataFrame:
        import pandas as pd

        names, rows = self._query(sql)
        frame = pd.DataFrame.from_records(rows, columns=names)
        for name, spark_type in types.items():
            frame[name] = pd.Series([thrift_value(v, spark_type) for v in frame[name]],
                                    dtype=None if len(frame) else object)
        return frame

    def files_view(self, written_as: FormatTable, table: str,
                   columns: Sequence[TypedColumn], view: str) -> None:
        # The server's session keeps the view for the statements that follow.
        self._execute(f"create or replace temporary view {view} as "
                      f"{written_as.active_files_sql(table, columns)}")

    def folders(self) -> Folders:
        return ServerFolders(self._execute)

    def describe(self, sql: str) -> dict[str, str]:
        return described(self.fetch(sql))

    def _has_table(self, table: Relation) -> bool:
        return bool(self.fetch(f"show tables in {table.schema} like "
                                f"{sql_string(table.identifier)}"))

    def location(self, table: Relation) -> str:
        from dbt_common.exceptions import DbtRuntimeError

        rows = self.fetch(f"describe table extended {table}")
        location = next((str(r[1]) for r in rows if r[0] == "Location"), "")
        if not location:
            raise DbtRuntimeError(f"zspark: no location for {table}")
        return spark_path(location).rstrip("/")

    def refresh(self, table: Relation) -> None:
        """Nothing: every query lists the files as the server sees them."""

    def table_files(self, table: Relation) -> set[str]:
        return {str(r[0]) for r in self.fetch(
            f"select distinct _metadata.file_path from {table}")}

    def fresh_rows(self, table: Relation, sql: str) -> list[tuple[Any, ...]] | None:
        if not self._has_table(table):
            return None
        return self.fetch(sql)

    def build_index(self, table: Relation, index: Relation, clustering: Sequence[str] | None,
                    configured: Sequence[str] | None) -> IndexSummary:
        """By one SQL aggregation over ``table`` (``sql_index.py``): per file bounds, no
        row groups."""

        available = described_columns(list(self.describe(f"describe table {table}")
                                           .items()))
        columns = index_columns(available, clustering or (), configured)
        self._execute(f"drop table if exists {index}")
        self._execute(f"create table {index} using parquet as select /*+ COALESCE(1) */ * "
                      f"from ({index_sql(str(table), columns)}) zspark_index")
        logger.info(f"zspark: {table.identifier}: index built by SQL (no Python on the "
                    f"server): bounds per file, row groups not indexed")
        return self._index_summary(index)

    def update_index(self, table: Relation, index: Relation, added: Sequence[str],
                     removed: Sequence[str], clustering: Sequence[str] | None,
                     configured: Sequence[str] | None) -> IndexSummary | None:
        """The added files' rows by one SQL aggregation over them."""

        if not self._has_table(index):
            return None
        available = described_columns(list(self.describe(f"describe table {table}")
                                           .items()))
        new_rows = index_sql(str(table), index_columns(available, clustering or (),
                                                       configured), added)
        if self.describe(f"describe query {new_rows}") != \
                self.describe(f"describe table {index}"):
            return None
        if not removed:
            if added:
                self._execute(f"insert into {index} select /*+ COALESCE(1) */ * "
                              f"from ({new_rows}) zspark_added")
            return self._index_summary(index)
        # Parquet tables have no DELETE: the next index is written beside it and renamed
        # (a copy a run that died left there is dropped first).
        listed = ", ".join(map(sql_string, removed))
        next_index = index.incorporate(path={"identifier": index.identifier + "__zspark_new"})
        self._execute(f"drop table if exists {next_index}")
        self._execute(f"create table {next_index} using parquet as select /*+ COALESCE(1) */ * "
                      f"from (select * from {index} where file_path not in ({listed}) "
                      f"union all {new_rows}) zspark_index")
        self._execute(f"drop table {index}")
        self._execute(f"alter table {next_index} rename to {index}")
        return self._index_summary(index)

    def stage_index(self, table: Relation, index: Relation, clustering: Sequence[str] | None,
                    configured: Sequence[str] | None) -> StagedIndex:

        self.build_index(table, index, clustering, configured)
        if clustering:
            files = [str(r[0]) for r in self.fetch(f"select file_path from {index}")]
            self._execute(set_properties_sql(str(table), clustered_writes_property(files)))
        return StagedIndex(self.location(table), index)

    def publish_index(self, staged: StagedIndex, table: Relation, index: Relation,
                      clustering: Sequence[str] | None,
                      configured: Sequence[str] | None) -> IndexSummary:
        """The staged index's table gives way to ``index``."""

        columns = list(self.describe(f"describe table {staged.rows}"))
        self._execute(f"drop table if exists {index}")
        moved = relocated_sql(str(staged.rows), columns, staged.location, self.location(table))
        self._execute(f"create table {index} using parquet as {moved}")
        self._execute(f"drop table if exists {staged.rows}")
        if any(int(r[0]) for r in self.fetch(unmatched_files_sql(str(index), str(table)))):
            logger.warning(f"zspark: {table.identifier}: staged index does not match the "
                           f"table's files after the swap; indexing again")
            return self.build_index(table, index, clustering, configured)
        return self._index_summary(index)

    def next_version(self, table: Relation, staging: Relation, index: Relation,
                     in_place: bool) -> NextVersion:

        if in_place:
            raise NotImplementedError("a server publishes no batch: it copies by SQL")

        return CopiedVersion(self, table, staging, index)

    def execute_with(self, settings: Mapping[str, str], sql: str) -> Any:
        return execute_with(self.fetch, self._execute, settings, sql)

    def _index_summary(self, index: Relation) -> IndexSummary:
        files, rows = self.fetch(f"select count(1), coalesce(sum(row_count), 0) from {index} "
                                  f"where row_group is null")[0]
        columns = indexed_columns(self.describe(f"describe table {index}"))
        return IndexSummary(str(index), int(files), int(rows), columns)


def execute_with(fetch: Callable[[str], list[tuple[Any, ...]]], execute: Execute,
                 settings: Mapping[str, str], sql: str) -> Any:
    """Run ``sql`` with session ``settings``, restored afterwards (on a server too: its
    session keeps them between statements)."""
    previous: dict[str, str | None] = {}
    for key in settings:
        rows = fetch(f"set {key}")
        previous[key] = str(rows[0][1]) if rows else None
    for key, value in settings.items():
        execute(f"set {key} = {value}")
    try:
        return execute(sql)
    finally:
        for key, before in previous.items():
            execute(f"set {key} = {before}" if before not in (None, "<undefined>")
                    else f"reset {key}")


def described(rows: Sequence[tuple[Any, ...]]) -> dict[str, str]:
    """Column name -> Spark type from a ``DESCRIBE`` statement's rows (its column section).

    >>> described([("a", "int", None), ("", "", ""), ("# Partition Information", "", "")])
    {'a': 'int'}
    """
    columns: dict[str, str] = {}
    for name, spark_type, *_ in rows:
        if not name or str(name).startswith("#"):
            break
        columns[str(name)] = str(spark_type)
    return columns
