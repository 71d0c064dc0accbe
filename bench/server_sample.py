"""A first build's sample over a Thrift server, as the tasks reading its input grow: one
top-k query (what a server's build ran before), beside the count first and a sample
query that drops the rows drawn above four times the sample's share before its top-k
(``sql_build.sample_input_sql``), side by side on one server.

A Thrift server collects a query's result as Spark's ``collect`` does: a top-k's every
task sends its own smallest draws, up to the 100,000 wanted, to the server's driver,
which merges them there. The input: ``--rows`` rows of the scale bar's clustering
columns, read by each of ``--tasks`` tasks (``range`` split so, standing for the splits
of a scan that size).

    python -m bench.server_sample --rows 20000000 --tasks 40 200  # results/server-sample.json
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

from bench.common import RESULTS, Progress

OUT = RESULTS / "server-sample.json"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=20_000_000)
    parser.add_argument("--tasks", type=int, nargs="+", default=[40, 200])
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    from pyhive import hive

    from dbt.adapters.zspark.layouts.keyed_plan import sample_size
    from dbt.adapters.zspark.layouts.planning import plan_clustering
    from dbt.adapters.zspark.reach.server.sql_build import sample_input_sql, sample_sql
    from tests.harness.servers import own_metastore, thrift_server

    progress = Progress()
    types = {"city": "int", "product": "int", "day": "date"}
    plan = plan_clustering("sample", {"hilbert_by": list(types)}, types, "table")
    assert plan is not None
    wanted = sample_size(plan)
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}
    home = Path(tempfile.mkdtemp(prefix="zspark-server-sample-"))
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
            sql = (f"select cast(pmod(hash(id, 1), 250) as int) as city, "
                   f"cast(pmod(hash(id, 2), 1000) as int) as product, "
                   f"date_add(date'2024-01-01', cast(pmod(hash(id, 3), 730) as int)) as day "
                   f"from range(0, {args.rows}, 1, {tasks})")
            started = time.perf_counter()
            try:
                top_k = sorted(fetch(sample_sql(sql, plan, wanted)))
                outcome = f"{len(top_k):,} rows"
            except Exception as error:  # the driver's bound on a result, as a user meets it
                text = " ".join(str(error).split())
                bound = re.search(r"Total size .*?maxResultSize \([^)]*\)", text)
                top_k, outcome = [], "failed: " + (bound.group(0) if bound else text[:160])
            results.append({"rows": args.rows, "tasks": tasks, "way": "one top-k query",
                            "seconds": round(time.perf_counter() - started, 1),
                            "outcome": outcome})
            progress(json.dumps(results[-1]))
            started = time.perf_counter()
            sampled = sample_input_sql(fetch, plan, sql, types)
            seconds = time.perf_counter() - started
            assert sampled.rows == args.rows
            got = sorted(tuple(r) for r in sampled.sample[list(types)].astype(str).to_numpy())
            if top_k:  # the same rows: the cut-off drops none of the top-k
                assert got == sorted(tuple(map(str, r)) for r in top_k), "the samples differ"
            results.append({"rows": args.rows, "tasks": tasks,
                            "way": "the count, then a cut-off top-k",
                            "seconds": round(seconds, 1),
                            "outcome": f"{len(sampled.sample):,} rows"})
            progress(json.dumps(results[-1]))
    args.out.write_text(json.dumps({"runs": results}, indent=1))
    print("| rows | tasks | way | s | result |")
    print("|--:|--:|---|--:|---|")
    for r in results:
        print(f"| {r['rows']:,} | {r['tasks']:,} | {r['way']} | {r['seconds']} | {r['outcome']} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
