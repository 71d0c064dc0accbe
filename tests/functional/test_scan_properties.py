"""Property: for any predicate, no file the index rules out holds a matching row.

Hostile data in many real Parquet files (nulls, NaN, -0.0, +-inf, negatives, empty and
unicode strings, shared long prefixes, decimals, dates, timestamps of the years 1 and 9999,
char(4) and varchar(4) columns, a struct whose field `st`.`i` sits beside a top-level
column `st.i`, strings that are not UTF-8, files written with the legacy Julian calendar,
an empty file, a file whose string column is all null); an index built from their footers;
random predicates over plain, qualified, nested and dotted names.
Each hypothesis example checks a batch of predicates with two Spark queries (matches per
file, skippable per file), so well over a thousand predicates run in about a minute; the
first of each batch also runs through the real scan SQL and is compared row for row.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dbt.adapters.zspark.reach.session.index_tables import build_index
from dbt.adapters.zspark.skipping.pruning import index_column_types, may_match_sql
from dbt.adapters.zspark.skipping.scan import scan_sql, skippable_files_sql
from tests.functional.dbt_project import DbtProject

TABLE = "zspark_test.hostile_files"
INDEX = "zspark_test.hostile_files__zindex"
PER_EXAMPLE = 24
EXAMPLES = 30

PREFIX = "https://example.com/a/long/shared/prefix/"
INTS = [None, -(2**31), -1000, -1, 0, 1, 7, 999, 2**31 - 1]
DOUBLES = [None, float("nan"), -0.0, 0.0, float("inf"), float("-inf"), -1e300, -2.5, 3.25, 1e-9]
STRINGS = [None, "", "a", "ab", "b", "é", "ü", "zz", "日本", PREFIX + "a", PREFIX + "b", PREFIX]
DECIMALS = [None, Decimal("-99999.999"), Decimal("-0.001"), Decimal("0"), Decimal("12.5"),
            Decimal("99999.999")]
DATES = [None, dt.date(1, 1, 1), dt.date(1969, 12, 31), dt.date(1970, 1, 1), dt.date(2024, 2, 29)]
STAMPS = [None, dt.datetime(1900, 1, 1), dt.datetime(1969, 12, 31, 23, 59, 59, 999999),
          dt.datetime(1970, 1, 1), dt.datetime(2030, 6, 1, 12, 0, 0, 1)]
# Only in the rows inserted through SQL (Python cannot convert them): extreme years.
FAR_STAMPS = [dt.datetime(1, 1, 1), dt.datetime(1000, 3, 1, 12), dt.datetime(1582, 10, 10),
              dt.datetime(9999, 12, 31, 23, 59, 59, 999999)]
FAR_DATES = [dt.date(1000, 3, 1), dt.date(1582, 10, 4),
             dt.date(1582, 10, 15), dt.date(9999, 12, 31)]
CHARS = [None, "", "a", "a ", "ab", "b", "é", "zz"]
INVALID = "cast(x'ff41' as string)"  # not UTF-8: Spark holds it, a footer cannot decode it

# name -> (values, how a literal of it is written)
COLUMNS: dict[str, tuple[list[Any], str]] = {
    "i": (INTS, "int"), "d": (DOUBLES, "double"), "s": (STRINGS, "string"),
    "m": (DECIMALS, "decimal"), "t": (DATES + FAR_DATES, "date"),
    "ts": (STAMPS + FAR_STAMPS, "timestamp"), "c": ([*CHARS, "a   ", "abcde"], "string"),
    "v": (CHARS, "string"), "st.i": (INTS, "int"), "`st.i`": (INTS, "int"),
    "st.s": (STRINGS, "string"), "hostile_files.i": (INTS, "int"),
    "zspark_test.hostile_files.s": (STRINGS, "string"),
}
TEXT_COLUMNS = ["s", "c", "v", "st.s"]
SCHEMA = ("id int, i int, d double, s string, m decimal(8,3), t date, ts timestamp, "
          "b boolean, c char(4), v varchar(4), st struct<i:int,s:string>, `st.i` int")


def literal(column: str, value: Any) -> str:
    if value is None:
        return "null"
    kind = COLUMNS[column][1]
    if kind == "double":
        return f"double('{value!r}')" if value != value or value in (
            float("inf"), float("-inf")) else repr(value)
    if kind == "string":
        return "'" + value.replace("'", "\\'") + "'"
    if kind == "decimal":
        return f"{value}BD"
    if kind == "date":
        return f"date '{value.isoformat()}'"
    if kind == "timestamp":
        return f"timestamp '{value.isoformat(sep=' ')}'"
    return str(value)


@st.composite
def leaves(draw: st.DrawFn) -> str:
    column = draw(st.sampled_from(sorted(COLUMNS)))
    pool = COLUMNS[column][0]
    value = draw(st.sampled_from(pool))
    kind = draw(st.sampled_from(["cmp", "cmp", "cmp", "between", "in", "null", "like"]))
    if kind == "cmp":
        op = draw(st.sampled_from(["=", "<>", "<", "<=", ">", ">=", "!="]))
        if draw(st.booleans()):
            return f"{literal(column, value)} {op} {column}"
        return f"{column} {op} {literal(column, value)}"
    if kind == "between":
        low, high = sorted((draw(st.sampled_from(pool[1:])), draw(st.sampled_from(pool[1:]))),
                           key=lambda v: (v != v, v))
        return f"{column} between {literal(column, low)} and {literal(column, high)}"
    if kind == "in":
        values = draw(st.lists(st.sampled_from(pool), min_size=1, max_size=4))
        negate = "not " if draw(st.booleans()) else ""
        return f"{column} {negate}in ({', '.join(literal(column, v) for v in values)})"
    if kind == "null":
        return f"{column} is {'not ' if draw(st.booleans()) else ''}null"
    text = draw(st.sampled_from(TEXT_COLUMNS))
    prefix = draw(st.sampled_from(["", "a", "a ", "z", "é", PREFIX, PREFIX[:10], "日"]))
    form = draw(st.sampled_from(["like", "startswith", "not like"]))
    if form == "startswith":
        return f"startswith({text}, '{prefix}')"
    return f"{text} {form} '{prefix}%'"


predicates = st.recursive(
    leaves(),
    lambda inner: st.one_of(
        st.tuples(inner, st.sampled_from(["and", "or"]), inner).map(
            lambda t: f"({t[0]} {t[1]} {t[2]})"),
        inner.map(lambda p: f"not ({p})"),
    ),
    max_leaves=4,
)


def _sql_rows(n: int, legacy: bool) -> str:
    """Rows with the values Python cannot hand to Spark: far years and invalid UTF-8."""
    rows = []
    for k in range(n):
        stamp = FAR_STAMPS[k % len(FAR_STAMPS)].isoformat(sep=" ")
        day = FAR_DATES[(k * 3) % len(FAR_DATES)].isoformat()
        text = INVALID if k % 3 == 0 else f"'{STRINGS[1 + k % (len(STRINGS) - 1)]}'"
        rows.append(
            f"({20000 + k + (500 if legacy else 0)}, {INTS[1 + k % 8]}, {k / 4}, {text}, "
            f"null, date '{day}', timestamp '{stamp}', null, '{CHARS[1 + k % 7]}', "
            f"'{CHARS[1 + (k * 5) % 7]}', named_struct('i', {INTS[1 + (k * 3) % 8]}, "
            f"'s', {INVALID if k % 4 == 1 else repr(STRINGS[1 + k % 6])}), {k - 3})"
        )
    return ", ".join(rows)


@pytest.fixture(scope="module")
def hostile(project: DbtProject) -> Any:
    spark = project.spark
    spark.sql("create database if not exists zspark_test")
    spark.sql(f"drop table if exists {TABLE}")
    spark.sql(f"create table {TABLE} ({SCHEMA}) using parquet")
    plain = ["i", "d", "s", "m", "t", "ts"]
    pools = {"i": INTS, "d": DOUBLES, "s": STRINGS, "m": DECIMALS, "t": DATES, "ts": STAMPS}
    rows = []
    for n in range(600):
        row = [n] + [pools[c][(n * (k + 3) + n // 7) % len(pools[c])]
                     for k, c in enumerate(plain)]
        rows.append((*row, None if n % 5 == 0 else n % 2 == 0, CHARS[n % len(CHARS)],
                     CHARS[(n * 3) % len(CHARS)],
                     None if n % 11 == 0 else (INTS[(n * 5) % 9], STRINGS[(n * 7) % 12]),
                     INTS[(n * 2 + 1) % 9]))
    frame = spark.createDataFrame(rows, SCHEMA.replace("varchar(4)", "string").replace(
        "char(4)", "string"))
    # Range-partitioned on different columns so files have narrow, varied ranges.
    frame.repartitionByRange(8, "i", "s").sortWithinPartitions("d").write.insertInto(TABLE)
    frame.repartitionByRange(6, "ts", "m").write.insertInto(TABLE)
    frame.repartitionByRange(4, "st.i", "c").write.insertInto(TABLE)
    frame.repartitionByRange(6, "c").write.insertInto(TABLE)  # narrow on the char column
    spark.createDataFrame([], frame.schema).write.insertInto(TABLE)
    nulls = spark.createDataFrame([(9000 + k, k, 1.0, None, None, None, None, True, None,
                                    None, None, None) for k in range(5)], frame.schema)
    nulls.coalesce(1).write.insertInto(TABLE)
    spark.sql(f"insert into {TABLE} values {_sql_rows(24, legacy=False)}")
    key = "spark.sql.parquet.datetimeRebaseModeInWrite"
    spark.conf.set(key, "LEGACY")  # as Spark 2.x and Hive-compatible writers write
    try:
        spark.sql(f"insert into {TABLE} values {_sql_rows(24, legacy=True)}")
    finally:
        spark.conf.unset(key)
    spark.catalog.refreshTable(TABLE)
    build_index(spark, TABLE, INDEX, clustering=["i", "d", "s", "m", "t", "ts"])
    declared = {r[0]: r[1] for r in spark.sql(f"describe {TABLE}").collect()
                if r[0] and not r[0].startswith("#")}
    index_types = [(f.name, f.dataType.simpleString()) for f in spark.table(INDEX).schema]
    types = index_column_types(index_types, declared)
    assert types["c"] == "char(4)"
    assert {"`st`.`i`", "st.i", "`st`.`s`"} <= set(types)

    def may_match(predicate: str) -> str:
        return may_match_sql(predicate, types, qualifiers=["hostile_files", TABLE],
                             table_columns=list(declared))

    return spark, may_match


def test_hostile_files_include_empty_and_all_null_files(hostile: Any) -> None:
    spark, _ = hostile
    files = spark.sql(f"select row_count, s__nulls from {INDEX} where row_group is null")
    counts = [(r.row_count, r.s__nulls) for r in files.collect()]
    assert (0, 0) in counts
    assert (5, 5) in counts
    assert len(counts) >= 15


@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(batch=st.lists(predicates, min_size=PER_EXAMPLE, max_size=PER_EXAMPLE))
def test_no_skipped_file_holds_a_matching_row(hostile: Any, batch: list[str]) -> None:
    spark, may_match = hostile
    matches = ", ".join(f"sum(case when {p} then 1 else 0 end) as m{k}"
                        for k, p in enumerate(batch))
    per_file = {
        r[0]: r[1:] for r in spark.sql(
            f"select _metadata.file_path, {matches} from {TABLE} group by 1").collect()
    }
    skippable = ", ".join(
        f"row_count = 0 or not ({may_match(p)}) as s{k}" for k, p in enumerate(batch)
    )
    index = spark.sql(f"select file_path, {skippable} from {INDEX} "
                      f"where row_group is null").collect()
    assert set(per_file) <= {r[0] for r in index}, "index paths differ from Spark's paths"
    for row in index:
        counts = per_file.get(row[0], (0,) * len(batch))
        for k, predicate in enumerate(batch):
            if row[1 + k]:
                assert counts[k] == 0, f"{predicate!r} skipped {row[0]} holding {counts[k]} rows"

    # And through the scan SQL itself, row for row.
    first = batch[0]
    skipped = [(r[0], r[1], r[2])
               for r in spark.sql(skippable_files_sql(INDEX, may_match(first))).collect() if r[3]]
    scanned = spark.sql(f"select id from {scan_sql(TABLE, first, skipped)} q").collect()
    plain = spark.sql(f"select id from {TABLE} where {first}").collect()
    assert sorted(r[0] for r in scanned) == sorted(r[0] for r in plain), first


@pytest.mark.parametrize("predicate", ["i = 7", "s >= 'zz'", "d > 1e299", "m < -99999",
                                       "t = date '0001-01-01'", "s is null", "c = 'ab'",
                                       "v = 'zz'", "st.i = 999", "`st.i` = 999",
                                       "hostile_files.i = 7", "st.s = 'zz'",
                                       "ts > timestamp '9000-01-01 00:00:00'"])
def test_simple_predicates_do_skip_files(hostile: Any, predicate: str) -> None:
    """Guards the property above against passing vacuously (an index that skips nothing)."""
    spark, may_match = hostile
    rows = spark.sql(skippable_files_sql(INDEX, may_match(predicate))).collect()
    assert sum(1 for r in rows if r[3]) >= 1, predicate
