"""A first build's sample pass, before and after it counted its input first, side by side.

A first build knows no row count. Its sample is the 100,000 rows of smallest random draw:
a top-k, which sends every task's own 100,000 smallest draws to one place to be merged.
Counted first, the sample's top-k drops the rows drawn above four times the sample's
share (``keyed_plan.draw_cutoff``), and each task sends about its share.

- ``--reach thrift``: one Thrift server (driver memory 2g, Spark's default 1 GiB bound on
  a collected result). A Thrift server collects a result as ``collect`` does: the tasks'
  top-k go to its driver. *One top-k query* is what a server's build ran before; *the
  count, then a cut-off top-k* is ``sql_build.sample_input_sql`` now (its seconds count
  the size estimate too). The input: ``--rows`` rows of the scale bar's clustering
  columns read by each of ``--tasks`` tasks (``range`` split so).
- ``--reach session``: an embedded session (``local[2]``) and a Parquet table of
  ``--rows`` rows written in ``--files`` files, with a 36-character text column beside
  the clustering columns so that it plans above eight 128 MiB splits. *One job* is the
  sample and count observed together, as before; *the count, then a cut-off top-k* is
  ``clustering.sample_input`` (``PlannedInput.counts_first``). The merge runs in one
  task there, not on the driver. Each way also with the input's tasks merged into the
  session's cores before the top-k (``FrameReach.sample_tasks``), as a local session
  samples now: a join's or an aggregation's first build the one job, a large scan's
  counted first.

Both ways give the same rows, or the first fails.

    python -m bench.first_sample --reach thrift --rows 20000000 --tasks 40 200
    python -m bench.first_sample --reach session --rows 30000000 --files 200
    python -m bench.first_sample --reach session --rows 30000000 --files 200 --split-mb 8
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import RESULTS, Progress, spark_session

TYPES = {"city": "int", "product": "int", "day": "date"}
COLUMNS = ("cast(pmod(hash(id, 1), 250) as int) as city",
           "cast(pmod(hash(id, 2), 1000) as int) as product",
           "date_add(date'2024-01-01', cast(pmod(hash(id, 3), 730) as int)) as day")


def _plan() -> Any:
    from dbt.adapters.zspark.layouts.planning import plan_clustering

    plan = plan_clustering("sample", {"hilbert_by": list(TYPES)}, TYPES, "table")
    assert plan is not None
    return plan


def _rows(frame: Any) -> list[tuple[str, ...]]:
    return sorted(tuple(r) for r in frame[list(TYPES)].astype(str).to_numpy().tolist())


def thrift_runs(args: argparse.Namespace, progress: Progress) -> list[dict[str, Any]]:
    from pyhive import hive

    from dbt.adapters.zspark.layouts.keyed_plan import sample_size
    from dbt.adapters.zspark.reach.server.sql_build import sample_input_sql, sample_sql
    from tests.harness.servers import own_metastore, thrift_server

    plan = _plan()
    wanted = sample_size(plan)
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}
    home = Path(tempfile.mkdtemp(prefix="zspark-first-sample-"))
    results: list[dict[str, Any]] = []
    progress("starting a Thrift server (driver memory 2g, Spark's default result bound 1g)")
    with thrift_server(home, own_metastore(home), env, driver_memory="2g") as port:
        connection = hive.connect(host="127.0.0.1", port=port, username="dbt")

        def fetch(sql: str) -> list[tuple[Any, ...]]:
            cursor = connection.cursor()
            cursor.execute(sql)
            return [tuple(r) for r in cursor.fetchall()] if cursor.description else []

        fetch("select count(distinct id % 1000) from range(0, 10000000, 1, 8)")  # warm-up
        for tasks in args.tasks:
            sql = f"select {', '.join(COLUMNS)} from range(0, {args.rows}, 1, {tasks})"
            started = time.perf_counter()
            try:
                top_k = sorted(tuple(map(str, r)) for r in fetch(sample_sql(sql, plan, wanted)))
                outcome = f"{len(top_k):,} rows"
            except Exception as error:  # the driver's bound on a result, as a user meets it
                text = " ".join(str(error).split())
                bound = re.search(r"Total size .*?maxResultSize \([^)]*\)", text)
                top_k, outcome = [], "failed: " + (bound.group(0) if bound else text[:160])
            results.append({"reach": "thrift", "rows": args.rows, "tasks": tasks,
                            "way": "one top-k query",
                            "seconds": round(time.perf_counter() - started, 1),
                            "outcome": outcome})
            progress(json.dumps(results[-1]))
            started = time.perf_counter()
            sampled = sample_input_sql(fetch, plan, sql, TYPES)
            seconds = time.perf_counter() - started
            assert sampled.rows == args.rows
            assert not top_k or _rows(sampled.sample) == top_k, "the samples differ"
            results.append({"reach": "thrift", "rows": args.rows, "tasks": tasks,
                            "way": "the count, then a cut-off top-k",
                            "seconds": round(seconds, 1),
                            "outcome": f"{len(sampled.sample):,} rows"})
            progress(json.dumps(results[-1]))
    return results


def session_runs(args: argparse.Namespace, progress: Progress) -> list[dict[str, Any]]:
    from dbt.adapters.zspark.layouts import keyed_plan
    from dbt.adapters.zspark.reach.frames.clustering import sample_input
    from dbt.adapters.zspark.reach.session.reach import SessionReach

    folder = Path(tempfile.mkdtemp(prefix="zspark-first-sample-"))
    spark = spark_session(folder, "zspark-first-sample", metastore=False)
    spark.sparkContext.setLogLevel("ERROR")
    source = folder / "source"
    progress(f"writing {args.rows:,} rows in {args.files} Parquet files")
    (spark.range(0, args.rows, 1, args.files)
     .selectExpr(*COLUMNS, "uuid() as pad").write.parquet(str(source)))
    sql = f"select * from parquet.`{source.as_uri()}`"
    if args.split_mb:  # the table read by more tasks, as a join's shuffle would give
        spark.conf.set("spark.sql.files.maxPartitionBytes", f"{args.split_mb}m")
    reach = SessionReach(spark, lambda s: ([], []), lambda s: None)
    plan = _plan()
    found = reach.planned_input(spark.sql(sql), sql, keyed_plan.sample_size(plan))
    tasks = spark.sql(sql).rdd.getNumPartitions()
    progress(f"planned {found.size_bytes / 2**30:.2f} GiB, read by {tasks} tasks, "
             f"counted first: {found.counts_first()}")
    assert found.counts_first(), "the table plans too small to be counted first"
    one_job = keyed_plan.PlannedInput(found.size_bytes, found.known_small, scans_only=False)
    results: list[dict[str, Any]] = []
    samples: dict[str, list[tuple[str, ...]]] = {}
    cores = reach.sample_tasks()
    ways = [(f"{way}{merged}", told, merge)
            for way, told in (("one job", one_job), ("the count, then a cut-off top-k", found))
            for merged, merge in (("", None), (f", merged into {cores} tasks", cores))]
    for repeat in range(args.repeats):
        for way, told, merge in ways:
            started = time.perf_counter()
            sampled = sample_input(spark, plan, sql, lambda *_, told=told: told,
                                   merge_tasks=merge)
            seconds = time.perf_counter() - started
            assert sampled.rows == args.rows
            samples[way] = _rows(sampled.sample)
            if repeat == args.repeats - 1:
                results.append({"reach": "session", "rows": args.rows, "tasks": tasks,
                                "way": way, "seconds": round(seconds, 1),
                                "outcome": f"{len(sampled.sample):,} rows"})
                progress(json.dumps(results[-1]))
    assert len(set(map(tuple, samples.values()))) == 1, "the samples differ"
    spark.stop()
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reach", choices=("thrift", "session"), default="thrift")
    parser.add_argument("--rows", type=int, default=20_000_000)
    parser.add_argument("--tasks", type=int, nargs="+", default=[40, 200])
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--split-mb", type=int, default=0,
                        help="session: Spark's largest split of a file read (default 128)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    progress = Progress()
    runs = thrift_runs if args.reach == "thrift" else session_runs
    results = runs(args, progress)
    out = args.out or RESULTS / f"first-sample-{args.reach}.json"
    out.write_text(json.dumps({"runs": results}, indent=1))
    print("| reach | rows | tasks | way | s | result |")
    print("|---|--:|--:|---|--:|---|")
    for r in results:
        print(f"| {r['reach']} | {r['rows']:,} | {r['tasks']:,} | {r['way']} | {r['seconds']} "
              f"| {r['outcome']} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
