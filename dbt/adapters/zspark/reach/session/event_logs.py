"""Spark's event logs read by the session's executors, through Hadoop
(``advice/event_logs.py`` decodes them): only each distinct scan's filters and counts
reach the driver."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import TYPE_CHECKING

import pandas as pd

from dbt.adapters.zspark.advice.event_logs import SCAN_FIELDS, scan_batches
from dbt.adapters.zspark.reach.frames.clustering import as_pandas

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def event_log_scans(spark: SparkSession, folders: Sequence[str],
                    tables: Sequence[str]) -> pd.DataFrame:
    """Scans of ``tables`` in the logs under ``folders``: per table and pushed filters,
    the queries that scanned it so, the logs they are in, and when the first and the last
    of them started (epoch milliseconds)."""
    from pyspark.sql import functions as sf

    from dbt.adapters.zspark.reach.executor_code import ship_with_jobs

    ship_with_jobs()
    jvm = spark._jvm
    assert jvm is not None
    hadoop = spark._jsc.hadoopConfiguration()  # type: ignore[union-attr]

    def exists(folder: str) -> bool:
        path = jvm.org.apache.hadoop.fs.Path(folder)
        return bool(path.getFileSystem(hadoop).exists(path))

    # A folder not made yet holds no history yet.
    folders = [f for f in folders if exists(f)]
    if not folders:
        return pd.DataFrame(columns=["table_name", "pushed_filters", "queries", "logs",
                                     "first_ms", "last_ms"])
    schema = ", ".join(f"{name} string" for name, _ in SCAN_FIELDS)
    logs = (spark.read.format("binaryFile").option("recursiveFileLookup", "true")
            .load(list(folders)).select("path", "content"))
    scans = logs.mapInArrow(functools.partial(scan_batches, tables=frozenset(tables)), schema)
    return as_pandas(scans.groupBy("table_name", "pushed_filters").agg(
        sf.count(sf.lit(1)).alias("queries"), sf.count_distinct("log_path").alias("logs"),
        # try_cast: an unreadable log's row, or an event without a time, has none.
        sf.min(sf.expr("try_cast(started_ms as bigint)")).alias("first_ms"),
        sf.max(sf.expr("try_cast(started_ms as bigint)")).alias("last_ms")))
