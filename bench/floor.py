"""Spark's own floor: the benchmark's rows written into the same number of files with no
clustering at all, in a fresh process, so a reader can tell the cost of Spark's Parquet
writer from the cost of clustering.

Three writes, each of the whole source table into ``--files`` files through the shuffle
partitions a clustered build would use (``partitioning.shuffle_partitions``), files cut by
row count as a build cuts them:

``write``
    round-robin rows, no key and no sort: what any Spark job pays to write these files;
``hash_sort``
    the same with a key Spark computes itself (``xxhash64`` of the clustering columns),
    range-partitioned on cut points of a sample and sorted within each partition: a
    clustered build without the Python key, the sample job, the index or the swap.
``curve_sort``
    the same with the project's Hilbert key in SQL (the layout's ``keyed_sql``, boundaries
    from the same sample): the clustered build's write step alone. Its first round
    beside its best shows what compiling the key's generated code costs a build (every
    build's query is new code to the JVM); the best beside ``hash_sort``'s, what the key
    costs once compiled.

Like a build, each runs after a warm-up scan of the source; all run twice in turn and
the faster of each is reported, with every round's time. Prints one JSON object.

    python -m bench.floor --files 1000
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.common import (
    CLUSTER_COLUMNS,
    DEFAULT_SESSION_DIR,
    SOURCE_SCHEMA,
    SOURCE_TABLE,
    data_files,
    source_files,
    spark_session,
    table_dir,
)
from dbt.adapters.zspark.core.partitioning import shuffle_partitions
from dbt.adapters.zspark.layouts.planning import DEFAULT_BOUNDARY_COUNT

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

CORES = 2  # the benchmark's sessions run local[2]
ROUNDS = 2


def floor_writes(session_dir: Path, files: int) -> dict[str, Any]:
    from pyspark.sql import functions as sf

    # By path, not through the metastore: the benchmark that calls this may still hold it.
    spark = spark_session(session_dir, "zspark-bench-floor", metastore=False)
    spark.sparkContext.setLogLevel("ERROR")
    source = spark.read.parquet(str(table_dir(session_dir, SOURCE_SCHEMA, SOURCE_TABLE)))
    input_bytes = sum(f.stat().st_size for f in source_files(session_dir))
    rows = source.count()  # also the warm-up scan
    partitions = shuffle_partitions(files, CORES, input_bytes)
    # As a build does: one partition per file for few files, else files cut by row count.
    per_file = 0 if partitions >= files else -(-rows // files)
    sample = source.sample(fraction=0.01, seed=1)
    key = sf.xxhash64(*CLUSTER_COLUMNS).alias("__floor_key")
    curve_sql, curve_sample_keys = curve_keyed_sql(source, sample)
    curve = spark.sql(curve_sql).select(*source.columns, "__floor_key")
    writes = {
        "write": source.repartition(partitions),
        "hash_sort": sorted_by_key(source.withColumn("__floor_key", key), partitions,
                                   [r[0] for r in sample.select(key).collect()]),
        "curve_sort": sorted_by_key(curve, partitions, curve_sample_keys),
    }
    results: dict[str, Any] = {"rows": rows, "partitions": partitions}
    scratch = Path(tempfile.mkdtemp(prefix="floor-", dir=session_dir))
    try:
        # Two rounds, best of each: the first write of a fresh JVM also pays its JIT.
        for round_ in range(ROUNDS):
            for name, frame in writes.items():
                target = scratch / f"{name}-{round_}"
                started = time.monotonic()
                writer = (frame.write.option("maxRecordsPerFile", per_file) if per_file
                          else frame.write)
                writer.parquet(str(target))
                seconds = time.monotonic() - started
                entry = results.setdefault(name, {"rounds": []})
                entry["rounds"].append(seconds)
                entry["seconds"] = min(entry["rounds"])
                entry["files"] = len(data_files(target))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        spark.stop()
    return results


def sorted_by_key(keyed: DataFrame, partitions: int, sample_keys: list[Any]) -> DataFrame:
    """``keyed``'s rows range-partitioned on ``__floor_key`` at cut points of the keys of a
    sample, sorted within each partition, the key dropped: as a clustered build writes."""
    from pyspark.sql import functions as sf

    cuts = sorted(sample_keys)
    step = max(1, len(cuts) // partitions)
    owner = sf.lit(0)
    for bound in cuts[step::step][: partitions - 1]:  # a chain is plenty for a few partitions
        owner = owner + (sf.col("__floor_key") >= sf.lit(bound)).cast("int")
    return (keyed.repartitionById(partitions, owner).sortWithinPartitions("__floor_key")
            .drop("__floor_key"))


def curve_keyed_sql(source: DataFrame, sample: DataFrame) -> tuple[str, list[Any]]:
    """The source's rows with the Hilbert key a build computes in SQL as ``__floor_key``
    (boundaries of each clustering column from ``sample``, the default ``boundary_count``),
    and the sample's keys. As in a build, those come from the layout's Python function (the
    same keys), so no Spark job runs the key's generated code before the timed writes."""
    from dbt.adapters.zspark.core import value_ranks
    from dbt.adapters.zspark.layouts import LAYOUTS, ColumnSpec

    source.createOrReplaceTempView("floor_source")
    types = {f.name: f.dataType.simpleString() for f in source.schema.fields}
    picked: Any = sample.select(*CLUSTER_COLUMNS).toPandas()
    specs = [ColumnSpec(c, types[c],
                        value_ranks.sample_boundaries(picked[c], DEFAULT_BOUNDARY_COUNT))
             for c in CLUSTER_COLUMNS]
    hilbert = LAYOUTS["hilbert_by"]
    function = hilbert.key_function(specs, "boundary", DEFAULT_BOUNDARY_COUNT)
    sample_keys = function(*(picked[c] for c in CLUSTER_COLUMNS)).tolist()
    return hilbert.keyed_sql(specs, list(CLUSTER_COLUMNS), DEFAULT_BOUNDARY_COUNT,
                             "select * from floor_source", "__floor_key"), sample_keys


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--session-dir", type=Path, default=DEFAULT_SESSION_DIR)
    args = parser.parse_args(argv)
    print(json.dumps(floor_writes(args.session_dir.resolve(), args.files)))


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


if __name__ == "__main__":
    main()
