"""``zspark_advise``: the workload a table serves, the layouts it could have, each scored in
files per query on a sample of the table, and the one ``cluster_by='auto'`` would choose.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
from dbt.adapters.events.logging import AdapterLogger
from dbt_common.exceptions import DbtRuntimeError

from dbt.adapters.zspark.advice.candidates import (
    CANDIDATE_POOL,
    UNCLUSTERED,
    Candidate,
    ranked_columns,
)
from dbt.adapters.zspark.advice.decision import layout_change
from dbt.adapters.zspark.advice.event_logs import UNREADABLE as UNREADABLE_LOG
from dbt.adapters.zspark.advice.event_logs import filters_predicate
from dbt.adapters.zspark.advice.graph_workload import ProjectNode, project_queries
from dbt.adapters.zspark.advice.scoring import Choice, Score, candidate_types, score_layouts
from dbt.adapters.zspark.advice.table_sample import (
    count_sql,
    data_files_source,
    sample_sql,
    sampled_files,
)
from dbt.adapters.zspark.core.sql_text import quote
from dbt.adapters.zspark.core.value_ranks import normalize_type
from dbt.adapters.zspark.layouts import LAYOUTS
from dbt.adapters.zspark.layouts.keyed_plan import key_input_sql, key_input_type
from dbt.adapters.zspark.layouts.layout_state import StoredLayout, StoredLayoutError
from dbt.adapters.zspark.layouts.planning import (
    CLUSTERABLE_TYPES,
    RELAYOUT_KEY,
    ClusteringConfigError,
    auto_requested,
    plan_clustering,
)
from dbt.adapters.zspark.services.context import RunContext
from dbt.adapters.zspark.services.tables import TableFiles
from dbt.adapters.zspark.skipping.pruning import PredicateError
from dbt.adapters.zspark.skipping.workload import (
    DeclaredQuery,
    WorkloadError,
    declared_queries,
    filtered_columns,
)

logger = AdapterLogger("zspark")

#: Rows an advice samples from the table.
ADVICE_SAMPLE_ROWS = 100_000
#: The best candidates an advice lists.
SHOWN_CANDIDATES = 12
#: The file count an advice simulates when the table's own is unknown.
DEFAULT_ADVICE_FILES = 1_000
#: Days over which a layout change's saving is counted (``zspark_auto_horizon_days``).
HORIZON_DAYS = 30
MS_PER_DAY = 86_400_000


@dataclass
class ListedFiles:
    """A table's live files as an advice lists them: their paths, and the scan that opens
    only the files a ``_metadata.file_path`` filter names: the table itself (Parquet),
    its data files read as Parquet (Delta, Iceberg, where their rows are the table's), or
    None (every file is read)."""

    paths: list[str]
    files_source: str | None


@dataclass
class Workload:
    """The queries found, by source, and those that could not be read."""

    queries: list[DeclaredQuery] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)
    #: The event log folders read for the query history.
    history_folders: list[str] = field(default_factory=list)
    #: Days the history's queries span (at least one): its counts are per day.
    history_days: float = 0.0

    def by_source(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for query in self.queries:
            kind = query.source.split(" ", 1)[0]
            counts[kind] = counts.get(kind, 0) + 1
        return counts


@dataclass
class Advice:
    """What ``zspark_advise`` found and chose for a table."""

    relation: str
    workload: Workload
    column_counts: dict[str, float]
    files: int
    choice: Choice | None
    current: Candidate | None
    seconds: float

    def lines(self) -> list[str]:
        """The advice as a person reads it."""
        sources = ", ".join(f"{n} from {kind}" for kind, n in self.workload.by_source().items())
        out = [f"zspark_advise {self.relation}: {len(self.workload.queries)} queries "
               f"({sources or 'none found'})"]
        if self.workload.history_folders:
            out.append("query history read from: " + ", ".join(self.workload.history_folders)
                       + (f" ({self.workload.history_days:.1f} days; its counts per day)"
                          if self.workload.history_days else ""))
        for query in self.workload.queries:
            out.append(f"  [{query.source}] x{query.count:.3g}: {query.predicate}")
        if self.workload.unreadable:
            out.append("  not read (code sqlglot cannot parse): "
                       + ", ".join(self.workload.unreadable))
        if self.choice is None:
            out.append("no query filters on a clusterable column: the default stands "
                       "(unclustered).")
            return out
        out.append("columns by queries: " + ", ".join(
            f"{c} {n:g}" for c, n in sorted(self.column_counts.items(), key=lambda i: -i[1])))
        out.append(f"candidates scored on a sample cut into {self.choice.best.files} files "
                   "(share of files read per query, weighted by count):")
        shown = self.choice.ranked[:SHOWN_CANDIDATES]
        # No clustering and the table's own layout are always shown, for comparison.
        shown += [s for s in self.choice.ranked[SHOWN_CANDIDATES:]
                  if s.candidate.config_key == UNCLUSTERED
                  or (self.current is not None and s.candidate.same_layout(self.current))]
        for score in shown:
            mark = "*" if score is self.choice.chosen else " "
            out.append(f" {mark} {100 * score.expected:5.1f}%  {score.candidate.name}")
        chosen = self.choice.chosen
        out.append(f"choice: {chosen.candidate.name}, {100 * chosen.expected:.1f}% of files "
                   f"per query (~{chosen.files_per_query(self.files):.0f} of {self.files}): "
                   f"{self.choice.reason}")
        if self.current is not None:
            now = next((s for s in self.choice.ranked if s.candidate.same_layout(self.current)),
                       None)
            if now is None:
                out.append(f"current layout {self.current.name}: not among the candidates (it "
                           "clusters columns the workload does not filter on)")
            elif not now.candidate.same_layout(chosen.candidate):
                out.append(f"current layout {now.candidate.name}: {100 * now.expected:.1f}% "
                           f"of files per query; the choice reads "
                           f"{now.expected / max(chosen.expected, 1e-9):.2f}x fewer")
            elif now is not None:
                out.append("the current layout is the choice")
        out.append(f"({self.seconds:.1f} s)")
        return out


class WorkloadAdvisor:
    """``zspark_advise``: the workload of a table, its candidate layouts scored, a choice."""

    def __init__(self, ctx: RunContext, tables: TableFiles) -> None:
        self.ctx = ctx
        self.tables = tables

    def workload(self, model: str, config: Mapping[str, Any],
                 nodes: Sequence[Mapping[str, str]], relation: Any,
                 schema: Mapping[str, str]) -> Workload:
        """The model's declared queries (``workload`` config, ``skip_coverage`` tests),
        those the project's code runs against it, and its scans in the query history."""
        try:
            declared = declared_queries(config.get("workload"),
                                        config.get("skip_coverage_predicates") or ())
        except WorkloadError as error:
            raise DbtRuntimeError(f"Model '{model}': config '{error.config}' {error.problem}. "
                                  f"Allowed: {error.allowed}.") from None
        found = project_queries(model, [ProjectNode(n["resource_type"], n["name"], n["code"])
                                        for n in nodes])
        workload = Workload([*declared, *found.queries], found.unreadable)
        self._history(workload, config, relation, schema)
        return workload

    def _history(self, workload: Workload, config: Mapping[str, Any], relation: Any,
                 schema: Mapping[str, str]) -> None:
        """Add the table's scans found in Spark's event logs: the session's own
        (``spark.eventLog.dir`` when logging is on) and the ``zspark_event_logs`` folders."""
        folders = _as_list(config.get("zspark_event_logs"))
        settings = dict(self.ctx.fetch("set spark.eventLog.enabled")
                        + self.ctx.fetch("set spark.eventLog.dir"))
        if str(settings.get("spark.eventLog.enabled", "")).lower() == "true":
            folders.append(str(settings.get("spark.eventLog.dir") or "/tmp/spark-events"))
        if not folders:
            return
        name = str(relation).lower()
        scans = self.ctx.reach().event_log_scans(sorted(set(folders)), [name])
        workload.history_folders = sorted(set(folders))
        rows = scans.to_dict("records")
        # Counts per day: each scan's queries over the days the history spans (one at least).
        timed = [r for r in rows if r["table_name"] != UNREADABLE_LOG
                 and not pd.isna(r.get("first_ms")) and not pd.isna(r.get("last_ms"))]
        days = 1.0
        if timed:
            span = max(int(r["last_ms"]) for r in timed) - min(int(r["first_ms"]) for r in timed)
            days = max(1.0, span / MS_PER_DAY)
        workload.history_days = days
        for row in rows:
            if row["table_name"] == UNREADABLE_LOG:
                workload.unreadable.append(f"event logs of a codec not read here ({row['logs']} "
                                           "files; zstd and plain are)")
                continue
            predicate = filters_predicate(str(row["pushed_filters"]), schema)
            if predicate is not None:
                workload.queries.append(DeclaredQuery(predicate, float(row["queries"]) / days,
                                                      "history"))

    def advise(self, model: str, relation: Any, config: Mapping[str, Any],
               nodes: Sequence[Mapping[str, str]], files: int | None = None) -> Advice:
        started = time.perf_counter()
        schema = self.ctx.reach().schema(f"select * from {relation}")
        workload = self.workload(model, config, nodes, relation, schema)
        clusterable = _clusterable(schema, ())
        counts = _column_counts(workload, clusterable)
        listed = self._listed(relation)
        table_files = files or len(listed.paths) or DEFAULT_ADVICE_FILES
        current = self._current(relation)
        choice = None
        if ranked_columns(counts, clusterable):
            types = candidate_types(schema, counts, clusterable)
            choice = self.score(self._sample(relation, types, listed), schema, counts,
                                clusterable,
                                workload.queries, table_files)
        return Advice(str(relation), workload, counts, table_files, choice, current,
                      time.perf_counter() - started)

    def auto_config(self, model: str, config: Mapping[str, Any], sql: str, relation: Any,
                    nodes: Sequence[Mapping[str, str]], materialized: str,
                    adding: bool) -> dict[str, Any]:
        """``config`` of a ``cluster_by='auto'`` model with its layout chosen: once per run
        of the model (every step asks). A build chooses from the workload on a sample of
        its input (kept for the build to key by); a run adding rows to a table keeps the
        table's own layout."""
        try:
            auto_requested(model, config, materialized)
        except ClusteringConfigError as error:
            raise DbtRuntimeError(str(error)) from None
        horizon_days(model, config)
        key = (model, sql)
        if key not in self.ctx.run.auto_configs:
            self.ctx.run.auto_configs[key] = self._auto_config(model, config, sql, relation,
                                                               nodes, adding)
        return self.ctx.run.auto_configs[key]

    def _auto_config(self, model: str, config: Mapping[str, Any], sql: str, relation: Any,
                     nodes: Sequence[Mapping[str, str]], adding: bool) -> dict[str, Any]:
        # The workload is a source of the choice here, not weights of a layout of the user's.
        plain = {**config, "cluster_by": None, "workload": None, "cluster_weights": None}
        if adding:
            stored = self._stored(relation)
            if stored is None:
                logger.info(f"zspark: {model}: cluster_by='auto': the table was built "
                            "unclustered and stays so for added rows; a full refresh "
                            "chooses again")
                return plain
            return self._added_rows_config(model, config, relation, nodes, plain, stored)
        reach = self.ctx.reach()
        schema = reach.schema(sql)
        workload = self.workload(model, config, nodes, relation, schema)
        clusterable = _clusterable(schema, _as_list(config.get("partition_by")))
        counts = _column_counts(workload, clusterable)
        pool = ranked_columns(counts, clusterable)
        if not pool:
            logger.info(f"zspark: {model}: cluster_by='auto': no workload yet "
                        f"({len(workload.queries)} queries found, none filtering on a "
                        "column zspark can cluster): built unclustered until one does")
            return plain
        try:
            sampling = plan_clustering(model, {**plain, "hilbert_by": pool[:CANDIDATE_POOL]},
                                       schema, "table")
        except ClusteringConfigError as error:
            raise DbtRuntimeError(str(error)) from None
        assert sampling is not None
        sampled = reach.sample(sampling, sql, schema, None)
        files = sampling.resolve_file_count(sampled.input_bytes)
        choice = self.score(sampled.sample, schema, counts, clusterable, workload.queries,
                            files)
        chosen = choice.chosen
        plain_share = next(s.expected for s in choice.ranked
                           if s.candidate.config_key == UNCLUSTERED)
        kept = self._kept(model, relation, choice, files,
                          sum(q.count for q in workload.queries) * horizon_days(model, config))
        if kept is not None:
            chosen = kept
        sources = ", ".join(f"{n} from {kind}" for kind, n in workload.by_source().items())
        logger.info(f"zspark: {model}: cluster_by='auto' chose {chosen.candidate.name} from "
                    f"{len(workload.queries)} queries ({sources}): {100 * chosen.expected:.1f}%"
                    f" of {files} files per query expected, {100 * plain_share:.1f}% "
                    f"unclustered; {choice.reason if kept is None else 'the table keeps it'}")
        if chosen.candidate.config_key == UNCLUSTERED:
            return plain
        # The build keys by the sample the choice was scored on: no second pass to sample.
        self.ctx.run.auto_samples[(model, sql)] = sampled
        return {**plain, **_layout_config(chosen.candidate.config_key,
                                          chosen.candidate.columns, chosen.candidate.weights)}

    def _added_rows_config(self, model: str, config: Mapping[str, Any], relation: Any,
                           nodes: Sequence[Mapping[str, str]], plain: dict[str, Any],
                           stored: StoredLayout) -> dict[str, Any]:
        """An incremental run's layout: the table's own, or a new choice when the workload
        moved and the files its queries would not open pay for rewriting the table (the
        run then re-clusters the whole table by it, ``RELAYOUT_KEY``)."""
        own = {**plain, **_layout_config(stored.config_key, stored.columns, stored.weights)}
        schema = self.ctx.reach().schema(f"select * from {relation}")
        workload = self.workload(model, config, nodes, relation, schema)
        clusterable = _clusterable(schema, stored.partition_by)
        counts = _column_counts(workload, clusterable)
        if not ranked_columns(counts, clusterable):
            logger.info(f"zspark: {model}: cluster_by='auto': rows added by the table's "
                        f"layout, {_layout_name(stored)} (no workload found)")
            return own
        current = Candidate(stored.config_key, tuple(stored.columns), tuple(stored.weights))
        types = {c: t for c, t in schema.items()
                 if c in candidate_types(schema, counts, clusterable) or c in current.columns}
        listed = self._listed(relation)
        files = len(listed.paths) or DEFAULT_ADVICE_FILES
        choice = score_layouts(self._sample(relation, types, listed), schema, counts,
                               clusterable,
                               workload.queries, files,
                               lambda sql: self.ctx.reach().frame(sql, {}), current)
        now = next(s for s in choice.ranked if s.candidate.same_layout(current))
        if now.candidate.same_layout(choice.chosen.candidate):
            logger.debug(f"zspark: {model}: cluster_by='auto': rows added by the table's "
                         f"layout, {_layout_name(stored)}, still the choice")
            return own
        decision = layout_change(now.expected, choice.chosen.expected, files,
                                 sum(q.count for q in workload.queries)
                                 * horizon_days(model, config), files)
        logger.info(f"zspark: {model}: cluster_by='auto': {choice.chosen.candidate.name} "
                    f"({100 * choice.chosen.expected:.1f}% of files per query) against the "
                    f"table's {now.candidate.name} ({100 * now.expected:.1f}%): "
                    f"{'re-clustering the table by it' if decision.change else 'kept'}, "
                    f"{decision.reason}")
        if not decision.change:
            return own
        return {**plain, **_layout_config(choice.chosen.candidate.config_key,
                                          choice.chosen.candidate.columns,
                                          choice.chosen.candidate.weights),
                RELAYOUT_KEY: True}

    def _kept(self, model: str, relation: Any, choice: Choice, files: int,
              queries: float) -> Score | None:
        """The score of the table's own layout when a rebuild keeps it (the choice does
        not read enough fewer files, ``decision.layout_change``); None: the choice."""
        stored = self._stored(relation)
        if stored is None:
            return None
        current = Candidate(stored.config_key, tuple(stored.columns), tuple(stored.weights))
        own = next((s for s in choice.ranked if s.candidate.same_layout(current)), None)
        if own is None:
            logger.info(f"zspark: {model}: cluster_by='auto': {choice.chosen.candidate.name} "
                        f"against the table's {current.name}: changed, the workload no "
                        "longer filters on all of its columns")
            return None
        if own.candidate.same_layout(choice.chosen.candidate):
            return None
        decision = layout_change(own.expected, choice.chosen.expected, files, queries, 0)
        logger.info(f"zspark: {model}: cluster_by='auto': {choice.chosen.candidate.name} "
                    f"against the table's {own.candidate.name}: "
                    f"{'changed' if decision.change else 'kept'}, {decision.reason}")
        return None if decision.change else own

    def score(self, sample: pd.DataFrame, schema: Mapping[str, str],
              counts: Mapping[str, float], clusterable: Sequence[str],
              queries: Sequence[DeclaredQuery], table_files: int) -> Choice:
        """Every candidate's files simulated on one sample, each query judged by Spark."""
        return score_layouts(sample, schema, counts, clusterable, queries, table_files,
                             lambda sql: self.ctx.reach().frame(sql, {}))

    def _sample(self, relation: Any, types: Mapping[str, str], listed: ListedFiles) -> Any:
        """About :data:`ADVICE_SAMPLE_ROWS` rows of ``relation``'s ``types`` columns at
        random, from a bounded share of the table's files where a scan opens only those
        it names (``table_sample.py``)."""
        source, paths = str(relation), None
        if listed.files_source is not None:
            chosen = sampled_files(listed.paths)
            if len(chosen) < len(listed.paths):
                source, paths = listed.files_source, chosen
        inputs = {quote(c): key_input_sql(quote(c), t) for c, t in types.items()}
        rows = 0
        if paths is not None:
            try:
                rows = int(self.ctx.fetch(count_sql(source, paths))[0][0] or 0)
            except DbtRuntimeError as error:  # a data file's columns not the table's
                logger.debug(f"zspark: {relation}: advice sample from chosen files: {error}")
            if rows:
                logger.debug(f"zspark: {relation}: advice sampled from {len(paths):,} of "
                             f"its {len(listed.paths):,} files")
            else:  # none of the chosen files found as named: every file, as for any table
                source, paths = str(relation), None
        if paths is None:
            rows = int(self.ctx.fetch(count_sql(source, None))[0][0] or 0)
        return self.ctx.reach().frame(
            sample_sql(source, inputs, paths, rows, ADVICE_SAMPLE_ROWS),
            {c: key_input_type(t) for c, t in types.items()})

    def _listed(self, relation: Any) -> ListedFiles:
        """The table's live files, listed once for both the file count an advice simulates
        and the files its sample reads."""
        file_format, properties = self.tables.format_of(relation)
        if file_format is not None:
            paths = [path for path, _, _ in self.tables.format_file_list(
                relation, file_format, properties)]
            return ListedFiles(paths, data_files_source(properties, paths))
        return ListedFiles(sorted(self.ctx.reach().table_files(relation)), str(relation))

    def _current(self, relation: Any) -> Candidate | None:
        """The table's own layout as a candidate, when zspark clustered it."""
        stored = self._stored(relation)
        if stored is None:
            return None
        return Candidate(stored.config_key, tuple(stored.columns), tuple(stored.weights))

    def _stored(self, relation: Any) -> StoredLayout | None:
        """The layout stored with ``relation`` (None: no such table, or none stored)."""
        try:
            return StoredLayout.from_properties(self.ctx.table_properties(relation))
        except (StoredLayoutError, DbtRuntimeError):  # none readable, or no table yet
            return None


def _as_list(value: Any) -> list[str]:
    return [] if value is None else [value] if isinstance(value, str) else list(value)


def _clusterable(schema: Mapping[str, str], partition_by: Sequence[str]) -> list[str]:
    """Columns a layout may cluster: of a clusterable type, not a table partition column."""
    parts = {p.lower() for p in partition_by}
    return [c for c, t in schema.items()
            if normalize_type(t) in CLUSTERABLE_TYPES and c.lower() not in parts]


def horizon_days(model: str, config: Mapping[str, Any]) -> float:
    """The days over which a layout change's saving is counted: the workload's queries
    per day times these (``zspark_auto_horizon_days``; refused by name when not a number
    of days above zero)."""
    value = config.get("zspark_auto_horizon_days")
    if value is None:
        return float(HORIZON_DAYS)
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise DbtRuntimeError(
            f"Model '{model}': config 'zspark_auto_horizon_days' is {value!r}. Allowed: a "
            f"number of days above 0 (default {HORIZON_DAYS}), the span over which the "
            "files cluster_by='auto' saves per query must pay for a rewrite.")
    return float(value)


def _column_counts(workload: Workload, clusterable: Sequence[str]) -> dict[str, float]:
    """Per column, the count of the queries filtering on it; queries that cannot be read
    move to ``workload.unreadable``."""
    counts: dict[str, float] = {}
    readable = []
    for query in workload.queries:
        try:
            named = filtered_columns(query.predicate, clusterable)
        except PredicateError:
            workload.unreadable.append(f"{query.source}: {query.predicate}")
            continue
        readable.append(query)
        for column in named:
            counts[column] = counts.get(column, 0.0) + query.count
    workload.queries = readable
    return counts


def _layout_config(config_key: str, columns: Sequence[str],
                   weights: Sequence[float]) -> dict[str, Any]:
    """A layout config over ``columns``, with ``cluster_weights`` where the layout takes
    them and they differ."""
    config: dict[str, Any] = {config_key: list(columns)}
    if LAYOUTS[config_key].takes_weights and len(set(weights)) > 1:
        config["cluster_weights"] = dict(zip(columns, weights, strict=True))
    return config


def _layout_name(stored: StoredLayout) -> str:
    return f"{stored.config_key}={list(stored.columns)}"
