"""ZSparkAdapterBase: dbt-spark's adapter with what every part of zspark's adapter shares.

The adapter (``impl.py``) and its mixins for incremental runs (``incremental.py``) and
for Delta and Iceberg increments (``format_increments.py``) derive from it: this run's
state, the two ways of reaching Spark (``reach.py``), a table's properties, stored
layout, files and statistics, the keyed SELECT of a clustered write and its settings,
the file-stats index and the layout line, and the table's versions (``swap.py``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from dbt.adapters.base import available
from dbt.adapters.events.logging import AdapterLogger
from dbt.adapters.spark.impl import SparkAdapter
from dbt_common.exceptions import DbtRuntimeError

from dbt.adapters.zspark.core.layout_state import StoredLayout, StoredLayoutError, pending_rows
from dbt.adapters.zspark.core.partitioning import PARTITIONS_PER_CORE
from dbt.adapters.zspark.core.planning import ClusteringPlan
from dbt.adapters.zspark.core.sql_text import quote, sql_string
from dbt.adapters.zspark.core.stop_points import stop_point
from dbt.adapters.zspark.formats import format_of, format_table, stats_columns
from dbt.adapters.zspark.reach.base import described, execute_with
from dbt.adapters.zspark.reach.choice import reach_of
from dbt.adapters.zspark.reach.session.clustering import key_input_sql, key_input_type
from dbt.adapters.zspark.reach.session.udfs import udf_name
from dbt.adapters.zspark.skipping.health import LayoutSample, layout_health, rebuild_bounds
from dbt.adapters.zspark.skipping.index import INDEX_SUFFIX, IndexSummary
from dbt.adapters.zspark.skipping.pruning import indexed_columns, stat_column
from dbt.adapters.zspark.versions.recluster import FULL, deferred
from dbt.adapters.zspark.versions.rewrite import rows_of_files_sql
from dbt.adapters.zspark.versions.swap import NEXT, PREVIOUS
from dbt.adapters.zspark.versions.table_versions import TableVersions, version_names

if TYPE_CHECKING:
    from dbt.adapters.zspark.reach.base import SparkReach
    from dbt.adapters.zspark.skipping.index import StagedIndex

logger = AdapterLogger("zspark")

#: Spark's rows-per-file cut of a write, set around each clustered write.
FILE_ROWS_SETTING = "spark.sql.files.maxRecordsPerFile"
#: Sample values a point query is probed with when the layout is judged.
PROBES = 1000


@dataclass
class _Rewrite:
    """A re-clustering between its plan and its swap."""

    decision: Any  # recluster.ReclusterPlan
    new_rows: int
    table_rows: int
    #: Table properties of a new layout (full re-clustering), else None.
    layout: dict[str, str] | None
    partition_by: list[str]
    #: It rewrites every file of the table (else some stay: the other partitions' files
    #: of a partitioned table's full re-clustering, the runs a merge leaves).
    whole_table: bool = True
    #: Its rows are a batch published in place of the files rewritten (in a session,
    #: when files stay), not a next version swapped in.
    in_place: bool = False


@dataclass
class _FormatPlan:
    """A Delta or Iceberg incremental run between its plan and its re-clustering."""

    decision: Any  # recluster.ReclusterPlan: what the policy chose, new rows aside
    plan: ClusteringPlan
    stored: StoredLayout
    file_format: str
    properties: dict[str, str]
    #: The policy decides once the rows are committed (a MERGE rewrites files it
    #: matches, unknown before): with automatic re-clustering, or not.
    plan_after: bool = False
    automatic: bool = True


class ZSparkAdapterBase(SparkAdapter):
    """This run's state and the helpers the adapter and its mixins share."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Boundary samples of this run's clustered builds, reused as probes for the log.
        self._samples: dict[str, Any] = {}
        # Indexes of staging tables, read before their swap and written once the table has
        # its final name.
        self._staged: dict[str, StagedIndex] = {}
        # Rows per file and step timings of this run's clustered writes.
        self._file_rows: dict[str, int | None] = {}
        self._timings: dict[str, dict[str, float]] = {}
        # Layouts of this run's full builds, as table properties of the CREATE TABLE.
        self._layout_properties: dict[str, dict[str, str]] = {}
        # Session settings around this run's writes of Delta and Iceberg tables (their
        # statistics' string cut).
        self._write_settings: dict[str, dict[str, str]] = {}
        # Re-clusterings between their plan and their swap, and each incremental run's
        # strategy.
        self._rewrites: dict[str, _Rewrite] = {}
        self._format_plans: dict[str, _FormatPlan] = {}
        self._clustered_inserts: dict[str, bool] = {}
        # The table's files before an incremental run's insert.
        self._files_before: dict[str, set[str]] = {}
        # The parallelism of a thrift server, asked on its first clustered write.
        self._cores: int | None = None
        # Locks this process holds (lock view -> the thread that took it).
        self._locks: dict[str, int] = {}

    # -- the connection -----------------------------------------------------------------
    def _query(self, sql: str) -> tuple[list[str], list[tuple[Any, ...]]]:
        """A query's column names and rows as the connection returns them (no type
        guessing, unlike ``execute``)."""
        _, cursor = self.connections.add_query(sql, auto_begin=False)
        names = [str(d[0]) for d in cursor.description or []]
        return names, [tuple(row) for row in cursor.fetchall() or []]

    def _fetch(self, sql: str) -> list[tuple[Any, ...]]:
        return self._query(sql)[1]

    def _described(self, sql: str) -> dict[str, str]:
        """Column name -> Spark type of a ``DESCRIBE`` statement's column section."""

        return described(self._fetch(sql))

    def _server_cores(self) -> int:
        """The parallelism a server's shuffles are sized to: its default parallelism, the
        N of a ``local[N]`` master, else a quarter of its shuffle partitions (asked once
        per dbt invocation)."""
        if self._cores is None:
            self._cores = self._ask_server_cores()
        return self._cores

    def _ask_server_cores(self) -> int:
        import re

        def setting(key: str) -> str:
            rows = self._fetch(f"set {key}")
            return str(rows[0][1]) if rows else ""

        local = re.fullmatch(r"local\[(\d+)(,\d+)?\]", setting("spark.master"))
        for value, share in ((setting("spark.default.parallelism"), 1),
                             (local.group(1) if local else "", 1),
                             (setting("spark.sql.shuffle.partitions"), PARTITIONS_PER_CORE)):
            if value.isdigit():
                return max(1, int(value) // share)
        return 1

    # -- the two ways of reaching Spark (reach.py): a session in this process (UDF keys,
    # footers, the formats' JVM APIs) or a server by SQL alone. Every step asks for it and
    # calls it without asking which it is.
    def _reach(self) -> SparkReach:
        """How this profile reaches Spark."""

        return reach_of(str(self.config.credentials.method), self._query,
                        lambda sql: self.execute(sql), self._server_cores)

    def _refuse_keys_in_python(self, reach: SparkReach, model: str, curve_method: str,
                               keyed: str, remedy: str = "") -> None:
        """Refuse, before anything is written, keys (``keyed``: how) that only Python
        computes where ``reach`` runs none: there every key is Spark SQL."""
        if reach.runs_python or curve_method == "boundary":
            return
        raise DbtRuntimeError(
            f"Model '{model}': {keyed}; `method: {self.config.credentials.method}` runs no "
            f"Python in Spark. Allowed there: 'boundary'{remedy}.")

    # -- a table: its properties, stored layout and files -------------------------------
    def _table_properties(self, relation: Any) -> dict[str, str]:
        _, table = self.execute(f"show tblproperties {relation}", fetch=True)
        return {str(row[0]): str(row[1]) for row in table.rows}

    def _server_has_table(self, relation: Any) -> bool:
        """Does the metastore hold ``relation`` (asked by SQL, any connection)?"""
        return bool(self._fetch(f"show tables in {relation.schema} like "
                                f"{sql_string(relation.identifier)}"))

    def _stored_layout(self, model: str, relation: Any,
                       properties: dict[str, str] | None = None) -> StoredLayout:
        """The layout stored with ``relation`` (``properties``: its own, when read)."""
        try:
            stored = StoredLayout.from_properties(
                self._table_properties(relation) if properties is None else properties)
        except StoredLayoutError as error:
            stored, problem = None, str(error)
        else:
            problem = "it has no stored clustering layout"
        if stored is None:
            raise DbtRuntimeError(
                f"Model '{model}': cannot add clustered rows to {relation}: {problem}. Run "
                f"`dbt run --full-refresh --select {model}` to rebuild it clustered.")
        return stored

    def _format_of(self, relation: Any) -> tuple[str | None, dict[str, str]]:
        """('delta' or 'iceberg' when ``relation`` is a table of that format, else None;
        its properties)."""

        try:
            properties = self._table_properties(relation)
        except DbtRuntimeError:  # not a table (yet)
            return None, {}
        return format_of(properties), properties

    def _format_files(self, relation: Any, file_format: str | None,
                      properties: dict[str, str], every_column: bool = False,
                      ) -> tuple[str, list[tuple[str, str]]]:
        """A temporary view of a table's live files, one ``__zindex`` file row each
        (``FormatTable.active_files``; over a server without Python, its SQL), and the
        columns a Delta or Iceberg table's statistics bound: those a clustered build keeps
        statistics on (its ``properties`` store the layout), or with ``every_column`` all
        it can bound."""

        written_as = format_table(file_format)
        reach = self._reach()
        schema = reach.schema(f"select * from {relation}")
        stored = StoredLayout.from_properties(properties)
        clustering = list(stored.columns) if stored is not None else []
        columns = stats_columns(schema, clustering, list(schema) if every_column else None)
        view = f"zspark_files_{udf_name(str(relation)).removeprefix('zspark_key_')}"
        reach.files_view(written_as, str(relation), columns, view)
        return view, columns

    def _file_stats(self, relation: Any, properties: dict[str, str],
                    every_column: bool = False) -> str:
        """A view of a table's live files with their statistics, one ``__zindex`` file row
        each: a Parquet table's index's, a Delta or Iceberg table's from its log
        (``properties``: the table's; ``every_column``: every column the format bounds).
        LookupError when the table has none."""

        file_format = format_of(properties)
        held_in = relation.incorporate(path={
            "identifier": relation.identifier + format_table(file_format).stats_table_suffix})
        if not self._server_has_table(held_in):
            raise LookupError(f"no index table {held_in}")
        return self._format_files(relation, file_format, properties, every_column)[0]

    def _live_files(self, relation: Any, file_format: str | None,
                    properties: dict[str, str], create: bool = True,
                    ) -> list[tuple[str, int, int]] | None:
        """The table's live files as the re-clustering policy reads them (path, rows,
        modification time): a Parquet table's from its index, rebuilt first when it no
        longer lists the table's files (None: no index; ``create``: a clustered table
        that lost it gets one), a Delta or Iceberg table's from its own log."""
        if not format_table(file_format).commits_on_its_own:
            return self._indexed_files(relation, create)
        assert file_format is not None
        return self._format_file_list(relation, file_format, properties)

    def _indexed_files(self, relation: Any,
                       create: bool = True) -> list[tuple[str, int, int]] | None:
        """The table's files from its index (path, rows, modification time), the index
        rebuilt first when it does not list exactly the table's files (a run stopped
        between its write and its index; ``create``: or when a clustered table has none).
        None when the table has no index."""
        index = self._index_relation(relation)
        self._repair_index(relation.identifier, relation, create)
        found = self._reach().fresh_rows(
            index, f"select file_path, row_count, file_mtime from {index} where row_group is null")
        if found is None:
            return None
        return [(str(r[0]), int(r[1]), int(r[2] or 0)) for r in found]

    def _format_file_list(self, relation: Any, file_format: str,
                          properties: dict[str, str]) -> list[tuple[str, int, int]]:
        """A Delta or Iceberg table's live files as the policy reads an index: (path,
        rows, modification time in ms)."""
        view, _ = self._format_files(relation, file_format, properties)
        return [(str(r[0]), int(r[1] or 0), int(r[2] or 0)) for r in self._fetch(
            f"select file_path, row_count, file_mtime from {view}")]

    # -- clustered writes ---------------------------------------------------------------
    def _keep(self, relation: Any, plan: ClusteringPlan, prepared: Any,
              new_layout: bool) -> None:
        """Keep what the rest of a build needs (its sample, timings) and log the write."""
        key = str(relation).lower()
        self._file_rows[plan.model] = prepared.file_rows
        self._samples[key] = LayoutSample(plan.columns, plan.column_types, prepared.sample,
                                          prepared.sample_keys, prepared.sample_partitions)
        self._timings[key] = {"sample": prepared.sample_seconds, "since": time.perf_counter()}
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

    @available
    def zspark_execute_write(self, model: str, sql: str) -> Any:
        """Run the statement that writes this run's clustered rows of ``model``, its
        partitions cut into files of the planned rows.

        Rows per file is a session setting for this one statement, not a writer option of
        the table: a table option would override it in every later write (pieces, merges).
        """
        rows = self._file_rows.pop(model, None)
        settings = self._write_settings.pop(model, {})
        if rows:
            settings[FILE_ROWS_SETTING] = str(int(rows))
        if not settings:
            return self.execute(sql)[0]
        return self._execute_with(settings, sql)

    def _execute_with(self, settings: dict[str, str], sql: str) -> Any:
        """Run ``sql`` with session ``settings``, restored afterwards."""

        return execute_with(self._fetch, lambda statement: self.execute(statement),
                            settings, sql)[0]

    def _fixes_file_rows(self, relation: Any) -> bool:
        """Does the table carry rows per file as its own writer option (earlier builds of
        this plugin set one)? It then overrides every write's own cut."""
        _, table = self.execute(f"describe table extended {relation}", fetch=True)
        return any(str(row[0]) == "Storage Properties" and "maxRecordsPerFile=" in str(row[1])
                   for row in table.rows)

    def _rewrite_select(self, relation: Any, plan: ClusteringPlan,
                        stored: StoredLayout, decision: Any, sql: str, sampled: Any,
                        runs: list[Any] | None, schema: dict[str, str],
                        file_format: str | None = None, rows_view: str | None = None) -> str:
        """The keyed SELECT an incremental run or a re-clustering writes (``schema``: the
        columns of ``sql``; ``file_format``: the table's, None for Parquet; ``rows_view``:
        a view of exactly the rewritten files' rows, where the table's own scan would open
        every file)."""

        model = plan.model
        reach = self._reach()
        written_as = format_table(file_format)
        # A writer that cuts no files by rows (Iceberg's), or a table fixing its own cut,
        # gets a shuffle partition per file.
        file_per_partition = not written_as.cuts_files_by_rows or \
            self._fixes_file_rows(relation)
        if not decision.rewrites:
            prepared = reach.keyed(plan, sql, sampled, stored, decision.pieces, schema,
                                   pieces=True, file_per_partition=file_per_partition)
            self._keep(relation, plan, prepared, new_layout=False)
            return str(prepared.select_sql)
        table_schema = {c.name: c.data_type for c in self.get_columns_in_relation(relation)}
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
        self._keep(relation, plan, prepared, new_layout=everything)
        self._rewrites[str(relation).lower()] = _Rewrite(
            decision=decision, new_rows=sampled.rows if sql else 0,
            table_rows=sum(r.rows for r in runs or []),
            layout=prepared.layout.to_properties() if everything and prepared.layout else None,
            partition_by=list(plan.partition_by), whole_table=whole_table)
        logger.info(f"zspark: {model}: rewriting {decision.rewritten_rows} rows of "
                    f"{len(decision.rewritten_paths)} files into the table's next version")
        return str(prepared.select_sql)

    def _session_reclusters(self, decision: Any, file_format: str) -> Any:
        """The policy's ``decision``, its re-clustering deferred over a server without
        Python: the format's commit that changes no data is made through its JVM API."""

        if self._reach().runs_python:
            return decision
        return deferred(decision, f"a {file_format} re-clustering needs `method: session` "
                                  f"(run zspark_recluster there, or `dbt run --full-refresh`)")

    # -- index and the layout line ------------------------------------------------------
    @available
    def zspark_index_name(self, relation: Any) -> str:
        return f"{relation.identifier}{INDEX_SUFFIX}"

    def _index_relation(self, relation: Any) -> Any:
        return relation.incorporate(path={"identifier": self.zspark_index_name(relation)})

    @available
    def zspark_build_index(self, relation: Any, clustering: list[str] | None = None,
                           configured: list[str] | None = None) -> dict[str, Any]:
        """Build ``<table>__zindex`` from the table's Parquet footers and log the layout."""
        index = self._index_relation(relation)
        summary = self._reach().build_index(relation, index, clustering, configured)
        return self._log_index(relation, index, summary)

    def _repair_index(self, model: str, relation: Any, create: bool = False) -> bool:
        """Rebuild the index of a table whose index does not list exactly its files (a run
        stopped between its write and its index), or (``create``) of a clustered table
        that lost it; True when it was rebuilt."""

        index = self._index_relation(relation)
        has_index = self._server_has_table(index)
        try:
            stored = StoredLayout.from_properties(self._table_properties(relation))
        except StoredLayoutError:
            stored = None
        if not has_index and (stored is None or not create):
            return False
        if has_index:
            reach = self._reach()
            reach.refresh(index)
            listed = {str(r[0]) for r in self._fetch(
                f"select file_path from {index} where row_group is null")}
            if listed == reach.table_files(relation):
                return False
        configured = indexed_columns(list(self._described(f"describe table {index}"))) \
            if has_index else None
        clustering = list(stored.columns) if stored is not None else []
        logger.warning(f"zspark: {model}: the index {index.identifier} does not list exactly "
                       f"the files of {relation}; rebuilding it")
        self.zspark_build_index(relation, clustering, configured)
        return True

    def _log_index(self, relation: Any, index: Any, summary: Any,
                   held_in: str | None = None, just_built: bool = False) -> dict[str, Any]:
        """Log a table's files, rows and layout figures (``just_built``: by a commit that
        replaced every file, so none is pending re-clustering)."""
        message = (
            f"zspark: {relation.identifier}: {summary.files} files, {summary.rows} rows, "
            f"{len(summary.columns)} columns indexed in {held_in or index.identifier}"
        )
        sample = self._samples.pop(str(relation).lower(), None)
        if sample is not None and summary.files:
            try:
                health, _ = self._layout_health(relation, index, sample, just_built)
                message += "; layout: " + health.describe()
            except Exception as error:  # the figures inform; they never fail a build
                logger.warning(f"zspark: {relation.identifier}: layout figures unavailable "
                               f"({type(error).__name__}: {error})")
        timings = self._timings.pop(str(relation).lower(), None)
        if timings is not None:
            self._lap_into(timings, "log")
            steps = ("sample", "write", "index", "log")
            message += "; seconds: " + ", ".join(
                f"{step} {timings.get(step, 0.0):.1f}" for step in steps)
        logger.info(message)
        return {"files": summary.files, "rows": summary.rows, "columns": summary.columns}

    @available
    def zspark_log_format_stats(self, model: str, relation: Any, file_format: str,
                                just_built: bool = True) -> None:
        """After a clustered Delta or Iceberg build (``just_built``) or increment: its files
        and rows, and the layout figures, from the format's own statistics (the table's
        index)."""

        stop_point("format:committed")
        self._lap(relation, "write")
        view, columns = self._format_files(relation, file_format,
                                           self._table_properties(relation))
        totals = self._fetch(f"select count(1), sum(row_count) from {view}")[0]
        summary = IndexSummary(view, int(totals[0]), int(totals[1] or 0),
                               [name for name, _ in columns])
        self._lap(relation, "index")
        self._log_index(relation, view, summary, held_in=f"its {file_format} statistics",
                        just_built=just_built)

    def _layout_health(self, relation: Any, index: Any, sample: LayoutSample,
                       just_built: bool = False) -> tuple[Any, Any]:
        """Depth and overlaps per clustering column from the index, probed with a sample of
        the rows, against a rebuild estimated from the same sample; and the index's files
        (path, rows and each column's bounds as ``<column>.min`` / ``<column>.max``)."""

        typed = list(zip(sample.columns, sample.types, strict=True))
        picked = ", ".join(
            f"{key_input_sql(quote(stat_column(c, s)), t)} as {quote(f'{c}.{s}')}"
            for c, t in typed for s in ("min", "max"))
        query = (f"select file_path, row_count, {picked} from {index} "
                 f"where row_group is null and row_count > 0")
        files = self._reach().frame(query, {
            f"{c}.{s}": key_input_type(t) for c, t in typed for s in ("min", "max")})
        bounds = {c: files[[f"{c}.min", f"{c}.max"]].set_axis(["min", "max"], axis=1)
                  for c in sample.columns}
        rebuilt = rebuild_bounds(sample.rows, sample.partitions, np.asarray(sample.keys),
                                 sample.columns, len(files))
        rows = [int(r) for r in files["row_count"]]
        pending = 0 if just_built else pending_rows(
            list(zip(map(str, files["file_path"]), rows, strict=True)),
            self._table_properties(relation))
        health = layout_health(bounds, sample.rows.head(PROBES), rebuilt, sum(rows), pending)
        return health, files

    # -- the table's versions (swap.py) -------------------------------------------------
    def _versions(self, relation: Any) -> Any:
        folders = self._reach().folders()
        return TableVersions(relation.schema, relation.identifier, self._fetch,
                             lambda sql: self.execute(sql), folders)

    def _version(self, relation: Any, role: str) -> Any:
        return relation.incorporate(
            path={"identifier": version_names(relation.identifier.lower())[role]},
            type="table")

    @available
    def zspark_next_version(self, relation: Any) -> Any:
        """The name a build or a re-clustering writes the table's next version under."""
        return self._version(relation, NEXT)

    @available
    def zspark_next_location(self, relation: Any, location_root: str | None = None) -> str:
        """The folder of its own the next version of ``relation`` is written into, once
        (``swap.py``), under the model's ``location_root`` if it has one."""
        return self._versions(relation).next_location(location_root)

    @available
    def zspark_drop_versioned_table(self, relation: Any) -> bool:
        """Drop ``relation`` if it is a table whose folder is one of its versions', and
        that folder with it (the metastore leaves an external table's files). False
        when it is not (a view, a managed table, a user's location): nothing done."""
        if relation is None or relation.is_view:
            return False
        versions = self._versions(relation)
        folder = versions.own_folder()
        if folder is None:
            return False
        versions.drop_table(folder)
        return True

    @available
    def zspark_swap_in(self, model: str, target: Any, old_relation: Any = None) -> None:
        """Make the written next version of ``target`` the table (``swap.py``)."""
        stop_point("swap:begin")
        versions = self._versions(target)
        if old_relation is not None and old_relation.is_view:
            # A view holds no rows: it goes first, and the swap has no previous version.
            self.execute(f"drop view if exists {old_relation}")
            self.cache_dropped(old_relation)
            old_relation = None
        versions.swap(replaces=old_relation is not None)
        if old_relation is not None:
            self.cache_renamed(target, self._version(target, PREVIOUS))
            self.cache_dropped(self._version(target, PREVIOUS))
        self.cache_renamed(self._version(target, NEXT), target)
