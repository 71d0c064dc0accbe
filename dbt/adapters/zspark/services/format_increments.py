"""Clustered incremental runs of Delta and Iceberg tables (a service).

An incremental run of such a table is planned as a Parquet one (``zspark_increment``:
the stored layout keys the new rows, the re-clustering policy of ``recluster.py``
decides), but written in commits of the format: the new rows first, in one commit (a
reader sees them or not): a run of pieces (append), the format's MERGE, or whole
partitions replaced (insert_overwrite, then recorded as clustered); then, when the
policy asks for it, the re-clustering as a second commit that replaces exactly the files
it rewrote and changes no data (``FormatTable.replace_files``), a full one setting the
new layout and base in the same commit. A run killed between the two has committed its
rows; the next run's policy finds them pending and merges them.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import replace
from typing import Any

from dbt.adapters.events.logging import AdapterLogger
from dbt_common.exceptions import DbtRuntimeError

from dbt.adapters.zspark.core.stop_points import stop_point
from dbt.adapters.zspark.formats import CommittingTable, committing_table
from dbt.adapters.zspark.layouts.layout_state import (
    clustered_writes,
    clustered_writes_after,
    clustered_writes_property,
    write_id,
)
from dbt.adapters.zspark.reach.base import session_settings
from dbt.adapters.zspark.services.context import RunContext
from dbt.adapters.zspark.services.increments import (
    IncrementPlanner,
    landed_as_written,
    recluster_words,
    run_action,
    run_words,
    stored_table_plan,
)
from dbt.adapters.zspark.services.indexing import FileIndex
from dbt.adapters.zspark.services.plans import FormatPlan, IncrementPlan, KeyedWrite
from dbt.adapters.zspark.services.tables import TableFiles
from dbt.adapters.zspark.services.writes import KeyedWrites
from dbt.adapters.zspark.versions.recluster import (
    FULL,
    new_run,
    plan_increment,
    plan_on_demand,
)
from dbt.adapters.zspark.versions.rewrite import (
    file_partition,
    in_partitions,
    set_properties_sql,
    table_runs,
    whole_partitions,
)

logger = AdapterLogger("zspark")
#: Whether an ``insert overwrite`` replaces the partitions its rows fall in or all.
OVERWRITE_MODE = "spark.sql.sources.partitionOverwriteMode"
#: What a format's failed commit says when another writer's commit conflicts with it.
CONFLICTS = ("io.delta.exceptions.Concurrent", "ValidationException",
             "CommitFailedException", "Cannot fast-forward")


class FormatIncrements:
    """Clustered incremental runs of Delta and Iceberg tables, re-clustering in their commits."""

    def __init__(self, ctx: RunContext, tables: TableFiles, index: FileIndex,
                 writes: KeyedWrites, planner: IncrementPlanner) -> None:
        self.ctx = ctx
        self.tables = tables
        self.index = index
        self.writes = writes
        self.planner = planner

    def plan(self, model: str, relation: Any, config: dict[str, Any], sql: str,
             strategy: str, file_format: str) -> IncrementPlan:
        """Plan an incremental run of a clustered Delta or Iceberg model, before anything
        is written: the new rows are committed as a run of their own first (append,
        merge) or as whole partitions (insert_overwrite, microbatch); the re-clustering
        the policy chose follows in a commit of its own (``finish``)."""
        start = self.planner.sample(model, relation, config, sql, strategy, file_format)
        if start is None:
            return IncrementPlan(0, False)
        written_as = committing_table(file_format)
        decision = start.decision
        if strategy == "append":
            decision = self.writes.session_reclusters(decision, written_as.name)
        # Over a server without Python no merge of the format's would follow: sorted now.
        lands = start.lands(strategy) and self.ctx.reach().reaches_jvm
        if lands:
            decision = landed_as_written(decision)
        logger.debug(f"zspark: {model}: {run_words(strategy, decision)}")
        action = run_action(strategy, decision)
        # A new layout (cluster_by='auto') keys the full re-clustering after the rows'
        # commit; the rows themselves are keyed by the table's own.
        format_plan = FormatPlan(decision, start.relayout or start.plan, start.stored,
                                 written_as.name, start.properties,
                                 plan_after=strategy == "merge", automatic=start.automatic,
                                 tier_runs=start.tier_runs)
        if strategy in ("append", "merge"):
            # insert_overwrite keeps its table-sized files.
            table_rows = start.sampled.rows + sum(r.rows for r in start.runs or [])
            decision = new_run(start.sampled.rows, start.stored.rows_per_file,
                               "the new rows' own run", table_rows)
            if lands:
                # Committed unsorted; a merge the policy chose rewrites them after.
                decision = replace(decision, as_written=True)
        step = self.planner.increment_plan(start, relation, sql, strategy, decision,
                                           format_plan)
        if step.write is not None:
            step.write.action = action
        return step

    def record_base(self, model: str, relation: Any, file_format: str) -> None:
        """After a clustered incremental model's full build of a Delta or Iceberg table:
        its files are the clustered base the policy counts pending rows against (a
        property set in a commit of its own; should this run die before it, the next one
        finds no base and re-clusters the table in full)."""

        properties = self.ctx.table_properties(relation)
        files = self.tables.format_file_list(relation, file_format, properties)
        stop_point("format:base")
        self.ctx.execute(set_properties_sql(str(relation), clustered_writes_property(
            [path for path, _, _ in files])))

    def finish(self, model: str, relation: Any, step: IncrementPlan) -> dict[str, Any]:
        """After the new rows' commit: the re-clustering the policy chose, in a commit of
        its own, then the layout line from the format's statistics."""

        planned = step.format_plan
        if planned is None:
            raise DbtRuntimeError(f"zspark: {model}: the step after a {relation} commit got "
                                  f"the plan of a run that is not a Delta or Iceberg one")
        before = step.files_before
        stop_point("format:appended")
        decision = planned.decision
        # Rows that opened partitions of their own (the policy's "no rows yet where the
        # new rows land"), or replaced whole ones (insert_overwrite), were written as
        # those partitions' clustered base.
        opened = decision.clustered_write and not planned.plan_after
        # The live files, listed once (a Delta snapshot or Iceberg metadata read), when
        # the policy judges them after a merge, a re-clustering rewrites some, or a base
        # is recorded.
        files = (self.tables.format_file_list(relation, planned.file_format,
                                              planned.properties)
                 if planned.plan_after or decision.rewrites or opened else [])
        if planned.plan_after:
            # A MERGE replaced the files it matched: the policy judges the live files,
            # the merge's own among the pending; on a partitioned table, those of the
            # partitions the merge wrote in.
            judged = files
            if planned.plan.partition_by:
                judged = in_partitions(files, planned.plan.partition_by, {
                    file_partition(path, planned.plan.partition_by)
                    for path, _, _ in files if path not in before})
            decision = self.writes.session_reclusters(
                plan_increment(table_runs(judged, clustered_writes(planned.properties),
                                          self.tables.commits(relation, planned.file_format)),
                               0, planned.stored.rows_per_file, planned.automatic,
                               planned.tier_runs),
                planned.file_format)
            logger.debug(f"zspark: {model}: after the merge: {decision.action} "
                         f"({decision.reason}{merge_rewrote(before, files, planned.properties)})")
            if step.write is not None and decision.rewrites:
                step.write.action += f"; {recluster_words(decision)}"
        if not decision.rewrites:
            if opened:
                self._record_opened_partitions(model, relation, planned.properties, files,
                                               before)
            self.index.log_format_stats(relation, planned.file_format, step.write,
                                        just_built=False)
            return {"action": decision.action, "rewritten_rows": 0}
        # The files the policy chose (a full one: those of the partitions it judged,
        # every file of an unpartitioned table) and the run just committed.
        new_run = [path for path, _, _ in files if path not in before]
        rewritten = tuple(dict.fromkeys([*decision.rewritten_paths, *new_run]))
        return self._replace_files(
            model, relation, planned, replace(decision, rewritten_paths=rewritten), files,
            later="the next run", action=step.write.action if step.write is not None else "")

    def _record_opened_partitions(self, model: str, relation: Any, properties: dict[str, str],
                                  files: list[tuple[str, int, int]], before: set[str]) -> None:
        """The run's files, which opened or replaced whole partitions, added to the
        clustered base in a commit of its own (a property; replaced files leave it).
        Should it not commit (killed, or another writer's conflicting commit), they stay
        pending: the policy re-clusters them once more rows land there."""

        new_run = [path for path, _, _ in files if path not in before]
        stop_point("format:opened")
        try:
            self.ctx.execute(set_properties_sql(str(relation), clustered_writes_after(
                properties, [path for path, _, _ in files], new_run)))
        except Exception as error:
            if not any(mark in str(error) for mark in CONFLICTS):
                raise
            logger.warning(f"zspark: {model}: the {len(new_run)} files of whole partitions stay "
                           f"pending: another writer committed to {relation} meanwhile "
                           f"({str(error).splitlines()[0][:300]})")
            return
        logger.debug(f"zspark: {model}: {len(new_run)} files of whole partitions recorded as "
                     f"their clustered base")

    def recluster(self, model: str, relation: Any, file_format: str,
                  properties: dict[str, str], full: bool) -> dict[str, Any]:
        """``zspark_recluster`` on a Delta or Iceberg table: the pending runs merged (or,
        ``full``, the whole table re-clustered) in one commit that changes no data."""

        reach = self.ctx.reach()
        if not self.writes.commits_reclustering(full):
            raise DbtRuntimeError(
                f"zspark_recluster: {relation}: re-clustering some files of a {file_format} "
                f"table needs `method: session`: its commit that changes no data is made "
                f"through the format's JVM API, which `method: {self.ctx.method}` cannot "
                f"reach. Run it with a session profile; over this one, run it with "
                f"`full=true` (the whole table, by SQL) or rebuild the table with `dbt run "
                f"--full-refresh --select {model}`.")
        stored = self.tables.stored_layout(model, relation, properties)
        files = self.tables.format_file_list(relation, file_format, properties)
        decision = plan_on_demand(table_runs(files, clustered_writes(properties),
                                             self.tables.commits(relation, file_format)),
                                  stored.rows_per_file, full)
        logger.info(f"zspark: {model}: {decision.action} ({decision.reason})")
        if not decision.rewrites:
            return {"action": decision.action, "rewritten_rows": 0}
        plan = stored_table_plan(model, stored, reach.schema(f"select * from {relation}"))
        planned = FormatPlan(decision, plan, stored, file_format, properties)
        return self._replace_files(model, relation, planned, decision, files,
                                   later="a later zspark_recluster",
                                   action=recluster_words(decision))

    def _replace_files(self, model: str, relation: Any, planned: Any,
                       decision: Any, files: list[tuple[str, int, int]],
                       later: str, action: str) -> dict[str, Any]:
        """The files ``decision`` rewrites, keyed with the table's layout (a full one: with a
        new one) and sorted anew, replaced in one commit of the format that changes no
        data; a full one sets the new layout and base in the same commit. Another
        writer's conflicting commit defers it to ``later``: nothing of it is committed.
        ``action``: what the run did, opening its log line."""

        written_as = committing_table(planned.file_format)
        rewritten = tuple(decision.rewritten_paths)
        live = {path: rows for path, rows, _ in files}
        kept = [path for path in live if path not in set(rewritten)]
        rewrite = replace(decision, rewritten_rows=sum(live.get(p, 0) for p in rewritten))
        runs = table_runs(files, clustered_writes(planned.properties))
        reach = self.ctx.reach()
        schema = reach.schema(f"select * from {relation}")
        view = f"zspark_rewritten_{uuid.uuid4().hex}"
        layout: dict[str, str] | None = None
        write: KeyedWrite | None = None

        def keyed_write() -> KeyedWrite:
            # The rewritten files' rows, in the view, sampled, keyed and sorted anew (a
            # full one: with a new layout).
            nonlocal layout, write
            write, rewritten = self.writes.rewrite_select(
                relation, planned.plan, planned.stored, rewrite, "", None, runs, schema,
                planned.properties, planned.file_format, rows_view=view)
            layout = rewritten.layout if rewritten is not None else None
            return write

        def new_base(paths: list[str]) -> dict[str, str]:
            # A full re-clustering: its files, with the clustered files of partitions it
            # left alone, are the new base, keyed by the new layout.
            return {**(layout or {}), **clustered_writes_after(planned.properties, kept, paths)}

        base = new_base if decision.action == FULL else None
        try:
            if reach.reaches_jvm:
                version = self._replace_through_jvm(written_as, str(relation), rewritten, view,
                                                    keyed_write, base)
            elif kept and not whole_partitions(rewritten, kept, planned.plan.partition_by):
                # By SQL, a format replaces a whole table, or whole partitions of it.
                logger.warning(f"zspark: {model}: {decision.action} re-clustering deferred to "
                               f"{later}: over `method: {self.ctx.method}` a "
                               f"{planned.file_format} table is re-clustered in whole "
                               f"partitions, and {len(kept)} of its files stay beside "
                               f"rewritten ones")
                self.index.log_format_stats(relation, planned.file_format, None,
                                            just_built=False)
                return {"action": "deferred", "rewritten_rows": 0}
            else:
                version = self._replace_by_sql(written_as, relation, view, keyed_write,
                                               base, rewritten if kept else None,
                                               planned.plan.partition_by)
        except Exception as error:
            if not any(mark in str(error) for mark in CONFLICTS):
                raise
            logger.warning(f"zspark: {model}: {decision.action} re-clustering deferred to "
                           f"{later}: another writer committed to {relation} meanwhile and "
                           f"nothing of it was committed "
                           f"({str(error).splitlines()[0][:300]})")
            self.index.log_format_stats(relation, planned.file_format, write, just_built=False)
            return {"action": "deferred", "rewritten_rows": 0}
        logger.debug(f"zspark: {model}: {decision.action}: {len(rewritten)} files "
                     f"({rewrite.rewritten_rows} rows) replaced in one commit "
                     f"({planned.file_format} version {version})")
        if write is not None:
            write.action = action
        self.index.log_format_stats(relation, planned.file_format, write, just_built=False)
        return {"action": decision.action, "rewritten_rows": rewrite.rewritten_rows}

    def _replace_through_jvm(self, written_as: CommittingTable, table: str,
                             rewritten: tuple[str, ...], view: str,
                             keyed_write: Callable[[], KeyedWrite],
                             base: Callable[[list[str]], dict[str, str]] | None) -> str:
        """The replacement made through the format's JVM API, in one commit that changes
        no data: the rewritten files' rows, as its commit reads them, in ``view``."""
        jvm = self.ctx.reach().jvm()
        spark = jvm.spark

        def keyed(rows: Any) -> Any:
            rows.createOrReplaceTempView(view)
            write = keyed_write()
            settings.enter_context(session_settings(spark, write.statement_settings()))
            return spark.sql(write.sql)

        with ExitStack() as settings:
            settings.callback(spark.catalog.dropTempView, view)
            return written_as.replace_files(jvm, table, rewritten, keyed, base)

    def _replace_by_sql(self, written_as: CommittingTable, relation: Any, view: str,
                        keyed_write: Callable[[], KeyedWrite],
                        base: Callable[[list[str]], dict[str, str]] | None,
                        partitions_of: tuple[str, ...] | None,
                        partition_by: Sequence[str]) -> str:
        """The whole table, or the whole partitions of the files ``partitions_of``,
        replaced by statements alone (a server): the format's ``replace_by_sql``, the
        replaced rows read through ``view``."""

        def overwrite(target: str, source: str, dynamic: bool) -> None:
            self.ctx.execute(f"create or replace temporary view {view} as "
                             f"select * from {source}")
            write = keyed_write()
            stop_point("format:keyed")  # sampled and keyed, the rows not yet replaced
            mode = {OVERWRITE_MODE: "dynamic" if dynamic else "static"}
            self.ctx.execute_with({**write.statement_settings(), **mode},
                                  f"insert overwrite {target} {write.sql}")

        try:
            return written_as.replace_by_sql(
                self.ctx.fetch, self.ctx.execute, str(relation), overwrite, base, partitions_of,
                partition_by, location=lambda: self.ctx.reach().location(relation))
        finally:
            self.ctx.execute(f"drop view if exists {view}")


def merge_rewrote(before: set[str], files: list[tuple[str, int, int]],
                  properties: dict[str, str]) -> str:
    """For the log after a merge: how many of the clustered base's files its commit
    replaced (a format's MERGE rewrites every file a matched row is in, unclustered), so a
    base of no rows reads as what the merge did, not as a table never clustered.

    >>> merge_rewrote({"a", "b"}, [("b", 1, 0), ("c", 1, 0)], {})
    ''
    """
    clustered = clustered_writes(properties)
    live = {path for path, _, _ in files}
    base = [path for path in before if write_id(path) in clustered]
    replaced = sum(path not in live for path in base)
    if not replaced:
        return ""
    return (f"; the merge's commit replaced {replaced} of the {len(base)} clustered files, "
            f"as the format rewrites every file a matched row is in, without clustering")
