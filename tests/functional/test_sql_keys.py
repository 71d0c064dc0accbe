"""The SQL keys (each layout's ``keyed_sql``, for servers without Python) equal the UDF keys bit for
bit: random rows of every clusterable type, 1 to 8 columns, every layout (the balanced one
with a tree fitted on the sample), equal or unequal column weights (Z-order's bit order),
keyed both ways in the same Spark query."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dbt.adapters.zspark.layouts import CONFIG_KEYS

pytestmark = pytest.mark.spark

TYPES = ("tinyint", "smallint", "int", "bigint", "float", "double", "decimal(12,3)",
         "decimal(38,18)", "date", "timestamp", "timestamp_ntz", "string", "boolean")
ROWS = 40


def values_of(spark_type: str) -> st.SearchStrategy[Any]:
    """Values of a Spark type, with nulls, NaN and a few repeats so boundaries tie."""
    bounded = {"tinyint": 7, "smallint": 15, "int": 31, "bigint": 53}
    if spark_type in bounded:
        # bigint: within 2**53. A batch holding a null reaches the UDF as floats (pandas'
        # NaN for null), which blur larger values; the SQL keys stay exact there.
        limit = 2 ** bounded[spark_type] - 1
        plain: st.SearchStrategy[Any] = st.integers(-limit, limit)
    elif spark_type == "float":
        plain = st.floats(width=32, allow_infinity=True)
    elif spark_type == "double":
        plain = st.floats(allow_infinity=True)
    elif spark_type.startswith("decimal"):
        digits, scale = (12, 3) if spark_type == "decimal(12,3)" else (38, 18)
        plain = st.decimals(min_value=-(10 ** (digits - scale)) + 1,
                            max_value=10 ** (digits - scale) - 1, places=scale,
                            allow_nan=False, allow_infinity=False)
    elif spark_type == "date":
        plain = st.dates(dt.date(1, 1, 1), dt.date(9999, 12, 31))
    elif spark_type.startswith("timestamp"):
        # Microseconds within 2**53 of the epoch, as for bigint.
        plain = st.datetimes(dt.datetime(1700, 1, 1), dt.datetime(2250, 12, 31))
    elif spark_type == "string":
        # No NUL: numpy's fixed-width strings drop trailing NULs, Spark keeps them.
        plain = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\0"),
                        max_size=6)
    else:
        plain = st.booleans()
    return st.one_of(st.none(), plain, plain, plain)


@st.composite
def tables(draw: st.DrawFn) -> tuple[list[str], list[tuple[Any, ...]]]:
    types = draw(st.lists(st.sampled_from(TYPES), min_size=1, max_size=8))
    pools = [draw(st.lists(values_of(t), min_size=1, max_size=12)) for t in types]
    rows = [tuple(draw(st.sampled_from(pool)) for pool in pools) for _ in range(ROWS)]
    return types, rows


@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(table=tables(),
       layout=st.sampled_from(list(CONFIG_KEYS)),
       boundary_count=st.sampled_from([1, 3, 16, 1000]), sampled=st.integers(1, ROWS),
       files=st.integers(1, 16),
       drawn_weights=st.lists(st.sampled_from([0.0, 1.0, 3.0, 8.0]), min_size=8, max_size=8))
def test_sql_keys_equal_udf_keys(spark: Any, table: tuple[list[str], list[tuple[Any, ...]]],
                                 layout: str, boundary_count: int, sampled: int,
                                 files: int, drawn_weights: list[float]) -> None:
    from dbt.adapters.zspark.core import value_ranks
    from dbt.adapters.zspark.layouts import LAYOUTS, ColumnSpec
    from dbt.adapters.zspark.layouts.keyed_plan import key_input_sql, key_input_type
    from dbt.adapters.zspark.reach.frames.udfs import register_key_udf

    types, rows = table
    names = [f"c{i}" for i in range(len(types))]
    schema = ", ".join(f"{n} {t}" for n, t in zip(names, types, strict=True))
    frame = spark.createDataFrame(rows, schema)
    frame.createOrReplaceTempView("sql_keys_input")
    inputs = [key_input_sql(n, t) for n, t in zip(names, types, strict=True)]
    # Boundaries from a sample of the rows, as a build takes them; the rest fall between.
    picked = ", ".join(f"{i} as {n}" for i, n in zip(inputs, names, strict=True))
    sample = spark.sql(f"select {picked} from sql_keys_input limit {sampled}").toPandas()
    specs = [ColumnSpec(n, key_input_type(t),
                        value_ranks.sample_boundaries(sample[n], boundary_count))
             for n, t in zip(names, types, strict=True)]
    chosen = LAYOUTS[layout]
    # Weights as planning allows them: on the weighted layouts, one at least above 0.
    weights = drawn_weights[:len(names)]
    if not chosen.takes_weights or not any(weights):
        weights = [1.0] * len(names)
    # The balanced layout's tree, fitted on the same sample (the curves fit none).
    tree = chosen.fit(specs, [sample[n] for n in names], boundary_count, files, weights)
    register_key_udf(spark, "zspark_key_sql_keys_test",
                     chosen.key_function(specs, "boundary", boundary_count, tree, weights),
                     "bigint")
    keyed = chosen.keyed_sql(specs, inputs, boundary_count, "select * from sql_keys_input",
                             "sql_key", tree, weights)
    spark.conf.set("spark.sql.ansi.enabled", "true")  # as a Thrift server runs by default
    try:
        keyed_rows = spark.sql(keyed)
        # Each search step drops the columns it replaces: every column the keyed rows pass on
        # travels with each task of the write.
        assert not [c for c in keyed_rows.columns
                    if c.startswith(("__zspark_position", "__zspark_value"))], keyed_rows.columns
        keys = keyed_rows.selectExpr(f"zspark_key_sql_keys_test({', '.join(inputs)}) as udf",
                                     "sql_key as sql").collect()
    finally:
        spark.conf.set("spark.sql.ansi.enabled", "false")
    assert [k.sql for k in keys] == [k.udf for k in keys]



@settings(max_examples=15, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
@given(rows=st.lists(st.tuples(st.one_of(st.none(), st.sampled_from(["a", "b", "c"])),
                               st.integers(-50, 50)), min_size=1, max_size=30),
       partitions=st.integers(1, 9), partitioned=st.booleans())
def test_a_rows_shuffle_partition_is_the_range_that_holds_it(
        spark: Any, rows: list[tuple[str | None, int]], partitions: int,
        partitioned: bool) -> None:
    """Each row goes to the partition whose range of (table partition, key) holds it, as
    every reach's SQL finds it, NULL partitions first."""
    import bisect

    from pyspark.sql import functions as sf

    from dbt.adapters.zspark.core.partitioning import spread_files
    from dbt.adapters.zspark.layouts.keyed_plan import sort_position
    from dbt.adapters.zspark.reach.server.sql_build import owner_sql

    parts = [("p", "string")] if partitioned else []
    positions = [((sort_position(p), k) if partitioned else (k,)) for p, k in rows]
    spread = spread_files(positions, len(rows), partitions, partitions)
    frame = spark.createDataFrame(rows, "p string, k bigint")
    found = frame.select(sf.expr(owner_sql(spread, "k", "bigint", parts)).alias("owner"))
    expected = [bisect.bisect_right(list(spread.cuts), position) for position in positions]
    assert [r.owner for r in found.collect()] == expected


