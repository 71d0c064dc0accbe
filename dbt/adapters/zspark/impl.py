"""ZSparkAdapter: dbt-spark plus clustered builds, a file-stats index and skip-aware scans.

Jinja stays thin: each ``@available`` method below validates its input in Python and
hands back plain values or SQL text.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from dbt.adapters.base import available
from dbt.adapters.events.logging import AdapterLogger
from dbt.adapters.spark.connections import SparkConnectionMethod
from dbt.adapters.spark.impl import SparkAdapter, SparkConfig
from dbt_common.exceptions import DbtRuntimeError

from dbt.adapters.zspark.connections import ZSparkConnectionManager
from dbt.adapters.zspark.layout_state import (
    StoredLayout,
    StoredLayoutError,
    clustered_writes_property,
)
from dbt.adapters.zspark.planning import ClusteringConfigError, ClusteringPlan, plan_clustering
from dbt.adapters.zspark.scan import FileKey, scan_sql, skippable_files_sql
from dbt.adapters.zspark.sqltext import quote, sql_string

logger = AdapterLogger("zspark")

#: dbt-spark's strategies for Parquet tables: insert rows, or overwrite partitions / all.
INCREMENTAL_STRATEGIES = ("append", "insert_overwrite")
#: Sample values a point query is probed with when the layout is judged.
PROBES = 1000


@dataclass
class ZSparkConfig(SparkConfig):
    """Model configs of dbt-spark plus the clustering and index configs of zspark."""

    zorder_by: list[str] | str | None = None
    hilbert_by: list[str] | str | None = None
    linear_by: list[str] | str | None = None
    boundary_count: int | None = None
    curve_method: str | None = None
    file_count: int | None = None
    target_file_size_mb: int | None = None
    index_columns: list[str] | None = None
    zspark_index: bool | None = None
    zspark_recluster: bool | None = None


@dataclass
class _BuildSample:
    """A build's sample, kept to judge the layout once the files are written."""

    columns: tuple[str, ...]
    types: tuple[str, ...]
    rows: Any  # pandas DataFrame of key inputs and table partition values
    keys: list[Any]
    partitions: list[str]


@dataclass
class _Rewrite:
    """A re-clustering between its plan and its swap."""

    decision: Any  # recluster.ReclusterPlan
    new_rows: int
    table_rows: int
    #: Table properties of a new layout (full re-clustering), else None.
    layout: dict[str, str] | None
    partitioned: bool


