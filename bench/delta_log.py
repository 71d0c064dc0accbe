"""What a Delta table's file statistics cost a reach without the JVM (Connect, Thrift):
the table's log replayed by SQL (``formats/delta_log.py``) beside the aggregation over
every row that read them before, side by side on the same table through one Connect
server with Delta's jars.

The table: ``--rows`` rows in ``--files`` files, then ``--appends`` small appends (so
that the log holds a checkpoint and commits after it). Each way is timed as a build
asks for it: the statements that plan it (the replay reads the table's properties and
lists its log) and one query over its rows (the count a build logs), each repeated.

    python -m bench.delta_log --rows 20000000 --files 1000   # bench/results/delta-log.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import RESULTS, Progress

OUT = RESULTS / "delta-log.json"
TABLE = "zspark_bench.delta_log"


def timed(client: Any, sql_of: Any, repeats: int) -> tuple[float, list[Any]]:
    """Median seconds of planning the query (``sql_of()``) and running its count."""
    seconds, found = [], []
    for _ in range(repeats):
        started = time.perf_counter()
        query = sql_of()
        found = [tuple(r) for r in client.sql(
            f"select count(1), sum(row_count) from ({query}) z").collect()]
        seconds.append(time.perf_counter() - started)
    return statistics.median(seconds), found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=20_000_000)
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--appends", type=int, default=12)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    from dbt.adapters.zspark.formats import stats_columns
    from dbt.adapters.zspark.formats.delta import DeltaTable
    from dbt.adapters.zspark.formats.settings import table_format
    from dbt.adapters.zspark.reach.base import described
    from dbt.adapters.zspark.skipping.sql_index import index_sql
    from dbt.adapters.zspark.skipping.stats import ColumnRef
    from tests.harness.servers import connect_client, connect_server, own_metastore

    progress = Progress()
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}
    with tempfile.TemporaryDirectory(prefix="zspark-delta-log-") as work:
        home = Path(work)
        wanted = table_format("delta")
        conf = {**own_metastore(home), **wanted.settings,
                "spark.driver.extraClassPath": os.pathsep.join(map(str, wanted.jar_files()))}
        progress("starting a Connect server with Delta's jars")
        with connect_server(home, conf, env, driver_memory="6g") as port, \
                connect_client(port) as client:

            def fetch(sql: str) -> list[tuple[Any, ...]]:
                return [tuple(row) for row in client.sql(sql).collect()]

            fetch("create schema if not exists zspark_bench")
            progress(f"writing {args.rows:,} rows into {args.files:,} files")
            fetch(f"create or replace table {TABLE} using delta as select /*+ REPARTITION("
                  f"{args.files}) */ id, id % 1000 as a, rand(1) * 1000 as b, "
                  f"cast(id % 997 as string) as s from range({args.rows})")
            for i in range(args.appends):
                fetch(f"insert into {TABLE} select id, id % 1000, rand(2), 'x' "
                      f"from range({i * 1000}, {(i + 1) * 1000})")
            progress(f"{args.appends} appends committed")
            schema = described(fetch(f"describe table {TABLE}"))
            columns = stats_columns(schema, [], list(schema))
            replay = DeltaTable().active_files_sql(TABLE, columns, fetch)
            assert "_delta_log" in replay, replay
            exact = index_sql(TABLE, [ColumnRef((name,), kind) for name, kind in columns])
            results: dict[str, Any] = {"rows": args.rows, "files": args.files,
                                       "appends": args.appends, "columns": len(columns)}
            ways = (("log replayed by SQL", lambda: DeltaTable().active_files_sql(
                TABLE, columns, fetch)), ("aggregation over every row", lambda: exact))
            counts = []
            for label, sql_of in ways:
                progress(f"timing: {label}")
                seconds, found = timed(client, sql_of, args.repeats)
                counts.append(found)
                results[label] = round(seconds, 2)
                progress(f"    {seconds:.2f} s (median of {args.repeats}): {found}")
            assert counts[0] == counts[1], counts  # the same files, the same rows
    results["ratio"] = round(results["aggregation over every row"]
                             / results["log replayed by SQL"], 1)
    print(f"\n{args.rows:,} rows, {counts[0][0][0]:,} files: the log replayed "
          f"{results['log replayed by SQL']:.2f} s, the rows aggregated "
          f"{results['aggregation over every row']:.2f} s ({results['ratio']}x)")
    RESULTS.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(results, indent=2) + "\n")
    print(f"written to {OUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
