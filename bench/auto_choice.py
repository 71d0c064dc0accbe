"""``cluster_by='auto'`` against layouts chosen by hand: files read per query.

    python -m bench.auto_choice                      # 1 M rows into 64 files
    python -m bench.auto_choice --rows 200000 --files 32

A table of eight candidate columns (skewed, two pairs correlated) serves a hidden workload
of point and range queries; halfway the workload shifts to other columns. For each half:

- AUTO: the layout the advice chooses (``advice/scoring.py``), scored on a sample;
- every layout a person could choose over the workload's columns (each alone, and Hilbert,
  Z-order and balanced over every subset of two to four), each really built into the same
  number of files; the best of them is the best hand choice;
- Hilbert over all eight candidate columns, and no clustering.

A layout's figure is the files ``zspark_scan`` opens per query, weighted by the queries'
counts: each built table's real per-file min/max/null counts judged by the scan's own
pruning condition. After the shift, the first half's choice is measured under the new
workload too. Results go to ``bench/results/auto-choice.json`` and the picture to
``docs/img/auto-choice.png``; BENCHMARKS.md's section "Clustering chosen by the workload"
is drawn from them.
"""

from __future__ import annotations

import argparse
import datetime
import json
import random
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from bench.builds import machine_info
from bench.common import RESULTS, Progress, spark_session
from bench.markdown import md_table

RESULTS_JSON = RESULTS / "auto-choice.json"
SCHEMA = "auto_bench"
#: The eight candidate columns: skewed, and two correlated pairs (region with city, ts
#: with day).
SOURCE = """
select id, city, concat('R', cast(city_rank div 20 as string)) as region, brand, day,
       timestamp_seconds(1704067200 + datediff(day, date'2024-01-01') * 86400
                         + cast(u4 * 86400 as bigint)) as ts,
       round(exp(u5 * 8), 2) as amount,
       element_at(array('A', 'B', 'C', 'D', 'E'), cast(floor(pow(u6, 2) * 5) as int) + 1)
         as segment,
       cast(floor(pow(u7, 2) * 50) as int) + 1 as qty
from (
  select id, u4, u5, u6, u7, city_rank,
         concat('CITY', lpad(cast(city_rank as string), 3, '0')) as city,
         cast(floor(u2 * 1000) as int) as brand,
         date_add(date'2024-01-01', cast(floor(u3 * 365) as int)) as day
  from (
    select id, cast(floor(pow(u1, 3) * 200) as int) as city_rank, u2, u3, u4, u5, u6, u7
    from (
      select id, {uniforms} from range({rows})
    )
  )
)
"""
#: The hidden workloads, before and after the shift: (template, share of the queries).
WORKLOADS: dict[str, list[tuple[str, float]]] = {
    "before": [("city = '{city}'", 0.4),
               ("day between date'{day}' and date'{day_end}'", 0.3),
               ("brand = {brand}", 0.2),
               ("amount between {amount} and {amount_high}", 0.1)],
    "after": [("brand = {brand}", 0.5),
              ("segment = '{segment}' and qty = {qty}", 0.3),
              ("region = '{region}'", 0.2)],
}
QUERIES_PER_TEMPLATE = 12


def source_sql(rows: int) -> str:
    uniforms = ", ".join(f"pmod(hash(id, {k}), 1000003) / 1000003.0 as u{k}"
                         for k in range(1, 8))
    return SOURCE.format(uniforms=uniforms, rows=rows)


def workload_queries(spark: Any, table: str, name: str, seed: int) -> list[Any]:
    """Concrete queries of a workload: each template's values drawn from the table's rows
    (so popular values are asked for as often as they occur)."""
    from dbt.adapters.zspark.skipping.workload import DeclaredQuery

    rows = spark.sql(f"select * from {table} where rand({seed}) < 0.01 limit 2000").collect()
    pick = random.Random(seed)
    queries = []
    for template, share in WORKLOADS[name]:
        for _ in range(QUERIES_PER_TEMPLATE):
            row = pick.choice(rows)
            values = {"city": row.city, "region": row.region, "brand": row.brand,
                      "day": row.day.isoformat(),
                      "day_end": (row.day + datetime.timedelta(days=6)).isoformat(),
                      "amount": row.amount, "amount_high": round(row.amount * 1.1, 2),
                      "segment": row.segment, "qty": row.qty}
            queries.append(DeclaredQuery(template.format(**values),
                                         share / QUERIES_PER_TEMPLATE, name))
    return queries


