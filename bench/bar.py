"""The scale bar of clustering at the cost of a sort, measured side by side in one run.

    python -m bench.bar                                     # 100 M rows, 10,000 files
    python -m bench.bar --rows 2000000 --files 200          # a quick look

Every build and append is a ``dbt run`` of its own (a fresh dbt process and JVM; time is
dbt's ``execution_time`` of the model, its peak memory the dbt process tree's and its
JVM's, polled from /proc):

- the source: ``bar_source``, a plain table of the base rows and the rows appended later
  (``integration_tests/models/bar/``), written once and kept while its size is the same;
- Spark's bare write of the base rows into ``--files`` files (``REPARTITION``, no key, no
  sort), Spark's sorted write (``REPARTITION_BY_RANGE`` on the clustering columns plus
  ``sort by``), and zspark's Hilbert build of the same rows into the same number of files;
- a point query on each clustering column over the Hilbert table, as a plain ``where``
  and through ``zspark_scan`` (compiled by ``dbt compile``, which consults the index):
  files read from Spark's scan metrics, median seconds, rows checked equal;
- an incremental model, plain and clustered (Hilbert, the default policy), built on the
  base rows, then ``--appends`` runs appending ``--share`` of the base rows each.

Results go to ``bench/results/bar.json``; the report's section "The scale bar" is drawn
from it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from bench.builds import build_steps, compiled_queries, machine_info
from bench.common import (
    DEFAULT_SESSION_DIR,
    RESULTS,
    TARGET_SCHEMA,
    Progress,
    model_times,
    run_dbt,
    run_module,
    spark_session,
)
from bench.markdown import md_table, ms, step_split

BAR_JSON = RESULTS / "bar.json"
BUILDS = ("bar_bare", "bar_sorted", "bar_hilbert")
APPENDS = ("bar_append_plain", "bar_append_hilbert")
COLUMNS = ("city", "product", "day")
LABELS = {"bar_bare": "Spark's bare write (no key, no sort)",
          "bar_sorted": "Spark's sorted write (range-partitioned, sorted)",
          "bar_hilbert": "zspark Hilbert build",
          "bar_append_plain": "plain incremental model",
          "bar_append_hilbert": "clustered incremental model (Hilbert)"}


def dbt_step(args: list[str], session_dir: Path, log: Progress, variables: dict[str, Any],
             model: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    """One ``dbt run`` of ``model`` in its own process: seconds, step split, memory."""
    output: list[str] = []
    memory: dict[str, int] = {}
    wall = run_dbt(["run", "-s", model, *args], session_dir, log, variables, lines=output,
                   memory=memory, env=env)
    seconds = model_times(session_dir)[model]
    log(f"{model}: {seconds:.1f} s, peak dbt's Python {memory.get('python_bytes', 0) / 2**30:.2f}"
        f" GiB, process tree {memory.get('tree_bytes', 0) / 2**30:.2f} GiB")
    return {"seconds": seconds, "steps": build_steps(output, model),
            "dbt_wall_seconds": wall, **memory,
            "log": [line for line in output if "zspark: " + model in line][-4:]}


def measure_queries(session_dir: Path, reps: int) -> dict[str, Any]:
    """Each column's point query, plain and through zspark_scan, in this process."""
    from bench.measure import run_query, time_interleaved

    compiled = compiled_queries(session_dir, "bar_queries.sql")
    table = f"{TARGET_SCHEMA}.bar_hilbert"
    spark = spark_session(session_dir, "zspark-bench-bar-queries")
    spark.sparkContext.setLogLevel("ERROR")
    try:
        spark.sql(f"select count(*), sum(amount) from {table}").collect()  # warm, alike
        total = len(spark.table(table).inputFiles())
        found: dict[str, Any] = {"files_total": total, "columns": {}}
        for column in COLUMNS:
            scan_sql = compiled[("bar_hilbert", column)]
            plain_sql = plain_query(column)
            plain, scan = run_query(spark, plain_sql), run_query(spark, scan_sql)
            time_interleaved(spark, [(plain_sql, plain), (scan_sql, scan)], reps)
            found["columns"][column] = {
                "plain": {"files_read": plain.files_read, "median_s": plain.median,
                          "result": [list(map(str, r)) for r in plain.result]},
                "zspark_scan": {"files_read": scan.files_read, "median_s": scan.median,
                                "result": [list(map(str, r)) for r in scan.result]},
            }
        return found
    finally:
        spark.stop()


