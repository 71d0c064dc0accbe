"""Clustered writes: the keyed SELECT of a build's or a re-clustering's rows and the session
settings its statement runs with (rows per file, the formats' statistics cut).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from dbt.adapters.events.logging import AdapterLogger

from dbt.adapters.zspark.core.sql_text import quote
from dbt.adapters.zspark.formats import (
    format_table,
)
from dbt.adapters.zspark.layouts.layout_state import (
    StoredLayout,
)
from dbt.adapters.zspark.layouts.planning import ClusteringPlan
from dbt.adapters.zspark.services.context import RunContext
from dbt.adapters.zspark.services.plans import KeyedWrite, Rewrite
from dbt.adapters.zspark.skipping.health import LayoutSample
from dbt.adapters.zspark.versions.recluster import (
    FULL,
    deferred,
)
from dbt.adapters.zspark.versions.rewrite import (
    rows_of_files_sql,
)

logger = AdapterLogger("zspark")


#: Runs written since the last full clustering (pieces, merged runs) carry no Parquet
#: dictionaries: in files of a few thousand rows building one per column costs more than
#: it saves (5 M rows into 3,000 files, 2 cores: 9-11 s without, 15-16 s with, 7% more
#: bytes), and the runs are rewritten at their merge or the full re-clustering. Landed
#: appends too: 26% more bytes than a plain insert's files, about 1.3 s less at 5 M rows.
PENDING_RUN_SETTINGS = {"parquet.enable.dictionary": "false"}


class KeyedWrites:
    """Clustered writes: the keyed SELECT of a build's or a re-clustering's rows and the
    session settings its statement runs with."""

    def __init__(self, ctx: RunContext) -> None:
        self.ctx = ctx

    def keyed_write(self, plan: ClusteringPlan, prepared: Any, new_layout: bool,
                    settings: dict[str, str] | None = None) -> KeyedWrite:
        """The write of a prepared keyed SELECT (what its statement and its log need),
        logged; ``settings``: the format's session settings around its statement."""
        write = KeyedWrite(
            str(prepared.select_sql), prepared.file_rows,
            LayoutSample(plan.columns, plan.column_types, prepared.sample,
                         prepared.sample_keys, prepared.sample_partitions),
            {"sample": prepared.sample_seconds, "write": prepared.shuffle_seconds,
             "since": time.perf_counter()},
            dict(settings or {}), code_settings=self.ctx.keyed_code_settings())
        spread = prepared.spread
        how = (f"{spread.partitions} sorted partitions cut every {spread.rows_per_file} rows"
               if spread is not None and spread.rows_per_file else "one file per partition")
        keyed = "" if new_layout else ", keyed with the table's stored layout"
        if prepared.note:
            logger.debug(f"zspark: {plan.model}: {prepared.note}")
        logger.debug(
            f"zspark: {plan.model}: writing {prepared.input_rows} rows into "
            f"{prepared.file_count} files ({how}{keyed})"
        )
        return write

    def landed_write(self, plan: ClusteringPlan, sql: str, prepared: Any,
                     schema: Mapping[str, str], settings: dict[str, str]) -> KeyedWrite:
        """The write of an append's rows as the model gives them: no key, no sort, files
        as Spark cuts them (a plain insert's cost); the keyed sample still probes the
        layout for the log (``prepared``: planned without its SELECT)."""
        listed = ", ".join(quote(c) for c in schema)
        write = KeyedWrite(
            f"select {listed} from (\n{sql}\n) zspark_landed", None,
            LayoutSample(plan.columns, plan.column_types, prepared.sample,
                         prepared.sample_keys, prepared.sample_partitions),
            {"sample": prepared.sample_seconds, "since": time.perf_counter()}, settings)
        logger.debug(f"zspark: {plan.model}: writing {prepared.input_rows} rows as the model "
                     f"gives them, unsorted (zspark_sort_appends: false)")
        return write

    def execute_write(self, write: KeyedWrite | None, sql: str) -> Any:
        """Run the statement of a model's ``write`` (None: an unclustered one), its
        partitions cut into files of the planned rows."""
        settings = write.statement_settings() if write is not None else {}
        if not settings:
            return self.ctx.execute(sql)[0]
        return self.ctx.execute_with(settings, sql)

    def rewrite_select(self, relation: Any, plan: ClusteringPlan,
                       stored: StoredLayout, decision: Any, sql: str, sampled: Any,
                       runs: list[Any] | None, schema: dict[str, str],
                       properties: Mapping[str, str], file_format: str | None = None,
                       rows_view: str | None = None) -> tuple[KeyedWrite, Rewrite | None]:
        """The keyed write of an incremental run or a re-clustering (``schema``: the
        columns of ``sql``; ``properties``: the table's, whose statistics cut the write
        keeps; ``file_format``: the table's, None for Parquet; ``rows_view``: a view of
        exactly the rewritten files' rows, where the table's own scan would open every
        file), and the re-clustering it is, if it rewrites files."""

        model = plan.model
        reach = self.ctx.reach()
        written_as = format_table(file_format)
        # Every write keeps the statistics cut the table's build recorded.
        settings = written_as.recorded_write_settings(properties)
        if decision.action != FULL and not decision.clustered_write:
            settings = {**settings, **PENDING_RUN_SETTINGS}
        # A writer that cuts no files by rows (Iceberg's), or a table fixing its own cut,
        # gets a shuffle partition per file.
        file_per_partition = not written_as.cuts_files_by_rows or \
            self.ctx.fixes_file_rows(relation)
        if not decision.rewrites:
            # Rows landing as written need the sample's keys for the log, no keyed SELECT.
            prepared = reach.keyed(plan, sql, sampled, stored, decision.pieces, schema,
                                   pieces=True, file_per_partition=file_per_partition,
                                   select=not decision.as_written)
            if decision.as_written:
                return self.landed_write(plan, sql, prepared, schema, settings), None
            return self.keyed_write(plan, prepared, new_layout=False,
                                    settings=settings), None
        table_schema = self.ctx.columns(relation)
        columns = list(table_schema)
        everything = decision.action == FULL
        whole_table = len(decision.rewritten_paths) == sum(r.files for r in runs or [])
        old_sql = (rows_of_files_sql(rows_view, columns, None) if rows_view is not None
                   else rows_of_files_sql(str(relation), columns,
                                          None if whole_table else decision.rewritten_paths))
        old = reach.sample(plan, old_sql, table_schema, None)
        if sql:
            listed = ", ".join(quote(c) for c in columns)
            union_sql = f"select {listed} from (\n{sql}\n) zspark_new union all {old_sql}"
            both = sampled.union(old)
        else:  # re-clustering on demand: only the table's own rows
            union_sql, both = old_sql, old
        prepared = reach.keyed(plan, union_sql, both, None if everything else stored,
                               decision.pieces, table_schema, pieces=not everything,
                               file_per_partition=file_per_partition)
        write = self.keyed_write(plan, prepared, new_layout=everything, settings=settings)
        rewrite = Rewrite(
            decision=decision, new_rows=sampled.rows if sql else 0,
            table_rows=sum(r.rows for r in runs or []),
            layout=prepared.layout.to_properties() if everything and prepared.layout else None,
            partition_by=list(plan.partition_by), whole_table=whole_table)
        logger.debug(f"zspark: {model}: rewriting {decision.rewritten_rows} rows of "
                     f"{len(decision.rewritten_paths)} files into the table's next version")
        return write, rewrite

    def commits_reclustering(self, full: bool) -> bool:
        """Whether this reach commits a re-clustering of a Delta or Iceberg table: any
        through the format's JVM API (a session's); over a server only a ``full`` one,
        whose whole tables or partitions the formats replace by SQL."""
        return self.ctx.reach().reaches_jvm or full

    def session_reclusters(self, decision: Any, file_format: str) -> Any:
        """The policy's ``decision``, its re-clustering deferred where this reach cannot
        commit it (:meth:`commits_reclustering`)."""

        if self.commits_reclustering(decision.action == FULL):
            return decision
        return deferred(decision, f"a {file_format} re-clustering of some of its files needs "
                                  f"`method: session`; over `method: {self.ctx.method}` it "
                                  f"re-clusters the whole table (zspark_recluster with "
                                  f"full=true)")
