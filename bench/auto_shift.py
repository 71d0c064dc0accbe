"""``cluster_by='auto'`` on an incremental model whose workload shifts halfway.

    python -m bench.auto_shift                        # 400,000 rows, 32 files, 8 runs
    python -m bench.auto_shift --rows 200000 --runs 6

bench.auto_choice's table of eight candidate columns, fed to an incremental model
(``integration_tests/models/auto/auto_shift.sql``: ``append``, ``cluster_by='auto'``,
the workload declared by a var): a base of half the rows, then appends of an equal share
each. The first half of the runs declares bench.auto_choice's workload *before* the shift
(queries a day: each template's share of ``--queries-per-day``), the second half the one
*after*. After every run: the layout the table stores, whether the run re-clustered it,
the rows of files it rewrote (files live before the run and gone after), the files
``zspark_scan`` opens per query of the current workload (each file's real min/max judged
by the scan's own pruning condition, as bench.auto_choice measures) and the run's
seconds. dbt runs in this process (one Spark session). Results go to
``bench/results/auto-shift.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from bench import common
from bench.auto_choice import files_read, source_sql, workload_queries
from bench.builds import machine_info
from bench.common import RESULTS, TARGET_SCHEMA, Progress, run_dbt
from bench.markdown import md_table

RESULTS_JSON = RESULTS / "auto-shift.json"
DEFAULT_SESSION_DIR = Path("/tmp/zspark-auto-shift")
TABLE = f"{TARGET_SCHEMA}.auto_shift"


def _session() -> Any:
    from pyspark.sql import SparkSession

    # dbt's embedded session, made in its thread: the process's one session.
    return SparkSession.builder.getOrCreate()


def _files(spark: Any) -> dict[str, int]:
    """The table's live files and the rows of each."""
    return {str(path): int(rows) for path, rows in spark.sql(
        f"select input_file_name(), count(*) from {TABLE} group by 1").collect()}


def _stored_layout(spark: Any) -> str:
    from dbt.adapters.zspark.layouts.layout_state import StoredLayout

    stored = StoredLayout.from_properties({str(k): str(v) for k, v in spark.sql(
        f"show tblproperties {TABLE}").collect()})
    return "none" if stored is None else f"{stored.config_key}={list(stored.columns)}"


