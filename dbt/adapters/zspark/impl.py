"""ZSparkAdapter: dbt-spark plus clustered builds, a file-stats index and skip-aware scans.

A facade: each ``@available`` method the macros call hands its arguments to one service
(``services/``), and every service is given the same context (``services/context.py``:
the connection, the reach, the relation cache, the run's state). The order in which the
materializations call these methods is written beside them, in
``dbt/include/zspark/macros/materializations/``.
"""

from __future__ import annotations

import builtins
import threading
from dataclasses import dataclass, fields
from typing import Any, cast

from dbt.adapters.base import PythonJobHelper, available
from dbt.adapters.events.logging import AdapterLogger
from dbt.adapters.spark.impl import SparkAdapter, SparkConfig

from dbt.adapters.zspark.connections import ZSparkConnectionManager
from dbt.adapters.zspark.core.sql_text import property_list, sql_string
from dbt.adapters.zspark.formats.settings import names_an_iceberg_table
from dbt.adapters.zspark.layouts import CONFIG_KEYS
from dbt.adapters.zspark.reach.frames.python_models import (
    SUBMISSION_METHOD,
    SessionPythonJob,
    running_on,
)
from dbt.adapters.zspark.services.advice import WorkloadAdvisor
from dbt.adapters.zspark.services.builds import SeedRead, TableBuilds
from dbt.adapters.zspark.services.context import RunContext
from dbt.adapters.zspark.services.families import ModelFlow, TableFamilies
from dbt.adapters.zspark.services.format_increments import FormatIncrements
from dbt.adapters.zspark.services.increments import IncrementPlanner, ParquetIncrements
from dbt.adapters.zspark.services.indexing import FileIndex
from dbt.adapters.zspark.services.plans import BuildPlan, IncrementPlan
from dbt.adapters.zspark.services.report import LayoutReport
from dbt.adapters.zspark.services.scans import SkipScans
from dbt.adapters.zspark.services.tables import TableFiles
from dbt.adapters.zspark.services.versioning import TableVersioning
from dbt.adapters.zspark.services.writes import KeyedWrites


@dataclass
class ZSparkConfig(SparkConfig):
    """Model configs of dbt-spark plus the clustering and index configs of zspark."""

    zorder_by: list[str] | str | None = None
    hilbert_by: list[str] | str | None = None
    linear_by: list[str] | str | None = None
    balanced_by: list[str] | str | None = None
    gray_by: list[str] | str | None = None
    cluster_by: str | None = None
    zspark_event_logs: list[str] | str | None = None
    zspark_auto_horizon_days: float | None = None
    cluster_weights: dict[str, float] | str | None = None
    workload: list[Any] | None = None
    boundary_count: int | None = None
    curve_method: str | None = None
    file_count: int | None = None
    target_file_size_mb: int | None = None
    index_columns: list[str] | None = None
    zspark_index: bool | None = None
    zspark_recluster: bool | None = None
    zspark_recluster_runs: int | None = None
    zspark_sort_appends: bool | None = None


#: The model configs zspark reads (``zspark_model_config``): its own and dbt-spark's
#: ``partition_by``, which it clusters within.
MODEL_CONFIG_KEYS = (*(f.name for f in fields(ZSparkConfig)
                       if f.name not in {g.name for g in fields(SparkConfig)}), "partition_by")


logger = AdapterLogger("zspark")


