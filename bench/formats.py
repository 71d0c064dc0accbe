"""zspark's clustered Delta and Iceberg tables beside the formats' own clustering, on seed
002's data, each format in one run of the same Spark:

- zspark Hilbert and balanced tables (``dbt run``, `file_format` of the format, the
  profile's ``table_format``), time from dbt's ``execution_time`` (sampling, write and
  reading the statistics back);
- Delta: a plain write then ``OPTIMIZE ... ZORDER BY``, and liquid clustering
  (``CLUSTER BY`` then ``OPTIMIZE``); Iceberg: a plain write then ``rewrite_data_files``
  with the ``zorder`` and the ``sort`` strategies; time is the write plus the rewrite,
  in a warmed-up Spark;
- per table: files, file size and rows max/mean, the share of files a point query skips
  per clustering column counted from the format's own statistics (values drawn from the
  rows), and the files Spark opens for the seed's three queries as a plain ``where``
  (its scan metrics), with the rows checked against the source.

    python -m bench.formats --rows 2000000 --files 1000     # bench/results/formats.json

With ``--hadoop-file-system`` every session writes through Hadoop's own local file system,
as one without zspark's JVM classes (no JDK to compile them) does; with
``--standard-settings`` the sessions enable the format by its own documented settings
(its jar, extension and session catalog) rather than the profile's ``table_format``.
Either way no picture is drawn.

Each format runs in a session directory of its own: a dbt process builds zspark's
tables, then a Spark process of its own (the metastore is a single-process Derby) builds
the peers and measures every table.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.common import (
    CLUSTER_COLUMNS,
    REPO,
    RESULTS,
    SEED_LITERALS,
    SOURCE_SCHEMA,
    SOURCE_TABLE,
    Progress,
    generate_in_subprocess,
    seed_query,
    session_env,
    source_files,
    write_format_project,
)
from bench.markdown import md_table
from bench.plots import skip_chart
from dbt.adapters.zspark.reach.session.jvm import SessionJvm

SCHEMA = "bench_formats"
FORMATS = ("delta", "iceberg")
ZSPARK_MODELS = {"zspark hilbert": "zs_hilbert", "zspark balanced": "zs_balanced"}
PEERS = {"delta": {"delta zorder": "delta_zorder", "delta liquid": "delta_liquid"},
         "iceberg": {"iceberg zorder": "iceberg_zorder", "iceberg sort": "iceberg_sort"}}
DEFAULT_OUT = RESULTS / "formats.json"
IMG_DIR = REPO / "docs" / "img"


#: A session's settings that keep Hadoop's own local file system (``--hadoop-file-system``).
HADOOP_FILE_SYSTEM = {"spark.hadoop.fs.file.impl": "org.apache.hadoop.fs.LocalFileSystem"}


def standard_settings(table_format: str) -> dict[str, str]:
    """The format's own documented settings for Spark's session catalog: its jars (the
    fetched files, or for an install without them its Maven packages), its SQL extension
    and its catalog class (Iceberg's over the Hive metastore), none of what
    ``table_format`` adds for an embedded Derby metastore."""
    from dbt.adapters.zspark.formats.settings import CATALOG, EXTENSIONS, JARS, PACKAGES
    from dbt.adapters.zspark.formats.settings import table_format as format_named

    chosen = format_named(table_format)
    jars = chosen.jar_files()
    settings = {JARS: ",".join(map(str, jars))} if jars else \
        {PACKAGES: ",".join(chosen.packages)}
    settings |= {EXTENSIONS: chosen.settings[EXTENSIONS], CATALOG: chosen.settings[CATALOG]}
    if f"{CATALOG}.type" in chosen.settings:
        settings[f"{CATALOG}.type"] = chosen.settings[f"{CATALOG}.type"]
    return settings


def write_project(root: Path, session_dir: Path, table_format: str, files: int,
                  settings: dict[str, str], shorthand: bool = True) -> None:
    """A dbt project whose models build zspark's clustered tables of ``table_format``
    from the source table (after a warm-up model that reads it once), its session given
    ``settings`` (and, with ``shorthand``, the profile's ``table_format``)."""
    columns = list(CLUSTER_COLUMNS)
    write_format_project(root, "zspark_bench_formats", session_dir, SCHEMA,
                         table_format if shorthand else None, {
        f"{name}.sql": f"""
            -- depends_on: {{{{ ref('warmup') }}}}
            {{{{ config(materialized='table', file_format='{table_format}',
                        {key}={columns}, file_count={files}) }}}}
            select * from {SOURCE_SCHEMA}.{SOURCE_TABLE}
        """ for name, key in (("zs_hilbert", "hilbert_by"), ("zs_balanced", "balanced_by"))},
        settings)


def build_zspark(root: Path, session_dir: Path, log: Progress) -> dict[str, float]:
    """``dbt run`` of the project; seconds per model (dbt's ``execution_time``)."""
    log(f"dbt run ({root})")
    done = subprocess.run(
        [str(Path(sys.executable).parent / "dbt"), "run", "--project-dir", str(root),
         "--profiles-dir", str(root)], cwd=root, capture_output=True, text=True,
        env={**session_env(session_dir), "DBT_TARGET_PATH": str(root / "target"),
             "DBT_LOG_PATH": str(root / "logs")})
    for line in done.stdout.splitlines():
        if "zspark" in line and ("files," in line or "writing" in line):
            print("           " + line.strip(), flush=True)
    if done.returncode != 0:
        raise RuntimeError("dbt run failed:\n" + "\n".join(done.stdout.splitlines()[-40:]))
    results = json.loads((root / "target" / "run_results.json").read_text())["results"]
    return {r["unique_id"].rsplit(".", 1)[-1]: float(r["execution_time"]) for r in results}


def measure_format(table_format: str, session_dir: Path, files: int, probes: int,
                   out: Path, settings: dict[str, str], shorthand: bool = True) -> None:
    """In this process: the peers' builds, then every table measured (``out``: JSON)."""
    from pyspark.sql import SparkSession

    from bench.footers import FileBounds, sample_values, skip_share
    from dbt.adapters.zspark.connections import with_session_defaults
    from dbt.adapters.zspark.formats import format_table
    from dbt.adapters.zspark.formats.settings import with_table_format
    from tests.harness.scan_metrics import files_opened

    log = Progress()
    builder = SparkSession.builder.appName(f"zspark-bench-{table_format}").master("local[2]")
    settings = with_session_defaults(
        with_table_format({"spark.driver.memory": "6g", **settings},
                          table_format if shorthand else None), str(session_dir))
    for key, value in settings.items():
        builder = builder.config(key, str(value))
    spark = builder.enableHiveSupport().getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    source = f"{SOURCE_SCHEMA}.{SOURCE_TABLE}"
    spark.sql(f"select count(*), sum(lo_revenue) from {source}").collect()  # warm up
    source_bytes = sum(f.stat().st_size for f in source_files(session_dir))
    target_bytes = max(1, source_bytes // files)

    seconds = {}
    for label, table in PEERS[table_format].items():
        log(f"{label}: write and cluster ({table})")
        spark.sql(f"drop table if exists {SCHEMA}.{table}")
        started = time.perf_counter()
        for statement in peer_statements(label, f"{SCHEMA}.{table}", source, files,
                                         target_bytes):
            spark.sql(statement).collect()
        seconds[label] = time.perf_counter() - started
        log(f"{label}: {seconds[label]:.1f}s")

    written_as = format_table(table_format)
    values = sample_values(source_files(session_dir), list(CLUSTER_COLUMNS), probes)
    expected = {c: sorted(spark.sql(seed_query(source, c)).collect()) for c in CLUSTER_COLUMNS}
    tables = {**ZSPARK_MODELS, **PEERS[table_format]}
    measured: dict[str, Any] = {}
    for label, table in tables.items():
        name = f"{SCHEMA}.{table}"
        typed = [(c, "string") for c in CLUSTER_COLUMNS]
        stats: Any = written_as.active_files(SessionJvm(spark), name, typed).toPandas()
        bounds = FileBounds(
            list(stats["file_path"]), stats["row_count"].to_numpy(),
            stats["file_size"].to_numpy(),
            {c: [None if v is None else v for v in stats[f"{c}__min"]] for c in CLUSTER_COLUMNS},
            {c: [None if v is None else v for v in stats[f"{c}__max"]] for c in CLUSTER_COLUMNS})
        queries = {}
        for column in CLUSTER_COLUMNS:
            frame = spark.sql(seed_query(name, column))
            rows = frame.collect()
            queries[column] = {"files_read": files_opened(frame),
                               "exact_rows": sorted(rows) == expected[column]}
        sizes, rows_per_file = bounds.sizes, bounds.rows
        measured[label] = {
            "files": bounds.files,
            "rows": int(rows_per_file.sum()),
            "bytes": int(sizes.sum()),
            "size_max_over_mean": float(sizes.max() / sizes.mean()),
            "rows_max_over_mean": float(rows_per_file.max() / rows_per_file.mean()),
            "skip": {c: skip_share(bounds, c, values[c]) for c in CLUSTER_COLUMNS},
            "seed_queries": queries,
            "seconds": seconds.get(label),
        }
        log(f"{label}: {measured[label]['files']} files, skip " + " / ".join(
            f"{100 * measured[label]['skip'][c]:.1f}" for c in CLUSTER_COLUMNS)
            + ", files read " + " / ".join(str(q["files_read"]) for q in queries.values()))
    spark.stop()
    out.write_text(json.dumps(measured, indent=2, default=str))


def peer_statements(label: str, table: str, source: str, files: int,
                    target_bytes: int) -> list[str]:
    """The statements that write ``source`` and cluster it the peer's way."""
    columns = ", ".join(CLUSTER_COLUMNS)
    plain = f"select /*+ REPARTITION({files}) */ * from {source}"
    if label == "delta zorder":
        return [f"set spark.databricks.delta.optimize.maxFileSize = {target_bytes}",
                f"create table {table} using delta as {plain}",
                f"optimize {table} zorder by ({columns})"]
    if label == "delta liquid":
        return [f"set spark.databricks.delta.optimize.maxFileSize = {target_bytes}",
                f"create table {table} using delta cluster by ({columns}) as {plain}",
                f"optimize {table}"]
    order = f"zorder({columns})" if label == "iceberg zorder" else ", ".join(
        f"{c} asc nulls first" for c in CLUSTER_COLUMNS)
    return [f"create table {table} using iceberg as {plain}",
            f"call spark_catalog.system.rewrite_data_files(table => '{table}', "
            f"strategy => 'sort', sort_order => '{order}', options => map("
            f"'rewrite-all', 'true', 'target-file-size-bytes', '{target_bytes}'))"]


def bar(table_format: str, measured: dict[str, Any], files: int) -> list[str]:
    """The issue's bar, checked on one format's figures: one line per condition."""
    zs = measured["zspark hilbert"]
    peer = measured[f"{table_format} zorder"]
    worst_zs, worst_peer = min(zs["skip"].values()), min(peer["skip"].values())
    mean_zs = sum(zs["skip"].values()) / len(zs["skip"])
    mean_peer = sum(peer["skip"].values()) / len(peer["skip"])
    most_read = max(q["files_read"] for q in zs["seed_queries"].values())
    return [
        f"hilbert skips >= 87% on every column: {100 * worst_zs:.1f}% worst "
        f"({'ok' if worst_zs >= 0.87 else 'MISSED'})",
        f"hilbert >= {table_format} zorder on its worst column: {100 * worst_zs:.1f} vs "
        f"{100 * worst_peer:.1f} ({'ok' if worst_zs >= worst_peer else 'MISSED'})",
        f"hilbert >= {table_format} zorder on the mean: {100 * mean_zs:.1f} vs "
        f"{100 * mean_peer:.1f} ({'ok' if mean_zs >= mean_peer else 'MISSED'})",
        f"a plain where reads <= 16% of files: {most_read} of {zs['files']} at most "
        f"({'ok' if most_read <= 0.16 * zs['files'] else 'MISSED'})",
        "exact rows on every query: " + ("ok" if all(
            q["exact_rows"] for m in measured.values() for q in m["seed_queries"].values())
            else "MISSED"),
        f"build no longer than the peer's write plus z-order: {zs['seconds']:.1f}s vs "
        f"{peer['seconds']:.1f}s ({'ok' if zs['seconds'] <= peer['seconds'] else 'MISSED'})",
    ]


def draw_pictures(report: dict[str, Any]) -> None:
    """A bar chart per format of the skip per column of every table (docs/img)."""
    for table_format, found in report["formats"].items():
        picture = IMG_DIR / f"formats_skip_{table_format}.png"
        picture.parent.mkdir(parents=True, exist_ok=True)
        skip_chart(picture, {label: m["skip"] for label, m in found["tables"].items()}, {},
                   CLUSTER_COLUMNS, f"{table_format}: files skipped by a point query, from "
                   f"the format's statistics ({report['rows']:,} rows, {report['files']} "
                   "files asked)")
        report.setdefault("pictures", {})[table_format] = str(picture.relative_to(REPO))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--probes", type=int, default=300)
    parser.add_argument("--formats", default=",".join(FORMATS))
    parser.add_argument("--work-dir", type=Path, default=REPO / ".bench-formats")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--hadoop-file-system", action="store_true",
                        help="write through Hadoop's local file system, as a session "
                             "without zspark's JVM classes")
    parser.add_argument("--standard-settings", action="store_true",
                        help="enable the format by its own documented settings, not the "
                             "profile's table_format")
    parser.add_argument("--measure", help=argparse.SUPPRESS)  # the per-format process
    parser.add_argument("--session-dir", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--measured", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    settings = HADOOP_FILE_SYSTEM if args.hadoop_file_system else {}
    shorthand = not args.standard_settings
    if args.measure:
        if not shorthand:
            settings = {**settings, **standard_settings(args.measure)}
        measure_format(args.measure, args.session_dir, args.files, args.probes,
                       args.measured, settings, shorthand)
        return

    log = Progress()
    report: dict[str, Any] = {"rows": args.rows, "files": args.files, "probes": args.probes,
                              "date": time.strftime("%Y-%m-%d %H:%M"),
                              "seed_literals": SEED_LITERALS, "formats": {}, "pictures": {}}
    for table_format in args.formats.split(","):
        session_dir = (args.work_dir / table_format).resolve()
        generate_in_subprocess(args.rows, "uniform", session_dir, log)
        project = session_dir / "project"
        write_project(project, session_dir, table_format, args.files,
                      settings if shorthand else {**settings,
                                                  **standard_settings(table_format)},
                      shorthand)
        times = build_zspark(project, session_dir, log)
        measured_path = session_dir / "measured.json"
        log(f"{table_format}: peers and measurements (a Spark of their own)")
        done = subprocess.run(
            [sys.executable, "-m", "bench.formats", "--measure", table_format,
             "--session-dir", str(session_dir), "--files", str(args.files),
             "--probes", str(args.probes), "--measured", str(measured_path),
             *(["--hadoop-file-system"] if args.hadoop_file_system else []),
             *(["--standard-settings"] if args.standard_settings else [])],
            cwd=REPO, env={**session_env(session_dir),
                           "PYTHONPATH": os.pathsep.join(
                               filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))})
        if done.returncode != 0:
            raise RuntimeError(f"{table_format}: measuring failed (exit {done.returncode})")
        measured = json.loads(measured_path.read_text())
        for label, model in ZSPARK_MODELS.items():
            measured[label]["seconds"] = times[model]
        report["formats"][table_format] = {"tables": measured,
                                           "bar": bar(table_format, measured, args.files)}
        if not (args.hadoop_file_system or args.standard_settings):
            draw_pictures(report)
        for line in report["formats"][table_format]["bar"]:
            log(f"{table_format}: {line}")
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    log(f"wrote {args.out}")


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
        lines += md_table(["table", "files", "size max/mean", "rows max/mean",
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


if __name__ == "__main__":
    main()
