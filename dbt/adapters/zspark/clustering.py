"""The clustered table build, Spark side: sample boundaries, register the key, write SQL.

The SQL it returns range-partitions rows on the layout's key into ``file_count`` Spark
partitions (one file each, per table partition) and sorts every partition by the key, so
both files and the row groups inside them stay narrow on every clustering column.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pandas as pd

from dbt.adapters.zspark import curves
from dbt.adapters.zspark.layouts import ColumnSpec
from dbt.adapters.zspark.planning import ClusteringPlan, normalize_type
from dbt.adapters.zspark.pruning import stat_column
from dbt.adapters.zspark.sqltext import quote
from dbt.adapters.zspark.udfs import register_key_udf, udf_name

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

KEY_COLUMN = "__zspark_key"
#: Rows sampled per boundary; the RangePartitioner in Spark samples about 20 per partition.
SAMPLE_ROWS_PER_BOUNDARY = 100
MIN_SAMPLE_ROWS = 100_000


@dataclass
class PreparedBuild:
    """What the materialization needs: the SELECT to write, and facts for the log."""

    select_sql: str
    file_count: int
    input_rows: int
    sample: pd.DataFrame = field(repr=False)


def model_schema(spark: SparkSession, sql: str) -> dict[str, str]:
    """Output columns of a model's SQL and their Spark types, without running it."""
    return {f.name: f.dataType.simpleString() for f in spark.sql(sql).schema.fields}


def key_input_sql(column_sql: str, spark_type: str) -> str:
    """What a column contributes to the key, in SQL: the value itself, but timestamps as
    microseconds since the epoch (bigint), so values outside the years 1677-2262, which
    pandas' nanosecond timestamps cannot hold, cluster like any other."""
    family = normalize_type(spark_type)
    if family == "timestamp":
        return f"unix_micros({column_sql})"
    if family == "timestamp_ntz":
        return (f"timestampdiff(MICROSECOND, timestamp_ntz'1970-01-01 00:00:00', "
                f"{column_sql})")
    return column_sql


def key_input_type(spark_type: str) -> str:
    """The Spark type of :func:`key_input_sql`'s value."""
    return "bigint" if normalize_type(spark_type) in ("timestamp", "timestamp_ntz") \
        else spark_type


def probe_bounds_sql(index_table: str, column: str, spark_type: str) -> str:
    """Per-file bounds of a clustering column in the form the build's sample has them."""
    low = key_input_sql(quote(stat_column(column, "min")), spark_type)
    high = key_input_sql(quote(stat_column(column, "max")), spark_type)
    return (f"select {low} as min, {high} as max from {index_table} "
            f"where row_group is null and row_count > 0")


def _sample(frame: DataFrame, plan: ClusteringPlan, rows: int, wanted: int) -> pd.DataFrame:
    fraction = 1.0 if rows <= wanted else wanted / rows
    picked = frame.selectExpr(*[
        f"{key_input_sql(quote(c), t)} as {quote(c)}"
        for c, t in zip(plan.columns, plan.column_types, strict=True)
    ])
    if fraction < 1.0:
        picked = picked.sample(withReplacement=False, fraction=fraction, seed=17)
    return picked.toPandas()


def prepare_build(spark: SparkSession, plan: ClusteringPlan, sql: str) -> PreparedBuild:
    """Sample the input, register the model's key UDF and return the clustered SELECT."""
    frame = spark.sql(sql)
    input_bytes = int(str(frame._jdf.queryExecution().optimizedPlan().stats().sizeInBytes()))
    file_count = plan.resolve_file_count(input_bytes)
    rows = frame.count()
    wanted = max(MIN_SAMPLE_ROWS, SAMPLE_ROWS_PER_BOUNDARY * plan.boundary_count)
    sample = _sample(frame, plan, rows, wanted)

    output_columns = ", ".join(quote(f.name) for f in frame.schema.fields)
    partitions = [quote(p) for p in plan.partition_by]
    if plan.layout.needs_key:
        specs = [
            ColumnSpec(name, key_input_type(spark_type),
                       curves.sample_boundaries(sample[name], plan.boundary_count)
                       if plan.curve_method == "boundary" else None)
            for name, spark_type in zip(plan.columns, plan.column_types, strict=True)
        ]
        function = plan.layout.key_function(specs, plan.curve_method, plan.boundary_count)
        name = udf_name(plan.model)
        register_key_udf(spark, name, function, plan.layout.key_type(plan.curve_method))
        inputs = [key_input_sql(quote(c), t)
                  for c, t in zip(plan.columns, plan.column_types, strict=True)]
        key_call = f"{name}({', '.join(inputs)})"
        order = [*partitions, quote(KEY_COLUMN)]
        inner = f"select *, {key_call} as {quote(KEY_COLUMN)} from (\n{sql}\n) zspark_source"
    else:
        order = [*partitions, *(quote(c) for c in plan.columns)]
        inner = f"select * from (\n{sql}\n) zspark_source"
    order_text = ", ".join(order)
    select_sql = (
        f"select {output_columns} from (\n"
        f"  select /*+ REPARTITION_BY_RANGE({file_count}, {order_text}) */ * from (\n{inner}\n"
        f"  ) zspark_keyed\n  sort by {order_text}\n) zspark_clustered"
    )
    return PreparedBuild(select_sql=select_sql, file_count=file_count, input_rows=rows,
                         sample=sample)


def spread_sql(sql: str, file_count: int) -> str:
    """An unclustered build cut into ``file_count`` files by round-robin."""
    return f"select /*+ REPARTITION({file_count}) */ * from (\n{sql}\n) zspark_source"


def config_values(config: Mapping[str, Any]) -> dict[str, Any]:
    """Plain dict of a Jinja config mapping (dbt hands over special mapping types)."""
    return {str(k): v for k, v in dict(config).items()}
