"""The driver's share of a skip-aware scan at 10,000 to 1 M files, on synthetic statistics.

A `zspark_scan` plans in three steps on the driver: the index's file rows come back with
a flag saying whether the predicate rules each file out (``skippable_files_sql``), the
files ruled out go into the scan's SQL as one ``IN`` list (``scan_sql``), and Spark parses
and analyses that SQL. This benchmark writes a synthetic index (a point query on ``x``
matching about 9% of the files, as on a clustered table; optionally row-group rows beside
the file rows) and runs the three steps as the scan does, in a fresh process per size,
printing each step's seconds, the SQL's size and the peak memory of the Python process
and of its JVM.

    python -m bench.driver_scale                   # 10k, 100k, 1M files (1M: 10 M row groups)
    python -m bench.driver_scale --sizes 10000:0       # one size: files:row groups per file
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.common import REPO, RESULTS, PeakMemory, Progress, spark_session

#: Files whose scan SQL Spark is asked to parse (beyond it the SQL is only measured).
MAX_PARSED_FILES = 200_000
PREDICATE = "x = 500"


def measure(files: int, row_groups: int) -> dict[str, float | None]:
    """The three planning steps over a synthetic index of ``files`` files."""
    from dbt.adapters.zspark.skipping import pruning
    from dbt.adapters.zspark.skipping.scan import scan_sql, skippable_files_sql

    peak = PeakMemory(os.getpid())
    work = Path(tempfile.mkdtemp(prefix="zspark-driver-scale-"))
    spark = spark_session(work / "session", "zspark-driver-scale", metastore=False)
    index = work / "index"
    started = time.perf_counter()
    # File i: x in [m, m + 80] of 0..1000 (a point query matches ~9% of files), y alike;
    # row-group rows (row_group 0..g-1) beside each file's row, as the index keeps them.
    spark.range(files * (row_groups + 1)).selectExpr(
        f"cast(id % {files} as bigint) as f",
        f"if(id < {files}, cast(null as int), cast(id div {files} - 1 as int)) as row_group",
    ).selectExpr(
        "concat('s3a://warehouse/db.db/events/part-', lpad(cast(f as string), 7, '0'), "
        "'-c000.snappy.parquet') as file_path",
        "100000000 + f as file_size", "1767225600000 + f as file_mtime", "row_group",
        "cast(100000 as bigint) as row_count",
        "(f * 7919) % 920 as x__min", "(f * 7919) % 920 + 80 as x__max",
        "cast(0 as bigint) as x__nulls",
        "(f * 104729) % 920 as y__min", "(f * 104729) % 920 + 80 as y__max",
        "cast(0 as bigint) as y__nulls",
    ).write.parquet(str(index))
    written = time.perf_counter() - started
    table = f"parquet.`{index}`"
    types = pruning.index_column_types(
        [(f.name, f.dataType.simpleString()) for f in spark.read.parquet(str(index)).schema],
        {})

    started = time.perf_counter()
    may_match = pruning.may_match_sql(PREDICATE, types)
    translated = time.perf_counter() - started

    started = time.perf_counter()
    rows = spark.sql(skippable_files_sql(table, may_match)).collect()
    skipped = [(str(r[0]), int(r[1]), int(r[2])) for r in rows if r[3]]
    fetched = time.perf_counter() - started
    del rows

    started = time.perf_counter()
    sql = scan_sql(table, "row_count = 100000", skipped)
    built = time.perf_counter() - started

    parsed: float | None = None  # not asked of Spark
    if files <= MAX_PARSED_FILES:
        started = time.perf_counter()
        spark.sql(sql)  # parsed and analysed (Spark 4 analyses eagerly)
        parsed = time.perf_counter() - started
    spark.stop()
    peak.stop()
    return {"files": files, "row_groups_per_file": row_groups,
            "index_rows": files * (row_groups + 1), "skipped_files": len(skipped),
            "index_write_s": round(written, 2), "translate_s": round(translated, 4),
            "fetch_s": round(fetched, 2), "sql_build_s": round(built, 2),
            "sql_mb": round(len(sql) / 1e6, 1),
            "parse_analyse_s": None if parsed is None else round(parsed, 2),
            "python_peak_mb": round(peak.root_bytes / 2**20),
            "jvm_peak_mb": round(peak.jvm_bytes / 2**20)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", nargs="+", default=["10000:0", "100000:0", "1000000:10"],
                        help="files:row groups per file")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, default=RESULTS / "driver-scale.json")
    args = parser.parse_args(argv)
    if args.one:
        files, groups = (int(v) for v in args.one.split(":"))
        print("RESULT " + json.dumps(measure(files, groups)), flush=True)
        return
    log = Progress()
    results = []
    for size in args.sizes:
        log(f"{size}: a fresh process")
        done = subprocess.run([sys.executable, "-m", "bench.driver_scale", "--one", size],
                              cwd=REPO, capture_output=True, text=True, check=True)
        line = next(ln for ln in done.stdout.splitlines() if ln.startswith("RESULT "))
        results.append(json.loads(line.removeprefix("RESULT ")))
        log(json.dumps(results[-1]))
    args.out.write_text(json.dumps({"predicate": PREDICATE, "results": results}, indent=2)
                        + "\n")
    print(f"{'files':>9} {'index rows':>11} {'skipped':>9} {'fetch s':>8} {'SQL MB':>7} "
          f"{'build s':>8} {'parse s':>8} {'python MB':>10} {'JVM MB':>7}")
    for r in results:
        print(f"{r['files']:>9,} {r['index_rows']:>11,} {r['skipped_files']:>9,} "
              f"{r['fetch_s']:>8} {r['sql_mb']:>7} {r['sql_build_s']:>8} "
              f"{r['parse_analyse_s'] or '-':>8} {r['python_peak_mb']:>10} {r['jvm_peak_mb']:>7}")


if __name__ == "__main__":
    main()
