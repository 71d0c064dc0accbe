"""The one context every service of the adapter is given.

A service (``builds.py``, ``increments.py``, ...) reaches dbt through it alone: the
connection (queries and statements, in the order they run), how this profile reaches
Spark (``reach/``), dbt's relation cache, a table's properties and this run's state.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from dbt_common.exceptions import DbtRuntimeError

from dbt.adapters.zspark.core.partitioning import PARTITIONS_PER_CORE
from dbt.adapters.zspark.core.sql_text import sql_string
from dbt.adapters.zspark.reach.base import described, execute_with
from dbt.adapters.zspark.reach.choice import reach_of
from dbt.adapters.zspark.skipping.index import INDEX_SUFFIX
from dbt.adapters.zspark.versions.table_versions import TableVersions, version_names

if TYPE_CHECKING:
    from dbt.adapters.spark.impl import SparkAdapter

    from dbt.adapters.zspark.core.layout_state import StoredLayout
    from dbt.adapters.zspark.core.planning import ClusteringPlan
    from dbt.adapters.zspark.reach.base import SparkReach
    from dbt.adapters.zspark.skipping.health import LayoutSample
    from dbt.adapters.zspark.skipping.index import StagedIndex


@dataclass
class Rewrite:
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
class FormatPlan:
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


@dataclass
class IncrementPlan:
    """An incremental run of a clustered model from its plan (``zspark_increment``) to its
    last step: the materialization reads ``rows``, ``rewrite`` and ``sql`` and hands the
    plan back to each later step, which finds here what the plan decided."""

    #: New rows (0: nothing to write).
    rows: int
    #: The rows go into the table's next version with the runs they are merged with.
    rewrite: bool
    #: The SELECT of the rows to write.
    sql: str
    #: The table's files before the insert, whose difference after it is the new files.
    files_before: set[str] = field(default_factory=set)
    #: Its files are clustered as a build's (whole partitions, a partition's first rows).
    clustered_insert: bool = False
    #: A re-clustering between its plan and its swap.
    rewritten: Rewrite | None = None
    #: A Delta or Iceberg run between its rows' commit and its re-clustering.
    format_plan: FormatPlan | None = None


@dataclass
class RunState:
    """What one step of a run leaves for a later step of the same run, by table."""

    #: Boundary samples of this run's clustered builds, reused as probes for the log.
    samples: dict[str, LayoutSample] = field(default_factory=dict)
    #: Indexes of staging tables, read before their swap, written once the table has
    #: its final name.
    staged: dict[str, StagedIndex] = field(default_factory=dict)
    #: Rows per file and step timings of this run's clustered writes.
    file_rows: dict[str, int | None] = field(default_factory=dict)
    timings: dict[str, dict[str, float]] = field(default_factory=dict)
    #: Layouts of this run's full builds, as table properties of the CREATE TABLE.
    layout_properties: dict[str, dict[str, str]] = field(default_factory=dict)
    #: Session settings around this run's writes of Delta and Iceberg tables (their
    #: statistics' string cut).
    write_settings: dict[str, dict[str, str]] = field(default_factory=dict)
    #: Locks this process holds (lock view -> the thread that took it).
    locks: dict[str, int] = field(default_factory=dict)


class RunContext:
    """The connection, the reach, the relation cache and the run's state, for services."""

    def __init__(self, adapter: SparkAdapter) -> None:
        self.adapter = adapter
        self.run = RunState()
        # The parallelism of a thrift server, asked on its first clustered write.
        self._cores: int | None = None

    @property
    def config(self) -> Any:
        return self.adapter.config

    @property
    def method(self) -> str:
        """The profile's ``method`` (session, thrift, ...)."""
        return str(self.adapter.config.credentials.method)

    def execute(self, sql: str, fetch: bool = False) -> Any:
        return self.adapter.execute(sql, fetch=fetch)

    def columns(self, relation: Any) -> dict[str, str]:
        """The relation's columns (name -> Spark type) as dbt reads them."""
        return {c.name: c.data_type for c in self.adapter.get_columns_in_relation(relation)}

    def cache_renamed(self, source: Any, target: Any) -> None:
        self.adapter.cache_renamed(source, target)

    def cache_dropped(self, relation: Any) -> None:
        self.adapter.cache_dropped(relation)

    def query(self, sql: str) -> tuple[list[str], list[tuple[Any, ...]]]:
        """A query's column names and rows as the connection returns them (no type
        guessing, unlike ``execute``)."""
        _, cursor = self.adapter.connections.add_query(sql, auto_begin=False)
        names = [str(d[0]) for d in cursor.description or []]
        return names, [tuple(row) for row in cursor.fetchall() or []]

    def fetch(self, sql: str) -> list[tuple[Any, ...]]:
        return self.query(sql)[1]

    def described(self, sql: str) -> dict[str, str]:
        """Column name -> Spark type of a ``DESCRIBE`` statement's column section."""

        return described(self.fetch(sql))

    def server_cores(self) -> int:
        """The parallelism a server's shuffles are sized to: its default parallelism, the
        N of a ``local[N]`` master, else a quarter of its shuffle partitions (asked once
        per dbt invocation)."""
        if self._cores is None:
            self._cores = self._ask_server_cores()
        return self._cores

    def _ask_server_cores(self) -> int:
        def setting(key: str) -> str:
            rows = self.fetch(f"set {key}")
            return str(rows[0][1]) if rows else ""

        local = re.fullmatch(r"local\[(\d+)(,\d+)?\]", setting("spark.master"))
        for value, share in ((setting("spark.default.parallelism"), 1),
                             (local.group(1) if local else "", 1),
                             (setting("spark.sql.shuffle.partitions"), PARTITIONS_PER_CORE)):
            if value.isdigit():
                return max(1, int(value) // share)
        return 1

    def reach(self) -> SparkReach:
        """How this profile reaches Spark."""

        return reach_of(self.method, self.query,
                        lambda sql: self.execute(sql), self.server_cores)

    def refuse_keys_in_python(self, reach: SparkReach, model: str, curve_method: str,
                              keyed: str, remedy: str = "") -> None:
        """Refuse, before anything is written, keys (``keyed``: how) that only Python
        computes where ``reach`` runs none: there every key is Spark SQL."""
        if reach.runs_python or curve_method == "boundary":
            return
        raise DbtRuntimeError(
            f"Model '{model}': {keyed}; `method: {self.method}` runs no "
            f"Python in Spark. Allowed there: 'boundary'{remedy}.")

    def table_properties(self, relation: Any) -> dict[str, str]:
        _, table = self.execute(f"show tblproperties {relation}", fetch=True)
        return {str(row[0]): str(row[1]) for row in table.rows}

    def has_table(self, relation: Any) -> bool:
        """Does the metastore hold ``relation`` (asked by SQL, any connection)?"""
        return bool(self.fetch(f"show tables in {relation.schema} like "
                               f"{sql_string(relation.identifier)}"))

    def execute_with(self, settings: dict[str, str], sql: str) -> Any:
        """Run ``sql`` with session ``settings``, restored afterwards."""

        return execute_with(self.fetch, lambda statement: self.execute(statement),
                            settings, sql)[0]

    def fixes_file_rows(self, relation: Any) -> bool:
        """Does the table carry rows per file as its own writer option (earlier builds of
        this plugin set one)? It then overrides every write's own cut."""
        _, table = self.execute(f"describe table extended {relation}", fetch=True)
        return any(str(row[0]) == "Storage Properties" and "maxRecordsPerFile=" in str(row[1])
                   for row in table.rows)

    def lap(self, relation: Any, step: str) -> None:
        """Charge the time since the last step of a build to ``step``."""
        timings = self.run.timings.get(str(relation).lower())
        if timings is not None:
            self.lap_into(timings, step)

    @staticmethod
    def lap_into(timings: dict[str, float], step: str) -> None:
        now = time.perf_counter()
        timings[step] = timings.get(step, 0.0) + now - timings["since"]
        timings["since"] = now

    def index_of(self, relation: Any) -> Any:
        return relation.incorporate(path={"identifier": self.index_name(relation)})

    def index_name(self, relation: Any) -> str:
        return f"{relation.identifier}{INDEX_SUFFIX}"

    def versions_of(self, relation: Any) -> Any:
        folders = self.reach().folders()
        return TableVersions(relation.schema, relation.identifier, self.fetch,
                             lambda sql: self.execute(sql), folders)

    def version_of(self, relation: Any, role: str) -> Any:
        return relation.incorporate(
            path={"identifier": version_names(relation.identifier.lower())[role]},
            type="table")
