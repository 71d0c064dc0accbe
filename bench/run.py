"""The benchmark: seed 002's experiment through dbt-zspark, with delta-rs as outside reference.

    python -m bench.run --rows 2000000 --files 1000     # writes BENCHMARKS.md, docs/img/
    python -m bench.run --quick                          # 50k rows, 50 files: checks the bench

Steps: generate the wide table; build each layout in its own process by ``dbt run`` and
again by a second ``dbt run`` in that process, a warm JVM (bench.rebuild; build time = the
model's ``execution_time``); ``dbt test`` the skip_coverage tests;
``dbt compile`` seed 002's queries through ``zspark_scan``; run them, and the same queries
as plain scans, in a Python Spark session on the same metastore (scan metrics "number of
files read" / "size of files read", median time of ``--reps`` runs); count skip shares from
every layout's Parquet footers; Z-order the same rows with delta-rs; time Spark's own write
of the same rows into the same files without clustering (bench.floor); write the report.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from bench import common
from bench.builds import build_layouts, compiled_queries, machine_info
from bench.common import (
    CLUSTER_COLUMNS,
    DEFAULT_SESSION_DIR,
    LAYOUTS,
    PROJECT_DIR,
    REPO,
    RESULTS,
    SEED_LITERALS,
    TARGET_SCHEMA,
    Progress,
    default_min_skip,
    generate_in_subprocess,
    layout_files,
    model_name,
    query_session,
    run_dbt,
    run_module,
    run_results,
    seed_query,
    source_files,
)
from bench.delta import zorder_build
from bench.footers import distinct_sorted, sample_values
from bench.generate import VARIANTS
from bench.measure import Ranks, footer_report, run_query, time_interleaved, time_sql
from bench.report import render
from dbt.adapters.zspark.skipping.scan import scan_sql as excluding_scan_sql


def test_results(session_dir: Path) -> list[dict[str, Any]]:
    return [{"test": str(r["unique_id"]).split(".")[2], "status": r["status"],
             "message": r.get("message")} for r in run_results(session_dir)["results"]]


def measure_queries(session_dir: Path, log: Progress, repetitions: int) -> dict[str, Any]:
    """Seed 002's queries, plain and through zspark_scan, per layout and column."""
    queries = compiled_queries(session_dir)
    log("starting the Python Spark session for the queries")
    found: dict[str, Any] = {}
    with query_session(session_dir, "zspark-bench-queries", LAYOUTS) as spark:
        log("warm-up scans done")
        for layout in LAYOUTS:
            model = model_name(layout)
            table = f"{TARGET_SCHEMA}.{model}"
            per_column: dict[str, Any] = {}
            every_file = [(str(r[0]), int(r[1]), int(r[2])) for r in spark.sql(
                f"select file_path, file_size, file_mtime from {table}__zindex "
                f"where row_group is null"
            ).collect()]
            for column in CLUSTER_COLUMNS:
                plain_sql, scan_sql = seed_query(table, column), queries[(model, column)]
                # The same query with every file excluded: what a query costs before it
                # opens a single file (parsing, planning, listing, jobs, result).
                floor_sql = seed_query(
                    excluding_scan_sql(table, f"{column} = '{SEED_LITERALS[column]}'",
                                       every_file), column)
                plain, scan = run_query(spark, plain_sql), run_query(spark, scan_sql)
                floor = run_query(spark, floor_sql)
                time_interleaved(spark, [(plain_sql, plain), (scan_sql, scan),
                                         (floor_sql, floor)], repetitions)
                value = SEED_LITERALS[column]
                lookup = time_sql(
                    spark,
                    f"select file_path from {table}__zindex where row_group is null "
                    f"and {column}__min <= '{value}' and {column}__max >= '{value}'",
                    repetitions,
                )
                same = sorted(plain.result) == sorted(scan.result)
                per_column[column] = {"plain": plain.summary(), "scan": scan.summary(),
                                      "floor": floor.summary(),
                                      "index_lookup_s": lookup, "same_result": same}
                log(f"{model} {column}: plain {plain.files_read} files "
                    f"{plain.median * 1000:.0f} ms, zspark_scan {scan.files_read} files "
                    f"{scan.median * 1000:.0f} ms, no file {floor.median * 1000:.0f} ms, "
                    f"result rows {len(scan.result)}"
                    + ("" if same else "  RESULTS DIFFER"))
            found[layout] = {"files": len(spark.table(table).inputFiles()),
                             "queries": per_column}
    return found


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=None, help="default 2000000 (quick: 50000)")
    parser.add_argument("--files", type=int, default=None, help="default 1000 (quick: 50)")
    parser.add_argument("--reps", type=int, default=None,
                        help="timed runs per query (default 5, quick: 1)")
    parser.add_argument("--build-reps", type=int, default=1,
                        help="builds per layout; the median is reported")
    parser.add_argument("--variant", choices=VARIANTS, default="uniform")
    parser.add_argument("--probes", type=int, default=200,
                        help="values sampled per column for the footer skip share")
    parser.add_argument("--quick", action="store_true",
                        help="small run that checks the benchmark itself (CI)")
    parser.add_argument("--session-dir", type=Path, default=DEFAULT_SESSION_DIR)
    parser.add_argument("--out", type=Path, default=None,
                        help="report file (default BENCHMARKS.md; quick: under target/)")
    parser.add_argument("--img-dir", type=Path, default=None,
                        help="pictures (default docs/img; quick: next to the report)")
    parser.add_argument("--no-delta", action="store_true", help="skip the delta-rs reference")
    parser.add_argument("--one-process", action="store_true",
                        help="every dbt command in this process: checks the benchmark sooner; "
                             "its builds then share one warm JVM, and no memory is measured")
    parser.add_argument("--regenerate", action="store_true",
                        help="write the source table even if one with the same settings exists")
    args = parser.parse_args(argv)
    common.DBT_IN_THIS_PROCESS = args.one_process

    quick = args.quick
    rows = args.rows or (50_000 if quick else 2_000_000)
    files = args.files or (50 if quick else 1000)
    reps = args.reps or (1 if quick else 5)
    quick_dir = PROJECT_DIR / "target" / "bench-quick"
    out = args.out or (quick_dir / "BENCHMARKS.md" if quick else REPO / "BENCHMARKS.md")
    img_dir = args.img_dir or (out.parent / "img" if quick else REPO / "docs" / "img")
    session_dir = args.session_dir.resolve()
    min_skip = default_min_skip(files)
    variables = {"file_count": files, "min_skip_ratio": min_skip}

    log = Progress()
    started = time.monotonic()
    log(f"benchmark: {rows} rows, {files} files per layout, {args.variant}, {reps} timed runs "
        f"per query; session dir {session_dir}")
    results: dict[str, Any] = {
        "config": {"rows": rows, "files": files, "variant": args.variant, "reps": reps,
                   "build_reps": args.build_reps, "probes": args.probes, "quick": quick,
                   "min_skip_ratio": min_skip},
        "machine": machine_info(),
        "steps": {},
    }
    steps = results["steps"]
    steps["generate_s"] = generate_in_subprocess(rows, args.variant, session_dir, log,
                                                 reuse=not args.regenerate)

    builds = build_layouts(session_dir, log, variables, args.build_reps)
    steps["dbt_test_s"] = run_dbt(["test", "-s", "test_type:generic"], session_dir, log,
                                  variables, check=False)
    results["tests"] = test_results(session_dir)
    steps["dbt_compile_s"] = run_dbt(["compile", "-s", "seed002_queries"], session_dir, log,
                                     variables)
    queries = measure_queries(session_dir, log, reps)

    log(f"reading footers; sampling {args.probes} values per column")
    sources = source_files(session_dir)
    probes = sample_values(sources, CLUSTER_COLUMNS, args.probes)
    ranks = Ranks(distinct_sorted(sources, "s_city"), distinct_sorted(sources, "c_city"))
    results["source"] = {"distinct": {c: len(distinct_sorted(sources, c))
                                      for c in CLUSTER_COLUMNS}}
    layouts: dict[str, Any] = {}
    for layout in LAYOUTS:
        footer = footer_report(layout_files(session_dir, layout), CLUSTER_COLUMNS, probes,
                               SEED_LITERALS, ranks)
        layouts[layout] = {**footer, "build": builds[layout], **queries[layout]}
        layouts[layout]["files"] = footer["files"]
    if not args.no_delta:
        log("delta-rs: writing the same rows, then optimize.z_order")
        delta = zorder_build(sources, session_dir / "delta" / "lineorder_z", CLUSTER_COLUMNS,
                             files, log)
        footer = footer_report(delta.files, CLUSTER_COLUMNS, probes, SEED_LITERALS, ranks)
        layouts["delta"] = {**footer, "build": {
            "seconds": delta.zorder_seconds, "write_seconds": delta.write_seconds,
            "target_size": delta.target_size, "attempts": delta.attempts,
            "ratio_to_linear": delta.zorder_seconds / builds["linear"]["seconds"],
        }}
    results["layouts"] = layouts
    log("Spark's floor: the same rows written into the same files with no clustering")
    results["floor"] = floor_in_subprocess(session_dir, files)
    # The seed's s_city literal sits in the middle of its rank cell on the box plot.
    results["ranks"] = {"s_city": len(ranks.x), "c_city": len(ranks.y),
                        "seed_s_city": ranks.rank_x(SEED_LITERALS["s_city"], 0) + 0.5}
    steps["total_s"] = time.monotonic() - started
    results["machine"]["load_average_end"] = [round(x, 2) for x in os.getloadavg()]

    problems = check(results)
    results["problems"] = problems
    out.parent.mkdir(parents=True, exist_ok=True)
    raw = RESULTS / "run.json" if out == REPO / "BENCHMARKS.md" else out.with_suffix(".json")
    raw.parent.mkdir(parents=True, exist_ok=True)
    raw.write_text(json.dumps(results, indent=1, default=str))
    render(results, out, img_dir, raw.parent)
    log(f"wrote {out}, {raw} and pictures in {img_dir}")
    for problem in problems:
        print(f"PROBLEM: {problem}", file=sys.stderr)
    if problems:
        sys.exit(1)
    log("done")


