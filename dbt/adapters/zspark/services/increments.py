"""Clustered incremental runs of Parquet tables and their re-clustering (a service).

Plan an incremental run (stored layout, drift check, the re-clustering policy), write
the table's next version or a batch and bring it in, index the new files. The decisions
are made by the pure modules (``layout_state``, ``recluster``, ``health``); this module
runs them on Spark.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from dbt.adapters.events.logging import AdapterLogger
from dbt_common.exceptions import DbtRuntimeError

from dbt.adapters.zspark.core.sql_text import sql_string
from dbt.adapters.zspark.core.stop_points import stop_point
from dbt.adapters.zspark.formats import (
    format_table,
)
from dbt.adapters.zspark.layouts import CONFIG_KEYS
from dbt.adapters.zspark.layouts.layout_state import (
    StoredLayout,
    clustered_writes,
    clustered_writes_after,
)
from dbt.adapters.zspark.layouts.planning import (
    RELAYOUT_KEY,
    ClusteringConfigError,
    ClusteringPlan,
    plan_clustering,
)
from dbt.adapters.zspark.services.context import RunContext
from dbt.adapters.zspark.services.indexing import FileIndex
from dbt.adapters.zspark.services.plans import FormatPlan, IncrementPlan, Rewrite, lap
from dbt.adapters.zspark.services.tables import TableFiles
from dbt.adapters.zspark.services.versioning import TableVersioning
from dbt.adapters.zspark.services.writes import KeyedWrites
from dbt.adapters.zspark.versions.recluster import (
    APPEND,
    FULL,
    MERGE,
    TIER_RUNS,
    ReclusterPlan,
    Run,
    plan_increment,
    plan_on_demand,
)
from dbt.adapters.zspark.versions.recluster import rebuild_files as files_for
from dbt.adapters.zspark.versions.recluster import relayout as relayout_plan
from dbt.adapters.zspark.versions.rewrite import (
    carried_properties,
    in_partitions,
    set_properties_sql,
    stale_layout_keys,
    table_runs,
)
from dbt.adapters.zspark.versions.table_versions import BATCH, BATCH_KEY, RECLUSTER

logger = AdapterLogger("zspark")

#: Strategies whose rows replace the partitions they fall in: written whole, clustered.
OVERWRITING_STRATEGIES = ("insert_overwrite", "microbatch")


def check_incremental_strategy(model: str, strategy: str, file_format: str,
                               partition_by: Any) -> None:
    """Clustered incremental models of Parquet append or insert_overwrite; of Delta and
    Iceberg, append, merge, insert_overwrite or microbatch (partitioned: each batch
    replaces the partitions its rows fall in)."""
    written_as = format_table(file_format)
    allowed = written_as.incremental_strategies
    if strategy not in allowed:
        of = f" {written_as.name}" if written_as.commits_on_its_own else ""
        raise DbtRuntimeError(
            f"Model '{model}': config 'incremental_strategy' is '{strategy}' on a "
            f"clustered{of} incremental model. Allowed: "
            f"{', '.join(repr(s) for s in allowed[:-1])} or {allowed[-1]!r}.")
    if strategy == "microbatch" and not partition_by:
        raise DbtRuntimeError(
            f"Model '{model}': config 'incremental_strategy' is 'microbatch' and "
            f"'partition_by' is not set: each batch replaces the partitions its rows "
            f"fall in, so a microbatch model needs 'partition_by' (a column of the "
            f"batch's time, such as its day).")


def check_table_format(model: str, relation: str, file_format: str,
                       table_format: str | None) -> None:
    """An incremental run writes its rows the way its table was built: a model whose
    ``file_format`` is not its table's format (``table_format``: 'delta', 'iceberg', or
    None for a table of neither) is refused before anything is written."""
    if (table_format or "parquet") != file_format:
        raise DbtRuntimeError(
            f"Model '{model}': config 'file_format' is '{file_format}' but {relation} is a "
            f"{table_format or 'non-Delta, non-Iceberg'} table; run `dbt run --full-refresh "
            f"--select {model}` to rebuild it as {file_format}.")


def stored_table_plan(model: str, stored: StoredLayout,
                      schema: dict[str, str]) -> ClusteringPlan:
    """The clustering plan of a table's stored layout (a re-clustering on demand keys the
    whole table as its build did)."""
    try:
        plan = plan_clustering(model, stored.as_config(), schema, "table")
    except ClusteringConfigError as error:
        raise DbtRuntimeError(str(error)) from error
    assert plan is not None
    return plan


def last_run_rows(runs: list[Run] | None) -> int | None:
    """Rows of the newest run written since the last full clustering (None: none yet).

    >>> last_run_rows([Run("a", ("p",), 50, 1, True), Run("b", ("q",), 5, 2, False),
    ...                Run("c", ("r",), 7, 3, False)])
    7
    >>> last_run_rows([Run("a", ("p",), 50, 1, True)]) is None
    True
    """
    pending = [run for run in runs or [] if not run.clustered]
    return max(pending, key=lambda run: run.written_at).rows if pending else None


def sort_appends(model: str, config: dict[str, Any]) -> bool:
    """``zspark_sort_appends``: an append's rows landed as the model gives them, a
    pending run clustered when its tier merge takes it (false, the default), or keyed
    and sorted into narrow pieces as they are written (true)."""
    chosen = config.get("zspark_sort_appends")
    if chosen is None:
        return False
    if not isinstance(chosen, bool):
        raise DbtRuntimeError(f"Model '{model}': config 'zspark_sort_appends' is {chosen!r}. "
                              f"Allowed: false (the default: each append's rows land as "
                              f"written and are clustered when a tier merge takes them) or "
                              f"true (sorted into narrow pieces as they are written).")
    return chosen


def landed_as_written(decision: ReclusterPlan) -> ReclusterPlan:
    """An append's ``decision`` with its rows landed unsorted (``zspark_sort_appends:
    false``): only a run of pieces of its own lands so; merges, full re-clusterings and a
    partition's clustered base are sorted.

    >>> landed_as_written(ReclusterPlan("append", (), 0, 8, "8 pieces fit in 90 files")).reason
    'landed as written, a pending run its tier merge clusters (zspark_sort_appends: false)'
    >>> landed_as_written(ReclusterPlan("merge", ("f",), 5, 8, "peers")).as_written
    False
    """
    if decision.action != APPEND or decision.rewrites or decision.clustered_write:
        return decision
    return replace(decision, as_written=True,
                   reason="landed as written, a pending run its tier merge clusters "
                          "(zspark_sort_appends: false)")


def recluster_runs(model: str, config: dict[str, Any]) -> int:
    """``zspark_recluster_runs``: how many pending runs of one size merge into one."""
    runs = config.get("zspark_recluster_runs")
    if runs is None:
        return TIER_RUNS
    if isinstance(runs, bool) or not isinstance(runs, int) or runs < 2:
        raise DbtRuntimeError(f"zspark: {model}: zspark_recluster_runs must be a whole "
                              f"number of runs, 2 or more (default {TIER_RUNS}); got {runs!r}")
    return runs


@dataclass
class SampledIncrement:
    """What an incremental run's plan starts from, in either family: the table's stored
    layout, the new rows keyed and sampled, the table's live files and the policy's
    decision on them."""

    table_format: str | None
    properties: dict[str, str]
    stored: StoredLayout
    plan: ClusteringPlan
    schema: dict[str, str]
    sampled: Any  # reach.base.Sampled
    files: list[tuple[str, int, int]] | None
    runs: list[Any] | None
    decision: ReclusterPlan
    automatic: bool
    #: Pending runs of one tier that merge into one (``zspark_recluster_runs``).
    tier_runs: int = TIER_RUNS
    #: An append's rows sorted into pieces as written (``zspark_sort_appends``).
    sort_appends: bool = False
    #: A Delta or Iceberg table's new layout (``cluster_by='auto'``), which its full
    #: re-clustering after the new rows' commit keys by; the new rows are keyed by
    #: ``plan``, the table's own.
    relayout: ClusteringPlan | None = None

    def lands(self, strategy: str) -> bool:
        """Whether the new rows land as the model gives them: an append's, unless they
        are sorted on write, open a partition (whose first rows are its clustered base),
        or no policy merges them later (no index lists the table's files, or automatic
        re-clustering is off: sorting as they are written is all the clustering they
        get)."""
        return (strategy == "append" and not self.sort_appends and self.automatic
                and self.files is not None and not self.decision.clustered_write)


class IncrementPlanner:
    """The part of an incremental run's plan both table families share: the stored
    layout, the drift check, the sample, the re-clustering policy's decision, and the
    SELECT of the rows to write."""

    def __init__(self, ctx: RunContext, tables: TableFiles, index: FileIndex,
                 writes: KeyedWrites) -> None:
        self.ctx = ctx
        self.tables = tables
        self.index = index
        self.writes = writes

    @staticmethod
    def _plan_of(model: str, config: dict[str, Any], schema: dict[str, str]) -> ClusteringPlan:
        """The plan of a layout replacing the stored one (no drift to refuse)."""
        try:
            plan = plan_clustering(model, config, schema, "incremental")
        except ClusteringConfigError as error:
            raise DbtRuntimeError(str(error)) from error
        assert plan is not None
        return plan

    def _checked_plan(self, model: str, relation: Any, stored: StoredLayout,
                      config: dict[str, Any], schema: dict[str, str]) -> ClusteringPlan:
        """The model's clustering plan, refused when it keys rows differently from the
        layout stored with the table, or in a way this connection cannot."""
        try:
            plan = plan_clustering(model, config, schema, "incremental")
        except ClusteringConfigError as error:
            raise DbtRuntimeError(str(error)) from error
        assert plan is not None
        drift = stored.drift(plan)
        if drift is not None:
            raise DbtRuntimeError(
                f"Model '{model}': the clustering config no longer matches the layout stored "
                f"with {relation}: {drift}. Run `dbt run --full-refresh --select {model}` to "
                f"rebuild the table with the new layout.")
        self.ctx.refuse_keys_in_python(
            self.ctx.reach(), model,
            stored.curve_method, f"{relation} is keyed with curve_method "
            f"'{stored.curve_method}', computed in Python",
            " (rebuild the table with it, or run it in a session)")
        return plan

    def sample(self, model: str, relation: Any, config: dict[str, Any], sql: str,
               strategy: str, file_format: str) -> SampledIncrement | None:
        """The new rows keyed with the layout stored with the table and sampled, and the
        policy's decision on the table's live files (None: no new rows)."""

        # The format is read from the table itself: a relation cached by this run's
        # earlier build (a microbatch model's first batch) does not carry it.
        tier_runs = recluster_runs(model, config)
        sorted_appends = sort_appends(model, config)
        table_format, properties = self.tables.format_of(relation)
        check_table_format(model, str(relation), file_format, table_format)
        stored = self.tables.stored_layout(model, relation, properties)
        reach = self.ctx.reach()
        schema = reach.schema(sql)
        # cluster_by='auto' chose a new layout: an append re-clusters the whole table by
        # it (a Delta or Iceberg one in the commit after the new rows', through the
        # format's JVM API, or by SQL over a server); any other run keeps the stored one.
        relayout = bool(config.get(RELAYOUT_KEY)) and strategy == "append"
        if config.get(RELAYOUT_KEY) and not relayout:
            logger.info(f"zspark: {model}: the new layout waits for an append "
                        "or a full refresh; rows added by the table's")
        new_plan = replace(self._plan_of(model, config, schema), file_count=None) \
            if relayout else None
        if config.get(RELAYOUT_KEY):
            config = {**config, **dict.fromkeys(CONFIG_KEYS), **stored.as_config()}
        # A Parquet table's new rows are keyed by the new layout (the run rewrites them with
        # the rest); a Delta or Iceberg table's by its own, the commit after re-keys all.
        plan = new_plan if new_plan is not None and table_format is None else replace(
            self._checked_plan(model, relation, stored, config, schema), file_count=None)
        files = self.index.live_files(relation, table_format, properties,
                                      create=config.get("zspark_index") is not False)
        clustered = clustered_writes(properties)
        # A Delta table's files are grouped into runs by the commit that added them.
        commits = {} if files is None else self.tables.commits(relation, table_format)
        runs = None if files is None else table_runs(files, clustered, commits)
        logger.debug(f"zspark: {model}: {stored.describe()} (stored); sampling new rows")
        # Appends of a like size: the last run's rows let the sample drop most rows early.
        sampled = reach.sample(plan, sql, schema, last_run_rows(runs))
        if sampled.rows == 0:
            logger.info(f"zspark: {relation.identifier}: no rows written; table, layout and "
                        f"index unchanged")
            return None
        table_sized = files_for(sampled.rows, stored.rows_per_file)
        automatic = config.get("zspark_recluster") is not False
        if strategy == "merge":
            decision = ReclusterPlan(APPEND, (), 0, table_sized,
                                     "its rows a run of their own; the policy judges the "
                                     "table once the merge is committed")
        elif strategy != "append":
            # The partitions it replaces are written whole: they are clustered.
            decision = ReclusterPlan(APPEND, (), 0, table_sized,
                                     f"{strategy} writes whole partitions in table-sized files",
                                     clustered_write=True)
        elif files is None:
            decision = ReclusterPlan(APPEND, (), 0, table_sized,
                                     "no index lists the table's files: table-sized files, "
                                     "no re-clustering")
        elif relayout:
            decision = relayout_plan(runs or [], sampled.rows, stored.rows_per_file,
                                     "cluster_by='auto' chose a new layout for the workload")
        else:
            # On a partitioned table only the partitions the new rows fall in take part.
            touched = table_runs(in_partitions(files, plan.partition_by, sampled.partitions),
                                 clustered, commits) if plan.partition_by else runs
            decision = plan_increment(touched or [], sampled.rows, stored.rows_per_file,
                                      automatic, tier_runs)
        return SampledIncrement(table_format, properties, stored, plan, schema, sampled,
                                files, runs, decision, automatic, tier_runs, sorted_appends,
                                new_plan if table_format is not None else None)

    def increment_plan(self, start: SampledIncrement, relation: Any, sql: str,
                       strategy: str, decision: ReclusterPlan,
                       format_plan: FormatPlan | None = None) -> IncrementPlan:
        """The plan the materialization is handed: the rows of ``decision`` to write,
        and the table's files before them (whose difference after is the new files)."""
        write, rewrite = self.writes.rewrite_select(
            relation, start.plan, start.stored, decision, sql, start.sampled, start.runs,
            start.schema, start.properties, start.table_format)
        before: set[str] = set()
        if not decision.rewrites:
            before = {path for path, _, _ in start.files} if start.files is not None \
                else self.ctx.reach().table_files(relation)
        return IncrementPlan(
            start.sampled.rows, decision.rewrites, files_before=before,
            clustered_insert=strategy in OVERWRITING_STRATEGIES or decision.clustered_write,
            rewritten=rewrite, format_plan=format_plan, write=write)


