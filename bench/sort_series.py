"""Clustering at the cost of a sort, across sizes and table formats.

    python -m bench.sort_series                                   # every size and format
    python -m bench.sort_series --sizes 1000000:100 --formats parquet

At each size (rows:files) and format, the scale bar's models (``integration_tests/models/
bar/``) are built side by side, each by a ``dbt run`` of its own (a fresh dbt process and
JVM; time is dbt's ``execution_time`` of the model): Spark's bare write (no key, no sort),
Spark's sorted write (``REPARTITION_BY_RANGE`` on the clustering columns plus ``sort by``),
and zspark's Hilbert, Z-order and balanced builds of the same rows into the same number of
files. With ``--one-process`` the models of a size run in one ``dbt run`` instead, after
the source's rebuild, which starts Spark: what a model costs in a run that has started
it (``bench/results/sort-series-one-process.json``). Delta and Iceberg run on the
profile's targets of that ``table_format``, each format in a schema of its own. Each size
writes its own plain Parquet source of exactly its rows, so no build reads more than its
rows. Results go to ``bench/results/sort-series.json``; BENCHMARKS.md's section
"Clustering at the cost of a sort" is drawn from it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from bench.bar import dbt_step
from bench.builds import build_steps, machine_info
from bench.common import DEFAULT_SESSION_DIR, RESULTS, Progress, model_times, run_dbt
from bench.markdown import md_table, step_split

SERIES_JSON = RESULTS / "sort-series.json"
ONE_PROCESS_JSON = RESULTS / "sort-series-one-process.json"
SIZES = ((200_000, 20), (1_000_000, 100), (5_000_000, 1_000), (20_000_000, 2_000))
FORMATS = ("parquet", "delta", "iceberg")
MODELS = ("bar_bare", "bar_sorted", "bar_hilbert", "bar_zorder", "bar_balanced")
LAYOUTS = {"bar_hilbert": "Hilbert", "bar_zorder": "Z-order", "bar_balanced": "balanced"}
#: The issue's bound: a clustered build at most this multiple of Spark's sorted write.
BOUND = 1.2
#: ... and below a million rows at most this many seconds more than the bare write.
SMALL_ROWS, SMALL_SECONDS = 1_000_000, 3.0


def _dbt_args(rows: int, files: int, table_format: str
              ) -> tuple[dict[str, Any], dict[str, str], list[str]]:
    """The dbt variables, environment and target of one size and format."""
    variables: dict[str, Any] = {"bar": True, "bar_rows": rows, "bar_files": files,
                                 "bar_source_rows": rows, "bar_format": table_format}
    # A schema per format: a session of one format cannot drop the other's tables.
    env = {"ZSPARK_SCHEMA": f"zspark_series_{table_format}"}
    target = [] if table_format == "parquet" else ["--target", table_format]
    return variables, env, target


def run_point(rows: int, files: int, table_format: str, models: tuple[str, ...],
              session_dir: Path, log: Progress) -> dict[str, Any]:
    """Every model of one size and format, each in its own dbt process."""
    variables, env, target = _dbt_args(rows, files, table_format)
    source = session_dir / f"series-source-{table_format}.json"
    if not source.exists() or json.loads(source.read_text()) != rows:
        log(f"writing the source: {rows:,} rows")
        dbt_step(target, session_dir, log, variables, "bar_source", env)
        source.write_text(json.dumps(rows))
    builds = {}
    for model in models:
        build = dbt_step(target, session_dir, log, variables, model, env)
        build.pop("log", None)
        builds[model] = build
    return _point(rows, files, table_format, builds)


def run_point_in_one_process(rows: int, files: int, table_format: str,
                             models: tuple[str, ...], session_dir: Path,
                             log: Progress) -> dict[str, Any]:
    """Every model of one size and format in one ``dbt run``: the source first (dbt runs
    it before the models that read it), which starts Spark, then the models in dbt's
    order (by name)."""
    variables, env, target = _dbt_args(rows, files, table_format)
    output: list[str] = []
    run_dbt(["run", "-s", "bar_source", *models, *target], session_dir, log, variables,
            lines=output, env=env)
    (session_dir / f"series-source-{table_format}.json").write_text(json.dumps(rows))
    times = model_times(session_dir)
    builds = {model: {"seconds": times[model], "steps": build_steps(output, model)}
              for model in models}
    for model in models:
        log(f"{model}: {times[model]:.1f} s")
    return _point(rows, files, table_format, builds)


def _point(rows: int, files: int, table_format: str,
           builds: dict[str, dict[str, Any]]) -> dict[str, Any]:
    sorted_seconds = builds["bar_sorted"]["seconds"] if "bar_sorted" in builds else None
    for build in builds.values():
        if sorted_seconds:
            build["over_sorted"] = build["seconds"] / sorted_seconds
    return {"rows": rows, "files": files, "format": table_format, "builds": builds}


def check(points: list[dict[str, Any]]) -> list[str]:
    """The issue's bounds, one line per miss (reported, not raised: times are figures)."""
    misses = []
    for point in points:
        builds = point["builds"]
        for model, label in LAYOUTS.items():
            if model not in builds or "over_sorted" not in builds[model]:
                continue
            where = f"{point['format']} {point['rows']:,} rows, {label}"
            if builds[model]["over_sorted"] > BOUND:
                misses.append(f"{where}: {builds[model]['over_sorted']:.2f}x the sorted write")
            if point["rows"] <= SMALL_ROWS and "bar_bare" in builds:
                extra = builds[model]["seconds"] - builds["bar_bare"]["seconds"]
                if extra > SMALL_SECONDS:
                    misses.append(f"{where}: {extra:.1f} s more than the bare write")
    return misses


