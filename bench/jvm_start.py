"""An embedded session's start and first statements, without zspark's class archive,
while its JVM records one, and mapping it (``reach/session/class_archive.py``).

Each run is a process of its own, as each `dbt` command is: it opens the session with
the profile's defaults, writes and reads a small Parquet table, and lists a Hive
database; the same Java options in every run but the archive's (the first opts out with
``-Xshare:auto``), and a class-archive cache of the benchmark's own, empty at the start.

    python -m bench.jvm_start            # bench/results/jvm-start.json
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

from bench.common import REPO, RESULTS

OUT = RESULTS / "jvm-start.json"
#: The driver options every run shares (a profile's own: zspark's defaults keep them).
OPTIONS = "-XX:+UseParallelGC -XX:-DontCompileHugeMethods"
RUNS = (("no archive (-Xshare:auto)", " -Xshare:auto"), ("recording the archive", ""),
        ("mapping it", ""), ("mapping it again", ""))


def session_run(root: str, extra: str) -> None:
    """One run: the session's start, then its first statements, timed."""
    started = time.perf_counter()
    from pyspark.sql import SparkSession

    from dbt.adapters.zspark.connections import DRIVER_OPTIONS, with_session_defaults

    options = f"-Dderby.system.home={root} {OPTIONS}{extra}"
    builder = SparkSession.builder.master("local[2]").enableHiveSupport()
    for key, value in with_session_defaults({DRIVER_OPTIONS: options}, root).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    opened = time.perf_counter()
    table = str(Path(root) / "events")
    spark.range(1000).selectExpr("id", "id % 7 as a").write.mode("overwrite").parquet(table)
    assert spark.read.parquet(table).where("a = 3").count() == 143
    spark.sql("create database if not exists zs_start")
    spark.sql("show tables in zs_start").collect()
    done = time.perf_counter()
    print("JVM_START " + json.dumps({"session_s": round(opened - started, 1),
                                     "statements_s": round(done - opened, 1),
                                     "total_s": round(done - started, 1)}))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", nargs=2, metavar=("ROOT", "EXTRA"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.run:
        session_run(args.run[0], args.run[1])
        return 0
    results = []
    with tempfile.TemporaryDirectory(prefix="zspark-jvm-start-") as work:
        env = {**os.environ, "XDG_CACHE_HOME": str(Path(work) / "cache")}
        env.pop("JAVA_TOOL_OPTIONS", None)  # the JVM as a user's dbt starts it
        for i, (label, extra) in enumerate(RUNS):
            print(f"[{i + 1}/{len(RUNS)}] {label} ...", flush=True)
            done = subprocess.run(
                [sys.executable, "-m", "bench.jvm_start", "--run", str(Path(work) / "s"),
                 extra], capture_output=True, text=True, cwd=REPO, env=env, check=True)
            line = next(x for x in done.stdout.splitlines() if x.startswith("JVM_START "))
            results.append({"run": label, **json.loads(line.removeprefix("JVM_START "))})
            print(f"    {results[-1]}", flush=True)
    print(f"\n{'run':28} {'session':>8} {'statements':>11} {'total':>7}")
    for row in results:
        print(f"{row['run']:28} {row['session_s']:7.1f}s {row['statements_s']:10.1f}s "
              f"{row['total_s']:6.1f}s")
    ratio = results[0]["total_s"] / results[2]["total_s"]
    print(f"\nmapping the archive: {ratio:.2f}x faster than no archive")
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({"runs": results, "speedup": round(ratio, 2),
                                   "cores": os.cpu_count()}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
