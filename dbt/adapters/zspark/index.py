"""The file-stats index of a table: built from Parquet footers in a Spark job.

``<table>__zindex`` holds one row per data file (``row_group`` NULL) and one per row group:
path, size, rows and, per indexed column, min, max, null count (and NaN count for floats).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from dbt.adapters.zspark.planning import normalize_type
from dbt.adapters.zspark.pruning import stat_column
from dbt.adapters.zspark.sqltext import quote
from dbt.adapters.zspark.stats import footer_rows, spark_cast, stats_for

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

INDEX_SUFFIX = "__zindex"
DEFAULT_INDEXED_COLUMNS = 32
INDEXABLE = ("tinyint", "smallint", "int", "bigint", "float", "double", "decimal", "date",
             "timestamp", "timestamp_ntz", "string", "boolean")


def index_columns(schema: dict[str, str], clustering: Sequence[str],
                  configured: Sequence[str] | None) -> list[str]:
    """Clustering columns first, then ``index_columns`` or the first 32 indexable columns."""
    indexable = [c for c, t in schema.items() if normalize_type(t) in INDEXABLE]
    by_lower = {c.lower(): c for c in indexable}
    chosen = [by_lower[c.lower()] for c in clustering if c.lower() in by_lower]
    extra = ([by_lower[c.lower()] for c in configured if c.lower() in by_lower]
             if configured is not None else indexable[:DEFAULT_INDEXED_COLUMNS])
    return list(dict.fromkeys(chosen + extra))


@dataclass
class IndexSummary:
    index_table: str
    files: int
    rows: int
    columns: list[str]


def build_index(spark: SparkSession, table: str, index_table: str,
                clustering: Sequence[str] = (),
                configured: Sequence[str] | None = None) -> IndexSummary:
    """Read every data file's footer in a Spark job and (re)write ``index_table``."""
    from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType

    frame = spark.table(table)
    schema = {f.name: f.dataType.simpleString() for f in frame.schema.fields}
    columns = index_columns(schema, clustering, configured)
    types = [schema[c] for c in columns]
    files = sorted(frame.inputFiles())

    fields = [StructField("file_path", StringType()), StructField("file_size", LongType()),
              StructField("row_group", IntegerType()), StructField("row_count", LongType())]
    casts = ["file_path", "file_size", "row_group", "row_count"]
    for column, spark_type in zip(columns, types, strict=True):
        for stat in stats_for(spark_type):
            name = stat_column(column, stat)
            if stat in ("min", "max"):
                fields.append(StructField(name, StringType()))
                casts.append(f"{spark_cast(quote(name), spark_type)} as {quote(name)}")
            else:
                fields.append(StructField(name, LongType()))
                casts.append(quote(name))

    sc = spark.sparkContext
    previous = sc.getLocalProperty("spark.job.description")
    sc.setJobDescription(f"zspark: reading {len(files)} Parquet footers of {table}")
    try:
        slices = max(1, min(len(files), sc.defaultParallelism * 4))
        rdd = sc.parallelize(files, slices).mapPartitions(
            lambda paths: footer_rows(paths, columns, types)
        )
        rows = spark.createDataFrame(rdd, StructType(fields)).selectExpr(*casts)
        rows.coalesce(1).write.mode("overwrite").format("parquet").saveAsTable(index_table)
    finally:
        sc.setJobDescription(previous)  # type: ignore[arg-type]
    totals = spark.sql(
        f"select count(*), coalesce(sum(row_count), 0) from {index_table} where row_group is null"
    ).first()
    assert totals is not None
    return IndexSummary(index_table, int(totals[0]), int(totals[1]), columns)


def point_depth(bounds: pd.DataFrame, probes: pd.Series) -> float:
    """Average number of files whose [min, max] holds a value drawn from the data.

    ``bounds`` has ``min`` and ``max`` columns, one row per file (NULL: the file cannot be
    ruled out); ``probes`` are sample values. Both should come from Spark's ``toPandas`` so
    they compare alike.
    """
    values = probes.dropna()
    if isinstance(values.dtype, np.dtype) and values.dtype.kind == "f":
        values = values[~np.isnan(values.to_numpy())]
    if values.empty or bounds.empty:
        return float(len(bounds))
    points = values.to_numpy(dtype=object)
    low = bounds["min"].to_numpy(dtype=object)
    high = bounds["max"].to_numpy(dtype=object)
    # A file without usable bounds holds every value: widen it to the probes' own range.
    unknown = pd.isna(low) | pd.isna(high)
    low = np.where(unknown, points.min(), low)
    high = np.where(unknown, points.max(), high)
    inside = (low[None, :] <= points[:, None]) & (points[:, None] <= high[None, :])
    return float(inside.sum(axis=1).mean())
