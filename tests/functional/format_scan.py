"""Point queries on a Delta or Iceberg table read by a Spark of their own (a new JVM
with the format's jars, the metastore of a dbt project's session): the rows and the data
files Spark opened, from its scan metrics. Run as
``python -m tests.functional.format_scan <format> <session_dir> <queries as JSON>``;
prints per query [rows, files opened, the first row's values]."""

from __future__ import annotations

import json
import sys
from typing import Any

from pyspark.sql import SparkSession

from bench.measure import files_opened
from dbt.adapters.zspark.connections import with_session_defaults
from dbt.adapters.zspark.table_formats import with_table_format


def main(table_format: str, session_dir: str, queries: list[str]) -> list[list[Any]]:
    builder = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
    for key, value in with_session_defaults(with_table_format({}, table_format),
                                            session_dir).items():
        builder = builder.config(key, str(value))
    spark = builder.enableHiveSupport().getOrCreate()
    found = []
    for sql in queries:
        frame = spark.sql(sql)
        rows = frame.collect()
        first = [str(v) if v is not None else None for v in rows[0]] if rows else []
        found.append([len(rows), files_opened(frame), first])
    spark.stop()
    return found


if __name__ == "__main__":
    print("FORMAT_SCAN " + json.dumps(main(sys.argv[1], sys.argv[2], json.loads(sys.argv[3]))))