#: The value of each column's point query (as in analyses/bar_queries.sql).
VALUES = {"city": "'city_17'", "product": "'product_123'", "day": "date'2026-07-04'"}


def plain_query(column: str) -> str:
    # Summed as decimals: a double's sum depends on the order rows arrive in.
    return (f"select count(*) as orders, sum(cast(amount as decimal(18, 2))) as amount "
            f"from {TARGET_SCHEMA}.bar_hilbert where {column} = {VALUES[column]}")


def run_bar(rows: int, files: int, appends: int, share: float, reps: int,
            session_dir: Path, log: Progress) -> dict[str, Any]:
    step = int(rows * share)
    variables: dict[str, Any] = {"bar": True, "bar_rows": rows, "bar_files": files,
                                 "bar_source_rows": rows + appends * step}
    results: dict[str, Any] = {
        "machine": machine_info(), "rows": rows, "files": files, "appends": appends,
        "append_rows": step, "command": "python -m bench.bar " + " ".join(sys.argv[1:]),
        "builds": {}, "appends_runs": {}, "problems": []}
    source = session_dir / "bar-source.json"
    if not source.exists() or json.loads(source.read_text()) != variables["bar_source_rows"]:
        log(f"writing the source: {variables['bar_source_rows']:,} rows")
        dbt_step([], session_dir, log, variables, "bar_source")
        source.write_text(json.dumps(variables["bar_source_rows"]))
    for model in BUILDS:
        results["builds"][model] = dbt_step([], session_dir, log, variables, model)
    sorted_seconds = results["builds"]["bar_sorted"]["seconds"]
    for build in results["builds"].values():
        build["over_sorted"] = build["seconds"] / sorted_seconds
    run_dbt(["compile", "-s", "bar_queries"], session_dir, log, variables)
    out = session_dir / "bar-queries.json"
    log("point queries, plain and through zspark_scan")
    run_module(["bench.bar", "--measure-queries", str(out), "--reps", str(reps),
                "--session-dir", str(session_dir)], session_dir)
    results["queries"] = json.loads(out.read_text())
    for model in APPENDS:
        runs = [dbt_step(["--full-refresh"], session_dir, log, variables, model)]
        for i in range(appends):
            lo = rows + i * step
            runs.append(dbt_step([], session_dir, log,
                                 {**variables, "bar_lo": lo, "bar_hi": lo + step}, model))
        results["appends_runs"][model] = runs
    results["problems"] = check(results)
    return results


def check(results: dict[str, Any]) -> list[str]:
    """Rows exact: every query's answer the same plain and through zspark_scan."""
    problems = []
    for column, query in results["queries"]["columns"].items():
        if query["plain"]["result"] != query["zspark_scan"]["result"]:
            problems.append(f"{column}: zspark_scan's rows differ from the plain where's")
    return problems