class ZSparkAdapter(SparkAdapter):
    ConnectionManager = ZSparkConnectionManager  # type: ignore[assignment]
    AdapterSpecificConfigs = ZSparkConfig  # type: ignore[assignment]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.ctx = ctx = RunContext(self)
        self.tables = TableFiles(ctx)
        self.writes = KeyedWrites(ctx)
        self.index = FileIndex(ctx, self.tables)
        self.versions = TableVersioning(ctx, self.index)
        self.builds = TableBuilds(ctx, self.writes)
        planner = IncrementPlanner(ctx, self.tables, self.index, self.writes)
        self.increments = ParquetIncrements(ctx, self.tables, self.index, self.writes,
                                            self.versions, planner)
        self.format_increments = FormatIncrements(ctx, self.tables, self.index, self.writes,
                                                  planner)
        self.families = TableFamilies(self.builds, self.tables, self.increments,
                                      self.format_increments)
        self.scans = SkipScans(ctx, self.tables)
        self.report = LayoutReport(ctx, self.tables, self.index)
        self.advisor = WorkloadAdvisor(ctx, self.tables)

    @classmethod
    def type(cls) -> str:
        return "zspark"

    def _build_spark_relation_list(self, row_list: Any, relation_info_func: Any) -> list[Any]:
        """dbt-spark's relations, each Iceberg table known as one (``formats/settings.py``):
        it reads the format from SHOW TABLE EXTENDED, which names Iceberg's tables 'hive',
        and would drop such a table before its rebuild rather than replace it in one
        commit."""

        return [relation.incorporate(is_iceberg=True)
                if names_an_iceberg_table(getattr(relation, "information", None)) else relation
                for relation in super()._build_spark_relation_list(row_list, relation_info_func)]

    # -- Python models: on the connection's DataFrame session (reach/frames/) ----------
    @property
    def default_python_submission_method(self) -> str:
        return SUBMISSION_METHOD

    @property
    def python_submission_helpers(self) -> dict[str, builtins.type[PythonJobHelper]]:
        return {**super().python_submission_helpers, SUBMISSION_METHOD: SessionPythonJob}

    @available
    def zspark_submit_python(self, model: dict[str, Any], code: str) -> Any:
        """Run a Python model's ``code`` (``python.sql``: from a materialization's helpers,
        which dbt's ``statement`` refuses), on the connection's DataFrame session."""
        connections = cast(ZSparkConnectionManager, self.connections)
        with running_on(connections.dataframe_session()):
            return self.submit_python_job(model, code)

    @available
    def zspark_python_literal(self, value: str | None) -> str:
        """``value`` as a Python literal, for the lines that write a Python model."""
        return repr(value)

    # -- configs and SQL text -----------------------------------------------------------
    @available
    def zspark_config_keys(self) -> list[str]:
        """The model configs zspark reads, for ``zspark_model_config``."""
        return list(MODEL_CONFIG_KEYS)

    @available
    def zspark_layout_config_keys(self) -> list[str]:
        """The configs that choose a layout (``zorder_by``, ...), from the registry."""
        return list(CONFIG_KEYS)

    @available
    def zspark_property_list(self, configured: dict[str, Any] | None,
                             added: dict[str, str]) -> str:
        """The model's ``options`` / ``tblproperties`` config with what the build adds."""
        return property_list({**(configured or {}), **added})

    @available
    def zspark_sql_string(self, value: str) -> str:
        """``value`` as a Spark SQL string literal (a location, say)."""
        return sql_string(value)

    # -- table builds (services/builds.py) ----------------------------------------------
    @available
    def zspark_load_seed(self, relation: Any, agate_table: Any) -> int | None:
        return self.builds.load_seed(relation, agate_table)

    @available
    def zspark_read_seed(self, model: dict[str, Any]) -> SeedRead | None:
        return self.builds.read_seed(model)

    @available
    def zspark_load_seed_file(self, relation: Any, seed: SeedRead) -> int:
        return self.builds.load_seed_file(relation, seed)

    @available
    def zspark_flow(self, model: str, config: dict[str, Any], file_format: str,
                    language: str, materialized: str) -> ModelFlow:
        """The path a table or incremental materialization takes (services/families.py)."""
        return self.families.flow(model, config, file_format, language, materialized)

    @available
    def zspark_check_config(self, model: str, config: dict[str, Any],
                            materialized: str) -> bool:
        return self.builds.check_config(model, config, materialized)

    @available
    def zspark_warn_config_names(self, model: str, config: dict[str, Any]) -> list[str]:
        """Warn of each config a model set (``model['config']``) that looks like one of
        zspark's but is not; once per run of the model, from its materialization."""
        return self.builds.warn_config_names(model, config, MODEL_CONFIG_KEYS)

    @available
    def zspark_build_plan(self, model: str, relation: Any, config: dict[str, Any],
                          code: str, previous: Any, file_format: str, materialized: str,
                          language: str) -> BuildPlan:
        return self.builds.build_plan(model, relation, config, code, previous, file_format,
                                      materialized, language)

    @available
    def zspark_execute_write(self, plan: BuildPlan | IncrementPlan | None, sql: str) -> Any:
        """Run a model's write (``plan``: its build's or increment's; None: unclustered)."""
        return self.writes.execute_write(None if plan is None else plan.write, sql)

    # -- runs that survive a kill (services/versioning.py) ------------------------------
    @available
    def zspark_table_after_recovery(self, relation: Any) -> bool:
        return self.versions.table_after_recovery(relation)

    @available
    def zspark_begin(self, model: str, relation: Any) -> None:
        self.versions.begin(model, relation)

    @available
    def zspark_end(self) -> None:
        """The end of a run-operation: its locks are released."""
        self.versions.unlock(threading.get_ident())

    def post_model_hook(self, config: Any, context: Any) -> None:
        super().post_model_hook(config, context)
        self.versions.unlock(threading.get_ident())

    @available
    def zspark_begin_batch(self, model: str, relation: Any) -> Any:
        return self.versions.begin_batch(model, relation)

    @available
    def zspark_publish_batch(self, model: str, relation: Any, strategy: str) -> list[str]:
        return self.versions.publish_batch(model, relation, strategy)

    @available
    def zspark_next_version(self, relation: Any) -> Any:
        return self.versions.next_version(relation)

    @available
    def zspark_next_location(self, relation: Any, location_root: str | None = None) -> str:
        return self.versions.next_location(relation, location_root)

    @available
    def zspark_drop_versioned_table(self, relation: Any) -> bool:
        return self.versions.drop_versioned_table(relation)

    @available
    def zspark_swap_in(self, model: str, target: Any, old_relation: Any = None) -> None:
        self.versions.swap_in(model, target, old_relation)

    # -- the file-stats index (services/indexing.py) ------------------------------------
    @available
    def zspark_build_index(self, relation: Any, clustering: list[str] | None = None,
                           configured: list[str] | None = None) -> dict[str, Any]:
        return self.index.build_index(relation, clustering, configured)

    @available
    def zspark_stage_index(self, build: BuildPlan, staging: Any,
                           clustering: list[str] | None = None,
                           configured: list[str] | None = None) -> None:
        self.index.stage_index(build, staging, clustering, configured)

    @available
    def zspark_publish_index(self, build: BuildPlan, clustering: list[str] | None = None,
                             configured: list[str] | None = None) -> dict[str, Any]:
        return self.index.publish_index(build, clustering, configured)

    @available
    def zspark_log_format_stats(self, build: BuildPlan) -> None:
        self.index.log_format_stats(build.target, build.file_format, build.write)

    # -- incremental runs (services/increments.py, services/format_increments.py) -------
    @available
    def zspark_check_incremental(self, model: str, strategy: str,
                                 file_format: str = "parquet",
                                 partition_by: Any = None) -> None:
        self.increments.check_incremental(model, strategy, file_format, partition_by)

    @available
    def zspark_increment(self, model: str, relation: Any, config: dict[str, Any], sql: str,
                         strategy: str, file_format: str) -> IncrementPlan:
        return self.increments.plan(model, relation, config, sql, strategy, file_format)

    @available
    def zspark_format_increment(self, model: str, relation: Any, config: dict[str, Any],
                                sql: str, strategy: str, file_format: str) -> IncrementPlan:
        return self.format_increments.plan(model, relation, config, sql, strategy,
                                           file_format)

    @available
    def zspark_begin_rewrite(self, model: str, relation: Any, step: IncrementPlan) -> Any:
        return self.increments.begin_rewrite(model, relation, step)

    @available
    def zspark_finish_rewrite(self, model: str, relation: Any, staging: Any,
                              step: IncrementPlan) -> None:
        self.increments.finish_rewrite(model, relation, staging, step)

    @available
    def zspark_finish_increment(self, model: str, relation: Any, step: IncrementPlan,
                                want_index: bool, clustering: list[str] | None = None,
                                configured: list[str] | None = None,
                                published: list[str] | None = None) -> dict[str, Any]:
        return self.increments.finish(model, relation, step, want_index, clustering,
                                      configured, published)

    @available
    def zspark_record_base(self, model: str, relation: Any, file_format: str) -> None:
        self.format_increments.record_base(model, relation, file_format)

    @available
    def zspark_finish_format_increment(self, model: str, relation: Any,
                                       step: IncrementPlan) -> dict[str, Any]:
        return self.format_increments.finish(model, relation, step)

    # -- re-clustering on demand and the layout report ----------------------------------
    @available
    def zspark_recluster(self, relation: Any, full: bool = False) -> dict[str, Any]:
        """Merge the pending runs (or, ``full``, re-cluster the whole table); a Delta or
        Iceberg table in a commit of its format, a Parquet table into its next version."""
        return self.families.recluster(relation, bool(full))

    @available
    def zspark_layout_report(self, relation: Any, x: str | None = None, y: str | None = None,
                             path: str | None = None) -> dict[str, Any]:
        return self.report.layout_report(relation, x, y, path)

    # -- the layout the workload asks for (services/advice.py) ---------------------------
    @available
    def zspark_advise(self, model: str, relation: Any, config: dict[str, Any],
                      nodes: list[dict[str, str]], files: int | None = None) -> list[str]:
        """``zspark_advise``: the workload found, the candidates scored, the choice."""
        lines = self.advisor.advise(model, relation, config, nodes, files).lines()
        logger.info("\n".join(lines))
        return lines

    @available
    def zspark_auto_config(self, model: str, config: dict[str, Any], sql: str, relation: Any,
                           nodes: list[dict[str, str]], materialized: str,
                           adding: bool) -> dict[str, Any]:
        """A ``cluster_by='auto'`` model's configs with the layout chosen for it
        (``adding``: an incremental run adding rows to its table)."""
        return self.advisor.auto_config(model, config, sql, relation, nodes, materialized,
                                        adding)

    # -- skip-aware scans and skip_coverage (services/scans.py) -------------------------
    @available
    def zspark_plain_scan_sql(self, relation: Any, predicate: str, check: bool = True) -> str:
        return self.scans.plain_scan_sql(relation, predicate, check)

    @available
    def zspark_scan_sql(self, relation: Any, predicate: str) -> str:
        return self.scans.scan_sql(relation, predicate)

    @available
    def zspark_skip_coverage_placeholder_sql(self, predicates: list[str] | str,
                                             min_skip_ratio: float) -> str:
        return self.scans.skip_coverage_placeholder_sql(predicates, min_skip_ratio)

    @available
    def zspark_skip_coverage_sql(self, relation: Any, predicates: list[str],
                                 min_skip_ratio: float) -> str:
        return self.scans.skip_coverage_sql(relation, predicates, min_skip_ratio)
