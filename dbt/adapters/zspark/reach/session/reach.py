"""Spark in this process reached as a :class:`~dbt.adapters.zspark.reach.SparkReach`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from dbt.adapters.events.logging import AdapterLogger

from dbt.adapters.zspark.layouts.layout_state import clustered_writes_property
from dbt.adapters.zspark.reach.folders import SessionFolders
from dbt.adapters.zspark.reach.frames.seeds import load_seed
from dbt.adapters.zspark.reach.session.clustering import (
    as_pandas,
    keyed_build,
    model_schema,
    sample_input,
)
from dbt.adapters.zspark.reach.session.event_logs import event_log_scans
from dbt.adapters.zspark.reach.session.hadoop_files import input_files
from dbt.adapters.zspark.reach.session.index_tables import (
    build_index,
    read_index,
    relocate_index,
    table_location,
    update_index,
)
from dbt.adapters.zspark.reach.session.jvm import SessionJvm
from dbt.adapters.zspark.reach.session.next_version import SessionVersion
from dbt.adapters.zspark.skipping.index import IndexSummary, StagedIndex
from dbt.adapters.zspark.skipping.stats import spark_path
from dbt.adapters.zspark.versions.rewrite import set_properties_sql

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

    from dbt.adapters.zspark.formats import FormatTable, TypedColumn
    from dbt.adapters.zspark.layouts.keyed_plan import InputSample, PreparedBuild
    from dbt.adapters.zspark.layouts.layout_state import StoredLayout
    from dbt.adapters.zspark.layouts.planning import ClusteringPlan
    from dbt.adapters.zspark.reach.folders import Folders
    from dbt.adapters.zspark.versions.next_version import NextVersion

from dbt.adapters.zspark.reach.base import Execute, Relation

logger = AdapterLogger("zspark")


class SessionReach:
    """Spark in this process: UDFs and the JVM are at hand. Statements still go through
    dbt's connection (``execute``), in the order a server's would."""

    runs_python = True
    reaches_jvm = True
    loads_frames = True
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
              pieces: bool, file_per_partition: bool, select: bool = True) -> PreparedBuild:

        return keyed_build(self.spark, plan, sql, sampled, stored, file_count, pieces,
                           file_per_partition, select)

    def frame(self, sql: str, types: Mapping[str, str]) -> pd.DataFrame:
        return as_pandas(self.spark.sql(sql))

    def event_log_scans(self, folders: Sequence[str],
                        tables: Sequence[str]) -> pd.DataFrame:
        return event_log_scans(self.spark, folders, tables)

    def files_view(self, written_as: FormatTable, table: str,
                   columns: Sequence[TypedColumn], view: str) -> None:
        written_as.active_files(self.jvm(), table, columns).createOrReplaceTempView(view)

    def folders(self) -> Folders:
        return SessionFolders(self.spark)

    def location(self, table: Relation) -> str:
        return table_location(self.spark, str(table))

    def refresh(self, table: Relation) -> None:
        session = self.spark._jsparkSession
        if not session.sharedState().cacheManager().isEmpty():
            # A cached query may read the table: refreshing rebuilds it.
            self.spark.catalog.refreshTable(str(table))
            return
        # Forget the session's listing of the table; its next reader lists it anew.
        # (refreshTable lists it now, twice when nothing had read it yet: 1.8 s at 12,000
        # local files after an append, though nothing in the run reads it again.)
        jvm = self.spark._jvm
        identifier = jvm.org.apache.spark.sql.catalyst.TableIdentifier(
            table.identifier, jvm.scala.Option.apply(table.schema))
        session.sessionState().catalog().invalidateCachedTable(identifier)

    def table_files(self, table: Relation) -> set[str]:
        self.refresh(table)
        return {spark_path(f) for f in input_files(self.spark.table(str(table)))}

    def fresh_rows(self, table: Relation, sql: str) -> list[tuple[Any, ...]] | None:
        if not self.spark.catalog.tableExists(str(table)):
            return None
        self.refresh(table)
        # As Arrow: a table's file rows (tens of thousands) pickled row by row took seconds.
        found = self.spark.sql(sql).toArrow()
        return list(zip(*(column.to_pylist() for column in found.columns), strict=True))

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

    def jvm(self) -> SessionJvm:
        return SessionJvm(self.spark)

    def load_seed(self, table: str, names: Sequence[str],
                  texts: Sequence[pa.Array]) -> int | None:
        return load_seed(self.spark, table, names, texts)

    def next_version(self, table: Relation, staging: Relation, index: Relation,
                     in_place: bool) -> NextVersion:

        return SessionVersion(self, table, staging, index, in_place)