class ParquetIncrements:
    """Clustered incremental runs of Parquet tables, re-clustering on demand."""

    def __init__(self, ctx: RunContext, tables: TableFiles, index: FileIndex,
                 writes: KeyedWrites, versions: TableVersioning,
                 planner: IncrementPlanner) -> None:
        self.ctx = ctx
        self.tables = tables
        self.index = index
        self.writes = writes
        self.versions = versions
        self.planner = planner

    def check_incremental(self, model: str, strategy: str,
                          file_format: str = "parquet",
                          partition_by: Any = None) -> None:
        check_incremental_strategy(model, strategy, file_format, partition_by)

    def plan(self, model: str, relation: Any, config: dict[str, Any], sql: str,
             strategy: str, file_format: str) -> IncrementPlan:
        """Plan an incremental run of a clustered Parquet model, before anything is
        written: with ``append`` the re-clustering policy (``recluster.py``) decides to
        insert the new rows as a run of pieces, or to rewrite them together with some
        pending runs (or the whole table) into the table's next version."""
        start = self.planner.sample(model, relation, config, sql, strategy, file_format)
        if start is None:
            return IncrementPlan(0, False)
        decision = landed_as_written(start.decision) if start.lands(strategy) \
            else start.decision
        logger.debug(f"zspark: {model}: {run_words(strategy, decision)}")
        step = self.planner.increment_plan(start, relation, sql, strategy, decision)
        if step.write is not None:
            step.write.action = run_action(strategy, decision)
        return step

    def recluster(self, model: str, relation: Any,
                  full: bool) -> dict[str, Any]:
        """``zspark_recluster`` on a Parquet table: the pending runs merged (or, ``full``,
        the whole table re-clustered) into its next version, swapped in."""

        stored = self.tables.stored_layout(model, relation)
        files = self.index.indexed_files(relation)
        if files is None:
            raise DbtRuntimeError(
                f"zspark_recluster: {relation}: its index does not list exactly its files; "
                f"run zspark_build_index on it first")
        properties = self.ctx.table_properties(relation)
        runs = table_runs(files, clustered_writes(properties))
        decision = plan_on_demand(runs, stored.rows_per_file, bool(full))
        logger.info(f"zspark: {model}: {decision.action} ({decision.reason})")
        if not decision.rewrites:
            return {"action": decision.action, "rewritten_rows": 0}
        schema = self.ctx.reach().schema(f"select * from {relation}")
        plan = stored_table_plan(model, stored, schema)
        write, rewrite = self.writes.rewrite_select(relation, plan, stored, decision, "",
                                                    None, runs, schema, properties)
        write.action = recluster_words(decision)
        step = IncrementPlan(decision.rewritten_rows, True, rewritten=rewrite, write=write)
        staging = self.begin_rewrite(model, relation, step)
        self.writes.execute_write(write, f"insert into {staging} {write.sql}")
        self.finish_rewrite(model, relation, staging, step)
        return {"action": decision.action, "rewritten_rows": decision.rewritten_rows}

    def begin_rewrite(self, model: str, relation: Any, step: IncrementPlan) -> Any:
        """The staging table of a re-clustering, created like the table (columns,
        partitioning, writer options) with its properties (what a killed run left was
        repaired when this run began): in a session, when files stay, a batch published
        in place of the files rewritten; else the table's next version."""

        rewrite = _rewrite_of(step)
        rewrite.in_place = self.ctx.reach().journals_batches and not rewrite.whole_table
        if rewrite.in_place:
            staging = self.ctx.version_of(relation, BATCH)
            self.ctx.execute(f"create table {staging} like {relation}")
            return staging
        staging = self.versions.next_version(relation)
        location = self.versions.next_location(relation)
        self.ctx.execute(f"create table {staging} like {relation} location {sql_string(location)}")
        properties = carried_properties(self.ctx.table_properties(relation), rewrite.layout, None)
        if properties:
            self.ctx.execute(set_properties_sql(str(staging), properties))
        return staging

    def finish_rewrite(self, model: str, relation: Any, staging: Any,
                       step: IncrementPlan) -> None:
        """Check the rows written into ``staging`` (with the files that stay, they must be
        the table's and the new rows), then bring them into the table: published in place
        of the files rewritten, or swapped in as its next version; the index follows."""

        rewrite = _rewrite_of(step)
        stop_point("rewrite:written")
        lap(step.write, "write")
        index = self.ctx.index_of(relation)
        next_version = self.ctx.reach().next_version(relation, staging, index, rewrite.in_place)
        rewritten = rewrite.decision.rewritten_paths
        carried = next_version.carry(rewritten, rewrite.partition_by,
                                     rewrite.decision.action == FULL,
                                     self.ctx.table_properties(relation))
        expected = rewrite.table_rows + rewrite.new_rows
        if carried.rows != expected or not carried.files_match:
            raise DbtRuntimeError(
                f"zspark: {relation}: re-clustering stopped before the table changed: its "
                f"rows would be {carried.rows}, the table's and the new rows {expected}; "
                f"the table and its index are unchanged")
        stop_point("rewrite:checked")
        lap(step.write, "write")
        if next_version.in_place:
            versions = self.ctx.versions_of(relation)
            versions.journal_replaced(list(rewritten))
            before = self.ctx.table_properties(relation)
            # The journal, the new layout and the clustered writes in one statement: from
            # here the next run finishes the publication.
            self.ctx.execute(set_properties_sql(str(relation), {
                **(rewrite.layout or {}), **carried.properties, BATCH_KEY: RECLUSTER}))
            versions.publish_batch(RECLUSTER)
            self.ctx.cache_dropped(staging)
            stale = stale_layout_keys(before, rewrite.layout)
            if stale:
                self.ctx.execute(f"alter table {relation} unset tblproperties if exists "
                                 f"({', '.join(map(sql_string, stale))})")
        else:
            if carried.properties:
                self.ctx.execute(set_properties_sql(str(staging), carried.properties))
            self.versions.swap_in(model, relation, relation)
        lap(step.write, "write")
        summary = next_version.publish(rewritten)
        stop_point("index:published")
        lap(step.write, "index")
        self.index.log_index(relation, index, summary, step.write)

    def finish(self, model: str, relation: Any, step: IncrementPlan, want_index: bool,
               clustering: list[str] | None = None,
               configured: list[str] | None = None,
               published: list[str] | None = None) -> dict[str, Any]:
        """After the insert: add the new files' footers to the index (and drop the rows of
        files an overwrite replaced), then log the layout. ``published``: the files an
        append's batch moved into the table, which are all it added (the run holds the
        table's lock); otherwise the table is listed again."""

        before = step.files_before
        stop_point("append:inserted")
        lap(step.write, "write")
        if published is not None and not step.clustered_insert:
            # Spark's cached listing of the table misses the files moved in.
            self.ctx.reach().refresh(relation)
            added, removed = sorted(published), []
            after = before | set(added)
        else:
            after = self.ctx.reach().table_files(relation, known=before)
            added, removed = sorted(after - before), sorted(before - after)
        if step.clustered_insert:
            # Whole partitions (an overwrite, or a partition's first rows) written sorted
            # by the key in table-sized files: clustered like a full build's files.
            self.ctx.execute(set_properties_sql(str(relation), clustered_writes_after(
                self.ctx.table_properties(relation), sorted(after), added)))
        if not want_index:
            return {"added": len(added), "removed": len(removed)}
        index = self.ctx.index_of(relation)
        reach = self.ctx.reach()
        summary = reach.update_index(relation, index, added, removed, clustering, configured)
        if summary is None:
            logger.warning(f"zspark: {relation.identifier}: no index matching the configured "
                           f"columns; indexing every file")
            summary = reach.build_index(relation, index, clustering, configured)
        stop_point("append:indexed")
        lap(step.write, "index")
        logger.debug(f"zspark: {relation.identifier}: {len(added)} files added, "
                     f"{len(removed)} replaced; their footers indexed")
        self.index.log_index(relation, index, summary, step.write)
        return {"added": len(added), "removed": len(removed)}