def bar_section(bar: dict[str, Any]) -> list[str]:
    """The "The scale bar" section of BENCHMARKS.md from ``python -m bench.bar``'s JSON."""
    machine = bar["machine"]
    lines = ["## The scale bar", "",
             f"Produced by `make bench-bar` (`{bar['command'].strip()}`), {machine['date']}, "
             f"{machine['cores']} cores, `local[2]`, driver memory 6g. {bar['rows']:,} rows "
             f"(7 columns; the clustering columns `city`, `product`, `day` of 250, 1,000 "
             f"and 730 values) into {bar['files']:,} files, read from a plain Parquet table; "
             "each build and each append a `dbt run` of its own (a fresh dbt process and "
             "JVM), its time dbt's `execution_time` of the model, its memory the peak "
             "resident memory of the dbt process tree (and of its JVM) polled from /proc.",
             ""]
    rows = []
    for model, build in bar["builds"].items():
        split = step_split(build.get("steps"))
        rows.append([LABELS[model], f"{build['seconds']:.1f}", f"{build['over_sorted']:.2f}",
                     f"{build['seconds'] / (bar['rows'] / 1e6):.2f}", split,
                     gib(build, "python_bytes"), gib(build, "jvm_bytes"),
                     gib(build, "tree_bytes")])
    lines += md_table(["build", "seconds", "x sorted write", "s per M rows",
                       "sample / write / index / log s", "dbt's Python peak GiB",
                       "its JVM peak GiB", "process tree peak GiB"], rows)
    queries = bar["queries"]
    lines += ["", f"Point queries on the Hilbert table ({queries['files_total']:,} files): "
                  "files read (Spark's scan metrics) and median ms; the rows were the same "
                  "both ways.", ""]
    rows = [[f"`{column}`", f"{q['plain']['files_read']:,} / {ms(q['plain']['median_s'])}",
             f"{q['zspark_scan']['files_read']:,} / {ms(q['zspark_scan']['median_s'])}",
             f"{q['zspark_scan']['files_read'] / queries['files_total']:.1%}"]
            for column, q in queries["columns"].items()]
    lines += md_table(["column", "plain where: files / ms", "zspark_scan: files / ms",
                       "share read"], rows)
    plain, clustered = (bar["appends_runs"][m] for m in APPENDS)
    lines += ["", f"Appends of {bar['append_rows']:,} rows each "
                  f"({bar['append_rows'] / bar['rows']:.0%} of the base), after a build of "
                  "the base rows (run 0):", ""]
    rows = []
    for i, (a, b) in enumerate(zip(plain, clustered, strict=True)):
        rows.append([str(i), f"{a['seconds']:.1f}", f"{b['seconds']:.1f}",
                     f"{b['seconds'] / a['seconds']:.2f}", gib(b, "python_bytes"),
                     gib(b, "jvm_bytes")])
    lines += md_table(["run", "plain s", "clustered s", "clustered / plain",
                       "clustered: dbt's Python peak GiB", "its JVM peak GiB"], rows)
    return [*lines, "", *[f"- problem: {p}" for p in bar.get("problems", [])], ""]


def gib(run: dict[str, Any], key: str) -> str:
    """A peak memory of a run in GiB ("-" when the run did not measure it)."""
    return f"{run[key] / 2**30:.2f}" if key in run else "-"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=100_000_000)
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--appends", type=int, default=3)
    parser.add_argument("--share", type=float, default=0.05)
    parser.add_argument("--reps", type=int, default=3, help="timed runs per query")
    parser.add_argument("--session-dir", type=Path, default=DEFAULT_SESSION_DIR)
    parser.add_argument("--out", type=Path, default=BAR_JSON)
    parser.add_argument("--measure-queries", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    session_dir = args.session_dir.resolve()
    if args.measure_queries is not None:
        args.measure_queries.write_text(json.dumps(measure_queries(session_dir, args.reps)))
        return
    log = Progress()
    results = run_bar(args.rows, args.files, args.appends, args.share, args.reps,
                      session_dir, log)
    results["machine"]["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
    args.out.write_text(json.dumps(results, indent=1, default=str))
    print("\n".join(bar_section(results)))
    for problem in results["problems"]:
        print(f"PROBLEM: {problem}", file=sys.stderr)
    if results["problems"]:
        sys.exit(1)


if __name__ == "__main__":
    main()
