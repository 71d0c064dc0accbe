"""ZSparkAdapter: dbt-spark plus clustered builds, a file-stats index and skip-aware scans.

Jinja stays thin: each ``@available`` method below validates its input in Python and
hands back plain values or SQL text.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dbt.adapters.base import available
from dbt.adapters.events.logging import AdapterLogger
from dbt.adapters.spark.connections import SparkConnectionMethod
from dbt.adapters.spark.impl import SparkAdapter, SparkConfig
from dbt_common.exceptions import DbtRuntimeError

from dbt.adapters.zspark.connections import ZSparkConnectionManager
from dbt.adapters.zspark.planning import ClusteringConfigError, plan_clustering
from dbt.adapters.zspark.scan import scan_sql, skippable_files_sql
from dbt.adapters.zspark.sqltext import quote, sql_string

logger = AdapterLogger("zspark")


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


class ZSparkAdapter(SparkAdapter):
    ConnectionManager = ZSparkConnectionManager  # type: ignore[assignment]
    AdapterSpecificConfigs = ZSparkConfig  # type: ignore[assignment]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Boundary samples of this run's clustered builds, reused as probes for the log.
        self._samples: dict[str, Any] = {}

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

        from dbt.adapters.zspark.clustering import model_schema, prepare_build

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
        prepared = prepare_build(spark, plan, sql)
        self._samples[str(relation).lower()] = (plan.columns, prepared.sample)
        logger.info(
            f"zspark: {model}: writing {prepared.input_rows} rows into "
            f"{prepared.file_count} files"
        )
        return prepared.select_sql

    # -- index --------------------------------------------------------------------------
    @available
    def zspark_index_name(self, relation: Any) -> str:
        from dbt.adapters.zspark.index import INDEX_SUFFIX

        return f"{relation.identifier}{INDEX_SUFFIX}"

    @available
    def zspark_build_index(self, relation: Any, clustering: list[str] | None = None,
                           configured: list[str] | None = None) -> dict[str, Any]:
        """Build ``<table>__zindex`` from the table's Parquet footers and log the layout."""
        from dbt.adapters.zspark.index import build_index, point_depth
        from dbt.adapters.zspark.pruning import stat_column

        spark = self._spark(relation.identifier, "the file-stats index")
        index = relation.incorporate(path={"identifier": self.zspark_index_name(relation)})
        table = str(relation)
        summary = build_index(spark, table, str(index), clustering or (), configured)
        message = (
            f"zspark: {relation.identifier}: {summary.files} files, {summary.rows} rows, "
            f"{len(summary.columns)} columns indexed in {index.identifier}"
        )
        sample = self._samples.pop(table.lower(), None)
        if sample is not None and summary.files:
            columns, probes = sample
            depths = []
            for column in columns:
                bounds = spark.sql(
                    f"select {quote(stat_column(column, 'min'))} as min, "
                    f"{quote(stat_column(column, 'max'))} as max "
                    f"from {index} where row_group is null and row_count > 0"
                ).toPandas()
                depth = point_depth(bounds, probes[column].head(1000))
                depths.append(f"{column} {depth:.1f} ({1 - depth / summary.files:.1%} skipped)")
            message += "; files per point value: " + ", ".join(depths)
        logger.info(message)
        return {"files": summary.files, "rows": summary.rows, "columns": summary.columns}

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
    def zspark_may_match_sql(self, predicate: str, index_columns: list[Any]) -> str:
        """SQL over the index that is TRUE for every file that may hold a matching row."""
        from dbt.adapters.zspark import pruning

        types: dict[str, str] = {}
        for column in index_columns:
            name, _, stat = column.name.lower().rpartition("__")
            if stat == "min" and name:
                types[name] = column.data_type
        try:
            return pruning.may_match_sql(predicate, types)
        except pruning.PredicateError as error:
            raise DbtRuntimeError(str(error)) from error

    def _index_relation(self, relation: Any) -> Any:
        return relation.incorporate(path={"identifier": self.zspark_index_name(relation)})

    def _skipped_files(self, relation: Any, predicate: str) -> tuple[int, list[tuple[str, int]]]:
        """(indexed files, files the predicate provably cannot match) from the index."""
        index = self._index_relation(relation)
        columns = self.get_columns_in_relation(index)
        if not columns:
            raise LookupError(f"no index table {index}")
        may_match = self.zspark_may_match_sql(predicate, columns)
        _, table = self.execute(skippable_files_sql(str(index), may_match), fetch=True)
        skipped = [(str(row[0]), int(row[1])) for row in table.rows if row[2]]
        return len(table.rows), skipped

    @available
    def zspark_scan_sql(self, relation: Any, predicate: str) -> str:
        """A parenthesised subquery reading only the files of ``relation`` that may match.

        Files are excluded by (path, size), so files added or rewritten since the index was
        built are always read, and indexed files that are gone simply match nothing.
        """
        self.zspark_check_predicate(predicate)
        try:
            _, skipped = self._skipped_files(relation, predicate)
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
        rows = []
        for predicate in predicates:
            self.zspark_check_predicate(predicate)
            try:
                files, skipped = self._skipped_files(relation, predicate)
            except LookupError as error:
                raise DbtRuntimeError(
                    f"skip_coverage on {relation}: {error}; build the table with a clustering "
                    f"config or run zspark_build_index first"
                ) from error
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
