"""Table builds: config and format checks before anything is written, the clustered
SELECT of a build, the layout it stores, seeds.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Mapping
from dataclasses import fields
from typing import Any

import agate
from dbt.adapters.events.logging import AdapterLogger
from dbt.adapters.spark.impl import SparkConfig
from dbt.artifacts.resources import ModelConfig
from dbt_common.exceptions import DbtRuntimeError

from dbt.adapters.zspark.core.config_names import misnamed_configs
from dbt.adapters.zspark.core.seed_csv import SeedFile, agate_texts, agate_type, read_seed_csv
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
    unwritable_format_error,
)
from dbt.adapters.zspark.layouts import CONFIG_KEYS
from dbt.adapters.zspark.layouts.keyed_plan import spread_sql
from dbt.adapters.zspark.layouts.layout_state import (
    StoredLayout,
    StoredLayoutError,
)
from dbt.adapters.zspark.layouts.planning import ClusteringConfigError, plan_clustering
from dbt.adapters.zspark.reach.base import SparkReach
from dbt.adapters.zspark.services.context import RunContext
from dbt.adapters.zspark.services.plans import BuildPlan
from dbt.adapters.zspark.services.writes import KeyedWrites

logger = AdapterLogger("zspark")

#: The model configs of dbt and dbt-spark (their config dataclasses, with the fields'
#: aliases: ``post-hook``), never taken for a misspelt zspark config; with those that
#: dbt-spark's Python models read outside a dataclass (``python_submissions.py``), among
#: them ``cluster_id``, two edits from ``cluster_by``.
DBT_CONFIG_KEYS = frozenset(
    {name for config in (ModelConfig, SparkConfig) for field in fields(config)
     for name in (field.name, field.metadata.get("alias")) if name}
    | {"submission_method", "cluster_id", "job_cluster_config", "create_notebook", "timeout",
       "additional_libs"})


class SeedRead:
    """A seed read by zspark for the seed materialization: its rows, and the small agate
    tables dbt's own macros are handed (the table's DDL, ``dbt seed --show``)."""

    def __init__(self, file: SeedFile) -> None:
        self.file = file

    @property
    def rows(self) -> int:
        return self.file.rows

    def table_types(self) -> agate.Table:
        """An agate table of one row whose columns have the seed's types and decimal
        places: dbt-spark's ``create_csv_table`` makes the seed's table from it as from
        the whole seed (``convert_type`` reads only those)."""
        sample = ["0.1" if fractional else None for fractional in self.file.fractional]
        return agate.Table([sample], self.file.names, self._agate_types())

    def preview(self) -> agate.Table:
        """The seed's first rows, as dbt's reader's table holds them."""
        return agate.Table(self.file.head, self.file.names, self._agate_types())

    def _agate_types(self) -> list[Any]:
        return [agate_type(name) for name in self.file.types]


