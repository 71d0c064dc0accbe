"""The clustered table build in a Spark session: the sample's job, the key UDF, the keyed
SELECT as a view; what they run is planned in ``layouts/keyed_plan.py``.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import pandas as pd

from dbt.adapters.zspark.core.partitioning import (
    FileSpread,
    owner_search,
)
from dbt.adapters.zspark.core.sql_text import quote
from dbt.adapters.zspark.layouts.keyed_plan import (
    DRAW_COLUMN,
    KEY_COLUMN,
    OWNER_COLUMN,
    SAMPLE_SEED,
    InputSample,
    PreparedBuild,
    draw_cutoff,
    key_inputs,
    part_column,
    plan_keys,
    python_value,
    sample_size,
    searched_owner_sql,
    udf_keyed_sql,
    udf_name,
)
from dbt.adapters.zspark.layouts.layout_state import StoredLayout
from dbt.adapters.zspark.layouts.planning import ClusteringPlan
from dbt.adapters.zspark.reach.session.udfs import register_key_udf

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def expr(sql: str) -> Any:
    from pyspark.sql import functions as sf

    return sf.expr(sql)

def model_schema(spark: SparkSession, sql: str) -> dict[str, str]:
    """Output columns of a model's SQL and their Spark types, without running it."""
    return {f.name: f.dataType.simpleString() for f in spark.sql(sql).schema.fields}


def _at_most(frame: DataFrame, rows: int) -> bool:
    """Does Spark know the frame holds at most ``rows`` rows (a range, a small literal)?"""
    execution = frame._jdf.queryExecution()
    for plan in (execution.analyzed(), execution.optimizedPlan()):
        known = plan.maxRows()
        if known.isDefined() and int(known.get()) <= rows:
            return True
    return False


def _sample_and_count(frame: DataFrame, plan: ClusteringPlan, inputs: list[str],
                      wanted: int, cutoff: float = 1.0
                      ) -> tuple[pd.DataFrame, int, frozenset[tuple[Any, ...]]]:
    """The first of the build's two passes: a uniform random sample of ``wanted`` rows (the
    key ``inputs``, named as their columns), the exact row count and the exact set of table
    partitions the rows fall in (values cast to strings, as in the partition directories),
    from one job over the model's SQL. Only rows drawn under ``cutoff`` reach the top-k
    (:func:`draw_cutoff`); the count is of all rows."""
    from pyspark.sql import Observation
    from pyspark.sql import functions as sf

    observed = Observation("zspark_input")
    measures = [sf.count(sf.lit(1)).alias("rows")]
    if plan.partition_by:
        measures.append(sf.collect_set(sf.array(*[
            sf.col(part_column(i)).cast("string") for i in range(len(plan.partition_by))])
        ).alias("partitions"))
    picked = frame.selectExpr(*[
        f"{value} as {quote(c)}" for c, value in zip(plan.columns, inputs, strict=True)
    ], *[f"{quote(p)} as {quote(part_column(i))}" for i, p in enumerate(plan.partition_by)]
    ).observe(observed, *measures)
    if not _at_most(frame, wanted):
        # The k rows of smallest random draw, kept per task and merged (a top-k, no sort of
        # the input): a uniform sample. The count rides along the same job. (An input
        # known to be small skips this: Spark would drop the limit and sort it all.)
        drawn = picked.withColumn(DRAW_COLUMN, sf.rand(SAMPLE_SEED))
        if cutoff < 1.0:
            drawn = drawn.where(sf.col(DRAW_COLUMN) < sf.lit(cutoff))
        picked = drawn.orderBy(DRAW_COLUMN).limit(wanted).drop(DRAW_COLUMN)
    sample = as_pandas(picked)
    metrics = observed.get
    partitions = frozenset(tuple(values) for values in metrics.get("partitions", []))
    return sample, int(metrics["rows"]), partitions


def as_pandas(frame: DataFrame) -> pd.DataFrame:
    """A small result on the driver as pandas, handed over as Arrow: ``toPandas`` without
    Spark's Arrow setting pickles row by row (a sample of 100,000 rows of three columns:
    1.0 s against 0.45 s, the job included). Values convert as ``toPandas`` converts them:
    dates as ``datetime.date``, a number column with nulls as floats, decimals as
    ``Decimal``."""
    return frame.toArrow().to_pandas()


