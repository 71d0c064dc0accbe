"""Clustered writes: the keyed SELECT of a build's or a re-clustering's rows and the session
settings its statement runs with (rows per file, the formats' statistics cut).
"""

from __future__ import annotations

import time
from typing import Any

from dbt.adapters.events.logging import AdapterLogger

from dbt.adapters.zspark.core.layout_state import (
    StoredLayout,
)
from dbt.adapters.zspark.core.planning import ClusteringPlan
from dbt.adapters.zspark.core.sql_text import quote
from dbt.adapters.zspark.formats import (
    format_table,
)
from dbt.adapters.zspark.services.context import Rewrite, RunContext
from dbt.adapters.zspark.skipping.health import LayoutSample
from dbt.adapters.zspark.versions.recluster import (
    FULL,
    deferred,
)
from dbt.adapters.zspark.versions.rewrite import (
    rows_of_files_sql,
)

logger = AdapterLogger("zspark")

#: Spark's rows-per-file cut of a write, set around each clustered write.
FILE_ROWS_SETTING = "spark.sql.files.maxRecordsPerFile"


class KeyedWrites:
    """Clustered writes: the keyed SELECT of a build's or a re-clustering's rows and the session"""

    def __init__(self, ctx: RunContext) -> None:
        self.ctx = ctx

    def keep(self, relation: Any, plan: ClusteringPlan, prepared: Any,
             new_layout: bool) -> None:
        """Keep what the rest of a build needs (its sample, timings) and log the write."""
        key = str(relation).lower()
        self.ctx.run.file_rows[plan.model] = prepared.file_rows
        self.ctx.run.samples[key] = LayoutSample(plan.columns, plan.column_types, prepared.sample,
                                                 prepared.sample_keys, prepared.sample_partitions)
        self.ctx.run.timings[key] = {"sample": prepared.sample_seconds,
                                     "since": time.perf_counter()}
        spread = prepared.spread
        how = (f"{spread.partitions} sorted partitions cut every {spread.rows_per_file} rows"
               if spread is not None and spread.rows_per_file else "one file per partition")
        keyed = "" if new_layout else ", keyed with the table's stored layout"
        if prepared.note:
            logger.info(f"zspark: {plan.model}: {prepared.note}")
        logger.info(
            f"zspark: {plan.model}: writing {prepared.input_rows} rows into "
            f"{prepared.file_count} files ({how}{keyed})"
        )

    def execute_write(self, model: str, sql: str) -> Any:
        """Run the statement that writes this run's clustered rows of ``model``, its
        partitions cut into files of the planned rows.

        Rows per file is a session setting for this one statement, not a writer option of
        the table: a table option would override it in every later write (pieces, merges).
        """
        rows = self.ctx.run.file_rows.pop(model, None)
        settings = self.ctx.run.write_settings.pop(model, {})
        if rows:
            settings[FILE_ROWS_SETTING] = str(int(rows))
        if not settings:
            return self.ctx.execute(sql)[0]
        return self.ctx.execute_with(settings, sql)

    def rewrite_select(self, relation: Any, plan: ClusteringPlan,
                       stored: StoredLayout, decision: Any, sql: str, sampled: Any,
                       runs: list[Any] | None, schema: dict[str, str],
                       file_format: str | None = None, rows_view: str | None = None,
                       ) -> tuple[str, Rewrite | None]:
        """The keyed SELECT an incremental run or a re-clustering writes (``schema``: the
        columns of ``sql``; ``file_format``: the table's, None for Parquet; ``rows_view``:
        a view of exactly the rewritten files' rows, where the table's own scan would open
        every file), and the re-clustering it is, if it rewrites files."""

        model = plan.model
        reach = self.ctx.reach()
        written_as = format_table(file_format)
        # A writer that cuts no files by rows (Iceberg's), or a table fixing its own cut,
        # gets a shuffle partition per file.
        file_per_partition = not written_as.cuts_files_by_rows or \
            self.ctx.fixes_file_rows(relation)
        if not decision.rewrites:
            prepared = reach.keyed(plan, sql, sampled, stored, decision.pieces, schema,
                                   pieces=True, file_per_partition=file_per_partition)
            self.keep(relation, plan, prepared, new_layout=False)
            return str(prepared.select_sql), None
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
        self.keep(relation, plan, prepared, new_layout=everything)
        rewrite = Rewrite(
            decision=decision, new_rows=sampled.rows if sql else 0,
            table_rows=sum(r.rows for r in runs or []),
            layout=prepared.layout.to_properties() if everything and prepared.layout else None,
            partition_by=list(plan.partition_by), whole_table=whole_table)
        logger.info(f"zspark: {model}: rewriting {decision.rewritten_rows} rows of "
                    f"{len(decision.rewritten_paths)} files into the table's next version")
        return str(prepared.select_sql), rewrite

    def session_reclusters(self, decision: Any, file_format: str) -> Any:
        """The policy's ``decision``, its re-clustering deferred over a server without
        Python: the format's commit that changes no data is made through its JVM API."""

        if self.ctx.reach().reaches_jvm:
            return decision
        return deferred(decision, f"a {file_format} re-clustering needs `method: session` "
                                  f"(run zspark_recluster there, or `dbt run --full-refresh`)")