def run_series(rows: int, files: int, runs: int, per_day: float, session_dir: Path,
               log: Progress) -> dict[str, Any]:
    common.DBT_IN_THIS_PROCESS = True
    base_vars: dict[str, Any] = {"auto_shift": True, "auto_files": files}
    run_dbt(["run", "--select", "auto_shift_source"], session_dir, log,
            {**base_vars, "auto_source_sql": source_sql(rows)})
    spark = _session()
    source = f"{TARGET_SCHEMA}.auto_shift_source"
    workloads = {name: workload_queries(spark, source, name, seed)
                 for seed, name in enumerate(("before", "after"))}
    schema = {f.name: f.dataType.simpleString() for f in spark.table(source).schema.fields}
    types = {c: t for c, t in schema.items() if c != "id"}
    step = rows // 2 // max(runs - 1, 1)
    results: list[dict[str, Any]] = []
    before: dict[str, int] = {}
    for run in range(runs):
        name = "before" if run < (runs + 1) // 2 else "after"
        queries = workloads[name]
        declared = [{"predicate": q.predicate, "count": round(q.count * per_day, 3)}
                    for q in queries]
        lo, hi = (0, rows // 2) if run == 0 else (rows // 2 + (run - 1) * step,
                                                    rows // 2 + run * step)
        # The table as it stands, judged by this run's workload: the run before's own
        # figure while the workload stays; measured where it shifts (the old layout's).
        if not results:
            standing = None
        elif results[-1]["workload"] == name:
            standing = results[-1]["files_per_query"]
        else:
            share, written = files_read(_session(), {"table": TABLE}, queries, types)["table"]
            standing = share * written
        lines: list[str] = []
        started = time.monotonic()
        run_dbt(["run", "--select", "auto_shift"], session_dir, log,
                {**base_vars, "lo": lo, "hi": hi, "auto_workload": declared}, lines=lines)
        seconds = time.monotonic() - started
        spark = _session()
        after = _files(spark)
        rewritten = sum(count for path, count in before.items() if path not in after)
        share, written = files_read(spark, {"table": TABLE}, queries, types)["table"]
        text = " ".join(" ".join(lines).split())
        result = {"run": run, "workload": name, "rows": sum(after.values()),
                  "layout": _stored_layout(spark),
                  "reclustered": "re-clustering the table by it" in text,
                  "rows_rewritten": rewritten, "files": written,
                  "files_per_query_before": standing,
                  "files_per_query": share * written, "seconds": seconds}
        log(f"run {run} ({name}): {result['layout']}, "
            f"{'re-clustered' if result['reclustered'] else 'kept'}, "
            f"{result['rows_rewritten']:,} rows rewritten, "
            f"{result['files_per_query']:.1f} of {written} files per query"
            + (f" ({result['files_per_query_before']:.1f} before the run)" if run else ""))
        results.append(result)
        before = after
    exact = spark.sql(f"select count(*), count(distinct id) from {TABLE}").collect()[0]
    assert tuple(exact) == (rows // 2 + (runs - 1) * step,) * 2, exact
    return {"rows": rows, "files": files, "runs": results, "queries_per_day": per_day,
            "workloads": {k: [[q.predicate, q.count] for q in v] for k, v in workloads.items()}}


def section(result: dict[str, Any]) -> list[str]:
    """The part "Runs of an incremental AUTO model across the shift" of BENCHMARKS.md's
    section "Clustering chosen by the workload"."""
    machine = result["machine"]
    runs = result["runs"]
    changed = [r for r in runs if r["reclustered"]]
    shift = next(r["run"] for r in runs if r["workload"] == "after")
    lines = ["### Runs of an incremental AUTO model across the shift", "",
             f"`{result['command'].strip()}` (`make bench-auto`), {machine['date']}, "
             f"{machine['cores']} cores, dbt in one process: the same table's rows fed to "
             f"an incremental `cluster_by='auto'` model (`append`, `file_count` "
             f"{result['files']}), a base of half the rows, then {len(runs) - 1} appends; "
             f"the workload above is declared (queries a day: each template's share of "
             f"{result['queries_per_day']:g}) before the shift and the one after it from "
             f"run {shift} on. *Files per query*: as above, by the current workload, on "
             "the table as it stands before the run and after it. Every row once at the "
             "end.", ""]
    rows = [[str(r["run"]), r["workload"], f"{r['rows']:,}", r["layout"],
             "yes" if r["reclustered"] else "no", f"{r['rows_rewritten']:,}",
             "-" if r["files_per_query_before"] is None
             else f"{r['files_per_query_before']:.1f}",
             f"{r['files_per_query']:.1f} of {r['files']}", f"{r['seconds']:.1f}"]
            for r in result["runs"]]
    table = md_table(["run", "workload", "rows", "stored layout", "re-clustered",
                     "rows rewritten", "files per query before the run",
                     "files per query after", "seconds"], rows)
    unchanged = [r for r in changed if r["run"] and r["workload"] == runs[r["run"] - 1]["workload"]]
    summary = (f"Re-clusterings: {len(changed)} "
               f"(run{'s' if len(changed) != 1 else ''} "
               f"{', '.join(str(r['run']) for r in changed) or 'none'}); "
               f"{len(unchanged)} in a run whose workload was the run before's.")
    return [*lines, *table, "", summary, ""]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=400_000)
    parser.add_argument("--files", type=int, default=32)
    parser.add_argument("--runs", type=int, default=8)
    parser.add_argument("--queries-per-day", type=float, default=100.0)
    parser.add_argument("--session-dir", type=Path, default=DEFAULT_SESSION_DIR)
    parser.add_argument("--out", type=Path, default=RESULTS_JSON)
    args = parser.parse_args(argv)
    log = Progress()
    result = run_series(args.rows, args.files, args.runs, args.queries_per_day,
                        args.session_dir, log)
    result.update(machine=machine_info(), command="python -m bench.auto_shift "
                  + " ".join(sys.argv[1:] if argv is None else argv))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2, default=str))
    print("\n".join(section(result)))


if __name__ == "__main__":
    main()
