"""The balanced layout beside the curves: seed 002's model built by `dbt run` as Hilbert,
as Z-order and as balanced, each of the last two with equal weights and weighted by a
declared workload (the `workload` config) of 80% `s_city` and 20% `c_city` point
queries, on uniform, Zipf-skewed, correlated and heavy-hitter data (a few values holding
most rows among many rare ones).

    python -m bench.balanced --rows 2000000 --files 1000   # writes bench/results/balanced.json

Per layout and data: build seconds (dbt's execution time, the median of ``--repeats``
builds), files, rows max/mean, the share of files a point query skips per column under
both query models (bounds from the footers): row-weighted (values drawn from the source's
rows, a value as often as it occurs) against the share the build's log expected from its
sample, and value-uniform (values drawn from the column's distinct values, each as
likely) against the log's; the files each declared query and the workload read per query
(expected and measured); a picture per data shape of every file's box over s_city x
c_city (docs/img/balanced_boxes_<data>.png).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
from pathlib import Path
from typing import Any

from bench.common import (
    CLUSTER_COLUMNS,
    DEFAULT_SESSION_DIR,
    REPO,
    RESULTS,
    SEED_LITERALS,
    TARGET_SCHEMA,
    Progress,
    data_files,
    generate_in_subprocess,
    model_times,
    run_dbt,
    source_files,
    table_dir,
)
from bench.footers import distinct_sorted, distinct_values, sample_values
from bench.markdown import md_table
from bench.measure import Ranks, footer_report
from bench.plots import boxes_chart

MODELS = {"hilbert": "lineorder_hilbert", "z": "lineorder_z",
          "z, weighted": "lineorder_z_weighted", "balanced": "lineorder_balanced",
          "balanced, weighted": "lineorder_balanced_weighted"}
#: The workload the weighted models declare: share of point queries per column.
WORKLOAD = {"s_city": 0.8, "c_city": 0.2}
_EXPECTED = re.compile(r"zspark: (\w+): .*; expected skip from the sample: (.*)$")
_BY_MODEL = re.compile(r"expected skip per column: rows-weighted .*; value-uniform (.*)$")
_MODEL_OF = re.compile(r"zspark: (\w+): ")
_CHOSEN = re.compile(r"zspark: (\w+): balanced layout: (kept the \w+ curve|\d+ groups)")


def expected_skips(lines: list[str]) -> dict[str, dict[str, float]]:
    """Per model, the skip per column its build's log expected from the sample."""
    found = {}
    for line in lines:
        match = _EXPECTED.search(line.strip())
        if match:
            found[match.group(1)] = {column: float(share.rstrip("%")) / 100 for column, share
                                     in (part.rsplit(" ", 1) for part in
                                         match.group(2).split(", "))}
    return found


def expected_value_uniform(lines: list[str]) -> dict[str, dict[str, float]]:
    """Per balanced model, the value-uniform skip per column its build's log expected (on
    the line after the row-weighted figures)."""
    found, model = {}, None
    for line in lines:
        named = _MODEL_OF.search(line)
        if named:
            model = named.group(1)
        match = _BY_MODEL.search(line.strip())
        if match and model:
            found[model] = {column: float(share.rstrip("%")) / 100 for column, share
                            in (part.rsplit(" ", 1) for part in match.group(1).split(", "))}
    return found


def chosen_layouts(lines: list[str]) -> dict[str, str]:
    """Per balanced model, what its build chose: its tree's groups, or the curve kept."""
    return {match.group(1): match.group(2).removeprefix("kept the ")
            for match in map(_CHOSEN.search, lines) if match}