def auto_choice(spark: Any, table: str, queries: Sequence[Any], files: int) -> Any:
    """The advice's choice for ``queries`` on a sample of ``table``."""
    from dbt.adapters.zspark.advice.scoring import candidate_types, score_layouts
    from dbt.adapters.zspark.core.value_ranks import normalize_type
    from dbt.adapters.zspark.layouts.keyed_plan import key_input_sql
    from dbt.adapters.zspark.layouts.planning import CLUSTERABLE_TYPES
    from dbt.adapters.zspark.reach.frames.clustering import as_pandas
    from dbt.adapters.zspark.skipping.workload import filtered_columns

    schema = {f.name: f.dataType.simpleString() for f in spark.table(table).schema.fields}
    clusterable = [c for c, t in schema.items() if normalize_type(t) in CLUSTERABLE_TYPES
                   and c != "id"]
    counts: dict[str, float] = {}
    for query in queries:
        for column in filtered_columns(query.predicate, clusterable):
            counts[column] = counts.get(column, 0.0) + query.count
    types = candidate_types(schema, counts, clusterable)
    rows = spark.table(table).count()
    inputs = ", ".join(f"{key_input_sql(f'`{c}`', t)} as `{c}`" for c, t in types.items())
    sample = as_pandas(spark.sql(f"select {inputs} from {table} "
                                 f"where rand(17) < {min(1.0, 100_000 / rows)!r}"))
    return score_layouts(sample, schema, counts, clusterable, queries, files,
                         lambda sql: as_pandas(spark.sql(sql)))


def build(spark: Any, table: str, target: str, config: Mapping[str, Any], files: int) -> float:
    """``target`` written from ``table`` as a clustered build of ``config`` would write it
    (no config: unclustered, round-robin into ``files`` files); its seconds."""
    from dbt.adapters.zspark.layouts.planning import plan_clustering
    from dbt.adapters.zspark.reach.frames.clustering import model_schema
    from tests.harness.reaches import session_reach

    started = time.perf_counter()
    sql = f"select * from {table}"
    spark.sql(f"drop table if exists {target}")
    if not config:
        spark.sql(f"create table {target} using parquet as "
                  f"select /*+ REPARTITION({files}) */ * from {table}")
        return time.perf_counter() - started
    schema = model_schema(spark, sql)
    plan = plan_clustering(target, {**config, "file_count": files}, schema, "table")
    assert plan is not None
    reach = session_reach(spark)
    sampled = reach.sample(plan, sql, schema, None)
    prepared = reach.keyed(plan, sql, sampled, None, files, schema, False, False)
    spark.conf.set("spark.sql.files.maxRecordsPerFile", str(prepared.file_rows or 0))
    try:
        spark.sql(f"create table {target} using parquet as {prepared.select_sql}")
    finally:
        spark.conf.unset("spark.sql.files.maxRecordsPerFile")
    return time.perf_counter() - started


def real_stats_sql(tables: Mapping[str, str], types: Mapping[str, str]) -> str:
    """Per built table (by layout name) and file: rows and each column's min, max, nulls
    (NaNs of a double), as the index holds them."""
    from dbt.adapters.zspark.core.sql_text import sql_string

    parts = []
    for name, table in tables.items():
        stats = [f"min(`{c}`) as `{c}__min`, max(`{c}`) as `{c}__max`, "
                 f"count_if(`{c}` is null) as `{c}__nulls`"
                 + (f", count_if(isnan(`{c}`)) as `{c}__nans`" if t == "double" else "")
                 for c, t in types.items()]
        parts.append(f"select {sql_string(name)} as candidate, count(*) as row_count, "
                     f"{', '.join(stats)} from {table} group by input_file_name()")
    return "\nunion all\n".join(parts)


