"""ZSparkAdapter: dbt-spark plus clustered builds, a file-stats index and skip-aware scans.

Jinja stays thin: each ``@available`` method below validates its input in Python and
hands back plain values or SQL text. Incremental runs and re-clustering come from the
mixins of ``incremental.py`` and ``format_increments.py``; the state and helpers they
share with this module, from ``adapter_base.py``.
"""

from __future__ import annotations

import builtins
import threading
from dataclasses import dataclass, fields
from typing import Any

from dbt.adapters.base import PythonJobHelper, available
from dbt.adapters.events.logging import AdapterLogger
from dbt.adapters.spark.impl import SparkConfig
from dbt_common.exceptions import CompilationError, DbtRuntimeError

from dbt.adapters.zspark.connections import ZSparkConnectionManager
from dbt.adapters.zspark.core.layout_state import StoredLayout, StoredLayoutError
from dbt.adapters.zspark.core.model_lock import LOCK_SUFFIX, LockOwner
from dbt.adapters.zspark.core.planning import ClusteringConfigError, plan_clustering
from dbt.adapters.zspark.core.sql_text import property_list, sql_string
from dbt.adapters.zspark.core.stop_points import stop_point
from dbt.adapters.zspark.formats import (
    CLUSTERED_FORMATS,
    format_table,
    longest_string,
    stats_columns,
    string_stats_length,
)
from dbt.adapters.zspark.formats.settings import (
    TABLE_FORMATS,
    commits_on_its_own,
    names_an_iceberg_table,
    unwritable_format_error,
)
from dbt.adapters.zspark.layouts import CONFIG_KEYS
from dbt.adapters.zspark.reach.session.clustering import spread_sql
from dbt.adapters.zspark.reach.session.python_models import SUBMISSION_METHOD, SessionPythonJob
from dbt.adapters.zspark.reach.session.seeds import load_seed
from dbt.adapters.zspark.services.context import ZSparkAdapterBase
from dbt.adapters.zspark.services.format_increments import FormatIncrementMethods
from dbt.adapters.zspark.services.increments import IncrementalMethods
from dbt.adapters.zspark.skipping import pruning
from dbt.adapters.zspark.skipping.scan import FileKey, scan_sql, skippable_files_sql
from dbt.adapters.zspark.versions.rewrite import set_properties_sql
from dbt.adapters.zspark.versions.swap import (
    NEXT,
    Action,
    AmbiguousSwapStateError,
    table_after_recovery,
)
from dbt.adapters.zspark.versions.table_versions import APPEND, BATCH, BATCH_KEY, OVERWRITE

logger = AdapterLogger("zspark")


@dataclass
class ZSparkConfig(SparkConfig):
    """Model configs of dbt-spark plus the clustering and index configs of zspark."""

    zorder_by: list[str] | str | None = None
    hilbert_by: list[str] | str | None = None
    linear_by: list[str] | str | None = None
    balanced_by: list[str] | str | None = None
    cluster_weights: dict[str, float] | str | None = None
    workload: list[Any] | None = None
    boundary_count: int | None = None
    curve_method: str | None = None
    file_count: int | None = None
    target_file_size_mb: int | None = None
    index_columns: list[str] | None = None
    zspark_index: bool | None = None
    zspark_recluster: bool | None = None


#: The model configs zspark reads (``zspark_model_config``): its own and dbt-spark's
#: ``partition_by``, which it clusters within.
MODEL_CONFIG_KEYS = (*(f.name for f in fields(ZSparkConfig)
                       if f.name not in {g.name for g in fields(SparkConfig)}), "partition_by")


