"""Tables in an object store, counted in requests: moto's S3 server on 127.0.0.1, reached
by Hadoop's s3a connector with its standard settings, logs one line per request.

For each format (Parquet, Delta, Iceberg), in a process of its own (one format owns a
session's catalog), on the same generated rows:

- the write requests (PUT, POST; a copy is a PUT) of Spark's own write of the rows into
  ``--files`` files, beside zspark's Hilbert build of the same rows into as many files,
  its rebuild (``--full-refresh``), and a full re-clustering (``zspark_recluster``) after
  an append of 5% more rows (so it rewrites 1.05 times the rows of the plain write);
- a merge (``zspark_recluster`` without ``full``) of two appends of 1% each: its write
  requests, and the requests it made of the data files that stay (none, when it leaves
  them where they are);
- with ``--latency-ms``, the store serves each request that much later, as a real one;
- with ``--committer file``, every write commits by Hadoop's file output committer, which
  renames each task's files into place (a copy and a delete per file on S3), where Spark
  4.1 with spark-hadoop-cloud uses the S3A magic committer;
- point queries on each clustering column: the data files the store served a read of
  and the requests made (``zspark_scan``'s with its compile's read of the index), and
  the query's time, through ``zspark_scan`` (Parquet: the index chooses the files) and
  through a plain ``where`` (Spark reads every Parquet footer; Delta and Iceberg skip by
  their own statistics). Rows are checked against a full scan.

    python -m bench.object_store --rows 200000 --files 100   # bench/results/object-store.json
    python -m bench.object_store --rows 200000 --files 100 --formats parquet \
        --committer file --out bench/results/object-store-file-committer.json
    python -m bench.object_store --rows 200000 --files 100 --latency-ms 30 \
        --out bench/results/object-store-latency.json
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import textwrap
import time
from collections import Counter
from pathlib import Path
from typing import Any

from bench.common import REPO, RESULTS, Progress
from dbt.adapters.zspark.reach.session.object_stores import (
    s3a_jars,
    s3a_settings,
    with_jars,
)
from tests.harness.servers import BUCKET, S3_KEYS, is_data_file_of, s3_requests, s3_server

SCHEMA = "bench_store"
FORMATS = ("parquet", "delta", "iceberg")
COLUMNS = ("a", "b", "c")
#: Point-query values per column (spread over each column's domain).
PROBES = 3
DEFAULT_OUT = RESULTS / "object-store.json"
ROWS_SQL = """
    select id, cast(id % 97 as int) as a,
           concat('b', lpad(cast((id * 7) % 89 as string), 3, '0')) as b,
           cast((id * 13) % 101 as int) as c,
           sha2(cast(id as string), 256) as payload
    from range({lo}, {hi})
