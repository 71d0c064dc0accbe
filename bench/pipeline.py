"""The pipeline scenario: a clustered incremental model fed 5% of the rows per run.

Seed 002's table (uniform and Zipf variants), Hilbert on s_city, c_city, p_brand. A base
build of the first 50% of the rows (by lo_orderkey) into 500 files, then ten `dbt run`s
each appending the next 5%, for three policies side by side:

  default   zspark's re-clustering policy (recluster.py)
  never     no re-clustering (zspark_recluster: false)
  optimize  a full re-clustering after every run, as dbt-databricks' OPTIMIZE post-hook;
            its table is a full rebuild of the same rows into files of the table's size,
            the reference the other two are compared with.

After every run: files, rows (checked exact: every (lo_orderkey, lo_linenumber) once),
the share of rows in files a point query skips per clustering column (200 sampled values,
from the index's per-file bounds), rows and bytes written and rewritten, and run time.

    python -m bench.pipeline            # 2 M rows, uniform and zipf
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.dataset as ds

from bench import common
from bench.builds import build_steps
from bench.common import (
    BASE_FILES,
    BASE_SHARE,
    CLUSTER_COLUMNS,
    DEFAULT_SESSION_DIR,
    RESULTS,
    RUNS,
    STEP_SHARE,
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
from bench.markdown import md_table, pieces_words
from bench.plots import POLICY_LABELS, pipeline_chart
from dbt.adapters.zspark.versions.recluster import PIECES_PER_FILE, TIER_RUNS

POLICIES = ("default", "never", "optimize")
REWRITTEN = re.compile(r"rewriting (\d+) rows of")


def model(policy: str) -> str:
    return f"pipeline_{policy}"


def skip_shares(index_dir: Path, probes: dict[str, list[Any]]) -> dict[str, float]:
    """Per column, the share of rows in files whose [min, max] excludes a sampled value."""
    index = ds.dataset([str(f) for f in data_files(index_dir)], format="parquet").to_table()
    files = index.filter(ds.field("row_group").is_null()).to_pandas()
    rows = files["row_count"].to_numpy()
    shares = {}
    for column in CLUSTER_COLUMNS:
        low = files[f"{column}__min"].to_numpy(dtype=object)
        high = files[f"{column}__max"].to_numpy(dtype=object)
        read = [rows[(low <= v) & (v <= high)].sum() for v in probes[column]]
        shares[column] = float(1 - np.mean(read) / rows.sum())
    return shares


def check_rows(directory: Path, upto: int) -> int:
    """The table's rows: every (lo_orderkey, lo_linenumber) up to ``upto`` exactly once."""
    table = ds.dataset([str(f) for f in data_files(directory)], format="parquet").to_table(
        columns=["lo_orderkey", "lo_linenumber"]).to_pandas()
    pairs = table["lo_orderkey"].to_numpy() * 8 + table["lo_linenumber"].to_numpy()
    if len(pairs) != 4 * upto or len(np.unique(pairs)) != len(pairs) or \
            int(table["lo_orderkey"].max()) != upto:
        raise RuntimeError(f"{directory.name}: {len(pairs)} rows, {len(np.unique(pairs))} "
                           f"distinct, expected {4 * upto} up to order {upto}")
    return len(pairs)


def file_sizes(directory: Path) -> dict[str, int]:
    return {str(f): f.stat().st_size for f in data_files(directory)}


