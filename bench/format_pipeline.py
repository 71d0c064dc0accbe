"""The pipeline scenario on Delta Lake and Iceberg: a base of the first 50% of seed 002's
orders, then appends of 5% each, into each format by zspark and by the formats' own
clustering run after every append:

  zspark          a clustered incremental model (`file_format` of the format, Hilbert on
                  the three clustering columns, `append`, zspark's default re-clustering
                  policy); time is dbt's ``execution_time`` of the run
  delta zorder    a plain Delta table, each step inserted, then ``OPTIMIZE ... ZORDER BY``
  delta liquid    a Delta table ``CLUSTER BY`` the columns, each step inserted, then
                  ``OPTIMIZE``
  iceberg zorder  a plain Iceberg table, each step inserted, then ``rewrite_data_files``
                  with the ``zorder`` sort order (bench/formats.py's options)

and at every run, per format, the reference: zspark's clustered ``table`` model rebuilt
from the same rows (the "rebuild"). Every table is cut at the rows per file of
``--rows`` over ``--files`` (as bench/formats.py's full tables).

After every run, per table: files; rows (checked exact: every (lo_orderkey,
lo_linenumber) once); rows rewritten (the rows of files live before the run and gone
after it: the pipeline only appends); the share of files a point query skips per
clustering column, from the format's own per-file statistics; the gap to the rebuild
(points, the worst column); run seconds; and every version the run committed read back
by time travel (each key once, the rows before or after the run).

    python -m bench.format_pipeline --rows 2000000 --files 1000 --runs 10 \\
        --formats delta iceberg                       # bench/results/format-pipeline.json

Each format runs in a process of its own (a JVM with that format's jars): dbt runs in it
through ``dbtRunner``, and the peers and the measurements use the same Spark session (the
metastore is a single-process Derby).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.common import (
    BASE_SHARE,
    CLUSTER_COLUMNS,
    REPO,
    RESULTS,
    RUNS,
    SOURCE_SCHEMA,
    SOURCE_TABLE,
    STEP_SHARE,
    Progress,
    generate_in_subprocess,
    session_env,
    source_files,
    write_format_project,
)
from bench.formats import peer_statements
from bench.markdown import md_table, number, pct, pieces_words
from dbt.adapters.zspark.reach.session.jvm import SessionJvm
from dbt.adapters.zspark.versions.recluster import PIECES_PER_FILE, TIER_RUNS

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from bench.footers import FileBounds

SCHEMA = "bench_format_pipeline"
FORMATS = ("delta", "iceberg")
ZSPARK, REBUILD = "zspark", "rebuild"
MODELS = {ZSPARK: "fp_zspark", REBUILD: "fp_rebuild"}
PEERS = {"delta": {"delta zorder": "fp_delta_zorder", "delta liquid": "fp_delta_liquid"},
         "iceberg": {"iceberg zorder": "fp_iceberg_zorder"}}
SOURCE = f"{SOURCE_SCHEMA}.{SOURCE_TABLE}"
DEFAULT_OUT = RESULTS / "format-pipeline.json"
DEFAULT_SESSION_DIR = REPO / ".bench-format-pipeline"
IMG_DIR = REPO / "docs" / "img"
# The bar for a clustered incremental model, and the scale it is set at.
BAR_GAP_POINTS, BAR_REWRITTEN = 3.0, 2.0
BAR_ROWS, BAR_FILES = 2_000_000, 1000


def write_project(root: Path, session_dir: Path, table_format: str) -> None:
    """A dbt project of a warm-up model, the clustered incremental model and the rebuild,
    both reading the orders up to var ``pipeline_upto``."""
    columns = list(CLUSTER_COLUMNS)
    write_format_project(root, "zspark_bench_format_pipeline", session_dir, SCHEMA,
                         table_format, {
        f"{MODELS[ZSPARK]}.sql": f"""
            {{{{ config(materialized='incremental', incremental_strategy='append',
                        file_format='{table_format}', hilbert_by={columns},
                        file_count=var('base_files')) }}}}
            select * from {SOURCE} where lo_orderkey <= {{{{ var('pipeline_upto') }}}}
            {{% if is_incremental() %}}
              and lo_orderkey > (select max(lo_orderkey) from {{{{ this }}}})
            {{% endif %}}
        """,
        f"{MODELS[REBUILD]}.sql": f"""
            {{{{ config(materialized='table', file_format='{table_format}',
                        hilbert_by={columns}, file_count=var('rebuild_files')) }}}}
            select * from {SOURCE} where lo_orderkey <= {{{{ var('pipeline_upto') }}}}
        """})


def live_files(spark: SparkSession, table_format: str, table: str) -> FileBounds:
    """The table's live files, their rows and bounds, from the format's own statistics
    (as bench/formats.py reads them)."""
    import numpy as np

    from bench.footers import FileBounds
    from dbt.adapters.zspark.formats import format_table

    written_as = format_table(table_format)
    typed = [(c, "string") for c in CLUSTER_COLUMNS]
    rows = written_as.active_files(SessionJvm(spark), table, typed).collect()
    return FileBounds(
        [str(r["file_path"]) for r in rows],
        np.array([int(r["row_count"] or 0) for r in rows], dtype=np.int64),
        np.array([int(r["file_size"] or 0) for r in rows], dtype=np.int64),
        {c: [r[f"{c}__min"] for r in rows] for c in CLUSTER_COLUMNS},
        {c: [r[f"{c}__max"] for r in rows] for c in CLUSTER_COLUMNS})


def versions(spark: SparkSession, table_format: str, table: str) -> list[int]:
    """Every version (Delta) or snapshot id (Iceberg) the table has, oldest first."""
    if not spark.catalog.tableExists(table):
        return []
    if table_format == "delta":
        found = spark.sql(f"describe history {table}").select("version").collect()
        return sorted(int(r[0]) for r in found)
    return [int(r[0]) for r in spark.sql(
        f"select snapshot_id from {table}.snapshots order by committed_at").collect()]


def counted(spark: SparkSession, relation: str) -> tuple[int, int]:
    """Rows and distinct (lo_orderkey, lo_linenumber) keys of ``relation``."""
    row = spark.sql(f"select count(*), count(distinct lo_orderkey, lo_linenumber) "
                    f"from {relation}").collect()[0]
    return int(row[0]), int(row[1])


def time_travel(spark: SparkSession, table: str, created: Sequence[int],
                rows_before: int, rows_after: int) -> list[dict[str, Any]]:
    """Each version the run created, read back: its rows must be those before or after
    the run, each key once."""
    read = []
    for version in created:
        rows, keys = counted(spark, f"{table} version as of {version}")
        read.append({"version": version, "rows": rows,
                     "exact": keys == rows and rows in (rows_before, rows_after)})
    return read


def run_peer(spark: SparkSession, label: str, table: str, run: int, after: int, upto: int,
             files: int, target_bytes: int) -> float:
    """One run of a peer: the base written (run 0) or the step inserted, then the
    format's clustering; seconds of it all."""
    rows = f"(select * from {SOURCE} where lo_orderkey > {after} and lo_orderkey <= {upto})"
    statements = peer_statements(label, table, f"{rows} as step", files, target_bytes)
    if run > 0:
        # The same clustering statements, after an insert instead of the create.
        statements = [f"insert into {table} select /*+ REPARTITION({files}) */ * "
                      f"from {rows} as step" if s.startswith("create table") else s
                      for s in statements]
    started = time.perf_counter()
    for statement in statements:
        spark.sql(statement).collect()
    return time.perf_counter() - started