def files_read(spark: Any, tables: Mapping[str, str], queries: Sequence[Any],
               types: Mapping[str, str]) -> dict[str, tuple[float, int]]:
    """Per layout: the share of its files zspark_scan opens per query (weighted by count),
    and its files (a layout of few distinct keys may write fewer than asked: shares keep
    layouts of unequal file counts comparable)."""
    from dbt.adapters.zspark.advice.scoring import score_sql
    from dbt.adapters.zspark.reach.frames.clustering import as_pandas

    sql = score_sql(real_stats_sql(tables, types), queries, types, list(types))
    total = sum(q.count for q in queries)
    found = {}
    for row in as_pandas(spark.sql(sql)).to_dict("records"):
        reads = sum(q.count * float(row[f"q{i}"]) for i, q in enumerate(queries)) / total
        found[row["candidate"]] = (reads / int(row["files"]), int(row["files"]))
    return found


def run_half(spark: Any, name: str, source: str, files: int, seed: int,
             log: Progress, earlier: Mapping[str, Any] | None) -> dict[str, Any]:
    from dbt.adapters.zspark.advice.candidates import UNCLUSTERED

    queries = workload_queries(spark, source, name, seed)
    started = time.perf_counter()
    choice = auto_choice(spark, source, queries, files)
    advice_seconds = time.perf_counter() - started
    log(f"{name}: AUTO chose {choice.chosen.candidate.name} "
        f"({advice_seconds:.1f} s, {len(choice.ranked)} candidates simulated)")
    schema = {f.name: f.dataType.simpleString() for f in spark.table(source).schema.fields}
    layouts: dict[str, dict[str, Any]] = {}
    # The hand choices: every candidate the advice weighs, each really built.
    for candidate in (s.candidate for s in choice.ranked):
        config = {} if candidate.config_key == UNCLUSTERED else _config(candidate)
        layouts[candidate.name] = config
    every = [c for c in schema if c != "id"]
    layouts["hilbert over all eight"] = {"hilbert_by": every}
    if earlier is not None:
        layouts[f"the first half's choice ({earlier['auto']})"] = earlier["auto_config"]
    tables, seconds = {}, {}
    for i, (layout, config) in enumerate(layouts.items()):
        target = f"{SCHEMA}.{name}_{i}"
        seconds[layout] = build(spark, source, target, config, files)
        tables[layout] = target
        log(f"{name}: built {layout} ({seconds[layout]:.1f} s)")
    types = {c: t for c, t in schema.items() if c != "id"}
    reads = files_read(spark, tables, queries, types)
    simulated = {s.candidate.name: s.expected for s in choice.ranked}
    hand = {k: v for k, v in reads.items() if k in simulated and k != "unclustered"}
    best = min(hand, key=lambda k: hand[k][0])
    auto = choice.chosen.candidate.name
    return {
        "queries": [[q.predicate, q.count] for q in queries],
        "auto": auto, "auto_config": _config(choice.chosen.candidate)
        if choice.chosen.candidate.config_key != UNCLUSTERED else {},
        "advice_seconds": advice_seconds,
        "best_hand": best,
        "auto_over_best": reads[auto][0] / max(reads[best][0], 1e-9),
        "layouts": {k: {"files_per_query": reads[k][0] * files, "share": reads[k][0],
                        "files": reads[k][1],
                        "simulated_share": simulated.get(k), "build_seconds": seconds[k]}
                    for k in layouts},
    }


def _config(candidate: Any) -> dict[str, Any]:
    from dbt.adapters.zspark.layouts import LAYOUTS

    config: dict[str, Any] = {candidate.config_key: list(candidate.columns)}
    if LAYOUTS[candidate.config_key].takes_weights and len(set(candidate.weights)) > 1:
        config["cluster_weights"] = dict(zip(candidate.columns, candidate.weights,
                                             strict=True))
    return config