"""
WRITES = ("PUT", "POST")


def _project(root: Path, endpoint: str, table_format: str, rows: int, files: int,
             committer: str) -> None:
    # Spark 4.1 commits s3a writes by the S3A magic committer when spark-hadoop-cloud is
    # on its class path, unless the session names another (SPARK-47618).
    committing = {} if committer == "magic" else {"spark.hadoop.fs.s3a.committer.name": "file"}
    settings = with_jars({**s3a_settings(endpoint, *S3_KEYS), **committing,
                          "spark.sql.warehouse.dir": f"s3a://{BUCKET}/bench-{table_format}",
                          "spark.driver.memory": "3g"}, s3a_jars())
    target: dict[str, Any] = {"type": "zspark", "method": "session", "schema": SCHEMA,
                              "session_dir": str(root / "session"),
                              "server_side_parameters": settings}
    if table_format != "parquet":
        target["table_format"] = table_format
    texts = {
        "dbt_project.yml": "name: bench_store\nversion: '1.0'\nconfig-version: 2\n"
                           "profile: bench_store\n",
        # JSON is YAML too.
        "profiles.yml": json.dumps({"bench_store": {"target": "dev",
                                                    "outputs": {"dev": target}}}),
        # Incremental, its appends left as pieces, so that a full re-clustering has
        # rows written since the table's clustered base.
        "models/hilbert.sql": f"""
            {{{{ config(materialized='incremental', file_format='{table_format}',
                        hilbert_by={list(COLUMNS)}, file_count={files},
                        zspark_recluster=false) }}}}
            {ROWS_SQL.format(lo="{{ var('lo', 0) }}", hi=f"{{{{ var('hi', {rows}) }}}}")}
        """,
    }
    for relative, text in texts.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())


def _counts(log: Path, since: int, table: str) -> dict[str, Any]:
    """What the store served after ``since`` log lines: requests by method, and the data
    files of ``table`` read."""
    requests = s3_requests(log, since)
    methods = Counter(method for method, _ in requests)
    fetched = {path for method, path in requests
               if method == "GET" and is_data_file_of(table, path)}
    return {"requests": len(requests), "writes": sum(methods[m] for m in WRITES),
            "by_method": dict(methods), "data_files_read": len(fetched)}


def _lines(log: Path) -> int:
    return len(log.read_text().splitlines())


def run_format(table_format: str, endpoint: str, log: Path, rows: int, files: int,
               out: Path, committer: str = "magic") -> None:
    """In this process: the builds and queries of one format (``out``: its JSON)."""
    from dbt.cli.main import dbtRunner

    from dbt.adapters.zspark.reach.session.embedded import active_session

    progress = Progress()
    root = Path(tempfile.mkdtemp(prefix=f"zspark-store-{table_format}-"))
    _project(root, endpoint, table_format, rows, files, committer)
    runner = dbtRunner()

    def dbt(*args: str) -> None:
        done = runner.invoke([*args, "--project-dir", str(root), "--profiles-dir", str(root)])
        if not done.success:
            raise RuntimeError(f"dbt {' '.join(args)} failed: {done.exception}")

    builds = []
    for run in ("build", "rebuild"):  # a rebuild replaces the table the build made
        progress(f"{table_format}: zspark's Hilbert {run} ({rows} rows, {files} files)")
        before = _lines(log)
        started = time.perf_counter()
        dbt("run", "--select", "hilbert", *(("--full-refresh",) if run == "rebuild" else ()))
        builds.append({**_counts(log, before, "hilbert"),
                       "seconds": time.perf_counter() - started})
    build, rebuild = builds
    appended = rows // 20
    progress(f"{table_format}: an append of {appended} rows, then zspark_recluster, full")
    dbt("run", "--select", "hilbert", "--vars",
        json.dumps({"lo": rows, "hi": rows + appended}))
    before = _lines(log)
    started = time.perf_counter()
    dbt("run-operation", "zspark_recluster", "--args",
        json.dumps({"relation": f"{SCHEMA}.hilbert", "full": True}))
    recluster = {**_counts(log, before, "hilbert"), "seconds": time.perf_counter() - started}
    spark = active_session()
    spark.sparkContext.setLogLevel("ERROR")
    small = max(1, rows // 100)
    progress(f"{table_format}: two appends of {small} rows, then zspark_recluster")
    for lo in (rows + appended, rows + appended + small):
        dbt("run", "--select", "hilbert", "--vars", json.dumps({"lo": lo, "hi": lo + small}))
    files_before = _file_names(spark, f"{SCHEMA}.hilbert", table_format)
    before = _lines(log)
    started = time.perf_counter()
    dbt("run-operation", "zspark_recluster", "--args",
        json.dumps({"relation": f"{SCHEMA}.hilbert", "full": False}))
    seconds = time.perf_counter() - started
    # Counted before the listing of the files after it, a scan of its own.
    counts, requests = _counts(log, before, "hilbert"), s3_requests(log, before)
    staying = files_before & _file_names(spark, f"{SCHEMA}.hilbert", table_format)
    merge = {**counts, "seconds": seconds, "rows": 2 * small,
             "files_staying": len(staying),
             "index_dates_exact": _index_dates_exact(spark, f"{SCHEMA}.hilbert")
             if table_format == "parquet" else None,
             "requests_of_files_staying": sum(
                 1 for _, path in requests if path.rsplit("/", 1)[-1] in staying)}
    progress(f"{table_format}: Spark's own write of the same rows into {files} files")
    spark.sql(f"drop table if exists {SCHEMA}.plain")
    before = _lines(log)
    started = time.perf_counter()
    spark.sql(f"create table {SCHEMA}.plain using {table_format} as "
              f"select /*+ REPARTITION({files}) */ * from "
              f"({ROWS_SQL.format(lo=0, hi=rows)}) r")
    plain_write = {**_counts(log, before, "plain"), "seconds": time.perf_counter() - started}
    # Iceberg's tables have no `_metadata` column: its `files` table lists them.
    written = spark.sql(f"select count(*) from {SCHEMA}.hilbert.files" if table_format ==
                        "iceberg" else f"select count(distinct _metadata.file_path) "
                                       f"from {SCHEMA}.hilbert").first()

    queries = []
    table = f"{SCHEMA}.hilbert"
    adapter_scan = _scan_sql(spark, root, table_format)
    for column in COLUMNS:
        values = [str(r[0]) for r in spark.sql(
            f"select distinct {column} from {table} order by {column}").collect()]
        for value in values[:: max(1, len(values) // PROBES)][:PROBES]:
            literal = f"'{value}'" if column == "b" else value
            predicate = f"{column} = {literal}"
            expected = spark.sql(f"select count(*), sum(id) from "
                                 f"(select * from {table}) where {predicate}").first()
            measured: dict[str, Any] = {"column": column, "predicate": predicate}
            for way in ("zspark_scan", "plain where"):
                spark.catalog.clearCache()
                before = _lines(log)
                # zspark_scan's requests include its compile's read of the index.
                sql = (adapter_scan(predicate) if way == "zspark_scan"
                       else f"select * from {table} where {predicate}")
                started = time.perf_counter()
                got = spark.sql(f"select count(*), sum(id) from ({sql}) q").first()
                measured[way] = {**_counts(log, before, "hilbert"),
                                 "seconds": time.perf_counter() - started,
                                 "rows_exact": tuple(got or ()) == tuple(expected or ())}
            queries.append(measured)
            progress(f"{table_format}: {predicate}: zspark_scan read "
                     f"{measured['zspark_scan']['data_files_read']} files, plain where "
                     f"{measured['plain where']['data_files_read']}")
    out.write_text(json.dumps({"format": table_format, "rows": rows, "files": files,
                               "files_written": int(written[0]) if written else 0,
                               "build": build, "rebuild": rebuild,
                               "appended": appended, "full_recluster": recluster,
                               "merge": merge,
                               "plain_write": plain_write,
                               "queries": queries}, indent=1))


def _scan_sql(spark: Any, root: Path, table_format: str) -> Any:
    """``zspark_scan``'s subquery for a predicate, as the macro compiles it."""
    from dbt.cli.main import dbtRunner

    runner = dbtRunner()

    def scan(predicate: str) -> str:
        model = root / "models" / "probe.sql"
        model.write_text(f"select * from {{{{ zspark_scan(ref('hilbert'), \"{predicate}\") }}}}"
                         " t\n")
        done = runner.invoke(["--quiet", "compile", "--select", "probe", "--project-dir",
                              str(root), "--profiles-dir", str(root)])
        if not done.success:
            raise RuntimeError(f"dbt compile failed: {done.exception}")
        compiled = next((root / "target" / "compiled").rglob("probe.sql")).read_text()
        model.unlink()
        return compiled

    return scan


