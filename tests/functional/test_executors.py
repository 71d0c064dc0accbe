"""Executors without the plugin: Spark's Python workers that cannot import dbt still
compute curve keys (the direct method's UDF), because that code travels with the job; the
index is read by the driver through the session's file systems."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark

WITHOUT_PLUGIN = Path(__file__).parent / "no_plugin" / "python_without_plugin.py"

SCRIPT = textwrap.dedent("""
    import sys
    from pyspark.sql import SparkSession

    from dbt.adapters.zspark.reach.frames.clustering import model_schema
    from dbt.adapters.zspark.reach.session.reach import SessionReach
    from dbt.adapters.zspark.connections import session_defaults
    from dbt.adapters.zspark.reach.session.index_tables import build_index
    from dbt.adapters.zspark.layouts.planning import plan_clustering
    from dbt.adapters.zspark.reach.session import hadoop_files

    builder = SparkSession.builder.master("local[2]")
    for key, value in {**session_defaults(sys.argv[1]), "spark.driver.memory": "1g"}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    try:
        spark.sparkContext.parallelize([1]).map(
            lambda _: __import__("dbt.adapters.zspark.core.curves")).collect()
    except Exception as error:
        assert "No module named 'dbt" in str(error), error
    else:
        raise AssertionError("the workers could import dbt: the test proves nothing")

    sql = ("select id, concat('city', id % 13) as city, "
           "timestamp_seconds(id * 86400) as ts from range(600)")
    for layout in ("hilbert_by", "zorder_by", "linear_by"):
        config = {layout: ["city", "ts", "id"], "file_count": 6, "curve_method": "direct"}
        schema = model_schema(spark, sql)
        plan = plan_clustering("m", config, schema, "table")
        reach = SessionReach(spark, lambda q: (spark.sql(q).columns, spark.sql(q).collect()),
                             spark.sql)
        sampled = reach.sample(plan, sql, schema, None)
        prepared = reach.keyed(plan, sql, sampled, None,
                               plan.resolve_file_count(sampled.input_bytes), schema,
                               False, False)
        spark.sql("drop table if exists built")
        spark.conf.set("spark.sql.files.maxRecordsPerFile", prepared.file_rows or 0)
        spark.sql(f"create table built using parquet as {prepared.select_sql}")
        assert sorted(spark.table("built").collect()) == sorted(spark.sql(sql).collect())
        # The executors read and parse every footer.
        hadoop_files.DRIVER_READS_UP_TO = hadoop_files.DRIVER_PARSES_UP_TO = 0
        summary = build_index(spark, "built", "built__zindex", ["city", "ts", "id"])
        assert (summary.files, summary.rows) == (6, 600), (layout, summary)
        by_executors = sorted(spark.table("built__zindex").collect(), key=repr)
        hadoop_files.DRIVER_READS_UP_TO = 1 << 30  # the driver reads them
        build_index(spark, "built", "built__zindex", ["city", "ts", "id"])
        spark.catalog.refreshTable("built__zindex")
        assert sorted(spark.table("built__zindex").collect(), key=repr) == by_executors, layout
        widths = spark.sql("select max(id__max - id__min) from built__zindex "
                           "where row_group is null").first()[0]
        print(layout, "widest id range per file:", widths)
    print("executors without the plugin: ok")
""")


def test_keys_and_index_on_workers_that_cannot_import_dbt(tmp_path: Path) -> None:
    python = tmp_path / "python-without-plugin"
    python.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{WITHOUT_PLUGIN}" "$@"\n')
    python.chmod(0o755)
    env = {**os.environ, "PYSPARK_PYTHON": str(python), "SPARK_LOCAL_IP": "127.0.0.1"}
    result = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / "session")],
                            cwd=tmp_path, env=env, capture_output=True, text=True,
                            timeout=600, check=False)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-4000:]
    assert "executors without the plugin: ok" in result.stdout