def floor_in_subprocess(session_dir: Path, files: int) -> dict[str, Any]:
    """bench.floor in a fresh process (its own JVM and the metastore to itself)."""
    result = run_module(["bench.floor", "--files", str(files), "--session-dir",
                         str(session_dir)], session_dir)
    floor: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    return floor


def check(results: dict[str, Any]) -> list[str]:
    """Invariants of a sound run (what --quick exists for)."""
    problems = []
    files = results["config"]["files"]
    for layout in LAYOUTS:
        data = results["layouts"][layout]
        # Partitions cut into files by row count end in a short file now and then.
        if abs(data["files"] - files) > files // 100:
            problems.append(f"{layout}: {data['files']} files written, {files} asked for "
                            f"(more than 1% off)")
        if data["rows"] != results["config"]["rows"]:
            problems.append(f"{layout}: {data['rows']} rows, {results['config']['rows']} generated")
        for column, query in data["queries"].items():
            if not query["same_result"]:
                problems.append(f"{layout} {column}: zspark_scan and plain scan results differ")
            if query["scan"]["files_read"] > query["plain"]["files_read"]:
                problems.append(f"{layout} {column}: zspark_scan opened more files than a "
                                f"plain scan")
            if query["scan"]["result_rows"] == 0:
                problems.append(f"{layout} {column}: seed query found no rows")
    for test in results["tests"]:
        if test["status"] not in ("pass", "success"):
            problems.append(f"dbt test {test['test']}: {test['status']} {test['message'] or ''}")
    return problems


if __name__ == "__main__":
    main()
