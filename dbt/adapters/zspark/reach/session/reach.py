"""Spark in this process reached as a :class:`~dbt.adapters.zspark.reach.SparkReach`:
a DataFrame session (``FrameReach``) whose JVM is at hand.

Every method here is the JVM seam, each used where a Connect client has no equivalent
(docs/architecture.md lists them): Spark's planned size and row bound of a query, the
session's default parallelism, the keyed rows' shuffle scanned by the write, the Hadoop
file systems (footers read by the executors, folders, listings), the session's cached
listing of a table, and the formats' own APIs.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any

from dbt.adapters.events.logging import AdapterLogger

from dbt.adapters.zspark.core.generated_code import JVM_SETTINGS, keyed_code_settings
from dbt.adapters.zspark.layouts.keyed_plan import PlannedInput, scan_nodes_only
from dbt.adapters.zspark.layouts.layout_state import clustered_writes_property
from dbt.adapters.zspark.reach.folders import SessionFolders
from dbt.adapters.zspark.reach.frames.reach import FrameReach
from dbt.adapters.zspark.reach.session.event_logs import event_log_scans
from dbt.adapters.zspark.reach.session.hadoop_files import input_files
from dbt.adapters.zspark.reach.session.index_tables import (
    build_index,
    file_rows,
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

    from dbt.adapters.zspark.formats import FormatTable, TypedColumn
    from dbt.adapters.zspark.reach.folders import Folders
    from dbt.adapters.zspark.versions.next_version import NextVersion

from dbt.adapters.zspark.reach.base import Execute, Query, Relation, session_settings

logger = AdapterLogger("zspark")


class SessionReach(FrameReach):
    """Spark in this process: a DataFrame session whose JVM is at hand. Statements still
    go through dbt's connection (``execute``), in the order a server's would."""

    reaches_jvm = True
    journals_batches = True

    def __init__(self, spark: Any, query: Query, execute: Execute) -> None:
        super().__init__(lambda: spark, query, execute,
                         lambda: int(spark.sparkContext.defaultParallelism))

    def planned_input(self, frame: Any, sql: str, rows: int) -> PlannedInput:
        """From the query's plans, with no statement: the optimizer's size estimate and
        nodes, and whether Spark knows it holds at most ``rows`` rows (a range, a small
        literal)."""
        execution = frame._jdf.queryExecution()
        optimized = execution.optimizedPlan()
        known = [plan.maxRows() for plan in (execution.analyzed(), optimized)]
        return PlannedInput(int(str(optimized.stats().sizeInBytes())),
                            any(k.isDefined() and int(k.get()) <= rows for k in known),
                            scan_nodes_only(str(optimized.treeString())))

    def shuffled(self, rows: Any) -> Any:
        """``rows`` as a scan of their shuffle's output, the plan that keyed them run now
        (its map stage) and left out of the write's tasks. Each task of a stage carries the
        plan of every stage before it: a Hilbert key's boundaries, tables and cut points
        are ten thousand boxed constants, 5 ms to deserialize per task, 5 s of a write
        into 1,000 files (Iceberg's: a task per file). The keys' generated code is
        compiled here, so under the keyed write's code settings."""
        conf = self.spark.conf
        settings = keyed_code_settings(*(conf.get(key, None) or "" for key in JVM_SETTINGS))
        jvm = self.jvm()
        with session_settings(self.spark, settings):
            dataset = jvm.dataset(rows)
            shuffle = dataset.queryExecution().toRdd()
        return jvm.dataframe(jvm.session.internalCreateDataFrame(shuffle, dataset.schema(),
                                                                 False))

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

    def table_files(self, table: Relation, known: Collection[str] = ()) -> set[str]:
        self.refresh(table)
        return {spark_path(f) for f in input_files(self.spark.table(str(table)))}

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
        # One job for the files' rows: the properties below and the publish read them.
        files = file_rows(rows)
        staged = StagedIndex(self.location(table), rows, files)
        if clustering:
            self._execute(set_properties_sql(str(table), clustered_writes_property(
                [path for path, *_ in files])))
        return staged

    def publish_index(self, staged: StagedIndex, table: Relation, index: Relation,
                      clustering: Sequence[str] | None,
                      configured: Sequence[str] | None) -> IndexSummary:

        summary = None
        try:
            summary = relocate_index(self.spark, staged.rows, str(index), str(table),
                                     staged.location, staged.files)
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

    def next_version(self, table: Relation, staging: Relation, index: Relation,
                     in_place: bool) -> NextVersion:

        return SessionVersion(self, table, staging, index, in_place)