def section(results: Mapping[str, Any]) -> list[str]:
    """The section "Clustering chosen by the workload" of BENCHMARKS.md."""
    machine = results["machine"]
    lines = ["## Clustering chosen by the workload", "",
             f"Produced by `{results['command']}`, {machine['date']}, {machine['cores']} "
             f"cores: {results['rows']:,} rows of eight candidate columns into "
             f"{results['files']} files, in one Spark session. *files per query*: the share "
             "of its files `zspark_scan` opens, weighted by the queries' counts, from each "
             "built table's real per-file statistics, times the files asked for (a layout "
             "of few distinct keys writes fewer: *files* is what it wrote); *simulated*: "
             "the advice's share on its sample. The best hand choice is the best of every "
             "layout over the workload's columns, each built.", "",
             "![files per query](docs/img/auto-choice.png)", ""]
    for half, result in results["halves"].items():
        lines += [f"**{half} the shift**: AUTO chose {result['auto']}, "
                  f"{result['auto_over_best']:.2f}x the best hand choice "
                  f"({result['best_hand']}); the advice took {result['advice_seconds']:.1f} s.",
                  ""]
        ranked = sorted(result["layouts"].items(), key=lambda i: i[1]["files_per_query"])
        rows = [[("**" + k + "**") if k == result["auto"] else k,
                 f"{v['files_per_query']:.1f}", str(v["files"]),
                 "-" if v["simulated_share"] is None else f"{100 * v['simulated_share']:.1f}%"]
                for k, v in ranked[:10] + [i for i in ranked[10:] if "unclustered" in i[0]
                                           or "all eight" in i[0] or "first half" in i[0]]]
        lines += md_table(["layout", "files per query", "files", "simulated"], rows)
        lines.append("")
    return lines


def chart(results: Mapping[str, Any], path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    halves = list(results["halves"].items())
    figure, axes = plt.subplots(1, len(halves), figsize=(5 * len(halves), 3.6))
    for axis, (half, result) in zip(list(figure.axes), halves, strict=True):
        layouts = result["layouts"]
        bars = {"AUTO": layouts[result["auto"]]["files_per_query"],
                "best by hand": layouts[result["best_hand"]]["files_per_query"],
                "Hilbert, all 8": layouts["hilbert over all eight"]["files_per_query"],
                "unclustered": layouts["unclustered"]["files_per_query"]}
        earlier = [k for k in layouts if k.startswith("the first half")]
        if earlier:
            bars["before's choice"] = layouts[earlier[0]]["files_per_query"]
        axis.bar(list(bars), list(bars.values()),
                 color=["#2a7", "#27a", "#a72", "#999", "#c55"][:len(bars)])
        axis.set_title(f"{half} the shift")
        axis.set_ylabel("files opened per query")
        axis.tick_params(axis="x", labelrotation=20)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)
    plt.close(figure)
    del axes


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--files", type=int, default=64)
    parser.add_argument("--session-dir", type=Path, default=Path("/tmp/zspark-auto-choice"))
    parser.add_argument("--out", type=Path, default=RESULTS_JSON)
    args = parser.parse_args(argv)
    log = Progress()
    spark = spark_session(args.session_dir, "auto-choice")
    spark.sparkContext.setLogLevel("ERROR")
    spark.sql(f"create database if not exists {SCHEMA}")
    source = f"{SCHEMA}.source"
    if not spark.catalog.tableExists(source) or spark.table(source).count() != args.rows:
        log(f"writing the source: {args.rows:,} rows")
        spark.sql(f"drop table if exists {source}")
        spark.sql(f"create table {source} using parquet as {source_sql(args.rows)}")
    halves: dict[str, Any] = {}
    halves["before"] = run_half(spark, "before", source, args.files, 1, log, None)
    halves["after"] = run_half(spark, "after", source, args.files, 2, log, halves["before"])
    results = {"machine": machine_info(), "rows": args.rows, "files": args.files,
               "command": "python -m bench.auto_choice"
               + (f" --rows {args.rows}" if args.rows != 1_000_000 else "")
               + (f" --files {args.files}" if args.files != 64 else ""),
               "halves": halves}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1, default=str))
    chart(results, Path(__file__).resolve().parents[1] / "docs" / "img" / "auto-choice.png")
    for half, result in halves.items():
        log(f"{half}: AUTO {result['auto']} reads {result['auto_over_best']:.2f}x the best "
            f"hand choice {result['best_hand']}")


if __name__ == "__main__":
    main()
