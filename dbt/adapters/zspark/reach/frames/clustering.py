"""The clustered table build on a DataFrame session (the embedded one, a Spark Connect
client's): the sample's job, the key UDF, the keyed SELECT as a view; what they run is
planned in ``layouts/keyed_plan.py``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import pandas as pd
from dbt.adapters.events.logging import AdapterLogger

from dbt.adapters.zspark.core.sql_text import quote
from dbt.adapters.zspark.layouts.keyed_plan import (
    DRAW_COLUMN,
    KEY_COLUMN,
    OWNER_COLUMN,
    SAMPLE_SEED,
    InputSample,
    PlannedInput,
    PreparedBuild,
    draw_cutoff,
    key_inputs,
    part_column,
    plan_keys,
    sample_size,
    searched_owner_sql,
    udf_keyed_sql,
    udf_name,
)
from dbt.adapters.zspark.layouts.layout_state import StoredLayout
from dbt.adapters.zspark.layouts.planning import ClusteringPlan
from dbt.adapters.zspark.reach.frames.api import api_of
from dbt.adapters.zspark.reach.frames.udfs import register_key_udf
from dbt.adapters.zspark.reach.server.sql_build import facts_sql, owner_sql

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

#: Spark's plan of a query (its frame and SQL) read before it runs, with a row bound:
#: whether Spark knows the query holds at most that many rows.
Planned = Callable[[Any, str, int], PlannedInput]

logger = AdapterLogger("zspark")


def model_schema(spark: Any, sql: str) -> dict[str, str]:
    """Output columns of a model's SQL and their Spark types, without running it."""
    return {f.name: f.dataType.simpleString() for f in spark.sql(sql).schema.fields}


def _sample_and_count(frame: DataFrame, plan: ClusteringPlan, inputs: list[str],
                      wanted: int, cutoff: float = 1.0, known_small: bool = False,
                      merge_tasks: int | None = None
                      ) -> tuple[pd.DataFrame, int, frozenset[tuple[Any, ...]]]:
    """The first of the build's two passes: a uniform random sample of ``wanted`` rows (the
    key ``inputs``, named as their columns), the exact row count and the exact set of table
    partitions the rows fall in (values cast to strings, as in the partition directories),
    from one job over the model's SQL. Only rows drawn under ``cutoff`` reach the top-k
    (:func:`draw_cutoff`); the count is of all rows. ``known_small``: Spark knows the
    input holds at most ``wanted`` rows. ``merge_tasks``: how many tasks the input's are
    merged into before the top-k (:meth:`FrameReach.sample_tasks`), None to keep them."""
    api = api_of(frame.sparkSession)
    sf = api.functions
    observed = api.observation("zspark_input")
    measures = [sf.count(sf.lit(1)).alias("rows")]
    if plan.partition_by:
        measures.append(sf.collect_set(sf.array(*[
            sf.col(part_column(i)).cast("string") for i in range(len(plan.partition_by))])
        ).alias("partitions"))
    picked = frame.selectExpr(*[
        f"{value} as {quote(c)}" for c, value in zip(plan.columns, inputs, strict=True)
    ], *[f"{quote(p)} as {quote(part_column(i))}" for i, p in enumerate(plan.partition_by)]
    ).observe(observed, *measures)
    if not known_small:
        # The k rows of smallest random draw, kept per task and merged (a top-k, no sort of
        # the input): a uniform sample. The count rides along the same job. (An input
        # known to be small skips this: Spark would drop the limit and sort it all.)
        drawn = picked.withColumn(DRAW_COLUMN, sf.rand(SAMPLE_SEED))
        if cutoff < 1.0:
            drawn = drawn.where(sf.col(DRAW_COLUMN) < sf.lit(cutoff))
        if merge_tasks:
            # Each task keeps its own top-k and one task merges them: tasks x k rows.
            # Merged into as many tasks as run at once, the merge takes cores x k. The
            # rows were drawn in the input's own tasks, below this: the same sample.
            drawn = drawn.coalesce(merge_tasks)
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