def _index_dates_exact(spark: Any, table: str) -> bool:
    """Does the Parquet index list each file of ``table`` with its size and modification
    time as the store lists them (else a scan cannot trust its rows, and reads the file)?"""
    from dbt.adapters.zspark.reach.session.hadoop_files import HadoopFiles

    spark.catalog.refreshTable(f"{table}__zindex")
    indexed = {str(r[0]): (int(r[1]), int(r[2])) for r in spark.sql(
        f"select file_path, file_size, file_mtime from {table}__zindex "
        f"where row_group is null").collect()}
    listed = HadoopFiles(spark).identities(list(indexed))
    return bool(indexed) and all(
        path in listed and (listed[path].size, listed[path].mtime) == identity
        for path, identity in indexed.items())


def _file_names(spark: Any, table: str, table_format: str) -> set[str]:
    """The names of the data files ``table`` reads now."""
    spark.catalog.refreshTable(table)
    # Iceberg's tables have no `_metadata` column: its `files` table lists them.
    sql = (f"select file_path from {table}.files" if table_format == "iceberg" else
           f"select distinct _metadata.file_path from {table}")
    return {str(r[0]).rsplit("/", 1)[-1] for r in spark.sql(sql).collect()}


def _summary(results: list[dict[str, Any]]) -> list[str]:
    lines = ["| format | write requests: build / rebuild / full re-clustering / Spark's "
             "own | ratios | files a "
             "point query read: zspark_scan / plain where (of written) | requests: "
             "zspark_scan / plain | seconds: zspark_scan / plain | rows exact |",
             "|---|--:|--:|--:|--:|--:|---|"]
    for r in results:
        q = r["queries"]

        def mean(way: str, key: str, queries: list[dict[str, Any]] = q) -> float:
            return sum(float(x[way][key]) for x in queries) / max(1, len(queries))

        exact = all(x[w]["rows_exact"] for x in q for w in ("zspark_scan", "plain where"))
        own = max(1, r["plain_write"]["writes"])
        full = r.get("full_recluster")  # measured since 2026-11-28's second run
        full_ratio = full["writes"] / own if full else 0.0
        lines.append(
            f"| {r['format']} | {r['build']['writes']} / {r['rebuild']['writes']} / "
            f"{full['writes'] if full else '-'} / {r['plain_write']['writes']} | "
            f"{r['build']['writes'] / own:.2f}x / {r['rebuild']['writes'] / own:.2f}x / "
            f"{f'{full_ratio:.2f}x' if full else '-'} | "
            f"{mean('zspark_scan', 'data_files_read'):.1f} / "
            f"{mean('plain where', 'data_files_read'):.1f} (of {r['files_written']}) | "
            f"{mean('zspark_scan', 'requests'):.0f} / {mean('plain where', 'requests'):.0f} | "
            f"{mean('zspark_scan', 'seconds'):.2f} / {mean('plain where', 'seconds'):.2f} | "
            f"{'yes' if exact else 'NO'} |")
    for r in results:
        merge = r.get("merge")  # measured since 2026-11-29
        if merge:
            lines.append(
                f"{r['format']}: a merge of two runs ({merge['rows']} rows): "
                f"{merge['writes']} write requests of {merge['requests']}, "
                f"{merge['requests_of_files_staying']} requests of the "
                f"{merge['files_staying']} files that stay, {merge['seconds']:.1f} s"
                + ("" if merge.get("index_dates_exact") is None else
                   f", index dates exact: {'yes' if merge['index_dates_exact'] else 'NO'}"))
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--files", type=int, default=100)
    parser.add_argument("--formats", nargs="+", default=list(FORMATS), choices=FORMATS)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--latency-ms", type=float, default=0,
                        help="a delay before the store serves each request, as a real "
                             "store's (e.g. 30)")
    parser.add_argument("--committer", choices=("magic", "file"), default="magic",
                        help="Spark's commit of s3a writes: the S3A magic committer (Spark "
                             "4.1's own with spark-hadoop-cloud) or Hadoop's file output "
                             "committer, which renames each task's files into place")
    parser.add_argument("--one", choices=FORMATS, help=argparse.SUPPRESS)
    parser.add_argument("--endpoint", help=argparse.SUPPRESS)
    parser.add_argument("--log", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:  # one format, in the process its parent started
        run_format(args.one, args.endpoint, args.log, args.rows, args.files, args.out,
                   args.committer)
        return
    if not s3a_jars():
        raise SystemExit("hadoop-aws and the AWS SDK bundle are missing: run `make setup`")
    progress = Progress()
    results = []
    home = Path(tempfile.mkdtemp(prefix="zspark-store-"))
    with s3_server(home, latency_ms=args.latency_ms) as endpoint:
        for table_format in args.formats:
            part = home / f"{table_format}.json"
            progress(f"{table_format}: a process of its own")
            subprocess.run([sys.executable, "-m", "bench.object_store", "--one", table_format,
                            "--endpoint", endpoint, "--log", str(home / "s3.log"),
                            "--rows", str(args.rows), "--files", str(args.files),
                            "--committer", args.committer,
                            "--out", str(part)], cwd=REPO, check=True)
            results.append(json.loads(part.read_text()))
    args.out.write_text(json.dumps({"measured": time.strftime("%Y-%m-%d %H:%M"),
                                    "latency_ms": args.latency_ms,
                                    "committer": args.committer, "results": results},
                                   indent=1))
    print("\n".join(_summary(results)))


if __name__ == "__main__":
    main()
