"""BENCHMARKS.md and its pictures from a benchmark's results (the JSON next to the report).

    python -m bench.report BENCHMARKS.json            # re-render without re-running
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

from bench.common import (
    CLUSTER_COLUMNS,
    LAYOUTS,
    REPO,
    SEED_FILES,
    SEED_LITERALS,
    SEED_ROWS,
    SEED_SKIP,
)
from bench.format_pipeline import (
    BAR_FILES,
    BAR_GAP_POINTS,
    BAR_REWRITTEN,
    BAR_ROWS,
    FORMATS,
    REBUILD,
    ZSPARK,
    picture_name,
)
from bench.plots import (
    LABELS,
    POLICY_LABELS,
    boxes_chart,
    build_time_chart,
    pipeline_chart,
    scale_chart,
    skip_chart,
)


def _pct(value: float) -> str:
    return f"{100 * value:.1f}"


def _mb(value: float) -> str:
    return f"{value / 2**20:.1f}"


def _ms(value: float) -> str:
    return f"{1000 * value:.0f}"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |",
             "|" + "|".join("---" if i == 0 else "--:" for i in range(len(header))) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def _pictures(results: dict[str, Any], img_dir: Path) -> dict[str, Path]:
    img_dir.mkdir(parents=True, exist_ok=True)
    config = results["config"]
    layouts = results["layouts"]
    scale = f"{config['rows']:,} rows, {config['files']} files"
    paths = {"skip": img_dir / "skip_ratios.png", "boxes": img_dir / "file_boxes.png",
             "build": img_dir / "build_times.png"}
    skip_chart(paths["skip"], {name: data["skip_sampled"] for name, data in layouts.items()},
               SEED_SKIP, CLUSTER_COLUMNS,
               f"Point-query file skipping, mean over {config['probes']} sampled values "
               f"per column ({scale})")
    ranks = results["ranks"]
    boxes_chart(paths["boxes"], {name: data["boxes"] for name, data in layouts.items()},
                (ranks["s_city"], ranks["c_city"]),
                (ranks["seed_s_city"], SEED_LITERALS["s_city"]),
                f"Each file's [min, max] of s_city x c_city, as value ranks ({scale})")
    build_time_chart(paths["build"], {name: data["build"]["seconds"]
                                      for name, data in layouts.items()},
                     f"Build time per layout ({scale}; delta-rs: optimize.z_order alone)",
                     warm={name: data["build"]["warm"]["seconds"]
                           for name, data in layouts.items() if "warm" in data["build"]})
    return paths


def render(results: dict[str, Any], out: Path, img_dir: Path) -> None:
    """Write the markdown report ``out`` and its pictures into ``img_dir``."""
    pictures = _pictures(results, img_dir)
    config, machine, layouts = results["config"], results["machine"], results["layouts"]
    rel = {key: os.path.relpath(path, out.parent) for key, path in pictures.items()}
    names = [name for name in (*LAYOUTS, "delta") if name in layouts]
    quick = " (quick run: checks the benchmark, figures not meaningful)" if config["quick"] else ""
    lines = [
        "# Benchmarks" + quick,
        "",
        "Seed 002's experiment (Bilibili's data-skipping study on SSB scale 100) redone with "
        "dbt-zspark: one wide table, four layouts over `s_city, c_city, p_brand`, three "
        "point queries, and the share of data files each query never opens. Produced by",
        "",
        "```",
        f"python -m bench.run --rows {config['rows']} --files {config['files']} "
        f"--variant {config['variant']} --reps {config['reps']}",
        "```",
        "",
        f"in {results['steps']['total_s'] / 60:.0f} minutes "
        "(raw figures: the JSON file of the same name).",
        "",
        "## Machine",
        "",
        *_table(["", ""], [
            ["date", machine["date"]],
            ["cores / RAM", f"{machine['cores']} / {machine['memory_gib']} GiB"],
            ["load average (1/5/15 min) at start / end",
             " / ".join(", ".join(f"{x:.1f}" for x in machine.get(key, []))
                        for key in ("load_average", "load_average_end"))],
            ["CPU", machine["cpu"]],
            ["OS", machine["os"]],
            ["Python / Java", f"{machine['python']} / {machine['java']}"],
            *[[package, version] for package, version in machine["versions"].items()],
            ["Spark", "local[2], in-process (dbt-spark `session` method), default settings"],
        ]),
        "",
        "## Data",
        "",
        f"`python -m bench.generate --rows {config['rows']} --variant {config['variant']}`: "
        "SSB's lineorder joined with date, customer, supplier and part (23 columns). "
        "Distinct values in the generated table, beside the seed's:",
        "",
        *_table(["column", "seed 002", "here"], [
            [f"`{c}`", f"{s:,}", f"{results['source']['distinct'][c]:,}"]
            for c, s in zip(CLUSTER_COLUMNS, (5025, 5025, 884_686), strict=True)
        ]),
        "",
        f"Rows: seed {SEED_ROWS:,}, here {config['rows']:,}. Files per layout: seed "
        f"{SEED_FILES}, here {config['files']} ({config['rows'] // config['files']:,} rows "
        f"per file here, {SEED_ROWS // SEED_FILES:,} there).",
        "",
        "| layout | dbt model config |",
        "|---|---|",
        f"| random | `file_count={config['files']}` (round-robin) |",
        "| linear | `linear_by=['s_city','c_city','p_brand']` (range partitioning) |",
        "| Z-order, direct | `zorder_by=[...]`, `curve_method='direct'` (the values' own "
        "order-preserving bits, no boundaries: seed 002's \"Interleaved Index\") |",
        "| Z-order | `zorder_by=[...]` (boundary-based, `boundary_count=1000`) |",
        "| Hilbert | `hilbert_by=[...]` (boundary-based, `boundary_count=1000`) |",
        "| delta-rs Z-order | `DeltaTable.optimize.z_order([...], target_size=...)`, "
        "outside reference |",
        "",
        "## Files skipped (%)",
        "",
        "Seed 002's queries (`s_city = 'UNITED KI143'`, `c_city = 'UNITED KI158'`, "
        "`p_brand = 'MFGR#053072348'`). *Spark* is measured: the scan metric "
        "\"number of files read\" of the query run through `zspark_scan`. *Footers, literal* "
        "counts files whose footer [min, max] holds the seed's value; *footers, sampled* "
        f"averages that over {config['probes']} values drawn from random rows, the fairer "
        "figure for a table this small.",
        "",
    ]
    rows = []
    for name in names:
        data = layouts[name]
        for column in CLUSTER_COLUMNS:
            seed = SEED_SKIP.get(name, {}).get(column)
            spark = "-"
            if "queries" in data:
                read = data["queries"][column]["scan"]["files_read"]
                spark = f"{_pct(1 - read / data['files'])} ({read} file{'s' * (read != 1)})"
            rows.append([LABELS[name] if column == CLUSTER_COLUMNS[0] else "", f"`{column}`",
                         "-" if seed is None else f"{seed:.1f}", spark,
                         _pct(data["skip_literal"][column]), _pct(data["skip_sampled"][column])])
    lines += _table(["layout", "column", "seed 002", "Spark, seed query",
                     "footers, literal", "footers, sampled"], rows)
    lines += ["", f"![skip ratios]({rel['skip']})", "",
              "Why curves skip more: every file's [min, max] box over two of the three "
              "columns. Random files span everything; linear files are thin slices of "
              "`s_city` spanning all of `c_city`; curve files are small boxes, so a "
              "point query's line crosses few of them.", "",
              f"![file boxes]({rel['boxes']})", ""]

    lines += ["## Queries: plain scan vs `zspark_scan`", "",
              f"Median of {config['reps']} runs (plain and zspark_scan taking turns, after a "
              "first run for the metrics and a full pass over every layout), in a Python Spark "
              "session on the same warehouse after dbt finished. Plain = the seed's SQL on the "
              "table (Spark still prunes row groups inside each file it opens); zspark_scan = the "
              "same SQL over `{{ zspark_scan(ref(...), predicate) }}`, compiled by "
              "`dbt compile` (the index is consulted at compile time; *lookup* is the time "
              "of that index query alone). Size = \"size of files read\"; rows = rows the "
              "scan produced after Parquet row-group filtering. *No file* is the same query "
              "with every file excluded: the fixed cost of a query on this machine, which "
              "no skipping can remove; *above it* compares what plain and zspark_scan spend "
              "beyond that floor. *Scan task ms* is Spark's \"scan time\" metric: task "
              "time spent opening files, reading footers and decoding rows, summed over "
              "tasks (2 cores work in parallel, so it can exceed the wall time).", ""]
    rows = []
    for name in names:
        if "queries" not in layouts[name]:
            continue
        for column in CLUSTER_COLUMNS:
            query = layouts[name]["queries"][column]
            plain, scan = query["plain"], query["scan"]
            speedup = plain["median_s"] / scan["median_s"] if scan["median_s"] else float("nan")
            floor = query.get("floor", {}).get("median_s", float("nan"))
            above = (plain["median_s"] - floor) / max(scan["median_s"] - floor, 1e-3)
            rows.append([LABELS[name] if column == CLUSTER_COLUMNS[0] else "", f"`{column}`",
                         f"{plain['files_read']} / {scan['files_read']}",
                         f"{_mb(plain['bytes_read'])} / {_mb(scan['bytes_read'])}",
                         f"{plain['rows_scanned']:,} / {scan['rows_scanned']:,}",
                         f"{_ms(plain['median_s'])} / {_ms(scan['median_s'])}",
                         f"{plain.get('scan_ms', '-')} / {scan.get('scan_ms', '-')}",
                         f"{speedup:.1f}x", _ms(floor), f"{above:.1f}x",
                         _ms(query["index_lookup_s"]),
                         "yes" if query["same_result"] else "**NO**"])
    lines += _table(["layout", "column", "files plain / scan", "MB plain / scan",
                     "rows scanned plain / scan", "ms plain / scan",
                     "scan task ms plain / scan", "speed-up",
                     "ms no file", "speed-up above it", "lookup ms", "same rows"], rows)

    lines += ["", "## Builds", "",
              "dbt-zspark layouts: the model's `execution_time` in dbt's run_results.json "
              "(sampling, key computation, shuffle, write, and for clustered layouts the "
              "file-stats index). *Fresh JVM*: each layout in its own process, its own "
              "`dbt run` after a warm-up model that scans the input: the build pays the "
              "JVM's warm-up of Spark's writer (class loading, JIT). *Warm JVM*: the same "
              "model built again by a second `dbt run` in that process (`bench.rebuild`), "
              "as every build runs on a long-lived Spark (a Thrift server, a cluster "
              "application, a run of many models): a daily pipeline's rebuild. delta-rs: "
              "the `optimize.z_order` call alone (Rust, in-process, no JVM), after tuning "
              "`target_size` to about the same file count. Seed 002 published no build "
              "times.", ""]

    def split(steps: dict[str, float]) -> str:
        return " / ".join(f"{steps[s]:.1f}" for s in ("sample", "write", "index", "log")
                          if s in steps) or "-"

    rows = []
    for name in names:
        data = layouts[name]
        build = data["build"]
        warm = build.get("warm")
        rows.append([LABELS[name], f"{build['seconds']:.1f}",
                     f"{warm['seconds']:.1f}" if warm else "-",
                     f"{build['ratio_to_linear']:.2f}"
                     + (f" / {warm['ratio_to_linear']:.2f}" if warm else ""),
                     split(build.get("steps") or {}),
                     split(warm.get("steps") or {}) if warm else "-", str(data["files"]),
                     f"{data.get('size_max_over_mean', 0.0):.2f}",
                     f"{data.get('rows_max_over_mean', 0.0):.2f}", _mb(data["bytes"])])
    lines += _table(["layout", "seconds, fresh JVM", "seconds, warm JVM",
                     "vs linear (fresh / warm)", "sample / write / index / log s, fresh",
                     "sample / write / index / log s, warm", "files", "size max/mean",
                     "rows max/mean", "MB"], rows)
    if "delta" in layouts:
        attempts = layouts["delta"]["build"]["attempts"]
        lines += ["", "delta-rs `target_size` tuning: " + "; ".join(
            f"{a[0]:,} B -> {a[1]} files ({a[2]:.1f} s)" for a in attempts) + "."]
    if "floor" in results:
        lines += ["", *floor_lines(results["floor"], layouts)]
    lines += ["", f"![build times]({rel['build']})", ""]

    scale_json = out.parent / "BENCHMARKS-scale.json"
    if scale_json.exists():
        lines += scale_section(json.loads(scale_json.read_text()), img_dir, out.parent)

    pipeline_json = out.parent / "BENCHMARKS-pipeline.json"
    if pipeline_json.exists():
        lines += pipeline_section(json.loads(pipeline_json.read_text()), img_dir, out.parent)
    keys_json = out.parent / "BENCHMARKS-keys.json"
    if keys_json.exists():
        lines += keys_section(json.loads(keys_json.read_text()))
    thrift_json = out.parent / "BENCHMARKS-thrift.json"
    if thrift_json.exists():
        lines += thrift_section(json.loads(thrift_json.read_text()))
    balanced_json = out.parent / "BENCHMARKS-balanced.json"
    if balanced_json.exists():
        lines += balanced_section(json.loads(balanced_json.read_text()), out.parent)
    formats_json = out.parent / "BENCHMARKS-formats.json"
    if formats_json.exists():
        lines += formats_section(json.loads(formats_json.read_text()), out.parent)
    for name, heading in (("BENCHMARKS-format-pipeline.json", "Pipeline on Delta Lake and Iceberg"),
                          ("BENCHMARKS-format-pipeline-bar.json",
                           "Pipeline on Delta Lake and Iceberg at the bar's scale")):
        format_pipeline_json = out.parent / name
        if format_pipeline_json.exists():
            lines += format_pipeline_section(json.loads(format_pipeline_json.read_text()),
                                             img_dir, out.parent, heading,
                                             format_pipeline_json)

    tests = results.get("tests", [])
    if tests:
        lines += ["## skip_coverage tests", "",
                  f"`dbt test -s test_type:generic`, `min_skip_ratio` "
                  f"{config['min_skip_ratio']} on seed 002's three predicates:", ""]
        lines += [f"- `{t['test']}`: {t['status']}" for t in tests]
        lines.append("")
    if results.get("problems"):
        lines += ["## Problems found by the run", ""]
        lines += [f"- {p}" for p in results["problems"]]
        lines.append("")

    lines += [
        "## What is not comparable",
        "",
        f"- Scale: {config['rows']:,} rows here against {SEED_ROWS:,}. With "
        f"{config['rows'] // config['files']:,} rows per file, a file holds only a part of "
        "the values a column could take; seed 002's files held 533k rows each, so their "
        "min/max spans were wider for the same layout. Skip shares of a point query depend "
        "mostly on the file count and on how a layout cuts the value space, which is why "
        f"the seed's file count is kept ({config['files']} here); the sampled averages are "
        "the robust figures, a single literal can land in a gap between files by chance.",
        f"- Cardinality: `p_brand` has 884,686 possible values but only "
        f"{results['source']['distinct']['p_brand']:,} occur in {config['rows']:,} rows.",
        "- Machine: a 2-core VM in local mode against a cluster. Times here are dominated by "
        "fixed costs (query planning, task start, listing 1000 files); they show the "
        "direction, not the speed-ups seed 002 reports at TB scale.",
        "- Storage: seed 002 used Iceberg's manifest min/max; here plain Parquet tables with "
        "dbt-zspark's `<model>__zindex` table, read at `dbt compile` time. Both skip on "
        "file-level min/max, which the footer counts reproduce independently of either.",
        "- File system: on a local disk, Hadoop without its native library (pyspark ships "
        "none) forks a `chmod` process for every file it creates. Embedded sessions write "
        "through Hadoop's raw local file system (no `.crc` side file, so one fork per data "
        "file rather than two: 2-3 s less on a 1000-file build here). HDFS and the "
        "object-store connectors fork none; delta-rs writes its files directly.",
        "- delta-rs Z-order interleaves the raw bytes of values (no sampled boundaries), in "
        "Rust on one machine: a reference for file skipping and for order of magnitude of "
        "build cost, not a like-for-like timing.",
        "- Generator: SSB-shaped data from `bench/generate.py`, not SSB's dbgen output; "
        f"values formatted like the seed's, uniform popularity ({config['variant']}).",
        "",
    ]
    out.write_text("\n".join(lines))


def floor_lines(floor: dict[str, Any], layouts: dict[str, Any]) -> list[str]:
    """Spark's own write of the same rows (bench.floor) beside the Hilbert build and delta-rs."""
    write, hashed = floor["write"], floor["hash_sort"]
    lines = [
        f"Spark's floor (`python -m bench.floor`, a fresh process after a warm-up scan, "
        f"best of {len(write.get('rounds', [0]))} rounds, "
        f"{floor['partitions']} shuffle partitions, files cut by row count, no index): "
        f"round-robin rows with no key or sort {write['seconds']:.1f} s ({write['files']} "
        f"files); a key Spark computes itself (`xxhash64` of the clustering columns), "
        f"range-partitioned and sorted, {hashed['seconds']:.1f} s ({hashed['files']} files)."]
    curve = floor.get("curve_sort")
    if curve:
        lines[0] += (f" The same with the Hilbert key in SQL: {curve['seconds']:.1f} s "
                     f"({curve['files']} files); its first round, which compiles the key's "
                     f"generated code, {curve['rounds'][0]:.1f} s (the `xxhash64` write's "
                     f"{hashed['rounds'][0]:.1f} s).")
    hilbert = layouts.get("hilbert", {}).get("build", {})
    delta = layouts.get("delta", {}).get("build", {}).get("seconds")
    if hilbert and delta:
        first = write.get("rounds", [write["seconds"]])[0]
        lines[0] += (f" Against delta-rs's {delta:.1f} s: Spark's bare write is "
                     f"{first / delta:.1f}x in its first round (a fresh JVM) "
                     f"and {write['seconds'] / delta:.1f}x at best, the keyed and sorted "
                     f"write {hashed['seconds'] / delta:.1f}x at best; the Hilbert build "
                     f"{hilbert['seconds'] / delta:.1f}x in a fresh JVM")
        warm = hilbert.get("warm")
        lines[0] += (f", {warm['seconds'] / delta:.1f}x rebuilt in a warm one." if warm
                     else ".")
    return lines


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
            steps = build.get("steps") or {}
            split = " / ".join(f"{steps[s]:.1f}" for s in ("sample", "write", "index", "log")
                               if s in steps) or "-"
            memory = f"{(build.get('jvm_bytes') or build['tree_bytes']) / 2**30:.2f}"
            rows.append([f"{point['rows']:,}" if name == names[0] else "", LABELS[name],
                         f"{build['seconds']:.1f}", f"{build['seconds_per_m_rows']:.2f}",
                         split, memory, str(build["files"])])
    lines += _table(["rows", "layout", "seconds", "s per M rows",
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
                             f"{query['files_read']} / {_ms(query['median_s'])}")
            rows.append([f"{point['rows']:,}" if column == CLUSTER_COLUMNS[0] else "",
                         f"`{column}`", *cells])
    lines += _table(["rows", "column", *[f"{label}: files / ms" for label in labels]], rows)
    lines += [""]
    if scale.get("problems"):
        lines += [f"- problem: {p}" for p in scale["problems"]] + [""]
    return lines


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
             f"{config['step_share']:.0%} each, for three policies: zspark's default, never "
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
        lines += _table(["policy", "worst gap", "final gap", "rows rewritten / final rows",
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
        lines += _table(["run", *[f"{POLICY_LABELS.get(p, p)}: skip % / files / s"
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



def keys_section(keys: dict[str, Any]) -> list[str]:
    """The "Curve keys: UDF and SQL" section from ``python -m bench.keys``'s JSON."""
    rows = [[layout, f"{r['udf_keys_per_core_second'] / 1e6:.3f}",
             f"{r['sql_keys_per_core_second'] / 1e6:.3f}",
             f"{r['udf_seconds']:.2f}", f"{r['sql_seconds']:.2f}", str(r["mismatches"])]
            for layout, r in keys["layouts"].items()]
    return ["## Curve keys: pandas UDFs and Spark SQL", "",
            f"Produced by `make bench-keys` (`{keys['command'].strip()}`): {keys['rows']:,} "
            f"rows of three string columns, boundaries from a 100k-row sample, on "
            f"{keys['cores']} cores; each path computes every row's key once (best of the "
            f"runs). A plain pass over the same columns takes {keys['plain_seconds']:.2f} s. "
            "Builds key rows in SQL (in a session, over a Thrift server and on a cluster); the "
            "UDFs hold the same keys for `curve_method='direct'` and for the sample. Both "
            "agree on every row (last column).", "",
            *_table(["layout", "UDF M keys/s/core", "SQL M keys/s/core", "UDF s", "SQL s",
                     "keys differing"], rows), ""]


def thrift_section(thrift: dict[str, Any]) -> list[str]:
    """The "Over thrift and on a cluster" section from ``python -m bench.thrift``'s JSON."""
    builds, queries = thrift["builds"], thrift["queries"]
    if "thrift" not in queries:  # written before the cluster build was measured
        queries = {"thrift": queries}
    columns = list(queries["thrift"])

    def steps(build: dict[str, Any]) -> str:
        return ", ".join(f"{k} {v:.1f}" for k, v in build.get("steps", {}).items())

    rows = [[method, f"{b['seconds']:.1f}", steps(b), str(b["files"]),
             *(f"{100 * b['skip'][c]:.2f}" for c in columns)] for method, b in builds.items()]
    scans = [[method, c, str(q["files"]), str(q["scan_files_read"]),
              f"{100 * q['scan_files_read'] / q['files']:.1f}", str(q["plain_files_read"]),
              "yes" if q["same_result"] else "NO"]
             for method, per_column in queries.items() for c, q in per_column.items()]
    return ["## Over thrift and on a cluster", "",
            f"Produced by `make bench-thrift` (`{thrift['command'].strip()}`): seed 002's "
            f"Hilbert model on {thrift['config']['rows']:,} rows and "
            f"{thrift['config']['files']} files, built by `dbt run` in an embedded session "
            "(SQL keys, footer index), through a Spark Thrift Server on the same warehouse "
            "(no Python on the server: keys in SQL, index by one SQL aggregation) and, where "
            "listed, on a standalone cluster on loopback (two one-core workers whose Python "
            "has no dbt and no plugin). Skip is the share of files a point query skips, over "
            "values sampled per column, from each table's footers.", "",
            *_table(["build", "seconds", "steps (s)", "files",
                     *(f"{c} skip %" for c in columns)], rows), "",
            "Seed 002's point queries through `zspark_scan` (compiled with that build's "
            "target, run in a session that counts the files Spark opened):", "",
            *_table(["build", "column", "files", "zspark_scan opened", "% opened",
                     "plain opened", "rows equal"], scans), ""]


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
            *_table(["data", "layout", "chosen", "seconds", "vs Hilbert", "files",
                     "rows max/mean",
                     *(f"{c} skip % rows" for c in columns),
                     *(f"{c} skip % values" for c in columns
                       if "skip_value_uniform" in first),
                     *(f"`{c}` files read" for c in queried), "workload files read"], rows),
            "", *pictures]

def formats_section(results: dict[str, Any], report_dir: Path) -> list[str]:
    """The "Delta Lake and Iceberg tables" section from ``python -m bench.formats``."""
    lines = ["## Delta Lake and Iceberg tables", "",
             f"Produced by `make bench-formats` (`python -m bench.formats --rows "
             f"{results['rows']} --files {results['files']}`, {results.get('date', '')}): "
             "seed 002's table written as each format by zspark (`dbt run`, Hilbert and "
             "balanced on s_city, c_city, p_brand, `file_count` as below) and by the "
             "format's own clustering (a plain write of the same rows into as many files, "
             "then Delta's `OPTIMIZE ... ZORDER BY` or liquid `CLUSTER BY` + `OPTIMIZE`, "
             "Iceberg's `rewrite_data_files` with `zorder(...)` or a sort order, each at the "
             "file size of the source bytes over the file count). Skip: the share of files a "
             f"point query skips, over {results['probes']} values drawn from the rows, "
             "counted from the format's own statistics. Files read: Spark's files-read "
             "metric for the seed's three queries as a plain `where` (Iceberg's "
             "`resultDataFiles`), rows checked against the source. Seconds: to a clustered "
             "table (zspark: dbt's execution time, sampling, write and reading the "
             "statistics back, after a warm-up model; peers: the write plus the rewrite in "
             "a warmed-up Spark).", ""]
    for table_format, found in results["formats"].items():
        rows = []
        for label, m in found["tables"].items():
            queries = m["seed_queries"].values()
            rows.append([label, str(m["files"]), f"{m['size_max_over_mean']:.2f}",
                         f"{m['rows_max_over_mean']:.2f}",
                         *(f"{100 * v:.1f}" for v in m["skip"].values()),
                         " / ".join(str(q["files_read"]) for q in queries),
                         "yes" if all(q["exact_rows"] for q in queries) else "NO",
                         f"{m['seconds']:.1f}"])
        columns = list(next(iter(found["tables"].values()))["skip"])
        lines += [f"### {table_format}", ""]
        lines += _table(["table", "files", "size max/mean", "rows max/mean",
                         *(f"skip {c} %" for c in columns), "files read (seed queries)",
                         "exact rows", "seconds"], rows)
        asked = results["files"]
        more = [f"{label} {m['files']}" for label, m in found["tables"].items()
                if m["files"] > 1.1 * asked]
        if more:
            lines += ["", f"Files beyond the {asked} asked for ({', '.join(more)}): the "
                      "format's rewrite cuts files by bytes, and its files come out smaller "
                      "than the source's; more, smaller files favour its skip shares."]
        lines += ["", "The bar:", ""] + [f"- {line}" for line in found["bar"]] + [""]
        picture = results.get("pictures", {}).get(table_format)  # relative to the report
        if picture and (report_dir / picture).exists():
            lines += [f"![skip per column, {table_format}]({picture})", ""]
    return lines


def _number(value: float | None) -> str:
    """A figure to two places, or '-' where a run did not measure it."""
    return "-" if value is None else f"{value:.2f}"


def format_pipeline_section(results: dict[str, Any], img_dir: Path, report_dir: Path,
                            heading: str = "Pipeline on Delta Lake and Iceberg",
                            source: Path = Path("BENCHMARKS-format-pipeline.json")
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
    if source.name != "BENCHMARKS-format-pipeline.json":
        out = f" --out {source.name}"
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
             f"`append`, zspark's default re-clustering policy) {by_peers}. The reference "
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
        return " / ".join(_pct(runs[-1]["skip"][c]) for c in CLUSTER_COLUMNS)

    for table_format, found in formats.items():
        steps, totals = found["steps"], found["totals"]
        rows = [[label, f"{t['worst_gap_points']:.2f}", _number(t.get("worst_rows_gap_points")),
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
        lines += _table(["table", "worst gap", "worst gap by rows", "final gap",
                         "rows rewritten / final rows",
                         f"seconds, base / {config['runs']} appends", "final files",
                         f"final skip % ({' / '.join(CLUSTER_COLUMNS)})",
                         "exact rows and versions"], rows)
        per_run = [[str(s["run"]), f"{s['rows']:,}", f"{s['files']} / {r['files']}",
                    f"{s['rewritten_rows']:,}", f"{s['gap_points']:.2f}",
                    _number(s.get("rows_gap_points")), f"{s['seconds']:.1f}"]
                   for s, r in zip(steps[ZSPARK], rebuilt, strict=True)]
        lines += ["", "The zspark model run by run (run 0: the base):", ""]
        lines += _table(["run", "rows", "files (zspark / rebuild)", "rows rewritten",
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
    lines += _table(["", *zspark], [
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


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("results", type=Path, help="JSON written by bench.run")
    parser.add_argument("--out", type=Path, default=None, help="default: the JSON's .md")
    parser.add_argument("--img-dir", type=Path, default=REPO / "docs" / "img")
    args = parser.parse_args(argv)
    results = json.loads(args.results.read_text())
    render(results, args.out or args.results.with_suffix(".md"), args.img_dir)


if __name__ == "__main__":
    main()

