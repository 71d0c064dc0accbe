"""Clustering wherever dbt-spark runs: seed 002's Hilbert model built by `dbt run` in an
embedded session (SQL keys, footer index), through a Spark Thrift Server (keys and index in
Spark SQL, no Python on the server), through a Spark Connect server (the same SQL, sent by
Connect's client: no JVM in dbt's process) and on a standalone cluster on loopback whose executors'
Python has no dbt and no plugin, on the same generated rows.

    python -m bench.thrift --rows 2000000 --files 1000      # writes bench/results/thrift.json

The builds share one warehouse and metastore, one process at a time (derby lets one
in). Skip shares per clustering column come from each table's Parquet footers (values
sampled from the source); seed 002's point queries run plain and through `zspark_scan`
(compiled with each build's target) in a Python session afterwards, which counts the
files Spark opened.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.builds import compiled_queries
from bench.common import (
    CLUSTER_COLUMNS,
    DEFAULT_SESSION_DIR,
    RESULTS,
    SEED_LITERALS,
    TARGET_SCHEMA,
    Progress,
    data_files,
    generate_in_subprocess,
    model_name,
    model_times,
    query_session,
    run_dbt,
    seed_query,
    session_env,
    source_files,
    table_dir,
)
from bench.footers import sample_values
from bench.markdown import md_table
from bench.measure import footer_report, run_query
from tests.harness.servers import connect_server, executor_python, standalone_cluster, thrift_server

THRIFT_SCHEMA = "zspark_thrift"
CONNECT_SCHEMA = "zspark_connect"
CLUSTER_SCHEMA = "zspark_cluster"
SCHEMAS = {"session": TARGET_SCHEMA, "thrift": THRIFT_SCHEMA, "connect": CONNECT_SCHEMA,
           "cluster": CLUSTER_SCHEMA}
MODEL = model_name("hilbert")


def server_conf(session_dir: Path) -> dict[str, str]:
    """The Thrift server on the session's warehouse and metastore, with its settings."""
    from dbt.adapters.zspark.connections import session_defaults

    return {key: value for key, value in session_defaults(str(session_dir)).items()
            if key != "spark.ui.showConsoleProgress"}


def build_steps(output: Sequence[str]) -> dict[str, float]:
    """Seconds of each step of the build, from the adapter's log line."""
    for line in reversed(output):
        found = re.search(r"seconds: (sample [\d.]+, write [\d.]+, index [\d.]+, log [\d.]+)",
                          line)
        if found:
            return {step: float(value) for step, value in
                    (part.split() for part in found.group(1).split(", "))}
    return {}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--probes", type=int, default=200)
    parser.add_argument("--session-dir", type=Path, default=DEFAULT_SESSION_DIR)
    parser.add_argument("--out", type=Path, default=RESULTS / "thrift.json")
    parser.add_argument("--no-cluster", action="store_true",
                        help="skip the build on a standalone cluster")
    parser.add_argument("--no-connect", action="store_true",
                        help="skip the build through a Spark Connect server")
    args = parser.parse_args(argv)
    session_dir = args.session_dir.resolve()
    variables = {"file_count": args.files}
    log = Progress()
    results: dict[str, Any] = {"config": {"rows": args.rows, "files": args.files},
                               "command": "python -m bench.thrift " + " ".join(
                                   sys.argv[1:] if argv is None else argv)}
    output: dict[str, list[str]] = {method: [] for method in SCHEMAS}
    scans: dict[str, dict[str, str]] = {}

    generate_in_subprocess(args.rows, "uniform", session_dir, log)
    run_dbt(["run", "-s", MODEL], session_dir, log, variables, lines=output["session"])
    seconds = {"session": model_times(session_dir)[MODEL]}

    def build(method: str, env: dict[str, str]) -> None:
        """The model built over ``method``'s target, timed, and its scans compiled there."""
        started = time.monotonic()
        run_dbt(["run", "-s", MODEL, "--target", method], session_dir, log, variables,
                env=env, lines=output[method])
        seconds[method] = model_times(session_dir)[MODEL]
        log(f"{method} build {seconds[method]:.1f} s (dbt {time.monotonic() - started:.1f} s)")
        run_dbt(["compile", "-s", "seed002_queries", "--target", method], session_dir, log,
                variables, env=env)
        scans[method] = {column: sql for (model, column), sql
                         in compiled_queries(session_dir).items() if model == MODEL}

    with thrift_server(session_dir / "thrift", server_conf(session_dir),
                       session_env(session_dir), driver_memory="6g") as port:
        build("thrift", {"ZSPARK_SCHEMA": THRIFT_SCHEMA, "ZSPARK_THRIFT_PORT": str(port)})
    if not args.no_connect:
        with connect_server(session_dir / "connect", server_conf(session_dir),
                            session_env(session_dir), driver_memory="6g") as port:
            build("connect", {"ZSPARK_SCHEMA": CONNECT_SCHEMA, "ZSPARK_CONNECT_PORT": str(port)})
    if not args.no_cluster:
        import shutil

        root = session_dir / "cluster"
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
        python = executor_python(root / "executor-venv")
        with standalone_cluster(root, worker_memory="5g") as url:
            build("cluster", {"ZSPARK_SCHEMA": CLUSTER_SCHEMA, "ZSPARK_MASTER": url,
                              "ZSPARK_EXECUTOR_PYTHON": str(python),
                              "ZSPARK_EXECUTOR_MEMORY": "4g"})

    sources = source_files(session_dir)
    probes = sample_values(sources, CLUSTER_COLUMNS, args.probes)
    builds: dict[str, Any] = {}
    for method, schema in ((m, SCHEMAS[m]) for m in seconds):
        footer = footer_report(data_files(table_dir(session_dir, schema, MODEL)),
                               CLUSTER_COLUMNS, probes, SEED_LITERALS)
        builds[method] = {"seconds": seconds[method], "steps": build_steps(output[method]),
                          "files": footer["files"],
                          "rows": footer["rows"], "skip": footer["skip_sampled"],
                          "rows_max_over_mean": footer["rows_max_over_mean"]}
        log(f"{method}: {footer['files']} files, skip " + ", ".join(
            f"{c} {100 * s:.1f}%" for c, s in footer["skip_sampled"].items()))

    queries: dict[str, dict[str, Any]] = {}
    with query_session(session_dir, "zspark-bench-thrift", []) as spark:
        for method, compiled in scans.items():
            table = f"{SCHEMAS[method]}.{MODEL}"
            files = len(spark.table(table).inputFiles())
            for column in CLUSTER_COLUMNS:
                plain = run_query(spark, seed_query(table, column))
                scan = run_query(spark, compiled[column])
                queries.setdefault(method, {})[column] = {
                    "files": files, "plain_files_read": plain.files_read,
                    "scan_files_read": scan.files_read,
                    "same_result": sorted(plain.result) == sorted(scan.result)}
                log(f"{method} {column}: zspark_scan opened {scan.files_read} of {files} "
                    f"files ({100 * scan.files_read / files:.1f}%), plain {plain.files_read}; "
                    f"rows {'equal' if queries[method][column]['same_result'] else 'DIFFER'}")
    results["builds"], results["queries"] = builds, queries
    results["skip_gap_points"] = {
        method: {c: 100 * (builds["session"]["skip"][c] - builds[method]["skip"][c])
                 for c in CLUSTER_COLUMNS} for method in builds if method != "session"}
    for method, gaps in results["skip_gap_points"].items():
        log(f"skip gap, session minus {method} (points): "
            + ", ".join(f"{c} {g:+.2f}" for c, g in gaps.items()))
    args.out.write_text(json.dumps(results, indent=1))
    log(f"wrote {args.out}")


