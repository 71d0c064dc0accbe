"""The balanced layout beside Hilbert: seed 002's model built by `dbt run` as Hilbert, as
balanced with equal weights and as balanced weighted for a workload of 80% `s_city` and
20% `c_city` point queries, on uniform, Zipf-skewed and correlated data.

    python -m bench.balanced --rows 2000000 --files 1000   # writes BENCHMARKS-balanced.json

Per layout and data: build seconds (dbt's execution time), files, rows max/mean, the share
of files a point query skips per column (values sampled from the source, bounds from the
footers), and the files the weighted workload reads per query on average.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from bench.common import (
    CLUSTER_COLUMNS,
    DEFAULT_SESSION_DIR,
    REPO,
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
from bench.footers import sample_values
from bench.measure import footer_report

MODELS = {"hilbert": "lineorder_hilbert", "balanced": "lineorder_balanced",
          "balanced, weighted": "lineorder_balanced_weighted"}
#: The declared workload: share of point queries per column.
WORKLOAD = {"s_city": 0.8, "c_city": 0.2}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--probes", type=int, default=200)
    parser.add_argument("--variants", nargs="+", default=["uniform", "zipf", "correlated"])
    parser.add_argument("--session-dir", type=Path, default=DEFAULT_SESSION_DIR / "balanced")
    parser.add_argument("--out", type=Path, default=REPO / "BENCHMARKS-balanced.json")
    args = parser.parse_args(argv)
    log = Progress()
    results: dict[str, Any] = {
        "config": {"rows": args.rows, "files": args.files, "workload": WORKLOAD},
        "command": "python -m bench.balanced " + " ".join(sys.argv[1:] if argv is None
                                                           else argv),
        "variants": {}}
    for variant in args.variants:
        session_dir = (args.session_dir / variant).resolve()
        generate_in_subprocess(args.rows, variant, session_dir, log)
        # lineorder_profile first: it pays Spark's warm-up (JIT, Python workers), which
        # would otherwise fall on whichever layout runs first.
        run_dbt(["run", "-s", "lineorder_profile", *MODELS.values()], session_dir, log,
                {"file_count": args.files})
        seconds = model_times()
        probes = sample_values(source_files(session_dir), CLUSTER_COLUMNS, args.probes)
        layouts: dict[str, Any] = {}
        for layout, model in MODELS.items():
            footer = footer_report(data_files(table_dir(session_dir, TARGET_SCHEMA, model)),
                                   CLUSTER_COLUMNS, probes, SEED_LITERALS)
            read = sum(share * (1 - footer["skip_sampled"][c]) * footer["files"]
                       for c, share in WORKLOAD.items())
            layouts[layout] = {"seconds": seconds[model], "files": footer["files"],
                               "rows_max_over_mean": footer["rows_max_over_mean"],
                               "skip": footer["skip_sampled"], "workload_files_read": read}
            log(f"{variant} {layout}: {seconds[model]:.1f} s, {footer['files']} files, rows "
                f"max/mean {footer['rows_max_over_mean']:.2f}, skip " + ", ".join(
                    f"{c} {100 * s:.2f}%" for c, s in footer["skip_sampled"].items())
                + f"; workload reads {read:.1f} files per query")
        results["variants"][variant] = layouts
        args.out.write_text(json.dumps(results, indent=1))
    log(f"wrote {args.out}")


if __name__ == "__main__":
    main()