def files_read(skip: dict[str, float], files: int) -> dict[str, float]:
    """Per declared query (a point query on a column) and for the workload, files read."""
    per_query = {c: (1 - skip[c]) * files for c in WORKLOAD}
    return {**per_query, "workload": sum(share * per_query[c] for c, share in WORKLOAD.items())}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--probes", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=1,
                        help="builds of each layout; the median time is reported")
    parser.add_argument("--variants", nargs="+",
                        default=["uniform", "zipf", "correlated", "heavy"])
    parser.add_argument("--session-dir", type=Path, default=DEFAULT_SESSION_DIR / "balanced")
    parser.add_argument("--out", type=Path, default=RESULTS / "balanced.json")
    parser.add_argument("--img-dir", type=Path, default=REPO / "docs" / "img")
    parser.add_argument("--one-process", action="store_true",
                        help="build every layout in one dbt process: checks the benchmark "
                             "sooner; its build times then share one warm JVM")
    args = parser.parse_args(argv)
    log = Progress()
    results: dict[str, Any] = {
        "config": {"rows": args.rows, "files": args.files, "workload": WORKLOAD,
                   "repeats": args.repeats, "one_process": args.one_process},
        "command": "python -m bench.balanced " + " ".join(sys.argv[1:] if argv is None
                                                           else argv),
        "variants": {}}
    for variant in args.variants:
        session_dir = (args.session_dir / variant).resolve()
        generate_in_subprocess(args.rows, variant, session_dir, log)
        # Each layout in a dbt process of its own, after lineorder_profile: every build
        # pays the same warm-up (JIT, Python workers, first writes), not the first alone.
        # With --repeats, rounds of every layout in turn: a build's time on this machine
        # varies by a few seconds from run to run, the median of several does not.
        lines: list[str] = []
        runs: dict[str, list[float]] = {model: [] for model in MODELS.values()}
        batches = ([list(MODELS.values())] if args.one_process
                   else [[model] for model in MODELS.values()])
        for _ in range(args.repeats):
            for batch in batches:
                run_dbt(["run", "-s", "lineorder_profile", *batch], session_dir, log,
                        {"file_count": args.files}, lines=lines)
                times = model_times(session_dir)
                for model in batch:
                    runs[model].append(times[model])
        seconds = {model: statistics.median(times) for model, times in runs.items()}
        expected = expected_skips(lines)
        expected_uniform = expected_value_uniform(lines)
        chosen = chosen_layouts(lines)
        sources = source_files(session_dir)
        probes = sample_values(sources, CLUSTER_COLUMNS, args.probes)
        uniform_probes = distinct_values(sources, CLUSTER_COLUMNS, args.probes)
        ranks = Ranks(distinct_sorted(sources, "s_city"), distinct_sorted(sources, "c_city"))
        layouts: dict[str, Any] = {}
        boxes: dict[str, Any] = {}
        for layout, model in MODELS.items():
            footer = footer_report(data_files(table_dir(session_dir, TARGET_SCHEMA, model)),
                                   CLUSTER_COLUMNS, probes, SEED_LITERALS, ranks)
            measured = files_read(footer["skip_sampled"], footer["files"])
            by_value = footer_report(data_files(table_dir(session_dir, TARGET_SCHEMA, model)),
                                     CLUSTER_COLUMNS, uniform_probes, SEED_LITERALS)
            layouts[layout] = {
                "seconds": seconds[model], "seconds_runs": runs[model],
                "chosen": chosen.get(model, "-"),
                "files": footer["files"],
                "rows_max_over_mean": footer["rows_max_over_mean"],
                "skip": footer["skip_sampled"], "expected_skip": expected.get(model),
                "skip_value_uniform": by_value["skip_sampled"],
                "expected_skip_value_uniform": expected_uniform.get(model),
                "files_read": measured,
                "expected_files_read": files_read(expected[model], footer["files"])
                if model in expected else None,
                "workload_files_read": measured["workload"]}
            boxes[layout] = footer["boxes"]
            log(f"{variant} {layout}: {seconds[model]:.1f} s, {footer['files']} files, rows "
                f"max/mean {footer['rows_max_over_mean']:.2f}, skip row-weighted " + ", ".join(
                    f"{c} {100 * s:.2f}%" for c, s in footer["skip_sampled"].items())
                + "; value-uniform " + ", ".join(
                    f"{c} {100 * s:.2f}%" for c, s in by_value["skip_sampled"].items())
                + f"; workload reads {measured['workload']:.1f} files per query")
        # Every file's box, with a point query on a sampled s_city value drawn over them.
        probe = probes["s_city"][0]
        picture = args.img_dir / f"balanced_boxes_{variant}.png"
        args.img_dir.mkdir(parents=True, exist_ok=True)
        boxes_chart(picture, boxes, (len(ranks.x), len(ranks.y)),
                    (ranks.rank_x(probe, 0), str(probe)),
                    f"{variant} data: each file's [min, max] of s_city x c_city, as value "
                    f"ranks ({args.rows:,} rows, {args.files} files)")
        results.setdefault("pictures", {})[variant] = str(picture)
        results["variants"][variant] = layouts
        args.out.write_text(json.dumps(results, indent=1))
    log(f"wrote {args.out}")