def thrift_section(thrift: dict[str, Any], title: str = "Over thrift and on a cluster"
                   ) -> list[str]:
    """A section from ``python -m bench.thrift``'s JSON (a run with a Connect build, or one
    with a cluster's)."""
    builds, queries = thrift["builds"], thrift["queries"]
    if "thrift" not in queries:  # written before the cluster build was measured
        queries = {"thrift": queries}
    columns = list(queries["thrift"])

    def steps(build: dict[str, Any]) -> str:
        return ", ".join(f"{k} {v:.1f}" for k, v in build.get("steps", {}).items())

    rows = [[method, f"{b['seconds']:.1f}", steps(b), str(b["files"]),
             *(f"{100 * b['skip'][c]:.2f}" for c in columns)] for method, b in builds.items()]
    scans = [[method, c, str(q["files"]), str(q["scan_files_read"]),
              f"{100 * q['scan_files_read'] / q['files']:.1f}", str(q["plain_files_read"]),
              "yes" if q["same_result"] else "NO"]
             for method, per_column in queries.items() for c, q in per_column.items()]
    return [f"## {title}", "",
            f"Produced by `make bench-thrift` (`{thrift['command'].strip()}`): seed 002's "
            f"Hilbert model on {thrift['config']['rows']:,} rows and "
            f"{thrift['config']['files']} files, built by `dbt run` in an embedded session "
            "(SQL keys, footer index), through a Spark Thrift Server on the same warehouse "
            "(no Python on the server: keys in SQL, index by one SQL aggregation), where "
            "listed through a Spark Connect server on the same warehouse (the same SQL, sent "
            "by Connect's client, no JVM in dbt's process) and on a standalone cluster on "
            "loopback (two one-core workers whose Python has no dbt and no plugin). Skip is "
            "the share of files a point query skips, over "
            "values sampled per column, from each table's footers.", "",
            *md_table(["build", "seconds", "steps (s)", "files",
                     *(f"{c} skip %" for c in columns)], rows), "",
            "Seed 002's point queries through `zspark_scan` (compiled with that build's "
            "target, run in a session that counts the files Spark opened):", "",
            *md_table(["build", "column", "files", "zspark_scan opened", "% opened",
                     "plain opened", "rows equal"], scans), ""]


if __name__ == "__main__":
    main()