def series_section(series: dict[str, Any]) -> list[str]:
    """The section "Clustering at the cost of a sort" of BENCHMARKS.md."""
    machine = series["machine"]
    runs = ("the models of a size in one `dbt run` (one dbt process and JVM), after the "
            "source's rebuild, which starts Spark" if series.get("one_process") else
            "every build a `dbt run` of its own (a fresh dbt process and JVM)")
    title = ("Clustering at the cost of a sort, in a run that has started Spark"
             if series.get("one_process") else "Clustering at the cost of a sort")
    lines = [f"## {title}", "",
             f"Produced by `{series['command'].strip()}`, {machine['date']}, "
             f"{machine['cores']} cores, `local[2]`, driver memory 6g. The scale bar's rows "
             "(7 columns; clustered on `city`, `product`, `day`), each size read from a "
             f"plain Parquet table of exactly its rows; {runs}, its time dbt's "
             "`execution_time` of the model, all steps counted. *x sorted*: against Spark's "
             "own range-partitioned, sorted "
             f"write of the same rows into as many files (the bound is {BOUND}x); *+ s over "
             f"bare*: seconds more than Spark's bare write (no key, no sort).", "",
             *([series["note"], ""] if series.get("note") else [])]
    rows = []
    for point in series["points"]:
        builds = point["builds"]
        bare = builds.get("bar_bare", {}).get("seconds")
        for model in MODELS:
            if model not in builds:
                continue
            build = builds[model]
            split = step_split(build.get("steps"))
            rows.append([point["format"], f"{point['rows']:,}", f"{point['files']:,}",
                         NAMES[model], f"{build['seconds']:.1f}",
                         f"{build['over_sorted']:.2f}" if "over_sorted" in build else "-",
                         f"{build['seconds'] - bare:+.1f}" if bare is not None else "-",
                         f"{build['seconds'] / (point['rows'] / 1e6):.2f}", split])
    lines += md_table(["format", "rows", "files", "build", "seconds", "x sorted",
                       "+ s over bare", "s per M rows", "sample / write / index / log s"],
                      rows)
    misses = series.get("misses", [])
    lines += ["", *([f"- over the bound: {m}" for m in misses] or
                    ["Every clustered build was within the bounds."]), ""]
    return lines


NAMES = {"bar_bare": "Spark's bare write", "bar_sorted": "Spark's sorted write", **LAYOUTS}


def parse_size(text: str) -> tuple[int, int]:
    rows, files = text.split(":")
    return int(rows), int(files)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=parse_size, nargs="+", default=list(SIZES),
                        help="rows:files pairs")
    parser.add_argument("--formats", nargs="+", default=list(FORMATS), choices=FORMATS)
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    parser.add_argument("--session-dir", type=Path, default=DEFAULT_SESSION_DIR)
    parser.add_argument("--one-process", action="store_true",
                        help="the models of a size in one dbt run, after the source")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    out: Path = args.out or (ONE_PROCESS_JSON if args.one_process else SERIES_JSON)
    point = run_point_in_one_process if args.one_process else run_point
    session_dir = args.session_dir.resolve()
    log = Progress()
    series: dict[str, Any] = {"machine": machine_info(), "points": [],
                              "one_process": args.one_process,
                              "command": "python -m bench.sort_series " + " ".join(sys.argv[1:])}
    for rows, files in sorted(args.sizes):
        for table_format in args.formats:
            series["points"].append(point(rows, files, table_format, tuple(args.models),
                                          session_dir, log))
            series["misses"] = check(series["points"])
            out.write_text(json.dumps(series, indent=1, default=str))  # kept as it goes
    series["machine"]["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
    out.write_text(json.dumps(series, indent=1, default=str))
    print("\n".join(series_section(series)))


if __name__ == "__main__":
    main()