def balanced_section(results: dict[str, Any], report_dir: Path) -> list[str]:
    """The "Balanced layout" section from ``python -m bench.balanced``'s JSON, with its
    file-boxes picture per data shape."""
    config = results["config"]
    workload = ", ".join(f"{100 * share:.0f}% `{c}`" for c, share in config["workload"].items())
    first = next(iter(next(iter(results["variants"].values())).values()))
    columns = list(first["skip"])
    queried = list(config["workload"])

    def read(r: dict[str, Any], what: str) -> str:
        expected = r.get("expected_files_read") or {}
        guess = f"{expected[what]:.1f} / " if what in expected else ""
        return guess + f"{r['files_read'][what]:.1f}"

    rows = []
    for variant, layouts in results["variants"].items():
        for layout, r in layouts.items():
            expected = r.get("expected_skip") or {}
            uniform = r.get("expected_skip_value_uniform") or {}
            runs = r.get("seconds_runs", [])
            rows.append([variant, layout, r.get("chosen", "-"), f"{r['seconds']:.1f}" + (
                         f" ({' / '.join(f'{t:.1f}' for t in runs)})" if len(runs) > 1 else ""),
                         f"{r['seconds'] / layouts['hilbert']['seconds']:.2f}"
                         if "hilbert" in layouts else "-",
                         str(r["files"]),
                         f"{r['rows_max_over_mean']:.2f}",
                         *(f"{100 * s:.2f}" + (f" ({100 * expected[c]:.1f})"
                                               if c in expected else "")
                           for c, s in r["skip"].items()),
                         *(f"{100 * s:.2f}" + (f" ({100 * uniform[c]:.1f})"
                                               if c in uniform else "")
                           for c, s in r.get("skip_value_uniform", {}).items()),
                         *(read(r, c) for c in queried), read(r, "workload")])
    pictures = []
    for variant, path in results.get("pictures", {}).items():
        if Path(path).exists():
            pictures += [f"![file boxes, {variant} data]"
                         f"({os.path.relpath(path, report_dir)})", ""]
    return ["## Balanced layout and column weights", "",
            f"Produced by `make bench-balanced` (`{results['command'].strip()}`): seed 002's "
            f"model on {config['rows']:,} rows and {config['files']} files per data shape, "
            "built by `dbt run` as Hilbert, as Z-order and as balanced, the last two also "
            f"weighted by a declared workload (the `workload` config) of {workload} point "
            + ("queries; every layout is built by one dbt process (`--one-process`: its "
               "times share a warm JVM)" if config.get("one_process") else
               "queries; each layout is built by a dbt process of its own after the warm-up "
               "model, so each pays the same start-up")
            + (f", {config['repeats']} times in turn (*seconds*: the median, then every "
               "build's)" if config.get("repeats", 1) > 1 else "")
            + ". *Skip* is the share of files a point "
            "query skips, from the footers, under two query models: *rows* over values "
            "sampled from the rows (a value as often as it occurs), *values* over values "
            "drawn from each column's distinct values (every value alike); in parentheses "
            "the share the build's log expected from its sample; *files read* are per "
            "point query on that column and on average over the workload, expected / "
            "measured. *Chosen* is what a balanced build kept: its tree (groups of files) "
            "or, where its sample showed no tree skipping as much as the curve on every "
            "column under both query models, the Hilbert curve.", "",
            *md_table(["data", "layout", "chosen", "seconds", "vs Hilbert", "files",
                     "rows max/mean",
                     *(f"{c} skip % rows" for c in columns),
                     *(f"{c} skip % values" for c in columns
                       if "skip_value_uniform" in first),
                     *(f"`{c}` files read" for c in queried), "workload files read"], rows),
            "", *pictures]


if __name__ == "__main__":
    main()
