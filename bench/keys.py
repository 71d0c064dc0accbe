"""Keys per second per core: the curve keys as pandas UDFs (session mode) against the same
keys in Spark SQL alone (each layout's ``keyed_sql``, for servers without Python).

Seed 002's three clustering columns (strings with 250, 250 and 1000 distinct values),
boundaries from a 100k-row sample (``boundary_count`` 1000), on local Spark. Each path
computes every row's key and takes the maximum, after a plain pass over the same columns
(the input's own cost, reported beside them); the best of ``--repeat`` runs counts.

    python -m bench.keys                # 2 M rows
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import RESULTS, Progress
from bench.markdown import md_table

COLUMNS = {
    "s_city": "concat('CITY', lpad(cast(pmod(hash(id, 1), 250) as string), 4, '0'))",
    "c_city": "concat('CITY', lpad(cast(pmod(hash(id, 2), 250) as string), 4, '0'))",
    "p_brand": "concat('MFGR#', lpad(cast(pmod(hash(id, 3), 1000) as string), 6, '0'))",
}
LAYOUTS = ("linear_by", "zorder_by", "hilbert_by")
BOUNDARY_COUNT = 1000


def best_seconds(spark: Any, sql: str, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        spark.sql(sql).collect()
        times.append(time.perf_counter() - started)
    return min(times)


def measure(rows: int, repeat: int, log: Progress) -> dict[str, Any]:
    from pyspark.sql import SparkSession

    from dbt.adapters.zspark.connections import session_defaults
    from dbt.adapters.zspark.core import value_ranks
    from dbt.adapters.zspark.layouts import LAYOUTS as BY_CONFIG
    from dbt.adapters.zspark.layouts import ColumnSpec
    from dbt.adapters.zspark.reach.frames.udfs import register_key_udf

    # The UDFs' Python workers must run this interpreter (the venv), not `python3` on PATH.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.master("local[2]").config("spark.driver.memory", "4g")
    with tempfile.TemporaryDirectory() as root:
        for key, value in session_defaults(root).items():
            builder = builder.config(key, value)
        spark = builder.getOrCreate()
        cores = spark.sparkContext.defaultParallelism
        spark.range(rows).selectExpr(*(f"{sql} as {name}" for name, sql in COLUMNS.items())) \
            .write.parquet(f"{root}/input")
        spark.read.parquet(f"{root}/input").createOrReplaceTempView("key_input")
        log(f"{rows} rows of {', '.join(COLUMNS)} written; {cores} cores")
        sample: Any = spark.sql("select * from key_input").sample(
            fraction=min(1.0, 100_000 / rows), seed=17).toPandas()
        specs = [ColumnSpec(name, "string", value_ranks.sample_boundaries(sample[name],
                                                                          BOUNDARY_COUNT))
                 for name in COLUMNS]
        names = list(COLUMNS)
        plain = best_seconds(spark, "select max(concat(s_city, c_city, p_brand)) "
                                    "from key_input", repeat)
        results: dict[str, Any] = {"rows": rows, "cores": cores, "plain_seconds": plain,
                                   "layouts": {}}
        for layout in LAYOUTS:
            chosen = BY_CONFIG[layout]
            register_key_udf(spark, "bench_key", chosen.key_function(
                specs, "boundary", BOUNDARY_COUNT), "bigint")
            udf = best_seconds(spark, f"select max(bench_key({', '.join(names)})) "
                                      f"from key_input", repeat)
            keyed = chosen.keyed_sql(specs, names, BOUNDARY_COUNT, "select * from key_input",
                                     "sql_key")
            sql = best_seconds(spark, f"select max(sql_key) from ({keyed})", repeat)
            same = spark.sql(f"select count_if(bench_key({', '.join(names)}) != sql_key) "
                             f"from ({keyed})").collect()[0][0]
            results["layouts"][chosen.name] = {
                "udf_seconds": udf, "sql_seconds": sql, "mismatches": int(same),
                "udf_keys_per_core_second": rows / udf / cores,
                "sql_keys_per_core_second": rows / sql / cores}
            log(f"{chosen.name}: UDF {udf:.2f} s ({rows / udf / cores / 1e6:.2f} M keys/s/core), "
                f"SQL {sql:.2f} s ({rows / sql / cores / 1e6:.2f} M keys/s/core), plain pass "
                f"{plain:.2f} s, keys differing: {same}")
        spark.stop()
    return results


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", type=Path, default=RESULTS / "keys.json")
    args = parser.parse_args(argv)
    results = measure(args.rows, args.repeat, Progress())
    results["command"] = "python -m bench.keys " + " ".join(
        argv if argv is not None else sys.argv[1:])
    args.out.write_text(json.dumps(results, indent=1))


def keys_section(keys: dict[str, Any]) -> list[str]:
    """The "Curve keys: UDF and SQL" section from ``python -m bench.keys``'s JSON."""
    rows = [[layout, f"{r['udf_keys_per_core_second'] / 1e6:.3f}",
             f"{r['sql_keys_per_core_second'] / 1e6:.3f}",
             f"{r['udf_seconds']:.2f}", f"{r['sql_seconds']:.2f}", str(r["mismatches"])]
            for layout, r in keys["layouts"].items()]
    return ["## Curve keys: pandas UDFs and Spark SQL", "",
            f"Produced by `make bench-keys` (`{keys['command'].strip()}`): {keys['rows']:,} "
            f"rows of three string columns, boundaries from a 100k-row sample, on "
            f"{keys['cores']} cores; each path computes every row's key once (best of the "
            f"runs). A plain pass over the same columns takes {keys['plain_seconds']:.2f} s. "
            "Builds key rows in SQL (in a session, over a Thrift server and on a cluster); the "
            "UDFs hold the same keys for `curve_method='direct'` and for the sample. Both "
            "agree on every row (last column).", "",
            *md_table(["layout", "UDF M keys/s/core", "SQL M keys/s/core", "UDF s", "SQL s",
                     "keys differing"], rows), ""]


if __name__ == "__main__":
    main()
