"""Model config -> a validated clustering plan, checked before anything is written.

Pure Python: it sees the model's name, its config values and the output schema of its SQL,
and either returns a :class:`ClusteringPlan` or raises :class:`ClusteringConfigError` whose
message names the model, the config and what is allowed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dbt.adapters.zspark.core.value_ranks import normalize_type
from dbt.adapters.zspark.layouts import CURVE_METHODS, LAYOUTS, Layout
from dbt.adapters.zspark.skipping.workload import (
    FROM_WORKLOAD,
    WorkloadError,
    declared_queries,
    workload_weights,
)

DEFAULT_BOUNDARY_COUNT = 1000
#: ``cluster_by``'s one value: the layout chosen from the workload (services/advice.py).
AUTO = "auto"
#: Set (by ``cluster_by='auto'``, never by a user) on an incremental run whose new layout
#: re-clusters the whole table: the config's layout replaces the stored one.
RELAYOUT_KEY = "zspark_auto_relayout"
CLUSTERED_MATERIALIZATIONS = ("table", "incremental")
DEFAULT_TARGET_FILE_SIZE_MB = 128
#: The layouts that spend their resolution by column weight.
WEIGHTED_LAYOUTS = tuple(key for key, layout in LAYOUTS.items() if layout.takes_weights)
#: The config entry (filled from the project's graph, not by users) holding the
#: predicates of the model's ``skip_coverage`` tests.
DECLARED_PREDICATES_KEY = "skip_coverage_predicates"

CLUSTERABLE_TYPES = (
    "tinyint", "smallint", "int", "bigint", "float", "double", "decimal",
    "date", "timestamp", "timestamp_ntz", "string", "boolean",
)
_ALLOWED_TYPES_TEXT = (
    "byte, short, int, long, float, double, decimal, date, timestamp, string, boolean"
)


class ClusteringConfigError(ValueError):
    """A model's clustering config cannot be used; the message says why and what is allowed."""

    def __init__(self, model: str, config: str, problem: str, allowed: str) -> None:
        super().__init__(f"Model '{model}': config '{config}' {problem}. Allowed: {allowed}.")
        self.model = model
        self.config = config




@dataclass(frozen=True)
class ClusteringPlan:
    model: str
    layout: Layout
    columns: tuple[str, ...]
    column_types: tuple[str, ...]
    curve_method: str
    boundary_count: int
    file_count: int | None
    target_file_size_mb: int
    partition_by: tuple[str, ...]
    #: Per clustering column, its share of the point queries the layout serves.
    weights: tuple[float, ...] = ()

    def resolve_file_count(self, input_bytes: int) -> int:
        """``file_count`` if set, else the input size over ``target_file_size_mb``."""
        if self.file_count is not None:
            return self.file_count
        return max(1, math.ceil(input_bytes / (self.target_file_size_mb * 1024 * 1024)))


def _as_columns(model: str, key: str, value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, Sequence) or not all(isinstance(v, str) for v in value):
        raise ClusteringConfigError(model, key, f"is {value!r}",
                                    "a column name or a list of column names")
    if not value:
        raise ClusteringConfigError(model, key, "is an empty list", "one or more column names")
    columns = tuple(v.strip() for v in value)
    duplicates = sorted({c for c in columns if [x.lower() for x in columns].count(c.lower()) > 1})
    if duplicates:
        raise ClusteringConfigError(model, key, f"names {', '.join(duplicates)} twice",
                                    "each column once")
    return columns