def run_policy(policy: str, rows: int, session_dir: Path, probes: dict[str, list[Any]],
               log: Progress, runs: int = RUNS,
               base_files: int = BASE_FILES) -> list[dict[str, Any]]:
    orders = rows // 4
    base_upto, step = int(orders * BASE_SHARE), int(orders * STEP_SHARE)
    name = model(policy)
    steps: list[dict[str, Any]] = []
    for run in range(runs + 1):
        upto = base_upto + run * step
        # The table's folder is looked up at each step: a build or a rewrite writes a
        # version of its own, so the folder changes from run to run.
        before = file_sizes(table_dir(session_dir, TARGET_SCHEMA, name)) if run else {}
        output: list[str] = []
        flags = ["--full-refresh"] if run == 0 else []
        run_dbt(["run", "-s", name, *flags], session_dir, log,
                {"pipeline": True, "pipeline_upto": upto, "pipeline_base_files": base_files},
                lines=output)
        directory = table_dir(session_dir, TARGET_SCHEMA, name)
        after = file_sizes(directory)
        added = {f: s for f, s in after.items() if f not in before}
        rewritten = sum(int(m.group(1)) for line in output for m in [REWRITTEN.search(line)]
                        if m)
        total = check_rows(directory, upto)
        new_rows = total if run == 0 else 4 * step
        steps.append({
            "run": run, "rows": total, "files": len(after), "new_rows": new_rows,
            "rewritten_rows": rewritten, "bytes_written": sum(added.values()),
            "bytes_removed": sum(s for f, s in before.items() if f not in after),
            "table_bytes": sum(after.values()),
            "seconds": model_times(session_dir).get(name, 0.0),
            # sample / write / index / log seconds of the run's own step (the OPTIMIZE
            # post-hook's re-clustering logs a second line, not counted here).
            "steps": build_steps(output, name),
            "skip": skip_shares(table_dir(session_dir, TARGET_SCHEMA, f"{name}__zindex"),
                                probes),
        })
        skip = ", ".join(f"{c} {100 * v:.1f}%" for c, v in steps[-1]["skip"].items())
        log(f"{policy} run {run}: {len(after)} files, rewrote {rewritten} rows; skips {skip}")
    return steps


def summarize(variant: dict[str, list[dict[str, Any]]]) -> dict[str, dict[str, float]]:
    """Per policy: worst and last gap to the reference (points), rows rewritten over the
    runs against the final table, seconds and files."""
    reference = variant["optimize"]
    totals = {}
    for policy, steps in variant.items():
        gaps = [max(100 * (ref["skip"][c] - got["skip"][c]) for c in CLUSTER_COLUMNS)
                for got, ref in zip(steps[1:], reference[1:], strict=True)]
        final = steps[-1]["rows"]
        totals[policy] = {
            "worst_gap_points": max(gaps), "final_gap_points": gaps[-1],
            "rewritten_over_final": sum(s["rewritten_rows"] for s in steps[1:]) / final,
            "bytes_written_over_final": sum(s["bytes_written"] for s in steps[1:])
            / max(1, steps[-1]["table_bytes"]),
            "run_seconds": sum(s["seconds"] for s in steps[1:]),
            "max_files": max(s["files"] for s in steps), "final_files": steps[-1]["files"],
            "final_skip": min(steps[-1]["skip"].values()),
        }
    return totals


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--variants", nargs="+", default=["uniform", "zipf"])
    parser.add_argument("--policies", nargs="+", default=list(POLICIES))
    parser.add_argument("--runs", type=int, default=RUNS, help="appends after the base")
    parser.add_argument("--base-files", type=int, default=BASE_FILES)
    parser.add_argument("--session-dir", type=Path, default=DEFAULT_SESSION_DIR)
    parser.add_argument("--out", type=Path, default=RESULTS / "pipeline.json")
    parser.add_argument("--one-process", action="store_true",
                        help="every dbt run in this process: checks the benchmark sooner; "
                             "its runs then share one warm JVM")
    args = parser.parse_args(argv)
    common.DBT_IN_THIS_PROCESS = args.one_process
    if "optimize" not in args.policies:
        parser.error("the optimize policy is the reference: keep it in --policies")
    session_dir = args.session_dir.resolve()
    log = Progress()
    results: dict[str, Any] = {"config": {
        "rows": args.rows, "base_share": BASE_SHARE, "step_share": STEP_SHARE,
        "runs": args.runs, "base_files": args.base_files,
        "pieces_per_file": PIECES_PER_FILE, "tier_runs": TIER_RUNS,
        "command": "python -m bench.pipeline " + " ".join(
            argv if argv is not None else sys.argv[1:])}, "variants": {}}
    for variant in args.variants:
        generate_in_subprocess(args.rows, variant, session_dir, log)
        probes = sample_values(source_files(session_dir), CLUSTER_COLUMNS, 200)
        steps = {policy: run_policy(policy, args.rows, session_dir, probes, log, args.runs,
                                    args.base_files)
                 for policy in args.policies}
        results["variants"][variant] = {"steps": steps, "totals": summarize(steps)}
        for policy, total in results["variants"][variant]["totals"].items():
            log(f"{variant} {policy}: worst gap {total['worst_gap_points']:.2f} points, final "
                f"{total['final_gap_points']:.2f}, rewrote {total['rewritten_over_final']:.2f}x "
                f"the final table, {total['run_seconds']:.0f} s of runs")
        # Written after each variant, so a long run that stops keeps what it measured.
        args.out.write_text(json.dumps(results, indent=1))
        log(f"wrote {args.out} ({variant})")


