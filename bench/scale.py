"""The scale series: how build cost and the skipping payoff grow with the data.

    python -m bench.scale                                   # 2 M, 8 M and 20 M rows
    python -m bench.scale --sizes 2000000 8000000           # some of them

At each size, with 1000 files per layout: generate the seed-002 table; build every layout
in its own ``dbt run`` (time = dbt's ``execution_time``, the build's own step split, peak
resident memory of the dbt process tree and of its JVM, the driver); Z-order the same rows
with delta-rs; run the seed's three point queries in a Python Spark session: plain on the
random layout, plain on Hilbert, ``zspark_scan`` on Hilbert, and ``zspark_scan`` on the
linear layout for its second column. Results go to ``bench/results/scale.json``; the report
(BENCHMARKS.md, section "Scale series") and ``docs/img/scale.png`` are redrawn from it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from bench.common import (
    CLUSTER_COLUMNS,
    DEFAULT_SESSION_DIR,
    LAYOUTS,
    RESULTS,
    TARGET_SCHEMA,
    PeakMemory,
    Progress,
    generate_in_subprocess,
    layout_files,
    model_name,
    query_session,
    run_dbt,
    run_module,
    seed_query,
    source_files,
)
from bench.delta import zorder_build
from bench.footers import read_bounds
from bench.markdown import md_table, ms, step_split
from bench.plots import LABELS, scale_chart

SIZES = (2_000_000, 8_000_000, 20_000_000)
SCALE_JSON = RESULTS / "scale.json"
#: (label, layout, through zspark_scan, columns) of the queries measured at every size.
QUERIES = (
    ("random, plain", "random", False, CLUSTER_COLUMNS),
    ("Hilbert, plain", "hilbert", False, CLUSTER_COLUMNS),
    ("Hilbert, zspark_scan", "hilbert", True, CLUSTER_COLUMNS),
    ("linear, zspark_scan", "linear", True, CLUSTER_COLUMNS[1:2]),
)


def build_series_point(rows: int, files: int, layouts: tuple[str, ...], session_dir: Path,
                       log: Progress, reps: int, with_delta: bool) -> dict[str, Any]:
    """Every measurement at one size."""
    from bench.builds import build_layout

    generate_in_subprocess(rows, "uniform", session_dir, log)
    variables = {"file_count": files, "min_skip_ratio": 0.8}
    builds: dict[str, Any] = {}
    for layout in layouts:
        build = build_layout(layout, session_dir, log, variables)
        seconds = build["seconds"]
        bounds = read_bounds(layout_files(session_dir, layout), CLUSTER_COLUMNS)
        builds[layout] = {
            **build, "seconds_per_m_rows": seconds / (rows / 1e6), "files": bounds.files,
            "rows": int(bounds.rows.sum()),
            "size_max_over_mean": float(bounds.sizes.max() / bounds.sizes.mean()),
        }
        log(f"{model_name(layout)}: {seconds:.1f}s ({seconds / (rows / 1e6):.2f} s per M "
            f"rows), driver peak {build['jvm_bytes'] / 2**30:.2f} GiB")
    run_dbt(["compile", "-s", "seed002_queries"], session_dir, log, variables)
    queries = measure_in_subprocess(session_dir, reps, log)
    point: dict[str, Any] = {"rows": rows, "files": files, "builds": builds,
                             "queries": queries}
    if with_delta:
        log("delta-rs: writing the same rows, then optimize.z_order")
        peak = PeakMemory(os.getpid())
        delta = zorder_build(source_files(session_dir), session_dir / "delta" / "lineorder_z",
                             CLUSTER_COLUMNS, files, log)
        peak.stop()
        point["delta"] = {"seconds": delta.zorder_seconds,
                          "seconds_per_m_rows": delta.zorder_seconds / (rows / 1e6),
                          "files": len(delta.files), "tree_bytes": peak.tree_bytes}
    return point


def measure_in_subprocess(session_dir: Path, reps: int, log: Progress) -> dict[str, Any]:
    """The seed's queries in a fresh Python process, so its Spark releases the metastore."""
    out = session_dir / "scale-queries.json"
    log("measuring the seed's queries")
    run_module(["bench.scale", "--measure-queries", str(out), "--reps", str(reps),
                "--session-dir", str(session_dir)], session_dir)
    found: dict[str, Any] = json.loads(out.read_text())
    return found