def _owner(spread: FileSpread, key: Any, parts: list[tuple[str, str]], key_type: str) -> Any:
    """The shuffle partition of a row: how many cut points sit at or below its sort position
    ((table partition values, key) in Spark's order). Cuts only balance the partitions: any
    owner keeps every row."""
    from pyspark.sql import functions as sf

    if not spread.cuts:
        return sf.lit(0)
    if spread.key_shift is not None:
        return sf.shiftright(key, spread.key_shift).cast("int")

    def position(values: list[Any], key_value: Any) -> Any:
        fields = [value.alias(f"p{i}") for i, value in enumerate(values)]
        return sf.struct(*fields, key_value.alias("k"))

    # Without table partitions the key alone is the position: no struct to build per row.
    row = position([sf.col(quote(name)) for name, _ in parts], key) if parts else key

    def cut_position(cut: tuple[Any, ...]) -> Any:
        key_value = sf.lit(python_value(cut[-1])).cast(key_type)
        if not parts:
            return key_value
        return position([sf.lit(python_value(v[1])).cast(t)
                         for v, (_, t) in zip(cut[:-1], parts, strict=True)], key_value)

    return owner_search(spread.cuts, lambda cut: row >= cut_position(cut),
                        lambda test, then, otherwise: sf.when(test, then).otherwise(otherwise),
                        lambda j: sf.lit(j))


def sample_input(spark: SparkSession, plan: ClusteringPlan, sql: str,
                 expected_rows: int | None = None) -> InputSample:
    """One job over ``sql``: a uniform sample of the key inputs (and table partition
    values) and the row count. ``expected_rows``: the rows the input held at its last
    build, if known (a rebuild), which lets the sample drop most rows early."""
    started = time.perf_counter()
    frame = spark.sql(sql)
    input_bytes = int(str(frame._jdf.queryExecution().optimizedPlan().stats().sizeInBytes()))
    wanted = sample_size(plan)
    sample, rows, partitions = _sample_and_count(frame, plan, key_inputs(plan), wanted,
                                                 draw_cutoff(wanted, expected_rows))
    return InputSample(sample, rows, input_bytes, time.perf_counter() - started, partitions)


def prepare_build(spark: SparkSession, plan: ClusteringPlan, sql: str) -> PreparedBuild:
    """Sample the input, register the model's key UDF and return the clustered SELECT.

    The model's SQL runs twice: once to sample and count, once to write. The written rows
    go through one shuffle into a few partitions that own consecutive key ranges; each is
    sorted by the key and cut into files of equal row count.
    """
    sampled = sample_input(spark, plan, sql)
    return keyed_build(spark, plan, sql, sampled, None,
                       plan.resolve_file_count(sampled.input_bytes))


def keyed_build(spark: SparkSession, plan: ClusteringPlan, sql: str, sampled: InputSample,
                stored: StoredLayout | None, file_count: int, pieces: bool = False,
                file_per_partition: bool = False, select: bool = True) -> PreparedBuild:
    """The clustered SELECT of ``sql`` (already sampled) into ``file_count`` files, keyed
    in SQL (the layout's ``keyed_sql``; the direct curve method by the model's registered UDF; see
    :func:`plan_keys`). The write cuts files every
    ``PreparedBuild.file_rows`` rows (a session setting around the INSERT). Without
    ``select`` only the sample's keys (``Reach.keyed``): planning the keyed SELECT of a
    three-column Hilbert key takes about 0.7 s of a fresh JVM's time."""
    started = time.perf_counter()
    frame = spark.sql(sql)
    schema = {f.name: f.dataType.simpleString() for f in frame.schema.fields}
    keyed = plan_keys(plan, sampled, stored, file_count, spark.sparkContext.defaultParallelism,
                      schema, pieces, file_per_partition)
    if not select:
        return keyed.prepared("", sampled, file_count, started)
    if plan.curve_method == "boundary":
        # The same keys in SQL: computed in the write stage's generated code, with no rows
        # sent to a Python worker and back (bench.keys measures both).
        keyed_rows = plan.layout.keyed_sql(keyed.specs, key_inputs(plan),
                                           plan.boundary_count, sql, KEY_COLUMN, keyed.tree,
                                           keyed.weights)
    else:
        name = udf_name(plan.model)
        register_key_udf(spark, name, keyed.function, plan.layout.key_type(plan.curve_method))
        keyed_rows = udf_keyed_sql(plan, sql)
    key_type = plan.layout.key_type(plan.curve_method)
    owned = searched_owner_sql(keyed_rows, keyed.spread, keyed.parts, key_type)
    if owned is not None:
        keyed_rows, owner = owned, expr(OWNER_COLUMN)
    else:
        owner = _owner(keyed.spread, expr(quote(KEY_COLUMN)), keyed.parts, key_type)
    view = f"zspark_build_{udf_name(plan.model).removeprefix('zspark_key_')}"
    (spark.sql(keyed_rows)
     .repartitionById(keyed.spread.partitions, owner)
     .sortWithinPartitions(*(expr(o) for o in keyed.order))
     .select(*(expr(quote(c)) for c in schema))
     .createOrReplaceTempView(view))
    return keyed.prepared(f"select * from {view}", sampled, file_count, started)