def pipeline_section(pipeline: dict[str, Any], img_dir: Path, report_dir: Path) -> list[str]:
    """The "Pipeline scenario" section from ``python -m bench.pipeline``'s JSON."""
    config, variants = pipeline["config"], pipeline["variants"]
    if not variants:
        return []
    picture = img_dir / "pipeline.png"
    pipeline_chart(picture, {v: {p: [min(s["skip"].values()) for s in steps]
                                 for p, steps in data["steps"].items()}
                             for v, data in variants.items()},
                   f"Skip share after each run ({config['rows']:,} rows at the end)")
    lines = ["## Pipeline scenario: clustered incremental runs", "",
             f"Produced by `make bench-pipeline` (`{config['command'].strip()}`). Seed 002's "
             f"table, Hilbert on {', '.join(CLUSTER_COLUMNS)}: a base build of the first "
             f"{config['base_share']:.0%} of the rows (by `lo_orderkey`) into "
             f"{config['base_files']} files, then {config['runs']} runs of `dbt run` appending "
             f"{config['step_share']:.0%} each, for three policies: zspark's default "
             f"({pieces_words(config)}), never "
             "re-cluster (`zspark_recluster: false`), and a full re-clustering after every "
             "run (a `zspark_recluster(this, full=true)` post-hook, the OPTIMIZE policy). "
             "The OPTIMIZE table is a full rebuild of the same rows into files of the "
             "table's size after every run: it is the reference. *Skip* is the share of rows "
             "in files a point query skips, averaged over 200 values sampled per column, "
             "from the index's per-file bounds; *gap* is the reference's skip minus the "
             "policy's, in points, on the worst column. Rows were checked exact after every "
             "run (every `(lo_orderkey, lo_linenumber)` once).", ""]
    for variant, data in variants.items():
        lines += [f"**{variant} data**", ""]
        rows = []
        for policy, total in data["totals"].items():
            rows.append([POLICY_LABELS.get(policy, policy),
                         f"{total['worst_gap_points']:.2f}", f"{total['final_gap_points']:.2f}",
                         f"{total['rewritten_over_final']:.2f}x",
                         f"{total['bytes_written_over_final']:.2f}x",
                         f"{total['run_seconds']:.0f}", str(total["max_files"]),
                         str(total["final_files"]), f"{100 * total['final_skip']:.1f}"])
        lines += md_table(["policy", "worst gap", "final gap", "rows rewritten / final rows",
                         "bytes written / final bytes", f"seconds ({config['runs']} runs)",
                         "most files",
                         "final files", "final skip % (worst column)"], rows)
        lines.append("")
        steps = data["steps"]
        rows = []
        for i in range(len(steps["optimize"])):
            cells = [str(i)]
            for policy in steps:
                step = steps[policy][i]
                skip = min(step["skip"].values())
                cells.append(f"{100 * skip:.1f} / {step['files']} / {step['seconds']:.0f}")
            rows.append(cells)
        lines += md_table(["run", *[f"{POLICY_LABELS.get(p, p)}: skip % / files / s"
                                  for p in steps]], rows)
        lines.append("")
        for policy, policy_steps in steps.items():
            index = [f"{s['steps']['index']:.1f}" for s in policy_steps[1:]
                     if s.get("steps", {}).get("index") is not None]
            if index:
                lines += [f"Index step of each run, seconds ({POLICY_LABELS.get(policy, policy)}"
                          f"): {', '.join(index)}.", ""]
    lines += [f"![skip share per run]({os.path.relpath(picture, report_dir)})", ""]
    return lines


if __name__ == "__main__":
    main()