class ZSparkAdapter(FormatIncrementMethods, IncrementalMethods, ZSparkAdapterBase):
    ConnectionManager = ZSparkConnectionManager  # type: ignore[assignment]
    AdapterSpecificConfigs = ZSparkConfig  # type: ignore[assignment]

    @classmethod
    def type(cls) -> str:
        return "zspark"

    def _build_spark_relation_list(self, row_list: Any, relation_info_func: Any) -> list[Any]:
        """dbt-spark's relations, each Iceberg table known as one (``table_formats``): it
        reads the format from SHOW TABLE EXTENDED, which names Iceberg's tables 'hive', and
        would drop such a table before its rebuild rather than replace it in one commit."""

        return [relation.incorporate(is_iceberg=True)
                if names_an_iceberg_table(getattr(relation, "information", None)) else relation
                for relation in super()._build_spark_relation_list(row_list, relation_info_func)]

    # -- Python models: run in the session (python_models.py) -------------------------
    @property
    def default_python_submission_method(self) -> str:
        return SUBMISSION_METHOD

    @property
    def python_submission_helpers(self) -> dict[str, builtins.type[PythonJobHelper]]:
        return {**super().python_submission_helpers, SUBMISSION_METHOD: SessionPythonJob}

    @available
    def zspark_submit_python(self, model: dict[str, Any], code: str) -> Any:
        """Run a Python model's ``code`` (``python.sql``: from a materialization's helpers,
        which dbt's ``statement`` refuses)."""
        return self.submit_python_job(model, code)

    @available
    def zspark_load_seed(self, relation: Any, agate_table: Any) -> int | None:
        """Insert a seed's rows in one Spark write (``seeds.py``); the rows, or None over
        a server (dbt-spark's statements load it)."""
        reach = self._reach()
        if not reach.runs_python:
            return None
        rows = load_seed(reach.spark, str(relation), agate_table)
        logger.info(f"zspark: {relation}: {rows} seed rows inserted by one Spark write")
        return rows

    @available
    def zspark_config_keys(self) -> list[str]:
        """The model configs zspark reads, for ``zspark_model_config``."""
        return list(MODEL_CONFIG_KEYS)

    @available
    def zspark_layout_config_keys(self) -> list[str]:
        """The configs that choose a layout (``zorder_by``, ...), from the registry."""
        return list(CONFIG_KEYS)

    @available
    def zspark_python_literal(self, value: str | None) -> str:
        """``value`` as a Python literal, for the lines that write a Python model."""
        return repr(value)

    # -- clustered builds ---------------------------------------------------------------
    @available
    def zspark_check_file_format(self, model: str, file_format: str, clustered: bool,
                                 materialized: str) -> bool:
        """Refuse, before anything is written, a ``file_format`` this Spark cannot write or
        zspark cannot cluster. True when the format commits on its own (Delta, Iceberg,
        Hudi): dbt-spark's own build then replaces the table in one commit of the format,
        keeping its history, where a rename would leave its files behind."""

        if file_format.lower() in TABLE_FORMATS:  # Parquet and the rest need no extension
            # Spark answers SET for a static setting too, in a session and over thrift.
            value = next((str(row[1]) for row in self._fetch("set spark.sql.extensions")
                          if row[1] is not None), "")
            problem = unwritable_format_error(
                model, file_format, None if value.startswith("<undefined") else value)
            if problem is not None:
                raise DbtRuntimeError(problem)
        if clustered:
            self._check_clustered_format(model, file_format.lower(), materialized)
        return commits_on_its_own(file_format)

    def _check_clustered_format(self, model: str, file_format: str, materialized: str) -> None:
        allowed = CLUSTERED_FORMATS if materialized in ("table", "incremental") \
            else ("parquet",)
        if file_format not in allowed:
            raise DbtRuntimeError(
                f"Model '{model}': config 'file_format' is '{file_format}' on a clustered "
                f"{materialized} model. Allowed: {', '.join(repr(f) for f in allowed)}. zspark "
                f"does not cluster {materialized} models of {file_format} tables yet; without "
                f"zorder_by, hilbert_by, linear_by and balanced_by the model builds "
                f"unclustered.")

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
                         sql: str, previous: Any = None, file_format: str = "parquet") -> str:
        """The SELECT a table build writes: clustered, spread into files, or ``sql`` as is.
        ``previous`` is the table the build replaces, if any; a Delta or Iceberg table
        (``file_format``) gets the table properties that keep statistics on its columns.

        Every check happens here, before the materialization writes anything.
        """
        if not self.zspark_check_config(model, config, "table"):
            file_count = config.get("file_count")
            if file_count is None:
                return sql

            return spread_sql(sql, int(file_count))

        reach = self._reach()
        schema = reach.schema(sql)
        try:
            plan = plan_clustering(model, config, schema, "table")
        except ClusteringConfigError as error:
            raise DbtRuntimeError(str(error)) from error
        assert plan is not None
        self._refuse_keys_in_python(reach, model, plan.curve_method,
                                    f"config 'curve_method' is '{plan.curve_method}', "
                                    f"which computes keys in Python")
        last_rows = self._rows_last_built(previous)
        logger.info(
            f"zspark: {model}: {plan.layout.name} layout on {', '.join(plan.columns)} "
            f"({plan.curve_method}, boundary_count={plan.boundary_count}); sampling input"
            + ("" if last_rows is None else f" ({last_rows} rows at its last build)")
            + ("" if reach.runs_python else " (keys in Spark SQL: no Python on the server)")
        )
        # Two passes (a session) or three (thrift): sample and count, then the write.
        sampled = reach.sample(plan, sql, schema, last_rows)
        written_as = format_table(file_format)
        prepared = reach.keyed(plan, sql, sampled, None,
                               plan.resolve_file_count(sampled.input_bytes), schema,
                               pieces=False,
                               file_per_partition=not written_as.cuts_files_by_rows)
        self._keep(relation, plan, prepared, new_layout=True)
        assert prepared.layout is not None
        self._layout_properties[plan.model] = prepared.layout.to_properties()
        # The format's statistics on the clustering and indexed columns (Parquet's are
        # the index's: none). A partition column's value is in the table's metadata
        # (Delta refuses stats on one).
        partitions = {c.lower() for c in plan.partition_by}
        columns = [c for c in stats_columns(schema, plan.columns, config.get("index_columns"))
                   if c[0].lower() not in partitions]
        length = string_stats_length(longest_string(sampled.sample, plan.columns))
        self._layout_properties[plan.model].update(written_as.stats_properties(columns, length))
        self._write_settings[plan.model] = written_as.write_settings(length)
        return prepared.select_sql

    def _rows_last_built(self, previous: Any) -> int | None:
        """Rows of the clustered table a build replaces, from its stored layout (None: no
        such table, not one a clustered build wrote, or properties it cannot read: a hint
        for the sample, never a reason to fail the build)."""
        if previous is None or previous.is_view:
            return None
        try:
            stored = StoredLayout.from_properties(self._table_properties(previous))
        except (StoredLayoutError, DbtRuntimeError):
            return None
        return None if stored is None else stored.rows

    @available
    def zspark_layout_properties(self, model: str) -> dict[str, str]:
        """Table properties that store the layout of this run's full build of ``model``."""
        return self._layout_properties.pop(model, {})

    @available
    def zspark_property_list(self, configured: dict[str, Any] | None,
                             added: dict[str, str]) -> str:
        """The model's ``options`` / ``tblproperties`` config with what the build adds."""
        return property_list({**(configured or {}), **added})

    @available
    def zspark_sql_string(self, value: str) -> str:
        """``value`` as a Spark SQL string literal (a location, say)."""
        return sql_string(value)

    # -- runs that survive a kill (swap.py: the protocol; model_lock.py: one run at a time)
    @available
    def zspark_table_after_recovery(self, relation: Any) -> bool:
        """Whether ``relation``, which dbt does not find, is a table once this run's
        repair of a stopped swap has run (``swap.table_after_recovery``); no change made.
        A state zspark cannot repair answers False: the run's repair then fails, naming it."""
        try:
            return table_after_recovery(self._versions(relation).observe())
        except AmbiguousSwapStateError:
            return False

    @available
    def zspark_begin(self, model: str, relation: Any) -> None:
        """First step of every zspark run on ``relation``: take its lock, then repair what
        a killed run left (``swap.py``) and log it in one line naming the model."""
        self._lock(model, relation)
        versions = self._versions(relation)
        try:
            state = versions.observe()
            done: list[Action] = []

            def cached(action: Action) -> None:
                done.append(action)
                if action.kind == "rename":
                    self.cache_renamed(self._version(relation, action.source),
                                       self._version(relation, action.target))
                elif action.kind == "drop":
                    self.cache_dropped(self._version(relation, action.source))

            versions.recover(state, cached)
            if self._server_has_table(relation) and self._reach().journals_batches:
                batch = versions.recover_batch(self._table_properties(relation).get(BATCH_KEY))
                if batch is not None:
                    done.append(Action("batch", BATCH, why=batch))
        except AmbiguousSwapStateError as error:
            raise DbtRuntimeError(
                f"Model '{model}': a stopped run left {relation} in a state zspark cannot "
                f"repair safely ({error}); nothing was changed. Found: {state.describe()}"
            ) from error
        # The staged index of a next version is derived data; the table's is checked next.
        self.execute(f"drop table if exists "
                     f"{self._index_relation(self._version(relation, NEXT))}")
        if not done:
            return
        logger.warning(f"zspark: {model}: recovered {relation} from a run that was stopped: "
                       + "; ".join(a.why for a in done))
        if self._server_has_table(relation):
            self._repair_index(model, relation, create=False)

    @available
    def zspark_begin_batch(self, model: str, relation: Any) -> Any:
        """The batch an append or an overwrite writes before its files move into the table
        (a session; over a server, None: Spark's own commit writes into the table)."""
        if not self._reach().journals_batches:
            return None
        batch = self._version(relation, BATCH)
        self.execute(f"create table {batch} like {relation}")
        return batch

    @available
    def zspark_publish_batch(self, model: str, relation: Any, strategy: str) -> None:
        """Journal the written batch in the table's properties, then move its files in
        (``strategy`` insert_overwrite: in place of what it replaces)."""
        mode = OVERWRITE if strategy == "insert_overwrite" else APPEND
        stop_point(f"{mode}:written")
        batch = self._version(relation, BATCH)
        self.execute(set_properties_sql(str(relation), {BATCH_KEY: mode}))
        self._versions(relation).publish_batch(mode)
        self.cache_dropped(batch)

    def _lock(self, model: str, relation: Any) -> None:
        """Take the lock of ``relation`` for this run (``model_lock.py``), or fail naming
        the run that holds it."""

        lock = relation.incorporate(path={"identifier": relation.identifier + LOCK_SUFFIX},
                                    type="view")
        key = str(lock).lower()
        if key in self._locks:
            return
        me = LockOwner.this_process()
        create = (f"create view {lock} tblproperties {property_list(me.to_properties())} "
                  f"as select 1 as zspark_lock")
        for _ in range(2):
            try:
                self.execute(create)
            except DbtRuntimeError as error:
                if "already exists" not in str(error).lower() and \
                        "ALREADY_EXISTS" not in str(error):
                    raise
            else:
                self._locks[key] = threading.get_ident()
                return
            owner = LockOwner.from_properties(self._table_properties(lock))
            if owner is not None and owner.same_process(me):
                self._locks[key] = threading.get_ident()
                return
            if owner is None or not owner.is_gone():
                who = owner.describe() if owner is not None else "an unknown run"
                raise DbtRuntimeError(
                    f"Model '{model}': another run is writing {relation}: {lock} is held by "
                    f"{who}. Runs of one table never overlap; run again once it has ended. "
                    f"If that process is gone from its host, `drop view {lock}` frees it.")
            logger.warning(f"zspark: {model}: {lock} was held by {owner.describe()}, which "
                           f"has ended; taking it over")
            self.execute(f"drop view if exists {lock}")
        raise DbtRuntimeError(f"Model '{model}': could not take the lock {lock}")

    def _unlock(self, thread: int | None = None) -> None:
        """Drop the locks taken by ``thread`` (every lock of this process for None)."""
        for key, owner in list(self._locks.items()):
            if thread is None or owner == thread:
                self._locks.pop(key)
                try:
                    self.execute(f"drop view if exists {key}")
                except DbtRuntimeError as error:  # the next run takes a dead owner's over
                    logger.warning(f"zspark: could not release {key}: {error}")

    @available
    def zspark_end(self) -> None:
        """The end of a run-operation: its locks are released."""
        self._unlock(threading.get_ident())

    def post_model_hook(self, config: Any, context: Any) -> None:
        super().post_model_hook(config, context)
        self._unlock(threading.get_ident())

    # -- index --------------------------------------------------------------------------
    @available
    def zspark_stage_index(self, staging: Any, target: Any,
                           clustering: list[str] | None = None,
                           configured: list[str] | None = None) -> None:
        """Read the index of a build's staging table before it replaces the model's table,
        so that a failure reading footers leaves the previous table and its index as they
        were. The rows wait (a session's executors hold them; a server, a table of their
        own) until :meth:`zspark_publish_index`."""
        stop_point("build:written")
        self._lap(target, "write")
        self._staged[str(staging).lower()] = self._reach().stage_index(
            staging, self._index_relation(staging), clustering, configured)
        self._lap(target, "index")

    @available
    def zspark_publish_index(self, staging: Any, target: Any, clustering: list[str] | None = None,
                             configured: list[str] | None = None) -> dict[str, Any]:
        """After the swap: the staged rows, their paths moved to the model's table, are
        written as ``<model>__zindex``. Should the paths not match the table's files, or the
        staged rows be gone, the index is built again."""
        index = self._index_relation(target)
        staged = self._staged.pop(str(staging).lower())
        summary = self._reach().publish_index(staged, target, index, clustering,
                                                   configured)
        stop_point("index:published")
        self._lap(target, "index")
        return self._log_index(target, index, summary)

    # -- re-clustering on demand --------------------------------------------------------
    @available
    def zspark_recluster(self, relation: Any, full: bool = False) -> dict[str, Any]:
        """``zspark_recluster``: merge the pending runs (or, ``full``, re-cluster the whole
        table) into the table's next version; a no-op when there is nothing to do. A Delta
        or Iceberg table is re-clustered in a commit of its format instead."""
        model = relation.identifier
        file_format, properties = self._format_of(relation)
        if file_format is not None:
            return self._recluster_format_table(model, relation, file_format, properties,
                                                bool(full))
        return self._recluster_parquet_table(model, relation, full)

    # -- skip-aware scans --------------------------------------------------------------
    @available
    def zspark_check_predicate(self, predicate: str) -> str:
        """``predicate``, or a compilation error of the model that names it (dbt adds
        the model and its file)."""

        try:
            pruning.parse_predicate(predicate)
        except pruning.PredicateError as error:
            raise CompilationError(str(error)) from None
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
        typed = [(c.name, c.data_type) for c in index_columns]
        return self._may_match_sql(predicate, typed, relation, declared)

    @staticmethod
    def _may_match_sql(predicate: str, index_columns: list[tuple[str, str]], relation: Any,
                       declared: dict[str, str] | None) -> str:
        """``index_columns``: the index's (name, Spark type) pairs."""

        qualifiers: list[str] = []
        if relation is not None:
            qualifiers = [relation.identifier]
            if relation.schema:
                qualifiers += [f"{relation.schema}.{relation.identifier}",
                               f"spark_catalog.{relation.schema}.{relation.identifier}"]
        types = pruning.index_column_types(index_columns, declared or {})
        table_columns = list(declared) if declared is not None else None
        try:
            return pruning.may_match_sql(predicate, types, qualifiers=qualifiers,
                                         table_columns=table_columns)
        except pruning.PredicateError as error:
            raise DbtRuntimeError(str(error)) from error

    def _skipped_files(self, relation: Any, predicates: list[str], properties: dict[str, str],
                       ) -> tuple[int, list[list[FileKey]]]:
        """(indexed files, per predicate the files it provably cannot match) from the
        table's file statistics (``properties``: the table's); their columns and the
        table's are read once for all predicates."""
        index = self._file_stats(relation, properties, every_column=True)
        columns = list(self._described(f"describe table {index}").items())
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
    def zspark_plain_scan_sql(self, relation: Any, predicate: str, check: bool = True) -> str:
        """The scan without an index: ``select * from relation where predicate``
        (``check``: False while dbt parses, which reports an error against no model)."""
        if check:
            self.zspark_check_predicate(predicate)
        return scan_sql(str(relation), predicate, [])

    @available
    def zspark_scan_sql(self, relation: Any, predicate: str) -> str:
        """A parenthesised subquery reading only the files of ``relation`` that may match.

        Files are excluded by (path, size), so files added or rewritten since the index was
        built are always read, and indexed files that are gone simply match nothing.
        """
        self.zspark_check_predicate(predicate)
        file_format, properties = self._format_of(relation)
        if format_table(file_format).engines_skip_files:
            return scan_sql(str(relation), predicate, [])
        try:
            skipped = self._skipped_files(relation, [predicate], properties)[1][0]
        except (LookupError, DbtRuntimeError) as error:
            logger.warning(f"zspark_scan: {relation}: index unusable ({error}); full scan")
            skipped = []
        return scan_sql(str(relation), predicate, skipped)

    @available
    def zspark_skip_coverage_placeholder_sql(self, predicates: list[str] | str,
                                             min_skip_ratio: float) -> str:
        """The test's query where it is compiled but not run (``dbt compile``, ``dbt docs
        generate``): its columns, no row, and what it measures when it runs."""
        listed = [predicates] if isinstance(predicates, str) else list(predicates)
        return (f"-- skip_coverage: measured when the test runs (dbt test, dbt build): the "
                f"share of files each of {len(listed)} predicate(s) skips, at least "
                f"{float(min_skip_ratio)!r}\n"
                f"select cast(null as string) as predicate, 0 as files, 0 as skipped_files, "
                f"cast(0 as double) as skip_ratio where false")

    @available
    def zspark_skip_coverage_sql(self, relation: Any, predicates: list[str],
                                 min_skip_ratio: float) -> str:
        """The test query of ``skip_coverage``: one row per predicate that skips too little."""
        if isinstance(predicates, str):
            predicates = [predicates]
        for predicate in predicates:
            self.zspark_check_predicate(predicate)
        try:
            files, skipped_per_predicate = self._skipped_files(
                relation, list(predicates), self._format_of(relation)[1])
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
