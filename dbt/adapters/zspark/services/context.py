"""The one context every service of the adapter is given.

A service (``builds.py``, ``increments.py``, ...) reaches dbt through it alone: the
connection (queries and statements, in the order they run), how this profile reaches
Spark (``reach/``), dbt's relation cache, a table's properties and this run's state.
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from dbt.adapters.events.logging import AdapterLogger
from dbt_common.exceptions import DbtRuntimeError

from dbt.adapters.zspark.core.generated_code import (
    COMPILE_HUGE_METHODS,
    HOTSPOT_HUGE_METHOD_BYTES,
    JVM_SETTINGS,
    keyed_code_settings,
)
from dbt.adapters.zspark.core.partitioning import PARTITIONS_PER_CORE
from dbt.adapters.zspark.core.sql_text import sql_string
from dbt.adapters.zspark.reach.base import described, execute_with, setting_value
from dbt.adapters.zspark.reach.choice import reach_of
from dbt.adapters.zspark.skipping.index import INDEX_SUFFIX
from dbt.adapters.zspark.versions.table_versions import TableVersions, version_names

logger = AdapterLogger("zspark")

if TYPE_CHECKING:
    from dbt.adapters.spark.impl import SparkAdapter

    from dbt.adapters.zspark.reach.base import SparkReach


@dataclass
class RunState:
    """What this process holds across the models of a run (the plans of one model's
    steps travel in plan objects, ``plans.py``)."""

    #: Locks this process holds (lock view -> the thread that took it).
    locks: dict[str, int] = field(default_factory=dict)
    #: ``cluster_by='auto'``: per model and SQL, the configs chosen (asked by every step).
    auto_configs: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    #: ... and the sample the choice was scored on, which the build then keys by.
    auto_samples: dict[tuple[str, str], Any] = field(default_factory=dict)


class RunContext:
    """The connection, the reach, the relation cache and the run's state, for services."""

    def __init__(self, adapter: SparkAdapter) -> None:
        self.adapter = adapter
        self.run = RunState()
        # The parallelism of a thrift server, asked on its first clustered write.
        self._cores: int | None = None
        # The settings of a keyed write's statement, asked on the first one.
        self._keyed_code: dict[str, str] | None = None

    @property
    def config(self) -> Any:
        return self.adapter.config

    @property
    def method(self) -> str:
        """The profile's ``method`` (session, thrift, ...)."""
        return str(self.adapter.config.credentials.method)

    def cleaning_up(self) -> contextlib.AbstractContextManager[None]:
        """Statements releasing what a model holds, sent even once dbt cancelled it."""
        # zspark's connection manager; another (a unit test's) refuses nothing.
        cleaning_up = getattr(self.adapter.connections, "cleaning_up", contextlib.nullcontext)
        return cast(contextlib.AbstractContextManager[None], cleaning_up())

    def dataframe_session(self) -> Any:
        """The Spark session whose DataFrames the connection reaches (None over thrift)."""
        # zspark's connection manager; another (a unit test's) has none.
        frames = getattr(self.adapter.connections, "dataframe_session", lambda: None)
        return frames()

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
        setting = self.setting
        local = re.fullmatch(r"local\[(\d+)(,\d+)?\]", setting("spark.master"))
        for value, share in ((setting("spark.default.parallelism"), 1),
                             (local.group(1) if local else "", 1),
                             (setting("spark.sql.shuffle.partitions"), PARTITIONS_PER_CORE)):
            if value.isdigit():
                return max(1, int(value) // share)
        return 1

    def setting(self, key: str) -> str:
        """A Spark setting's value as ``SET`` answers it (``<undefined>`` when unset)."""
        return setting_value(self.fetch, key) or ""

    def keyed_code_settings(self) -> dict[str, str]:
        """The settings a keyed write's statement runs with so that the JVMs computing
        its keys compile its generated code (``core/generated_code.py``; asked once per
        dbt invocation)."""
        if self._keyed_code is None:
            self._keyed_code = keyed_code_settings(*(self.setting(key)
                                                     for key in JVM_SETTINGS))
            if self._keyed_code:
                logger.debug(f"zspark: this Spark's JVMs leave methods past "
                             f"{HOTSPOT_HUGE_METHOD_BYTES} bytes to their interpreter (no "
                             f"{COMPILE_HUGE_METHODS}): keyed writes run with "
                             f"{', '.join(f'{k}={v}' for k, v in self._keyed_code.items())}")
        return dict(self._keyed_code)

    def reach(self) -> SparkReach:
        """How this profile reaches Spark."""

        return reach_of(self.method, self.query,
                        lambda sql: self.execute(sql), self.server_cores,
                        self.dataframe_session)

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
