"""Demo: generate seed 002's table, build the four layouts with dbt, show what each skips.

    python -m bench.demo                      # 200k rows, 100 files per layout
    python -m bench.demo --rows 2000000 --files 1000

Skip shares are counted from the written files' own Parquet footers: for a point query
``c = v``, a file is skipped when v is outside its [min, max] of c. "sampled" averages
over values drawn from random rows; "seed query" uses seed 002's literal.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from bench.common import (
    CLUSTER_COLUMNS,
    DEFAULT_SESSION_DIR,
    LAYOUTS,
    SEED_LITERALS,
    SEED_SKIP,
    Progress,
    default_min_skip,
    generate_in_subprocess,
    layout_files,
    model_name,
    run_dbt,
    source_files,
)
from bench.footers import sample_values
from bench.generate import VARIANTS
from bench.measure import footer_report


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--files", type=int, default=100, help="files per layout")
    parser.add_argument("--variant", choices=VARIANTS, default="uniform")
    parser.add_argument("--probes", type=int, default=200,
                        help="values sampled per column for the average skip share")
    parser.add_argument("--min-skip", type=float, default=None,
                        help="skip_coverage threshold (default: by file count)")
    parser.add_argument("--session-dir", type=Path, default=DEFAULT_SESSION_DIR)
    parser.add_argument("--regenerate", action="store_true",
                        help="write the source table even if one with the same settings exists")
    args = parser.parse_args(argv)
    session_dir = args.session_dir.resolve()
    min_skip = default_min_skip(args.files) if args.min_skip is None else args.min_skip

    log = Progress()
    generate_in_subprocess(args.rows, args.variant, session_dir, log, reuse=not args.regenerate)
    variables = {"file_count": args.files, "min_skip_ratio": min_skip}
    run_dbt(["run"], session_dir, log, variables)
    run_dbt(["test"], session_dir, log, variables)

    log(f"reading footers; sampling {args.probes} values per column")
    probes = sample_values(source_files(session_dir), CLUSTER_COLUMNS, args.probes)
    header = (f"{'layout':<20}{'rows':>10}{'files':>7}  "
              + "".join(f"{c + ' %':>17}" for c in CLUSTER_COLUMNS))
    print()
    print(f"Share of files skipped by point queries, {args.rows} rows, {args.files} files "
          f"({args.variant}); sampled / seed query / seed 002's figure")
    print(header)
    print("-" * len(header))
    for layout in LAYOUTS:
        report = footer_report(layout_files(session_dir, layout), CLUSTER_COLUMNS, probes,
                               SEED_LITERALS)
        seed = SEED_SKIP.get(layout)
        cells = "".join(
            f"{100 * report['skip_sampled'][c]:>7.1f}/{100 * report['skip_literal'][c]:>4.0f}"
            + (f"/{seed[c]:>4.0f}" if seed else "/   -") for c in CLUSTER_COLUMNS)
        print(f"{model_name(layout):<20}{report['rows']:>10}{report['files']:>7}  {cells}")
    print()
    log("done")


if __name__ == "__main__":
    main()