def run_format(table_format: str, session_dir: Path, rows: int, files: int, runs: int,
               probes: int, out: Path, peers: bool = True) -> None:
    """In this process: dbt's runs, the peers' (unless not ``peers``) and every
    measurement (``out``: JSON, rewritten after every run so a stopped run keeps them)."""
    from dbt.cli.main import dbtRunner

    from bench.footers import rows_skip_share, sample_values, skip_share
    from dbt.adapters.zspark.reach.session.embedded import active_session

    log = Progress()
    project = session_dir / "project"
    write_project(project, session_dir, table_format)
    runner = dbtRunner()

    def dbt_run(model: str, variables: dict[str, Any], *flags: str) -> float:
        """``dbt run`` of one model in this process; dbt's seconds for it."""
        result = runner.invoke(["run", "-s", model, "--vars", json.dumps(variables), *flags,
                                "--project-dir", str(project), "--profiles-dir", str(project)])
        if not result.success:
            raise RuntimeError(f"dbt run -s {model} failed: {result.exception}")
        done: Any = result.result
        return sum(float(r.execution_time) for r in done.results)

    log(f"{table_format}: dbt warm-up")
    dbt_run("warmup", {})
    spark = active_session()
    spark.sparkContext.setLogLevel("ERROR")
    peer_models = PEERS[table_format] if peers else {}
    tables = {label: f"{SCHEMA}.{name}" for label, name in {**MODELS, **peer_models}.items()}
    for table in tables.values():
        spark.sql(f"drop table if exists {table}"
                  + (" purge" if table_format == "iceberg" else ""))

    orders = rows // 4
    base_upto, step = int(orders * BASE_SHARE), int(orders * STEP_SHARE)

    # Every table is cut at the rows per file of the whole source into ``files`` files.
    def files_for(order_count: int) -> int:
        return max(1, round(files * order_count / orders))

    source_parquet = source_files(session_dir)
    source_bytes = sum(f.stat().st_size for f in source_parquet)
    target_bytes = max(1, source_bytes // files)
    values = sample_values(source_parquet, list(CLUSTER_COLUMNS), probes)
    steps: dict[str, list[dict[str, Any]]] = {label: [] for label in tables}

    def measured(label: str, run: int, upto: int, expected: int,
                 seconds: float) -> tuple[dict[str, Any], FileBounds]:
        """A table after its run: rows (exact?), files, skip per column; its live files."""
        table = tables[label]
        spark.catalog.refreshTable(table)
        live = live_files(spark, table_format, table)
        count, keys = counted(spark, table)
        return {"run": run, "upto": upto, "rows": count, "expected_rows": expected,
                "rows_exact": count == expected and keys == count, "files": live.files,
                "seconds": seconds,
                "skip": {c: skip_share(live, c, values[c]) for c in CLUSTER_COLUMNS},
                "skip_rows": {c: rows_skip_share(live, c, values[c])
                              for c in CLUSTER_COLUMNS}}, live

    # Each variant's live files and versions after its last run: those before the next.
    live_before: dict[str, FileBounds] = {}
    versions_before: dict[str, set[int]] = {label: set() for label in tables}
    rows_before = 0
    for run in range(runs + 1):
        after = 0 if run == 0 else base_upto + (run - 1) * step
        upto = base_upto + run * step
        expected = int(spark.sql(f"select count(*) from {SOURCE} "
                                 f"where lo_orderkey <= {upto}").collect()[0][0])
        variables = {"pipeline_upto": upto, "base_files": files_for(base_upto),
                     "rebuild_files": files_for(upto)}
        for label, table in tables.items():
            if label == REBUILD:
                continue
            if label == ZSPARK:
                flags = ["--full-refresh"] if run == 0 else []
                seconds = dbt_run(MODELS[ZSPARK], variables, *flags)
            else:
                seconds = run_peer(spark, label, table, run, after, upto,
                                   files_for(upto - after), target_bytes)
            found, live = measured(label, run, upto, expected, seconds)
            # Only appends: a file live before the run and gone after it was rewritten.
            still_live = set(live.paths)
            before = live_before.get(label)
            gone = {path: int(n) for path, n in zip(before.paths, before.rows, strict=True)
                    if path not in still_live} if before else {}
            live_before[label] = live
            rewritten = sum(gone.values())
            now = versions(spark, table_format, table)
            created = [v for v in now if v not in versions_before[label]]
            versions_before[label] = set(now)
            read_back = time_travel(spark, table, created, rows_before, expected)
            steps[label].append({
                **found, "rewritten_files": len(gone), "rewritten_rows": rewritten,
                "versions": read_back,
                "versions_exact": all(v["exact"] for v in read_back)})
            log(f"{table_format} {label} run {run}: {live.files} files, {found['rows']} rows "
                f"({'exact' if found['rows_exact'] else 'NOT EXACT'}), rewrote "
                f"{rewritten} rows, {len(created)} versions "
                f"({'exact' if steps[label][-1]['versions_exact'] else 'NOT EXACT'}), "
                f"{seconds:.1f}s")
        rebuilt, _ = measured(REBUILD, run, upto, expected,
                              dbt_run(MODELS[REBUILD], variables))
        steps[REBUILD].append(rebuilt)
        skip, skip_rows = rebuilt["skip"], rebuilt["skip_rows"]
        for label in tables:
            got = steps[label][-1]
            got["gap_points"] = max(100 * (skip[c] - got["skip"][c]) for c in CLUSTER_COLUMNS)
            # The same by rows skipped: a table of many small files is not favoured.
            got["rows_gap_points"] = max(100 * (skip_rows[c] - got["skip_rows"][c])
                                         for c in CLUSTER_COLUMNS)
        log(f"{table_format} run {run}: gap to the rebuild ({rebuilt['files']} files, skip "
            + " / ".join(f"{100 * skip[c]:.1f}" for c in CLUSTER_COLUMNS) + "): "
            + ", ".join(f"{label} {steps[label][-1]['gap_points']:.1f} (by rows "
                        f"{steps[label][-1]['rows_gap_points']:.1f})"
                        for label in tables if label != REBUILD) + " points")
        rows_before = expected
        out.write_text(json.dumps(steps, indent=1, default=str))
    spark.stop()


def picture_name(out: Path, table_format: str) -> str:
    """The picture of a format's pipeline whose figures are in ``out``
    (bench/results/format-pipeline.json: format-pipeline-delta.png, ...)."""
    return f"{out.stem}-{table_format}.png"


def summarize(steps: dict[str, list[dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """Per variant, over the appends: worst and final gap to the rebuild (points), rows
    rewritten over the final table's, seconds, files, and whether all read back exact."""
    totals = {}
    for label, runs in steps.items():
        if label == REBUILD:
            continue
        appends = runs[1:] or runs
        final = runs[-1]["rows"]
        totals[label] = {
            "worst_gap_points": max(s["gap_points"] for s in appends),
            "final_gap_points": runs[-1]["gap_points"],
            "worst_rows_gap_points": max(s["rows_gap_points"] for s in appends),
            "rewritten_over_final": sum(s["rewritten_rows"] for s in appends) / max(1, final),
            "run_seconds": sum(s["seconds"] for s in appends),
            "base_seconds": runs[0]["seconds"],
            "max_files": max(s["files"] for s in runs), "final_files": runs[-1]["files"],
            "rows_exact": all(s["rows_exact"] for s in runs),
            "versions_exact": all(s["versions_exact"] for s in runs),
        }
    return totals


def bar(table_format: str, zspark: dict[str, Any]) -> list[str]:
    """The issue's bar (set for Delta), checked on the format's zspark model."""
    def verdict(met: bool) -> str:
        return "ok" if met else "MISSED"

    return [
        f"{table_format} zspark within {BAR_GAP_POINTS:.0f} points of a rebuild through its "
        f"appends: {zspark['worst_gap_points']:.2f} worst "
        f"({verdict(zspark['worst_gap_points'] <= BAR_GAP_POINTS)}; by rows skipped "
        f"{zspark['worst_rows_gap_points']:.2f})",
        f"{table_format} zspark rewrites at most {BAR_REWRITTEN:.0f}x its final rows: "
        f"{zspark['rewritten_over_final']:.2f}x "
        f"({verdict(zspark['rewritten_over_final'] <= BAR_REWRITTEN)})",
        f"{table_format} zspark: every version time-travels to exactly its rows "
        f"({verdict(zspark['versions_exact'] and zspark['rows_exact'])})",
    ]


def draw_picture(path: Path, table_format: str, steps: dict[str, list[dict[str, Any]]],
                 title: str) -> None:
    """Left: gap to the rebuild per run; right: rows rewritten so far over the final
    table's rows; a line per variant, the bar dashed."""
    import matplotlib

    matplotlib.use("Agg")  # before pyplot: no display needed
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    colors = {ZSPARK: "#4C72B0", f"{table_format} zorder": "#DD8452",
              f"{table_format} liquid": "#55A868"}
    fig, (gap_ax, rewrite_ax) = plt.subplots(1, 2, figsize=(11, 4))
    for label, runs in steps.items():
        if label == REBUILD:
            continue
        xs = [s["run"] for s in runs]
        final = max(1, runs[-1]["rows"])
        so_far = 0
        rewritten = []
        for s in runs:
            so_far += s["rewritten_rows"]
            rewritten.append(so_far / final)
        # Peers dashed: two of them may rewrite the same rows and draw one line.
        style = {"marker": "o", "markersize": 3, "color": colors.get(label), "label": label,
                 "linestyle": "-" if label == ZSPARK else "--"}
        gap_ax.plot(xs, [s["gap_points"] for s in runs], **style)
        rewrite_ax.plot(xs, rewritten, **style)
    gap_ax.axhline(BAR_GAP_POINTS, color="black", linestyle="--", linewidth=0.8,
                   label=f"bar: {BAR_GAP_POINTS:.0f} points")
    rewrite_ax.axhline(BAR_REWRITTEN, color="black", linestyle="--", linewidth=0.8,
                       label=f"bar: {BAR_REWRITTEN:.0f}x")
    gap_ax.set_ylabel("gap to a rebuild, worst column (points)")
    rewrite_ax.set_ylabel("rows rewritten so far / final rows")
    for ax in (gap_ax, rewrite_ax):
        ax.set_xlabel("run (0: base build of 50% of the rows)")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def kept_formats(prior: dict[str, Any], config: dict[str, Any],
                 measuring: list[str]) -> dict[str, Any]:
    """The formats of an earlier report (``--add``) that this run does not measure again;
    refused unless it measured at the same scale.

    >>> same = {"rows": 10, "files": 2, "runs": 1, "peers": True}
    >>> list(kept_formats({"config": same, "formats": {"delta": {}, "iceberg": {}}},
    ...                   same, ["iceberg"]))
    ['delta']
    """
    scale = ("rows", "files", "runs", "peers")
    if any(prior["config"].get(k) != config[k] for k in scale):
        raise SystemExit(f"--add: the report holds a run at another scale "
                         f"({ {k: prior['config'].get(k) for k in scale} }); measure all "
                         f"formats again or write another --out")
    return {name: found for name, found in prior["formats"].items() if name not in measuring}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=BAR_ROWS)
    parser.add_argument("--files", type=int, default=BAR_FILES,
                        help="files of the whole source: sets the rows per file")
    parser.add_argument("--runs", type=int, default=RUNS, help="appends after the base")
    parser.add_argument("--probes", type=int, default=300)
    parser.add_argument("--formats", nargs="+", choices=FORMATS, default=list(FORMATS))
    parser.add_argument("--no-peers", dest="peers", action="store_false",
                        help="zspark and the rebuild only: the bar's figures, without the "
                             "peers' OPTIMIZE of the whole table at every run")
    parser.add_argument("--session-dir", type=Path, default=DEFAULT_SESSION_DIR,
                        help="a session directory per format is made in it")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--add", action="store_true",
                        help="keep the other formats --out holds (measured at the same "
                             "scale): one format measured at a time")
    parser.add_argument("--img-dir", type=Path, default=IMG_DIR)
    parser.add_argument("--run-format", help=argparse.SUPPRESS)  # the per-format process
    parser.add_argument("--measured", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.run_format:
        run_format(args.run_format, args.session_dir, args.rows, args.files, args.runs,
                   args.probes, args.measured, args.peers)
        return

    log = Progress()
    report: dict[str, Any] = {
        "config": {"rows": args.rows, "files": args.files, "runs": args.runs,
                   "peers": args.peers,
                   "base_share": BASE_SHARE, "step_share": STEP_SHARE, "probes": args.probes,
                   "pieces_per_file": PIECES_PER_FILE, "tier_runs": TIER_RUNS,
                   "date": time.strftime("%Y-%m-%d %H:%M"),
                   "command": "python -m bench.format_pipeline " + " ".join(
                       argv if argv is not None else sys.argv[1:])},
        "formats": {}}
    if args.add and args.out.exists():
        report["formats"] = kept_formats(json.loads(args.out.read_text()), report["config"],
                                         args.formats)
    for table_format in args.formats:
        session_dir = (args.session_dir / table_format).resolve()
        generate_in_subprocess(args.rows, "uniform", session_dir, log)
        measured = session_dir / "measured.json"
        log(f"{table_format}: the pipeline (dbt, peers and measurements in one process)")
        done = subprocess.run(
            [sys.executable, "-m", "bench.format_pipeline", "--run-format", table_format,
             "--session-dir", str(session_dir), "--rows", str(args.rows),
             "--files", str(args.files), "--runs", str(args.runs),
             "--probes", str(args.probes), "--measured", str(measured),
             *([] if args.peers else ["--no-peers"])],
            cwd=REPO, env={**session_env(session_dir), "PYTHONPATH": os.pathsep.join(
                filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"{table_format}: the pipeline failed (exit {done.returncode})")
        steps = json.loads(measured.read_text())
        totals = summarize(steps)
        found = {"steps": steps, "totals": totals, "bar": bar(table_format, totals[ZSPARK])}
        picture = args.img_dir / picture_name(args.out, table_format)
        draw_picture(picture, table_format, steps,
                     f"{table_format}: base of 50% then {args.runs} appends of 5% "
                     f"({args.rows:,} rows, {args.files} files for all of them)")
        found["picture"] = str(picture)
        found["date"] = time.strftime("%Y-%m-%d %H:%M")
        report["formats"][table_format] = found
        for label, total in totals.items():
            log(f"{table_format} {label}: worst gap {total['worst_gap_points']:.2f} points, "
                f"final {total['final_gap_points']:.2f}, rewrote "
                f"{total['rewritten_over_final']:.2f}x the final rows, "
                f"{total['run_seconds']:.1f}s of appends, files max {total['max_files']} "
                f"final {total['final_files']}, rows "
                f"{'exact' if total['rows_exact'] else 'NOT EXACT'}, versions "
                f"{'exact' if total['versions_exact'] else 'NOT EXACT'}")
        for line in found["bar"]:
            log(f"bar: {line}")
        # Written after each format, so a long run that stops keeps what it measured.
        args.out.write_text(json.dumps(report, indent=1) + "\n")
        log(f"wrote {args.out} ({table_format}) and {picture}")


def format_pipeline_section(results: dict[str, Any], img_dir: Path, report_dir: Path,
                            heading: str = "Pipeline on Delta Lake and Iceberg",
                            source: Path = Path("format-pipeline.json")
                            ) -> list[str]:
    """A section (``heading``) from ``python -m bench.format_pipeline``'s JSON
    (``source``), with its picture per format; a run without the peers (``--no-peers``)
    has zspark and the rebuild only."""
    config, formats = results["config"], results["formats"]
    if not formats:
        return []
    base = (f"python -m bench.format_pipeline --rows {config['rows']} "
            f"--files {config['files']} --runs {config['runs']}")
    peers = config.get("peers", True)
    if not peers:
        base += " --no-peers"
    target = "bench-formats"
    out = ""
    if source.name != "format-pipeline.json":
        out = f" --out bench/results/{source.name}"
        target = "bench-formats-bar"
    dates = [found.get("date") for found in formats.values()]
    if len(formats) > 1 and all(dates) and len(set(dates)) > 1:
        # Measured one format at a time (--add), each run with its date.
        produced = "; ".join(
            f"`{base} --formats {name}{out}{' --add' if i else ''}`, {found['date']}"
            for i, (name, found) in enumerate(formats.items()))
    else:
        command = base + ("" if list(formats) == list(FORMATS)
                          else " --formats " + " ".join(formats)) + out
        produced = f"`{command}`, {config['date']}"
    own = {"delta": "Delta `OPTIMIZE ... ZORDER BY`, Delta liquid `CLUSTER BY` + `OPTIMIZE`",
           "iceberg": "Iceberg `rewrite_data_files` zorder"}
    by_peers = ("and by the format's own clustering run after every append ("
                + ", ".join(own[f] for f in formats if f in own) + ")" if peers else
                "(without the peers: their figures at this scale are in the section above "
                "or in a run without `--no-peers`)")
    lines = [f"## {heading}", "",
             f"Produced by `make {target}` ({produced}): seed 002's "
             f"rows, a base of the first {config['base_share']:.0%} of the orders, then "
             f"{config['runs']} appends of {config['step_share']:.0%} each, into each format "
             "by a clustered incremental zspark model (Hilbert on s_city, c_city, p_brand, "
             f"`append`, zspark's default re-clustering policy, {pieces_words(config)}) "
             f"{by_peers}. The reference "
             "at every run is the rebuild: zspark's clustered `table` model of the same rows, "
             f"a file asked for every {config['rows'] // config['files']:,} rows. *Skip* is "
             f"the share of files a point query skips, over {config['probes']} values drawn "
             "from the rows, from the format's own statistics; *gap* is the rebuild's skip "
             "minus the table's, in points, on the worst column (negative: the table skips "
             "more), *worst* over the appends; *gap by rows* is the same by the share of rows "
             "skipped, where a small file counts for its rows rather than as a whole one (as the"
             " Parquet pipeline above measures). *Rows rewritten*: the rows of files live before"
             " a run and gone after it, summed over the appends. *Seconds*: the base, then the "
             "appends together (zspark and the rebuild: dbt's execution time; peers: the insert "
             "and the clustering statements). *Exact*: every run's rows (each key once) and "
             "every version it committed, read back by time travel.", ""]

    def final_skip(runs: list[dict[str, Any]]) -> str:
        return " / ".join(pct(runs[-1]["skip"][c]) for c in CLUSTER_COLUMNS)

    for table_format, found in formats.items():
        steps, totals = found["steps"], found["totals"]
        rows = [[label, f"{t['worst_gap_points']:.2f}", number(t.get("worst_rows_gap_points")),
                 f"{t['final_gap_points']:.2f}",
                 f"{t['rewritten_over_final']:.2f}x",
                 f"{t['base_seconds']:.1f} / {t['run_seconds']:.1f}", str(t["final_files"]),
                 final_skip(steps[label]),
                 "yes" if t["rows_exact"] and t["versions_exact"] else "**NO**"]
                for label, t in totals.items()]
        rebuilt = steps[REBUILD]
        rows.append([f"{REBUILD} (reference)", "-", "-", "-", "-",
                     f"{rebuilt[0]['seconds']:.1f} / "
                     f"{sum(s['seconds'] for s in rebuilt[1:]):.1f}",
                     str(rebuilt[-1]["files"]), final_skip(rebuilt),
                     ("yes" if all(s["rows_exact"] for s in rebuilt) else "**NO**")
                     + " (rows; not time-travelled)"])
        lines += [f"### {table_format} pipeline", ""]
        lines += md_table(["table", "worst gap", "worst gap by rows", "final gap",
                         "rows rewritten / final rows",
                         f"seconds, base / {config['runs']} appends", "final files",
                         f"final skip % ({' / '.join(CLUSTER_COLUMNS)})",
                         "exact rows and versions"], rows)
        per_run = [[str(s["run"]), f"{s['rows']:,}", f"{s['files']} / {r['files']}",
                    f"{s['rewritten_rows']:,}", f"{s['gap_points']:.2f}",
                    number(s.get("rows_gap_points")), f"{s['seconds']:.1f}"]
                   for s, r in zip(steps[ZSPARK], rebuilt, strict=True)]
        lines += ["", "The zspark model run by run (run 0: the base):", ""]
        lines += md_table(["run", "rows", "files (zspark / rebuild)", "rows rewritten",
                         "gap (points)", "gap by rows (points)", "seconds"], per_run)
        lines.append("")
        picture = img_dir / picture_name(source, table_format)
        if picture.exists():
            lines += [f"![gap to the rebuild and rows rewritten per run, {table_format}]"
                      f"({os.path.relpath(picture, report_dir)})", ""]

    zspark = {f: found["totals"][ZSPARK] for f, found in formats.items()}

    def verdict(value: str, met: bool) -> str:
        return f"{value}: {'met' if met else '**missed**'}"

    lines += ["### The bar", "",
              "The issue's bar for a clustered incremental model (set for Delta; checked "
              "here on each format's zspark model):", ""]
    lines += md_table(["", *zspark], [
        [f"gap to the rebuild <= {BAR_GAP_POINTS:.0f} points through the appends (worst)",
         *(verdict(f"{t['worst_gap_points']:.2f}", t["worst_gap_points"] <= BAR_GAP_POINTS)
           for t in zspark.values())],
        [f"rows rewritten <= {BAR_REWRITTEN:.0f}x the final rows",
         *(verdict(f"{t['rewritten_over_final']:.2f}x",
                   t["rewritten_over_final"] <= BAR_REWRITTEN) for t in zspark.values())],
        ["every version time-travels to exactly its rows",
         *(verdict("exact" if t["rows_exact"] and t["versions_exact"] else "not exact",
                   t["rows_exact"] and t["versions_exact"]) for t in zspark.values())]])
    rebuilt_files = ", ".join(f"{found['steps'][REBUILD][-1]['files']} ({f})"
                              for f, found in formats.items())
    zspark_files = ", ".join(f"{t['final_files']} ({f})" for f, t in zspark.items())
    most = max(s["files"] / r["files"] for found in formats.values()
               for s, r in zip(found["steps"][ZSPARK], found["steps"][REBUILD], strict=True))
    peer_files = [t["final_files"] for found in formats.values()
                  for label, t in found["totals"].items() if label != ZSPARK]
    lines += ["", "File counts differ between the tables, so the gaps are not like for like "
              "(more, smaller files skip more): after the last run the rebuild has "
              f"{rebuilt_files} files, the zspark model {zspark_files}, as it writes each "
              f"append as pieces of its own until a merge (up to {most:.1f}x the rebuild's "
              "files over the runs)"
              + (f", and the peers {min(peer_files)} to {max(peer_files)}, as they follow "
                 "their byte targets." if peer_files else ".")]
    if (config["rows"], config["files"]) != (BAR_ROWS, BAR_FILES):
        lines[-1] += (f" This is a {config['rows']:,}-row run at {config['files']} files, "
                      f"not the {BAR_ROWS:,}-row, {BAR_FILES}-file one the bar names.")
    lines.append("")
    return lines


if __name__ == "__main__":
    main()