def measure_queries(session_dir: Path, reps: int) -> dict[str, Any]:
    """Files read, result rows and median seconds of every query in QUERIES."""
    from bench.builds import compiled_queries
    from bench.measure import run_query, time_interleaved

    compiled = compiled_queries(session_dir)
    found: dict[str, Any] = {}
    layouts = sorted({layout for _, layout, _, _ in QUERIES})
    with query_session(session_dir, "zspark-bench-scale-queries", layouts) as spark:
        for label, layout, through_scan, columns in QUERIES:
            model = model_name(layout)
            table = f"{TARGET_SCHEMA}.{model}"
            total = len(spark.table(table).inputFiles())
            for column in columns:
                sql = compiled[(model, column)] if through_scan else seed_query(table, column)
                run = run_query(spark, sql)
                time_interleaved(spark, [(sql, run)], reps)
                found[f"{label}|{column}"] = {
                    "label": label, "column": column, "files_total": total,
                    "files_read": run.files_read, "median_s": run.median,
                    "result": sorted(map(str, run.result)),
                }
    return found


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--layouts", nargs="+", choices=LAYOUTS, default=list(LAYOUTS))
    parser.add_argument("--reps", type=int, default=3, help="timed runs per query")
    parser.add_argument("--no-delta", action="store_true")
    parser.add_argument("--session-dir", type=Path, default=DEFAULT_SESSION_DIR)
    parser.add_argument("--out", type=Path, default=SCALE_JSON)
    parser.add_argument("--measure-queries", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    session_dir = args.session_dir.resolve()
    if args.measure_queries is not None:
        args.measure_queries.write_text(json.dumps(measure_queries(session_dir, args.reps)))
        return
    needed = {layout for _, layout, _, _ in QUERIES}
    layouts = tuple(dict.fromkeys([*args.layouts, *sorted(needed - set(args.layouts))]))

    from bench.builds import machine_info

    log = Progress()
    results: dict[str, Any] = {"machine": machine_info(), "files": args.files, "points": []}
    for rows in sorted(args.sizes):
        log(f"scale series: {rows:,} rows, {args.files} files per layout")
        point = build_series_point(rows, args.files, layouts, session_dir, log, args.reps,
                                   not args.no_delta)
        results["points"].append(point)
        # Written after every size, so a long series shows what it has so far.
        args.out.write_text(json.dumps(results, indent=1, default=str))
    results["machine"]["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
    results["problems"] = check(results)
    args.out.write_text(json.dumps(results, indent=1, default=str))
    for problem in results["problems"]:
        print(f"PROBLEM: {problem}", file=sys.stderr)
    if results["problems"]:
        sys.exit(1)


def check(results: dict[str, Any]) -> list[str]:
    """Every layout kept every row in about the asked file count; scans agree with plain."""
    problems = []
    for point in results["points"]:
        rows, files = point["rows"], point["files"]
        for layout, build in point["builds"].items():
            if build["rows"] != rows:
                problems.append(f"{rows:,} rows, {layout}: {build['rows']:,} rows written")
            if abs(build["files"] - files) > files // 100:
                problems.append(f"{rows:,} rows, {layout}: {build['files']} files")
        by_column: dict[str, list[list[str]]] = {}
        for query in point["queries"].values():
            by_column.setdefault(query["column"], []).append(query["result"])
        for column, answers in by_column.items():
            if any(answer != answers[0] for answer in answers):
                problems.append(f"{rows:,} rows, {column}: query results differ by layout")
    return problems


def scale_section(scale: dict[str, Any], img_dir: Path, report_dir: Path) -> list[str]:
    """The "Scale series" section from ``python -m bench.scale``'s JSON, with its plot."""
    points = scale["points"]
    if not points:
        return []
    sizes = " ".join(str(p["rows"]) for p in points)
    built = [n for n in LAYOUTS if n in points[-1]["builds"]]
    if len(built) < len(LAYOUTS):
        sizes += " --layouts " + " ".join(built)
    names = [n for n in (*LAYOUTS, "delta") if n in points[-1]["builds"] or
             (n == "delta" and "delta" in points[-1])]
    series = {n: [(p["rows"], (p["builds"].get(n) or p.get(n, {}))["seconds"]) for p in points
                  if n in p["builds"] or n in p] for n in names}
    picture = img_dir / "scale.png"
    scale_chart(picture, series, f"Build time against rows ({scale['files']} files; "
                                 "delta-rs: optimize.z_order alone)")
    machine = scale["machine"]
    lines = ["## Scale series", "",
             f"Produced by `make bench-scale` (`python -m bench.scale --sizes {sizes}`), "
             f"{machine['date']}, {machine['cores']} cores, load average at start "
             f"{', '.join(f'{x:.1f}' for x in machine['load_average'])}. Each layout built "
             f"by its own `dbt run` at {scale['files']} files; *driver peak GiB* is the peak "
             "resident memory of the Spark driver JVM (local[2]: the executors run in it), "
             "polled from /proc every 0.25 s; delta-rs's figure is the peak of the "
             "benchmark process holding the rows in Arrow plus its Rust work.", ""]
    rows = []
    for point in points:
        for name in names:
            build = point["builds"].get(name) or point.get(name)
            if not build:
                continue
            split = step_split(build.get("steps"))
            memory = f"{(build.get('jvm_bytes') or build['tree_bytes']) / 2**30:.2f}"
            rows.append([f"{point['rows']:,}" if name == names[0] else "", LABELS[name],
                         f"{build['seconds']:.1f}", f"{build['seconds_per_m_rows']:.2f}",
                         split, memory, str(build["files"])])
    lines += md_table(["rows", "layout", "seconds", "s per M rows",
                     "sample / write / index / log s", "driver peak GiB", "files"], rows)
    lines += ["", f"![build time against rows]({os.path.relpath(picture, report_dir)})", "",
              "Seed 002's point queries at each size: files read (Spark's \"number of files "
              "read\", of the layout's files) and median ms; every query returned the same "
              "rows on every layout.", ""]
    labels = list(dict.fromkeys(q["label"] for q in points[0]["queries"].values()))
    rows = []
    for point in points:
        for column in CLUSTER_COLUMNS:
            cells = []
            for label in labels:
                query = point["queries"].get(f"{label}|{column}")
                cells.append("-" if query is None else
                             f"{query['files_read']} / {ms(query['median_s'])}")
            rows.append([f"{point['rows']:,}" if column == CLUSTER_COLUMNS[0] else "",
                         f"`{column}`", *cells])
    lines += md_table(["rows", "column", *[f"{label}: files / ms" for label in labels]], rows)
    lines += [""]
    if scale.get("problems"):
        lines += [f"- problem: {p}" for p in scale["problems"]] + [""]
    return lines


if __name__ == "__main__":
    main()