class TableBuilds:
    """Table builds: config and format checks before anything is written, the plan of a
    build (its clustered SELECT and the layout it stores), seeds."""

    def __init__(self, ctx: RunContext, writes: KeyedWrites) -> None:
        self.ctx = ctx
        self.writes = writes

    def load_seed(self, relation: Any, agate_table: Any) -> int | None:
        """Insert a seed's rows dbt read in one Spark write (``seeds.py``); the rows, or
        None over a server (dbt-spark's statements load it)."""
        rows = self.ctx.reach().load_seed(str(relation), agate_table.column_names,
                                          agate_texts(agate_table))
        if rows is None:
            return None
        logger.info(f"zspark: {relation}: {rows} seed rows inserted by one Spark write")
        return rows

    def read_seed(self, model: dict[str, Any]) -> SeedRead | None:
        """A seed's CSV read as dbt reads it, without agate's casts (``seed_csv.py``), for
        the session to load in one write; None over a server, or for a CSV dbt's own
        reader should read."""
        if not self.ctx.reach().loads_frames:
            return None
        config = model.get("config") or {}
        path = os.path.join(model["root_path"], model["original_file_path"])
        seed = read_seed_csv(path, config.get("delimiter") or ",",
                             list((config.get("column_types") or {}).keys()))
        return None if seed is None else SeedRead(seed)

    def load_seed_file(self, relation: Any, seed: SeedRead) -> int:
        """Insert a seed read by :meth:`read_seed` in one Spark write; its rows."""
        started = time.monotonic()
        rows = self.ctx.reach().load_seed(str(relation), seed.file.names, seed.file.texts)
        assert rows is not None  # read_seed reads a CSV only where the reach loads it
        logger.info(f"zspark: {relation}: {rows} seed rows inserted by one Spark write "
                    f"({time.monotonic() - started:.1f} s; the CSV read by zspark)")
        return rows

    def check_file_format(self, model: str, file_format: str, clustered: bool,
                          materialized: str) -> bool:
        """Refuse, before anything is written, a ``file_format`` this Spark cannot write or
        zspark cannot cluster. True when the format commits on its own (Delta, Iceberg,
        Hudi): dbt-spark's own build then replaces the table in one commit of the format,
        keeping its history, where a rename would leave its files behind."""

        if file_format.lower() in TABLE_FORMATS:  # Parquet and the rest need no extension
            # Spark answers SET for a static setting too, in a session and over thrift.
            value = self.ctx.setting("spark.sql.extensions")
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
                f"{', '.join(CONFIG_KEYS[:-1])} and {CONFIG_KEYS[-1]} the model builds "
                f"unclustered.")

    def check_config(self, model: str, config: dict[str, Any],
                     materialized: str) -> bool:
        """Check config values that need no schema; True when the model asks for clustering."""
        try:
            return plan_clustering(model, config, None, materialized) is not None
        except ClusteringConfigError as error:
            raise DbtRuntimeError(str(error)) from error

    def warn_config_names(self, model: str, config: Mapping[str, Any],
                          zspark_keys: Iterable[str]) -> list[str]:
        """Warn, once per run of a model, of each config it set (``config``: all of them)
        that looks like one of zspark's (``zspark_keys``) but is not, which nothing reads
        (``core/config_names.py``); the warnings."""
        warnings = [f"zspark: model '{model}': {misnamed.message}" for misnamed in
                    misnamed_configs(config, zspark_keys, CONFIG_KEYS, DBT_CONFIG_KEYS)]
        for warning in warnings:
            logger.warning(warning)
        return warnings

    def build_plan(self, model: str, relation: Any, config: dict[str, Any], code: str,
                   previous: Any, file_format: str, materialized: str,
                   language: str) -> BuildPlan:
        """The plan of a table build into ``relation``: every check, the clustered SELECT
        (``previous``: the table it replaces, if any), the table properties it stores.
        Everything here happens before the materialization writes anything."""
        if language != "sql":
            self.check_config(model, config, "python")
            return BuildPlan(relation, code, language, file_format,
                             want_index=bool(config.get("zspark_index")))
        clustered = self.check_config(model, config, materialized)
        want_index = clustered if config.get("zspark_index") is None \
            else bool(config["zspark_index"])
        if not clustered:
            file_count = config.get("file_count")
            sql = code if file_count is None else spread_sql(code, int(file_count))
            return BuildPlan(relation, sql, language, file_format, want_index)
        return self._clustered_plan(model, relation, config, code, previous, file_format,
                                    want_index)

    def _clustered_plan(self, model: str, relation: Any, config: dict[str, Any], sql: str,
                        previous: Any, file_format: str, want_index: bool) -> BuildPlan:
        """A clustered build: its input sampled and keyed; a Delta or Iceberg table
        (``file_format``) gets the table properties that keep statistics on its columns."""
        reach = self.ctx.reach()
        schema = reach.schema(sql)
        try:
            plan = plan_clustering(model, config, schema, "table")
        except ClusteringConfigError as error:
            raise DbtRuntimeError(str(error)) from error
        assert plan is not None
        self.ctx.refuse_keys_in_python(reach, model, plan.curve_method,
                                       f"config 'curve_method' is '{plan.curve_method}', "
                                       f"which computes keys in Python")
        last_rows = self._rows_last_built(previous)
        logger.debug(
            f"zspark: {model}: {plan.layout.name} layout on {', '.join(plan.columns)} "
            f"({plan.curve_method}, boundary_count={plan.boundary_count}); sampling input"
            + ("" if last_rows is None else f" ({last_rows} rows at its last build)")
            + _keys_where(reach, plan.curve_method)
        )
        # Two passes in a session (sample and count, then the write; a large scan's
        # first build counts first) or three over thrift (count, sample, write).
        # A layout chosen by cluster_by='auto' was scored on a sample of this input.
        sampled = self.ctx.run.auto_samples.pop((model, sql), None) \
            or reach.sample(plan, sql, schema, last_rows)
        written_as = format_table(file_format)
        prepared = reach.keyed(plan, sql, sampled, None,
                               plan.resolve_file_count(sampled.input_bytes), schema,
                               pieces=False,
                               file_per_partition=not written_as.cuts_files_by_rows)
        write = self.writes.keyed_write(plan, prepared, new_layout=True)
        assert prepared.layout is not None
        # The format's statistics on the clustering and indexed columns (Parquet's are
        # the index's: none). A partition column's value is in the table's metadata
        # (Delta refuses stats on one).
        partitions = {c.lower() for c in plan.partition_by}
        columns = [c for c in stats_columns(schema, plan.columns, config.get("index_columns"))
                   if c[0].lower() not in partitions]
        length = string_stats_length(longest_string(sampled.sample, plan.columns))
        write.settings = written_as.write_settings(length)
        return BuildPlan(relation, write.sql, "sql", file_format, want_index, write,
                         {**prepared.layout.to_properties(),
                          **written_as.stats_properties(columns, length)})

    def _rows_last_built(self, previous: Any) -> int | None:
        """Rows of the clustered table a build replaces, from its stored layout (None: no
        such table, not one a clustered build wrote, or properties it cannot read: a hint
        for the sample, never a reason to fail the build)."""
        if previous is None or previous.is_view:
            return None
        try:
            stored = StoredLayout.from_properties(self.ctx.table_properties(previous))
        except (StoredLayoutError, DbtRuntimeError):
            return None
        return None if stored is None else stored.rows


def _keys_where(reach: SparkReach, curve_method: str) -> str:
    """Where a server computes the keys, for the build's debug line (a session: nothing)."""
    if reach.reaches_jvm:
        return ""
    if not reach.runs_python:
        return " (keys in Spark SQL: no Python on the server)"
    return (" (keys in Spark SQL on the server)" if curve_method == "boundary"
            else " (keys by the model's Python UDF on the server)")