def _as_int(model: str, key: str, value: Any, minimum: int, allowed: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ClusteringConfigError(model, key, f"is {value!r}", allowed)
    return value


def auto_requested(model: str, config: Mapping[str, Any], materialized: str) -> bool:
    """Does the model ask zspark to choose its layout (``cluster_by='auto'``)? Refuses a
    value other than 'auto', a layout config beside it, and a model it cannot apply to."""
    value = config.get("cluster_by")
    if value is None:
        return False
    if not isinstance(value, str) or value.strip().lower() != AUTO:
        raise ClusteringConfigError(
            model, "cluster_by", f"is {value!r}",
            f"'{AUTO}' (zspark chooses the layout from the workload); to choose the columns "
            "yourself, a layout config: " + ", ".join(LAYOUTS))
    chosen = [key for key in LAYOUTS if config.get(key) not in (None, [], "")]
    if chosen:
        raise ClusteringConfigError(model, f"cluster_by and {chosen[0]}", "are both set",
                                    f"cluster_by='{AUTO}' or a layout config, not both")
    if materialized not in CLUSTERED_MATERIALIZATIONS:
        raise ClusteringConfigError(
            model, "cluster_by", f"is set on a model materialized as '{materialized}'",
            "clustering configs on SQL models materialized as 'table' or 'incremental'")
    return True


def plan_clustering(
    model: str,
    config: Mapping[str, Any],
    schema: Mapping[str, str] | None,
    materialized: str = "table",
) -> ClusteringPlan | None:
    """Validate the clustering configs of ``model``; ``None`` when it asks for no clustering.

    ``schema`` maps the model's output columns to Spark type strings; ``None`` skips the
    column checks (used when only the config values can be checked, e.g. for a view).
    """
    if auto_requested(model, config, materialized):
        # Resolved before planning (``zspark_model_config``): still here, nothing chose.
        raise ClusteringConfigError(model, "cluster_by", f"is '{AUTO}' where no layout was "
                                    "chosen", f"cluster_by='{AUTO}' on SQL models")
    chosen = [key for key in LAYOUTS if config.get(key) not in (None, [], "")]
    empty = [key for key in LAYOUTS if config.get(key) in ([], "")]
    if empty:
        raise ClusteringConfigError(model, empty[0], "is empty", "one or more column names")
    if len(chosen) > 1:
        raise ClusteringConfigError(
            model, " and ".join(chosen), "are both set",
            "one of " + ", ".join(LAYOUTS) + " per model",
        )
    file_count = config.get("file_count")
    if file_count is not None:
        file_count = _as_int(model, "file_count", file_count, 1, "a whole number >= 1")
    if not chosen:
        return None
    if materialized not in CLUSTERED_MATERIALIZATIONS:
        raise ClusteringConfigError(
            model, chosen[0], f"is set on a model materialized as '{materialized}'",
            "clustering configs on SQL models materialized as 'table' or 'incremental'",
        )
    key = chosen[0]
    layout = LAYOUTS[key]
    columns = _as_columns(model, key, config[key])

    boundary_count = config.get("boundary_count")
    boundary_count = DEFAULT_BOUNDARY_COUNT if boundary_count is None else _as_int(
        model, "boundary_count", boundary_count, 2, "a whole number >= 2")
    curve_method = config.get("curve_method") or "boundary"
    if curve_method not in CURVE_METHODS:
        raise ClusteringConfigError(model, "curve_method", f"is {curve_method!r}",
                                    " or ".join(repr(m) for m in CURVE_METHODS))
    target_mb = config.get("target_file_size_mb")
    target_mb = DEFAULT_TARGET_FILE_SIZE_MB if target_mb is None else _as_int(
        model, "target_file_size_mb", target_mb, 1, "a whole number of megabytes >= 1")

    partition_value = config.get("partition_by") or ()
    partition_by = (
        (partition_value,) if isinstance(partition_value, str) else tuple(partition_value)
    )

    column_types: tuple[str, ...] = ()
    if schema is not None:
        by_lower = {name.lower(): (name, spark_type) for name, spark_type in schema.items()}
        resolved = []
        for column in columns:
            if column.lower() not in by_lower:
                raise ClusteringConfigError(
                    model, key, f"names column '{column}', which the model does not return",
                    "columns of the model: " + ", ".join(schema),
                )
            name, spark_type = by_lower[column.lower()]
            family = normalize_type(spark_type)
            if family not in CLUSTERABLE_TYPES:
                raise ClusteringConfigError(
                    model, key, f"names column '{name}' of type {spark_type}",
                    f"columns of type {_ALLOWED_TYPES_TEXT}",
                )
            if name.lower() in {p.lower() for p in partition_by}:
                raise ClusteringConfigError(
                    model, key, f"names partition column '{name}'",
                    "columns other than partition_by columns (each partition is clustered "
                    "on its own)",
                )
            resolved.append((name, spark_type.lower()))
        columns = tuple(name for name, _ in resolved)
        column_types = tuple(spark_type for _, spark_type in resolved)
        for part in partition_by:
            if part.lower() not in by_lower:
                raise ClusteringConfigError(
                    model, "partition_by", f"names column '{part}', which the model does not "
                    "return", "columns of the model: " + ", ".join(schema),
                )
        partition_by = tuple(by_lower[part.lower()][0] for part in partition_by)

    if curve_method not in layout.curve_methods:
        raise ClusteringConfigError(
            model, key, f"is set with curve_method='{curve_method}'",
            f"{key} with curve_method {' or '.join(map(repr, layout.curve_methods))} (its "
            "ranges are cut among sampled boundaries)")
    weights = _weights(model, key, columns, config, curve_method)
    return ClusteringPlan(
        model=model, layout=layout, columns=columns, column_types=column_types,
        curve_method=curve_method, boundary_count=boundary_count, file_count=file_count,
        target_file_size_mb=target_mb, partition_by=partition_by, weights=weights,
    )


def _weights(model: str, key: str, columns: Sequence[str], config: Mapping[str, Any],
             curve_method: str) -> tuple[float, ...]:
    """Per clustering column, its weight: ``cluster_weights`` ({column: weight}; unnamed
    columns weigh 0), or from the declared workload (``cluster_weights: workload``, or a
    ``workload`` config); without either every column weighs 1."""
    value, workload = config.get("cluster_weights"), config.get("workload")
    if value is None and workload is None:
        return tuple(1.0 for _ in columns)
    asked = "cluster_weights" if value is not None else "workload"
    if key not in WEIGHTED_LAYOUTS or curve_method != "boundary":
        how = f"with {key}" + (f" and curve_method='{curve_method}'"
                               if key in WEIGHTED_LAYOUTS else "")
        raise ClusteringConfigError(
            model, asked, f"is set {how}",
            f"{asked} with {' or '.join(WEIGHTED_LAYOUTS)} and curve_method 'boundary' "
            "(Hilbert and linear keys weigh every column the same)")
    if value is None or value == FROM_WORKLOAD:
        try:
            return workload_weights(columns, declared_queries(
                workload, config.get(DECLARED_PREDICATES_KEY) or ()))
        except WorkloadError as error:
            raise ClusteringConfigError(model, error.config, error.problem,
                                        error.allowed) from None
    allowed = (f"'{FROM_WORKLOAD}', or a mapping of clustering columns to weights >= 0, at "
               "least one above 0")
    if workload is not None:
        raise ClusteringConfigError(model, "cluster_weights", "is a mapping and 'workload' is "
                                    "set too", f"cluster_weights: '{FROM_WORKLOAD}' to weigh "
                                    "columns by the workload, or no workload config")
    if not isinstance(value, Mapping):
        raise ClusteringConfigError(model, "cluster_weights", f"is {value!r}", allowed)
    by_lower = {c.lower(): c for c in columns}
    weights = dict.fromkeys(columns, 0.0)
    for name, weight in value.items():
        if str(name).lower() not in by_lower:
            raise ClusteringConfigError(
                model, "cluster_weights", f"names column '{name}', which {key} does not",
                "columns of " + key + ": " + ", ".join(columns))
        if isinstance(weight, bool) or not isinstance(weight, int | float) or weight < 0:
            raise ClusteringConfigError(model, "cluster_weights",
                                        f"gives '{name}' the weight {weight!r}", allowed)
        weights[by_lower[str(name).lower()]] = float(weight)
    if not any(weights.values()):
        raise ClusteringConfigError(model, "cluster_weights", "weighs every column 0", allowed)
    return tuple(weights[c] for c in columns)