def sample_input(spark: Any, plan: ClusteringPlan, sql: str, planned: Planned,
                 expected_rows: int | None = None,
                 merge_tasks: int | None = None) -> InputSample:
    """One job over ``sql``: a uniform sample of the key inputs (and table partition
    values) and the row count. ``expected_rows``: the rows the input held at its last
    build, if known (a rebuild), which lets the sample drop most rows early; a first build
    of a large input that Spark counts from its scans alone counts it first
    (:meth:`PlannedInput.counts_first`). ``merge_tasks``: see :func:`_sample_and_count`."""
    started = time.perf_counter()
    frame = spark.sql(sql)
    wanted = sample_size(plan)
    # The bound matters to the count too: Spark drops a limit above as many rows as it
    # knows the input holds, and the sort left runs the input twice (its range bounds'
    # sampling job), observed twice.
    found = planned(frame, sql, wanted)
    if expected_rows is None and found.counts_first():
        expected_rows = int(spark.sql(facts_sql(sql, ())).collect()[0][0])
        logger.debug(f"zspark: {plan.model}: input counted before its sample, "
                     f"{expected_rows} rows (scans alone, planned at "
                     f"{found.size_bytes / 2**30:.2f} GiB)")
    sample, rows, partitions = _sample_and_count(
        frame, plan, key_inputs(plan), wanted, draw_cutoff(wanted, expected_rows),
        known_small=found.known_small, merge_tasks=merge_tasks)
    return InputSample(sample, rows, found.size_bytes, time.perf_counter() - started,
                       partitions)


def keyed_build(spark: Any, plan: ClusteringPlan, sql: str, sampled: InputSample,
                stored: StoredLayout | None, file_count: int, cores: int,
                schema: Mapping[str, str], pieces: bool = False,
                file_per_partition: bool = False, select: bool = True,
                shuffled: Callable[[Any], Any] = lambda rows: rows) -> PreparedBuild:
    """The clustered SELECT of ``sql`` (already sampled; ``schema``: its columns, as the
    caller read them: analyzing the model's SQL again took 0.4 s of a fresh JVM's build)
    into ``file_count`` files, keyed in SQL (the layout's ``keyed_sql``; the direct curve
    method by the model's registered UDF; see :func:`plan_keys`), its shuffle partitions
    sized to ``cores``. The write
    cuts files every ``PreparedBuild.file_rows`` rows (a session setting around the
    INSERT). Without ``select`` only the sample's keys (``Reach.keyed``): planning the
    keyed SELECT of a three-column Hilbert key takes about 0.7 s of a fresh JVM's time.
    ``shuffled``: the rows sent to their shuffle partitions as the write's tasks should
    read them (the embedded session's detach the plan that keyed them,
    ``SessionReach.shuffled``)."""
    started = time.perf_counter()
    keyed = plan_keys(plan, sampled, stored, file_count, cores, schema, pieces,
                      file_per_partition)
    if not select:
        return keyed.prepared("", sampled, file_count, started)
    if plan.curve_method == "boundary":
        # The same keys in SQL: computed in the write stage's generated code, with no rows
        # sent to a Python worker and back (bench.keys measures both).
        keyed_rows = plan.layout.keyed_sql(keyed.specs, key_inputs(plan),
                                           plan.boundary_count, sql, KEY_COLUMN, keyed.tree,
                                           keyed.weights)
    else:
        register_key_udf(spark, udf_name(plan.model), keyed.function,
                         plan.layout.key_type(plan.curve_method))
        keyed_rows = udf_keyed_sql(plan, sql)
    key_type = plan.layout.key_type(plan.curve_method)
    owned = searched_owner_sql(keyed_rows, keyed.spread, keyed.parts, key_type)
    if owned is not None:
        keyed_rows, owner = owned, OWNER_COLUMN
    else:
        owner = owner_sql(keyed.spread, quote(KEY_COLUMN), key_type, keyed.parts)
    expr = api_of(spark).functions.expr
    view = f"zspark_build_{udf_name(plan.model).removeprefix('zspark_key_')}"
    # Each row goes to the shuffle partition its owner names, by number.
    shuffle_started = time.perf_counter()
    rows = shuffled(spark.sql(keyed_rows).repartitionById(keyed.spread.partitions, expr(owner)))
    shuffle_seconds = time.perf_counter() - shuffle_started
    (rows.sortWithinPartitions(*(expr(o) for o in keyed.order))
     .select(*(expr(quote(c)) for c in schema))
     .createOrReplaceTempView(view))
    return keyed.prepared(f"select * from {view}", sampled, file_count, started,
                          shuffle_seconds)
