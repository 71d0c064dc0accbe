"""What a keyed write's tasks carry: the write stage with and without the plan that keyed
its rows, beside Spark's own sorted write of the same rows.

A stage's tasks each deserialize the plan they run, and a write stage's plan holds the
stages before it: a Hilbert key's boundaries, step tables and cut points are thousands
of boxed constants. Iceberg's writer makes a file per task, so a write into 1,000 files
pays that 1,000 times. The embedded session reads the keyed rows as a scan of their
shuffle instead (``SessionReach.shuffled``). Each variant writes the scale bar's rows
(city, product, day; a three-column Hilbert key over 1,000 boundaries) into ``--files``
shuffle partitions of Spark's ``noop`` sink, so only the stages are timed; the write
stage's tasks' deserialization and run time come from Spark's event log.

    python -m bench.task_binaries                 # 1 M rows into 1,000 partitions
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.common import RESULTS, Progress
from bench.markdown import md_table

BAR_SQL = """select id,
       concat('city_', cast(pmod(hash(id, 1), 250) as string)) as city,
       concat('product_', cast(pmod(hash(id, 2), 1000) as string)) as product,
       date_add(date'2026-01-01', cast(pmod(hash(id, 3), 730) as int)) as day,
       round(pmod(hash(id, 4), 100000) / 100, 2) as amount
from range({rows})"""
COLUMNS = ("city", "product", "day")
VARIANTS = ("sorted", "keyed, plan carried", "keyed, shuffle scanned")


def stage_figures(log_folder: Path, descriptions: set[str]) -> dict[str, dict[str, float]]:
    """The largest stage (most tasks) of each job description: its tasks' summed
    deserialization and run milliseconds, from the session's event log."""
    stage_of: dict[int, str] = {}
    stages: dict[int, dict[str, float]] = {}
    for path in log_folder.iterdir():
        for line in path.read_text().splitlines():
            event = json.loads(line)
            kind = event["Event"]
            if kind == "SparkListenerJobStart":
                description = event.get("Properties", {}).get("spark.job.description")
                if description in descriptions:
                    for stage in event["Stage IDs"]:
                        stage_of[stage] = description
            elif kind == "SparkListenerTaskEnd" and event["Stage ID"] in stage_of:
                metrics = event.get("Task Metrics") or {}
                figures = stages.setdefault(event["Stage ID"],
                                            {"tasks": 0, "deser_ms": 0, "run_ms": 0})
                figures["tasks"] += 1
                figures["deser_ms"] += metrics.get("Executor Deserialize Time", 0)
                figures["run_ms"] += metrics.get("Executor Run Time", 0)
    largest: dict[str, dict[str, float]] = {}
    for stage, figures in stages.items():
        description = stage_of[stage]
        if figures["tasks"] > largest.get(description, {"tasks": -1})["tasks"]:
            largest[description] = figures
    return largest


def measure(rows: int, files: int, repeat: int, log: Progress) -> dict[str, Any]:
    from pyspark.sql import SparkSession

    from dbt.adapters.zspark.connections import session_defaults
    from dbt.adapters.zspark.layouts.keyed_plan import InputSample
    from dbt.adapters.zspark.layouts.planning import plan_clustering
    from dbt.adapters.zspark.reach.frames.clustering import keyed_build
    from dbt.adapters.zspark.reach.session.reach import SessionReach

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    with tempfile.TemporaryDirectory() as root:
        events = Path(root) / "events"
        events.mkdir()
        builder = SparkSession.builder.master("local[2]").config("spark.driver.memory", "4g")
        for key, value in {**session_defaults(root),
                           "spark.eventLog.enabled": "true",
                           "spark.eventLog.dir": events.as_uri(),
                           "spark.eventLog.compress": "false",
                           "spark.eventLog.rolling.enabled": "false"}.items():
            builder = builder.config(key, value)
        spark = builder.getOrCreate()
        source = BAR_SQL.format(rows=rows)
        spark.sql(source).cache().createOrReplaceTempView("bar")
        spark.table("bar").count()
        schema = {f.name: f.dataType.simpleString() for f in spark.table("bar").schema.fields}
        plan = plan_clustering("bar_hilbert", {"hilbert_by": list(COLUMNS), "file_count": files},
                               schema, "table")
        assert plan is not None
        sample = spark.sql(f"select {', '.join(COLUMNS)} from bar order by rand(1) "
                           f"limit 100000").toPandas()
        sampled = InputSample(sample, rows, rows * 40, 0.0)
        reach = SessionReach(spark, lambda sql: ([], []), lambda sql: None)

        def keyed(shuffled: Callable[[Any], Any]) -> Callable[[], Any]:
            def frame() -> Any:
                prepared = keyed_build(spark, plan, "select * from bar", sampled, None, files,
                                       2, schema, file_per_partition=True, shuffled=shuffled)
                return spark.sql(prepared.select_sql)
            return frame

        def spark_sorted() -> Any:
            return (spark.table("bar").repartitionByRange(files, *COLUMNS)
                    .sortWithinPartitions(*COLUMNS))

        frames: dict[str, Callable[[], Any]] = {
            "sorted": spark_sorted, "keyed, plan carried": keyed(lambda frame: frame),
            "keyed, shuffle scanned": keyed(reach.shuffled)}
        seconds: dict[str, list[float]] = {name: [] for name in VARIANTS}
        descriptions = set()
        for round_ in range(repeat):
            for name in VARIANTS:
                description = f"{name} #{round_}"
                descriptions.add(description)
                spark.sparkContext.setJobDescription(description)
                started = time.perf_counter()
                frames[name]().write.format("noop").mode("overwrite").save()
                seconds[name].append(time.perf_counter() - started)
                log(f"{description}: {seconds[name][-1]:.2f} s")
        spark.sparkContext.setJobDescription(None)  # type: ignore[arg-type]
        spark.stop()
        stages = stage_figures(events, descriptions)
    # The first round warms the JVM: the later rounds' best counts.
    kept = range(1, repeat) if repeat > 1 else range(repeat)
    results = {}
    for name in VARIANTS:
        best = min(kept, key=lambda r: seconds[name][r])
        stage = stages[f"{name} #{best}"]
        results[name] = {"seconds": round(seconds[name][best], 2),
                         "write_tasks": int(stage["tasks"]),
                         "deserialize_s": round(stage["deser_ms"] / 1000, 2),
                         "run_s": round(stage["run_ms"] / 1000, 2)}
    return {"rows": rows, "files": files, "repeat": repeat, "variants": results}


def table(result: dict[str, Any]) -> list[str]:
    header = ["variant", "seconds", "write stage tasks", "their deserialization, s",
              "their run, s"]
    body = [[name, f"{v['seconds']:.2f}", f"{v['write_tasks']:,}", f"{v['deserialize_s']:.2f}",
             f"{v['run_s']:.2f}"] for name, v in result["variants"].items()]
    return md_table(header, body)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", type=Path, default=RESULTS / "task-binaries.json")
    args = parser.parse_args(argv)
    log = Progress()
    result = measure(args.rows, args.files, args.repeat, log)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print("\n".join(table(result)))


if __name__ == "__main__":
    main()