def _rewrite_of(step: IncrementPlan) -> Rewrite:
    """The re-clustering a plan that rewrites files carries."""
    if step.rewritten is None:
        raise DbtRuntimeError("zspark: a re-clustering step got a plan that rewrites nothing")
    return step.rewritten


#: How each strategy's run opens its log line.
_STRATEGY_VERBS = {"append": "appended", "merge": "merged on unique_key",
                   "insert_overwrite": "overwrote partitions",
                   "microbatch": "replaced the batch's partitions"}


def run_action(strategy: str, decision: ReclusterPlan) -> str:
    """What an incremental run did, in the few words that open its log line (the
    policy's reasons go to dbt's debug log).

    >>> run_action("append", ReclusterPlan("full", (), 10, 3, "pending rows"))
    'appended; the whole table re-clustered'
    >>> run_action("merge", ReclusterPlan("append", (), 0, 3, "judged after its commit"))
    'merged on unique_key'
    >>> run_action("append", ReclusterPlan("merge", ("a", "b"), 10, 3, "tier"))
    'appended; 2 pending files re-clustered with the new rows'
    """
    verb = _STRATEGY_VERBS.get(strategy, strategy)
    if decision.as_written:
        verb += " unsorted, for a later merge to cluster"
    return "; ".join(filter(None, [verb, recluster_words(decision)]))


def recluster_words(decision: ReclusterPlan) -> str:
    """The re-clustering a decision makes, in words ("": none)."""
    if decision.action == FULL:
        return "the whole table re-clustered"
    if decision.action == MERGE:
        return f"{len(decision.rewritten_paths)} pending files re-clustered with the new rows"
    return ""


def run_words(strategy: str, decision: ReclusterPlan) -> str:
    """What an incremental run does, for its log line: a merge is called one, not an
    append of the run of pieces its new rows become.

    >>> run_words("merge", ReclusterPlan("append", (), 0, 3, "judged after its commit"))
    'merge on unique_key (judged after its commit)'
    >>> run_words("append", ReclusterPlan("full", (), 0, 3, "pending rows"))
    'full (pending rows)'
    """
    action = "merge on unique_key" if strategy == "merge" and not decision.rewrites \
        else decision.action
    return f"{action} ({decision.reason})"