class ZSparkAdapter(SparkAdapter):
    ConnectionManager = ZSparkConnectionManager  # type: ignore[assignment]
    AdapterSpecificConfigs = ZSparkConfig  # type: ignore[assignment]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Boundary samples of this run's clustered builds, reused as probes for the log.
        self._samples: dict[str, Any] = {}
        # Index rows (held by the executors) and locations of staging tables, read before
        # their swap and written once the table has its final name.
        self._staged: dict[str, tuple[Any, str]] = {}
        # Writer options and step timings of this run's clustered builds.
        self._write_options: dict[str, dict[str, str]] = {}
        self._timings: dict[str, dict[str, float]] = {}
        # Layouts of this run's full builds, as table properties of the CREATE TABLE.
        self._layout_properties: dict[str, dict[str, str]] = {}
        # Re-clusterings between their plan and their swap, and each incremental run's
        # strategy.
        self._rewrites: dict[str, _Rewrite] = {}
        self._strategies: dict[str, str] = {}
        # The table's files before an incremental run's insert.
        self._files_before: dict[str, set[str]] = {}

    @classmethod
    def type(cls) -> str:
        return "zspark"

    # -- session ---------------------------------------------------------------------
    def _is_session(self) -> bool:
        return bool(self.config.credentials.method == SparkConnectionMethod.SESSION)

    def _spark(self, model: str, what: str) -> Any:
        if not self._is_session():
            raise DbtRuntimeError(
                f"Model '{model}': {what} runs Python (curve-key UDFs, footer reads) inside "
                f"Spark and needs `method: session`; this profile uses "
                f"`method: {self.config.credentials.method}`."
            )
        from dbt.adapters.zspark.session import active_session

        return active_session()

    # -- clustered builds ---------------------------------------------------------------
    @available
    def zspark_check_config(self, model: str, config: dict[str, Any],
                            materialized: str) -> bool:
        """Check config values that need no schema; True when the model asks for clustering."""
        try:
            return plan_clustering(model, config, None, materialized) is not None
        except ClusteringConfigError as error:
            raise DbtRuntimeError(str(error)) from error

    @available
    def zspark_build_sql(self, model: str, relation: Any, config: dict[str, Any],
                         sql: str) -> str:
        """The SELECT a table build writes: clustered, spread into files, or ``sql`` as is.

        Every check happens here, before the materialization writes anything.
        """
        if not self.zspark_check_config(model, config, "table"):
            file_count = config.get("file_count")
            if file_count is None:
                return sql
            from dbt.adapters.zspark.clustering import spread_sql

            return spread_sql(sql, int(file_count))

        from dbt.adapters.zspark.clustering import model_schema

        spark = self._spark(model, "clustering (zorder_by / hilbert_by / linear_by)")
        try:
            plan = plan_clustering(model, config, model_schema(spark, sql), "table")
        except ClusteringConfigError as error:
            raise DbtRuntimeError(str(error)) from error
        assert plan is not None
        logger.info(
            f"zspark: {model}: {plan.layout.name} layout on {', '.join(plan.columns)} "
            f"({plan.curve_method}, boundary_count={plan.boundary_count}); sampling input"
        )
        from dbt.adapters.zspark.clustering import prepare_build

        prepared = prepare_build(spark, plan, sql)
        self._keep(relation, plan, prepared, new_layout=True)
        self._write_options[plan.model] = prepared.write_options()
        assert prepared.layout is not None
        self._layout_properties[plan.model] = prepared.layout.to_properties()
        return prepared.select_sql

    def _keep(self, relation: Any, plan: ClusteringPlan, prepared: Any,
              new_layout: bool) -> None:
        """Keep what the rest of a build needs (its sample, timings) and log the write."""
        key = str(relation).lower()
        self._samples[key] = _BuildSample(plan.columns, plan.column_types, prepared.sample,
                                          prepared.sample_keys, prepared.sample_partitions)
        self._timings[key] = {"sample": prepared.sample_seconds, "since": time.perf_counter()}
        spread = prepared.spread
        how = (f"{spread.partitions} sorted partitions cut every {spread.rows_per_file} rows"
               if spread is not None and spread.rows_per_file else "one file per partition")
        keyed = "" if new_layout else ", keyed with the table's stored layout"
        logger.info(
            f"zspark: {plan.model}: writing {prepared.input_rows} rows into "
            f"{prepared.file_count} files ({how}{keyed})"
        )

    @available
    def zspark_layout_properties(self, model: str) -> dict[str, str]:
        """Table properties that store the layout of this run's full build of ``model``."""
        return self._layout_properties.pop(model, {})

    # -- clustered incremental runs -----------------------------------------------------
    @available
    def zspark_check_incremental(self, model: str, file_format: str, strategy: str) -> None:
        """Clustered incremental models write Parquet with append or insert_overwrite."""
        if file_format != "parquet":
            raise DbtRuntimeError(
                f"Model '{model}': config 'file_format' is '{file_format}' on a clustered "
                f"incremental model. Allowed: 'parquet'.")
        if strategy not in INCREMENTAL_STRATEGIES:
            raise DbtRuntimeError(
                f"Model '{model}': config 'incremental_strategy' is '{strategy}' on a "
                f"clustered incremental model. Allowed: "
                f"{' or '.join(repr(s) for s in INCREMENTAL_STRATEGIES)}.")

    def _stored_layout(self, model: str, relation: Any) -> StoredLayout:
        try:
            stored = StoredLayout.from_properties(self._table_properties(relation))
        except StoredLayoutError as error:
            stored, problem = None, str(error)
        else:
            problem = "it has no stored clustering layout"
        if stored is None:
            raise DbtRuntimeError(
                f"Model '{model}': cannot add clustered rows to {relation}: {problem}. Run "
                f"`dbt run --full-refresh --select {model}` to rebuild it clustered.")
        return stored

    def _checked_plan(self, spark: Any, model: str, relation: Any, stored: StoredLayout,
                      config: dict[str, Any], sql: str) -> ClusteringPlan:
        """The model's clustering plan, refused when it keys rows differently from the
        layout stored with the table."""
        from dbt.adapters.zspark.clustering import model_schema

        try:
            plan = plan_clustering(model, config, model_schema(spark, sql), "incremental")
        except ClusteringConfigError as error:
            raise DbtRuntimeError(str(error)) from error
        assert plan is not None
        drift = stored.drift(plan)
        if drift is not None:
            raise DbtRuntimeError(
                f"Model '{model}': the clustering config no longer matches the layout stored "
                f"with {relation}: {drift}. Run `dbt run --full-refresh --select {model}` to "
                f"rebuild the table with the new layout.")
        return plan

    @available
    def zspark_increment(self, model: str, relation: Any, config: dict[str, Any], sql: str,
                         strategy: str) -> dict[str, Any]:
        """Plan an incremental run of a clustered model, before anything is written.

        New rows are keyed with the layout stored with the table. With ``append`` the
        re-clustering policy (``recluster.py``) decides: insert them as a run of pieces,
        or rewrite them together with some pending runs (or the whole table) into the
        table's next version. Returns ``rows`` (0: nothing to write), ``rewrite`` and the
        ``sql`` that selects the rows to insert.
        """
        from dbt.adapters.zspark.clustering import sample_input
        from dbt.adapters.zspark.recluster import APPEND, ReclusterPlan, plan_increment
        from dbt.adapters.zspark.recluster import rebuild_files as files_for

        spark = self._spark(model, "clustering (zorder_by / hilbert_by / linear_by)")
        stored = self._stored_layout(model, relation)
        plan = replace(self._checked_plan(spark, model, relation, stored, config, sql),
                       file_count=None)
        logger.info(f"zspark: {model}: {stored.describe()} (stored); sampling new rows")
        sampled = sample_input(spark, plan, sql)
        if sampled.rows == 0:
            logger.info(f"zspark: {relation.identifier}: no rows written; table, layout and "
                        f"index unchanged")
            return {"rows": 0, "rewrite": False, "sql": ""}
        runs = self._runs(spark, relation)
        if strategy != "append":
            decision = ReclusterPlan(APPEND, (), 0, files_for(sampled.rows, stored.rows_per_file),
                                     f"{strategy} writes whole partitions in table-sized files")
        else:
            automatic = config.get("zspark_recluster") is not False and runs is not None
            decision = plan_increment(runs or [], sampled.rows, stored.rows_per_file,
                                      automatic)
        logger.info(f"zspark: {model}: {decision.action} ({decision.reason})")
        select_sql = self._rewrite_select(spark, relation, plan, stored, decision, sql,
                                          sampled, runs)
        if not decision.rewrites:
            self._files_before[str(relation).lower()] = self._table_files(spark, relation)
        self._strategies[str(relation).lower()] = strategy
        return {"rows": sampled.rows, "rewrite": decision.rewrites, "sql": select_sql}

    def _runs(self, spark: Any, relation: Any) -> list[Any] | None:
        """The table's runs from its index; None when the index does not describe exactly
        the table's files (re-clustering then waits for a full build)."""
        from dbt.adapters.zspark.layout_state import CLUSTERED_WRITES_KEY
        from dbt.adapters.zspark.rewrite import table_runs

        index = self._index_relation(relation)
        if not spark.catalog.tableExists(str(index)):
            return None
        spark.catalog.refreshTable(str(index))
        rows = [(str(r[0]), int(r[1]), int(r[2] or 0)) for r in spark.sql(
            f"select file_path, row_count, file_mtime from {index} where row_group is null"
        ).collect()]
        if {r[0] for r in rows} != self._table_files(spark, relation):
            logger.warning(f"zspark: {relation.identifier}: the index does not list exactly "
                           f"the table's files; no re-clustering until it is rebuilt")
            return None
        clustered = self._table_properties(relation).get(CLUSTERED_WRITES_KEY, "")
        return table_runs(rows, set(filter(None, clustered.split(","))))

    def _rewrite_select(self, spark: Any, relation: Any, plan: ClusteringPlan,
                        stored: StoredLayout, decision: Any, sql: str, sampled: Any,
                        runs: list[Any] | None) -> str:
        """The keyed SELECT an incremental run or a re-clustering writes."""
        from dbt.adapters.zspark.clustering import keyed_build, sample_input
        from dbt.adapters.zspark.recluster import FULL
        from dbt.adapters.zspark.rewrite import rows_of_files_sql

        model = plan.model
        if not decision.rewrites:
            prepared = keyed_build(spark, plan, sql, sampled, stored, decision.pieces,
                                   pieces=True)
            self._keep(relation, plan, prepared, new_layout=False)
            return str(prepared.select_sql)
        columns = [c.name for c in self.get_columns_in_relation(relation)]
        everything = decision.action == FULL
        old_sql = rows_of_files_sql(str(relation), columns,
                                    None if everything else decision.rewritten_paths)
        old = sample_input(spark, plan, old_sql)
        if sql:
            listed = ", ".join(quote(c) for c in columns)
            union_sql = f"select {listed} from (\n{sql}\n) zspark_new union all {old_sql}"
            both = sampled.union(old)
        else:  # re-clustering on demand: only the table's own rows
            union_sql, both = old_sql, old
        prepared = keyed_build(spark, plan, union_sql, both, None if everything else stored,
                               decision.pieces, pieces=not everything)
        self._keep(relation, plan, prepared, new_layout=everything)
        self._rewrites[str(relation).lower()] = _Rewrite(
            decision=decision, new_rows=sampled.rows if sql else 0,
            table_rows=sum(r.rows for r in runs or []),
            layout=prepared.layout.to_properties() if everything and prepared.layout else None,
            partitioned=bool(plan.partition_by))
        logger.info(f"zspark: {model}: rewriting {decision.rewritten_rows} rows of "
                    f"{len(decision.rewritten_paths)} files into the table's next version")
        return str(prepared.select_sql)

    @available
    def zspark_recluster(self, relation: Any, full: bool = False) -> dict[str, Any]:
        """``zspark_recluster``: merge the pending runs (or, ``full``, re-cluster the whole
        table) into the table's next version; a no-op when there is nothing to do."""
        from dbt.adapters.zspark.clustering import model_schema
        from dbt.adapters.zspark.recluster import plan_on_demand

        model = relation.identifier
        spark = self._spark(model, "re-clustering")
        stored = self._stored_layout(model, relation)
        runs = self._runs(spark, relation)
        if runs is None:
            raise DbtRuntimeError(
                f"zspark_recluster: {relation}: its index does not list exactly its files; "
                f"run zspark_build_index on it first")
        decision = plan_on_demand(runs, stored.rows_per_file, bool(full))
        logger.info(f"zspark: {model}: {decision.action} ({decision.reason})")
        if not decision.rewrites:
            return {"action": decision.action, "rewritten_rows": 0}
        try:
            plan = plan_clustering(model, stored.as_config(),
                                   model_schema(spark, f"select * from {relation}"), "table")
        except ClusteringConfigError as error:
            raise DbtRuntimeError(str(error)) from error
        assert plan is not None
        select_sql = self._rewrite_select(spark, relation, plan, stored, decision, "", None,
                                          runs)
        staging = self.zspark_begin_rewrite(model, relation)
        self.execute(f"insert into {staging} {select_sql}")
        self.zspark_finish_rewrite(model, relation, staging)
        return {"action": decision.action, "rewritten_rows": decision.rewritten_rows}

    @available
    def zspark_layout_report(self, relation: Any, x: str | None = None, y: str | None = None,
                             path: str | None = None) -> dict[str, Any]:
        """``zspark_layout_report``: the layout figures of a clustered table as a table,
        and a picture of its files' boxes over two clustering columns."""
        from pathlib import Path

        from dbt.adapters.zspark.clustering import key_input_sql, part_column
        from dbt.adapters.zspark.health import layout_health, rebuild_bounds
        from dbt.adapters.zspark.layout_report import draw_boxes, health_table
        from dbt.adapters.zspark.layout_state import pending_rows, write_id
        from dbt.adapters.zspark.layouts import LAYOUTS, ColumnSpec
        from dbt.adapters.zspark.pruning import stat_column

        model = relation.identifier
        spark = self._spark(model, "the layout report")
        stored = self._stored_layout(model, relation)
        columns, types = stored.columns, stored.column_types
        x, y = x or columns[0], y or columns[min(1, len(columns) - 1)]
        for name in (x, y):
            if name not in columns:
                raise DbtRuntimeError(f"zspark_layout_report: {relation}: '{name}' is not a "
                                      f"clustering column. Allowed: {', '.join(columns)}")
        index = self._index_relation(relation)
        picked = ", ".join(
            f"{key_input_sql(quote(stat_column(c, s)), t)} as {quote(f'{c}.{s}')}"
            for c, t in zip(columns, types, strict=True) for s in ("min", "max"))
        files = spark.sql(f"select file_path, row_count, {picked} from {index} "
                          f"where row_group is null and row_count > 0").toPandas()
        bounds = {c: files[[f"{c}.min", f"{c}.max"]].set_axis(["min", "max"], axis=1)
                  for c in columns}
        rows = int(files["row_count"].sum())
        inputs = [f"{key_input_sql(quote(c), t)} as {quote(c)}"
                  for c, t in zip(columns, types, strict=True)]
        parts = [f"{quote(p)} as {quote(part_column(i))}"
                 for i, p in enumerate(stored.partition_by)]
        sample = (spark.table(str(relation)).selectExpr(*inputs, *parts)
                  .sample(fraction=min(1.0, 100_000 / max(rows, 1)), seed=17).toPandas())
        specs = [ColumnSpec(c, t, b) for c, t, b in
                 zip(columns, types, stored.boundaries, strict=True)]
        keys = LAYOUTS[stored.config_key].key_function(
            specs, stored.curve_method, stored.boundary_count)(*(sample[c] for c in columns))
        rebuilt = rebuild_bounds(sample, [part_column(i) for i in range(len(parts))],
                                 keys.to_numpy(), columns, len(files))
        properties = self._table_properties(relation)
        paths = [str(p) for p in files["file_path"]]
        pending = pending_rows(list(zip(paths, (int(r) for r in files["row_count"]),
                                        strict=True)), properties)
        health = layout_health(bounds, sample.head(PROBES), rebuilt, rows, pending)
        logger.info(f"zspark_layout_report {relation}:\n{health_table(health)}")
        clustered = set(properties.get("zspark.layout.clustered_writes", "").split(","))
        target = Path(path) if path else Path(getattr(self.config, "project_root", ".")) \
            / "target" / f"zspark_layout_{model}.png"
        draw_boxes(target, bounds[x], bounds[y], [write_id(p) not in clustered for p in paths],
                   x, y, f"{relation}: {len(files)} files")
        logger.info(f"zspark_layout_report {relation}: files' boxes over {x} and {y} in "
                    f"{target}")
        return {"columns": health.table(), "picture": str(target)}

    @available
    def zspark_begin_rewrite(self, model: str, relation: Any) -> Any:
        """The staging table of a re-clustering, created like the table (columns,
        partitioning, writer options) with its properties; leftovers dropped first."""
        from dbt.adapters.zspark.rewrite import carried_properties, set_properties_sql

        staging = self._sibling(relation, "__zspark_new")
        for leftover in (staging, self._sibling(relation, "__zspark_old")):
            self.execute(f"drop table if exists {leftover}")
        self.execute(f"create table {staging} like {relation}")
        rewrite = self._rewrites[str(relation).lower()]
        properties = carried_properties(self._table_properties(relation), rewrite.layout, None)
        if properties:
            self.execute(set_properties_sql(str(staging), properties))
        return staging

    def _sibling(self, relation: Any, suffix: str) -> Any:
        return relation.incorporate(path={"identifier": relation.identifier + suffix},
                                    type="table")

    @available
    def zspark_finish_rewrite(self, model: str, relation: Any, staging: Any) -> None:
        """Link the files that stay into the staging table, check its rows, swap it in and
        bring the index along."""
        from dbt.adapters.zspark.index import (
            _index_frame,
            index_columns,
            indexable_columns,
            replace_index_rows,
            table_location,
        )
        from dbt.adapters.zspark.layout_state import clustered_writes_property
        from dbt.adapters.zspark.recluster import FULL
        from dbt.adapters.zspark.rewrite import link_files, set_properties_sql

        spark = self._spark(model, "re-clustering")
        rewrite = self._rewrites.pop(str(relation).lower())
        self._lap(relation, "write")
        location, staged_at = (table_location(spark, str(relation)),
                               table_location(spark, str(staging)))
        written = sorted(self._table_files(spark, staging))
        kept = sorted(self._table_files(spark, relation) - set(rewrite.decision.rewritten_paths))
        link_files(spark, kept, location, staged_at)
        if rewrite.partitioned:
            self.execute(f"alter table {staging} recover partitions")
        index = self._index_relation(relation)
        existing = spark.table(str(index))
        names = [c.removesuffix("__min") for c in existing.columns if c.endswith("__min")]
        columns = index_columns(indexable_columns(spark.table(str(staging)).schema), names, [])
        new_rows = _index_frame(spark, written, columns,
                                f"zspark: reading {len(written)} new Parquet footers of "
                                f"{staging}").localCheckpoint(eager=True)
        kept_rows = existing.where("row_group is null").join(
            spark.createDataFrame([(p,) for p in kept], "file_path string"), "file_path")
        counted = sum(int(r[0] or 0) for r in [
            new_rows.where("row_group is null").selectExpr("sum(row_count)").first(),
            kept_rows.selectExpr("sum(row_count)").first()] if r is not None)
        expected = rewrite.table_rows + rewrite.new_rows
        if counted != expected or len(self._table_files(spark, staging)) != len(written) + \
                len(kept):
            raise DbtRuntimeError(
                f"zspark: {relation}: re-clustering stopped before the swap: the next version "
                f"holds {counted} rows, the table and the new rows {expected}; the table and "
                f"its index are unchanged")
        if rewrite.decision.action == FULL:
            self.execute(set_properties_sql(str(staging), clustered_writes_property(written)))
        backup = self._sibling(relation, "__zspark_old")
        self.execute(f"alter table {relation} rename to {backup}")
        self.execute(f"alter table {staging} rename to {relation}")
        self.execute(f"drop table if exists {backup}")
        self._lap(relation, "write")
        summary = replace_index_rows(spark, str(index), rewrite.decision.rewritten_paths,
                                     new_rows, staged_at, location)
        self._lap(relation, "index")
        self._log_index(spark, relation, index, summary)

    @staticmethod
    def _table_files(spark: Any, relation: Any) -> set[str]:
        """A table's data files, named as the index names them."""
        from dbt.adapters.zspark.stats import spark_path

        spark.catalog.refreshTable(str(relation))
        return {spark_path(f) for f in spark.table(str(relation)).inputFiles()}

    @available
    def zspark_finish_increment(self, model: str, relation: Any, want_index: bool,
                                clustering: list[str] | None = None,
                                configured: list[str] | None = None) -> dict[str, Any]:
        """After the insert: add the new files' footers to the index (and drop the rows of
        files an overwrite replaced), then log the layout."""
        from dbt.adapters.zspark.index import build_index, update_index
        from dbt.adapters.zspark.layout_state import CLUSTERED_WRITES_KEY, write_id
        from dbt.adapters.zspark.rewrite import set_properties_sql

        spark = self._spark(model, "clustering")
        before = self._files_before.pop(str(relation).lower(), set())
        self._lap(relation, "write")
        after = self._table_files(spark, relation)
        added, removed = sorted(after - before), sorted(before - after)
        if self._strategies.pop(str(relation).lower(), "append") == "insert_overwrite":
            # An overwrite writes whole partitions sorted by the key: clustered like a
            # full build's files.
            writes = {w for w in map(write_id, after) if w}
            clustered = set(self._table_properties(relation).get(CLUSTERED_WRITES_KEY,
                                                                  "").split(","))
            kept = sorted((clustered & writes) | {w for w in map(write_id, added) if w})
            self.execute(set_properties_sql(str(relation),
                                            {CLUSTERED_WRITES_KEY: ",".join(kept)}))
        if not want_index:
            return {"added": len(added), "removed": len(removed)}
        index = self._index_relation(relation)
        summary = update_index(spark, str(relation), str(index), added, removed,
                               clustering or (), configured)
        if summary is None:
            logger.warning(f"zspark: {relation.identifier}: no index matching the configured "
                           f"columns; reading every footer")
            summary = build_index(spark, str(relation), str(index), clustering or (),
                                  configured)
        self._lap(relation, "index")
        logger.info(f"zspark: {relation.identifier}: {len(added)} files added, "
                    f"{len(removed)} replaced; their footers indexed")
        self._log_index(spark, relation, index, summary)
        return {"added": len(added), "removed": len(removed)}

    @available
    def zspark_write_options(self, model: str) -> dict[str, str]:
        """Writer options of this run's build of ``model`` (e.g. rows per file)."""
        return self._write_options.pop(model, {})

    def _lap(self, relation: Any, step: str) -> None:
        """Charge the time since the last step of a build to ``step``."""
        timings = self._timings.get(str(relation).lower())
        if timings is not None:
            self._lap_into(timings, step)

    @staticmethod
    def _lap_into(timings: dict[str, float], step: str) -> None:
        now = time.perf_counter()
        timings[step] = timings.get(step, 0.0) + now - timings["since"]
        timings["since"] = now

    # -- index --------------------------------------------------------------------------
    @available
    def zspark_index_name(self, relation: Any) -> str:
        from dbt.adapters.zspark.index import INDEX_SUFFIX

        return f"{relation.identifier}{INDEX_SUFFIX}"

    @available
    def zspark_build_index(self, relation: Any, clustering: list[str] | None = None,
                           configured: list[str] | None = None) -> dict[str, Any]:
        """Build ``<table>__zindex`` from the table's Parquet footers and log the layout."""
        from dbt.adapters.zspark.index import build_index

        spark = self._spark(relation.identifier, "the file-stats index")
        index = self._index_relation(relation)
        summary = build_index(spark, str(relation), str(index), clustering or (), configured)
        return self._log_index(spark, relation, index, summary)

    @available
    def zspark_stage_index(self, staging: Any, target: Any,
                           clustering: list[str] | None = None,
                           configured: list[str] | None = None) -> None:
        """Read the index of a build's staging table before it replaces the model's table,
        so that a failure reading footers leaves the previous table and its index as they
        were. The rows wait in the executors' memory until :meth:`zspark_publish_index`."""
        from dbt.adapters.zspark.index import read_index, table_location

        spark = self._spark(staging.identifier, "the file-stats index")
        self._lap(target, "write")
        rows = read_index(spark, str(staging), clustering or (), configured)
        self._staged[str(staging).lower()] = (rows, table_location(spark, str(staging)))
        if clustering:
            # Before the swap, so the table and the record of its clustered files appear
            # together.
            files = [str(r[0]) for r in rows.where("row_group is null")
                     .select("file_path").collect()]
            properties = clustered_writes_property(files)
            self.execute(f"alter table {staging} set tblproperties ("
                         + ", ".join(f"{sql_string(k)} = {sql_string(v)}"
                                     for k, v in properties.items()) + ")")
        self._lap(target, "index")

    @available
    def zspark_publish_index(self, staging: Any, target: Any, clustering: list[str] | None = None,
                             configured: list[str] | None = None) -> dict[str, Any]:
        """After the swap: the staged rows, their paths moved to the model's table, are
        written as ``<model>__zindex``. Should the paths not match the table's files, or the
        staged rows be gone, the footers are read again."""
        from dbt.adapters.zspark.index import build_index, relocate_index

        spark = self._spark(target.identifier, "the file-stats index")
        index = self._index_relation(target)
        rows, location = self._staged.pop(str(staging).lower())
        summary = None
        try:
            summary = relocate_index(spark, rows, str(index), str(target), location)
        except Exception as error:  # e.g. an executor holding staged rows was lost
            logger.warning(f"zspark: {target.identifier}: staged index rows unusable "
                           f"({type(error).__name__}); reading footers again")
        else:
            if summary is None:
                logger.warning(f"zspark: {target.identifier}: staged index does not match "
                               f"the table's files after the swap; reading footers again")
        finally:
            rows.unpersist()
        if summary is None:
            summary = build_index(spark, str(target), str(index), clustering or (), configured)
        self._lap(target, "index")
        return self._log_index(spark, target, index, summary)

    def _log_index(self, spark: Any, relation: Any, index: Any,
                   summary: Any) -> dict[str, Any]:
        message = (
            f"zspark: {relation.identifier}: {summary.files} files, {summary.rows} rows, "
            f"{len(summary.columns)} columns indexed in {index.identifier}"
        )
        sample = self._samples.pop(str(relation).lower(), None)
        if sample is not None and summary.files:
            message += "; layout: " + self._layout_health(spark, relation, index, sample,
                                                           summary).describe()
        timings = self._timings.pop(str(relation).lower(), None)
        if timings is not None:
            self._lap_into(timings, "log")
            steps = ("sample", "write", "index", "log")
            message += "; seconds: " + ", ".join(
                f"{step} {timings.get(step, 0.0):.1f}" for step in steps)
        logger.info(message)
        return {"files": summary.files, "rows": summary.rows, "columns": summary.columns}

    def _layout_health(self, spark: Any, relation: Any, index: Any, sample: _BuildSample,
                       summary: Any) -> Any:
        """Depth and overlaps per clustering column from the index, probed with the
        build's sample, against a rebuild estimated from the same sample."""
        from dbt.adapters.zspark.clustering import probe_bounds_sql
        from dbt.adapters.zspark.health import layout_health, rebuild_bounds
        from dbt.adapters.zspark.layout_state import pending_rows

        bounds = {column: spark.sql(probe_bounds_sql(str(index), column, spark_type)).toPandas()
                  for column, spark_type in zip(sample.columns, sample.types, strict=True)}
        probes = sample.rows.head(PROBES)
        rebuilt = rebuild_bounds(sample.rows, sample.partitions, np.asarray(sample.keys),
                                 sample.columns, summary.files)
        files = spark.sql(f"select file_path, row_count from {index} "
                          f"where row_group is null").collect()
        pending = pending_rows([(str(r[0]), int(r[1])) for r in files],
                               self._table_properties(relation))
        return layout_health(bounds, probes, rebuilt, summary.rows, pending)

    def _table_properties(self, relation: Any) -> dict[str, str]:
        _, table = self.execute(f"show tblproperties {relation}", fetch=True)
        return {str(row[0]): str(row[1]) for row in table.rows}

    # -- skip-aware scans --------------------------------------------------------------
    @available
    def zspark_check_predicate(self, predicate: str) -> str:
        from dbt.adapters.zspark import pruning

        try:
            pruning.parse_predicate(predicate)
        except pruning.PredicateError as error:
            raise DbtRuntimeError(str(error)) from error
        return predicate

    @available
    def zspark_may_match_sql(self, predicate: str, index_columns: list[Any],
                             relation: Any = None) -> str:
        """SQL over the index that is TRUE for every file that may hold a matching row.

        With ``relation``, its columns tell qualified names from struct fields and mark
        char(n) columns, whose literals Spark pads.
        """
        declared = None
        if relation is not None:
            declared = {c.name: c.data_type for c in self.get_columns_in_relation(relation)}
        return self._may_match_sql(predicate, index_columns, relation, declared)

    @staticmethod
    def _may_match_sql(predicate: str, index_columns: list[Any], relation: Any,
                       declared: dict[str, str] | None) -> str:
        from dbt.adapters.zspark import pruning

        qualifiers: list[str] = []
        if relation is not None:
            qualifiers = [relation.identifier]
            if relation.schema:
                qualifiers += [f"{relation.schema}.{relation.identifier}",
                               f"spark_catalog.{relation.schema}.{relation.identifier}"]
        types = pruning.index_column_types(
            [(c.name, c.data_type) for c in index_columns], declared or {})
        table_columns = list(declared) if declared is not None else None
        try:
            return pruning.may_match_sql(predicate, types, qualifiers=qualifiers,
                                         table_columns=table_columns)
        except pruning.PredicateError as error:
            raise DbtRuntimeError(str(error)) from error

    def _index_relation(self, relation: Any) -> Any:
        return relation.incorporate(path={"identifier": self.zspark_index_name(relation)})

    def _skipped_files(self, relation: Any,
                       predicates: list[str]) -> tuple[int, list[list[FileKey]]]:
        """(indexed files, per predicate the files it provably cannot match) from the index;
        the index's and the table's columns are read once for all predicates."""
        index = self._index_relation(relation)
        columns = self.get_columns_in_relation(index)
        if not columns:
            raise LookupError(f"no index table {index}")
        declared = {c.name: c.data_type for c in self.get_columns_in_relation(relation)}
        files = 0
        skipped: list[list[FileKey]] = []
        for predicate in predicates:
            may_match = self._may_match_sql(predicate, columns, relation, declared)
            _, table = self.execute(skippable_files_sql(str(index), may_match), fetch=True)
            files = len(table.rows)
            skipped.append([(str(row[0]), int(row[1]), int(row[2]))
                            for row in table.rows if row[3]])
        return files, skipped

    @available
    def zspark_plain_scan_sql(self, relation: Any, predicate: str) -> str:
        """The scan without an index: ``select * from relation where predicate``."""
        self.zspark_check_predicate(predicate)
        return scan_sql(str(relation), predicate, [])

    @available
    def zspark_scan_sql(self, relation: Any, predicate: str) -> str:
        """A parenthesised subquery reading only the files of ``relation`` that may match.

        Files are excluded by (path, size), so files added or rewritten since the index was
        built are always read, and indexed files that are gone simply match nothing.
        """
        self.zspark_check_predicate(predicate)
        try:
            skipped = self._skipped_files(relation, [predicate])[1][0]
        except (LookupError, DbtRuntimeError) as error:
            logger.warning(f"zspark_scan: {relation}: index unusable ({error}); full scan")
            skipped = []
        return scan_sql(str(relation), predicate, skipped)

    @available
    def zspark_skip_coverage_sql(self, relation: Any, predicates: list[str],
                                 min_skip_ratio: float) -> str:
        """The test query of ``skip_coverage``: one row per predicate that skips too little."""
        if isinstance(predicates, str):
            predicates = [predicates]
        for predicate in predicates:
            self.zspark_check_predicate(predicate)
        try:
            files, skipped_per_predicate = self._skipped_files(relation, list(predicates))
        except LookupError as error:
            raise DbtRuntimeError(
                f"skip_coverage on {relation}: {error}; build the table with a clustering "
                f"config or run zspark_build_index first"
            ) from error
        rows = []
        for predicate, skipped in zip(predicates, skipped_per_predicate, strict=True):
            ratio = len(skipped) / files if files else 0.0
            verdict = "ok" if ratio >= min_skip_ratio else "TOO LOW"
            logger.info(
                f"skip_coverage {relation}: {predicate!r} skips {len(skipped)}/{files} files "
                f"({ratio:.3f}; required {min_skip_ratio}) {verdict}"
            )
            rows.append((predicate, files, len(skipped), ratio))

        values = ", ".join(
            f"({sql_string(p)}, {f}, {s}, cast({r!r} as double))" for p, f, s, r in rows
        )
        return (
            f"select * from (values {values}) as coverage(predicate, files, skipped_files, "
            f"skip_ratio) where skip_ratio < {float(min_skip_ratio)!r}"
        )
