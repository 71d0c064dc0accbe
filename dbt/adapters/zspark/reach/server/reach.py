"""A server reached by SQL alone (thrift, http, odbc) as a
:class:`~dbt.adapters.zspark.reach.SparkReach`: every step a statement or a query.

It is the first of three reaches, each built on the one before: ``FrameReach``
(``reach/frames``) adds a DataFrame session's sample job, views and Arrow frames; the
embedded ``SessionReach`` (``reach/session``) adds the JVM.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from dbt.adapters.events.logging import AdapterLogger
from dbt_common.exceptions import DbtRuntimeError

from dbt.adapters.zspark.core.sql_text import sql_string
from dbt.adapters.zspark.layouts.layout_state import clustered_writes_property
from dbt.adapters.zspark.reach.folders import ServerFolders
from dbt.adapters.zspark.reach.server.event_logs import server_event_log_scans
from dbt.adapters.zspark.reach.server.next_version import CopiedVersion
from dbt.adapters.zspark.reach.server.sql_build import (
    keyed_sql_build,
    sample_input_sql,
    thrift_value,
)
from dbt.adapters.zspark.skipping.index import (
    IndexSummary,
    StagedIndex,
    index_columns,
)
from dbt.adapters.zspark.skipping.pruning import indexed_columns
from dbt.adapters.zspark.skipping.sql_index import (
    described_columns,
    files_sql,
    index_sql,
    relocated_sql,
    unmatched_files_sql,
)
from dbt.adapters.zspark.skipping.stats import spark_path
from dbt.adapters.zspark.versions.rewrite import set_properties_sql

if TYPE_CHECKING:
    import pandas as pd

    from dbt.adapters.zspark.formats import FormatTable, TypedColumn
    from dbt.adapters.zspark.layouts.keyed_plan import InputSample, PreparedBuild
    from dbt.adapters.zspark.layouts.layout_state import StoredLayout
    from dbt.adapters.zspark.layouts.planning import ClusteringPlan
    from dbt.adapters.zspark.reach.folders import Folders
    from dbt.adapters.zspark.versions.next_version import NextVersion

from dbt.adapters.zspark.reach.base import Execute, Query, Relation, described, execute_with

logger = AdapterLogger("zspark")


class ServerReach:
    """A server reached by SQL: every step a statement or a query."""

    runs_python = False
    reaches_jvm = False
    loads_frames = False
    journals_batches = False

    def __init__(self, query: Query, execute: Execute, cores: Callable[[], int]) -> None:
        self._query, self._execute, self._cores = query, execute, cores

    def fetch(self, sql: str) -> list[tuple[Any, ...]]:
        return self._query(sql)[1]

    def schema(self, sql: str) -> dict[str, str]:
        return described(self.fetch(f"describe query {sql}"))

    def sample(self, plan: ClusteringPlan, sql: str, schema: Mapping[str, str],
               expected_rows: int | None) -> InputSample:

        return sample_input_sql(self.fetch, plan, sql, schema)  # counts first: exact

    def keyed(self, plan: ClusteringPlan, sql: str, sampled: InputSample,
              stored: StoredLayout | None, file_count: int, schema: Mapping[str, str],
              pieces: bool, file_per_partition: bool, select: bool = True) -> PreparedBuild:

        return keyed_sql_build(self.fetch, plan, sql, sampled, stored, file_count,
                               self._cores(), schema, pieces, file_per_partition, select)

    def event_log_scans(self, folders: Sequence[str],
                        tables: Sequence[str]) -> pd.DataFrame:
        return server_event_log_scans(self.fetch, self._execute, folders, tables)

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
                      f"{written_as.active_files_sql(table, columns, self.fetch)}")

    def folders(self) -> Folders:
        return ServerFolders(self._execute)

    def describe(self, sql: str) -> dict[str, str]:
        return described(self.fetch(sql))

    def _has_table(self, table: Relation) -> bool:
        return bool(self.fetch(f"show tables in {table.schema} like "
                                f"{sql_string(table.identifier)}"))

    def location(self, table: Relation) -> str:
        rows = self.fetch(f"describe table extended {table}")
        location = next((str(r[1]) for r in rows if r[0] == "Location"), "")
        if not location:
            raise DbtRuntimeError(f"zspark: no location for {table}")
        return spark_path(location).rstrip("/")

    def refresh(self, table: Relation) -> None:
        """Nothing: every query lists the files as the server sees them."""

    def table_files(self, table: Relation, known: Collection[str] = ()) -> set[str]:
        """Every row's file: SQL lists no files, so every file is opened."""
        return {str(r[0]) for r in self.fetch(files_sql(str(table)))}

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
        logger.debug(f"zspark: {table.identifier}: index built by SQL"
                     + ("" if self.runs_python else " (no Python on the server)")
                     + ": bounds per file, row groups not indexed")
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

    def jvm(self) -> Any:
        raise DbtRuntimeError("zspark: a format's own API needs a session's JVM; over a "
                              "server its commits run as SQL")

    def load_seed(self, table: str, names: Sequence[str],
                  texts: Sequence[Any]) -> int | None:
        return None  # dbt-spark's own insert statements load a seed over thrift

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