@settings(max_examples=25, deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
@given(cuts=st.lists(st.integers(-(2 ** 63), 2 ** 63 - 1), min_size=1, max_size=1100),
       keys=st.lists(st.integers(-(2 ** 63), 2 ** 63 - 1), min_size=1, max_size=20),
       repeats=st.integers(0, 3))
def test_the_searched_shuffle_partition_counts_the_cuts_at_or_below_the_key(
        spark: Any, cuts: list[int], keys: list[int], repeats: int) -> None:
    """A write of a file per partition finds a row's partition by the unrolled binary
    search (any number of cuts, repeated ones, keys equal to a cut, at the extremes of
    bigint): the count of cuts at or below its key, as the ``case`` tree finds it."""
    import bisect

    from dbt.adapters.zspark.layouts.ranks_sql import cuts_at_or_below_sql

    cuts = sorted(cuts + cuts[:repeats])
    keys = [*keys, *cuts[:: max(1, len(cuts) // 5)], -(2 ** 63), 2 ** 63 - 1]
    spark.createDataFrame([(k,) for k in keys], "k bigint").createOrReplaceTempView("keys")
    searched = spark.sql(cuts_at_or_below_sql("k", cuts, "select k from keys", "owner"))
    assert searched.columns == ["k", "owner"]  # the search's steps are dropped as it goes
    found = searched.collect()
    assert [(r.k, r.owner) for r in found] == [(k, bisect.bisect_right(cuts, k)) for k in keys]


@pytest.mark.parametrize("separators", [None, "\x1f"])
def test_constant_arrays_fold_into_literals_of_their_values(
        spark: Any, monkeypatch: pytest.MonkeyPatch, separators: str | None) -> None:
    """A constant array (boundaries, a Hilbert table) is one split string that Spark folds
    into an array literal before the query runs, with the values as ``array(...)`` of
    literals gives them: strings holding the first separator characters, empty strings,
    quotes; and with every separator taken, the plain ``array(...)`` form."""
    import numpy as np

    from dbt.adapters.zspark.layouts import ranks_sql

    if separators is not None:
        monkeypatch.setattr(ranks_sql, "_SEPARATORS", separators)
    cases: list[tuple[list[Any], str]] = [
        (["a\x1fb", "", "it's", "\\x", "\x1e", "\ue000z", ""], "string"),
        ([-3, 0, 2**40], "bigint"),
        ([True, False], "boolean"),
        ([-1.5, 0.1, float("inf"), float("-inf")], "double"),
        ([np.datetime64("0001-01-01"), np.datetime64("2024-02-29")], "date"),
        ([448, 519, 0], "int"),
    ]
    for values, family in cases:
        constant = ranks_sql.constant_array(values, family)
        literals = f"array({', '.join(ranks_sql.literal(v, family) for v in values)})"
        frame = spark.sql(f"select {constant} as folded, {literals} as listed")
        row = frame.collect()[0]
        assert row.folded == row.listed, (family, constant)
        optimized = frame._jdf.queryExecution().optimizedPlan().toString()
        assert "split(" not in optimized, optimized
        assert "cast(" not in optimized.lower(), optimized
        assert ("split(" in constant) == (separators is None or family != "string")
