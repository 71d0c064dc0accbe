"""Semantic check of ``may_match_sql`` against real Spark.

Random small "files" (lists of rows) are indexed exactly as the contract says (min/max over
non-null, non-NaN values, null and NaN counts; stats sometimes unknown or loosened), random
predicates are evaluated by Spark on the rows and ``may_match_sql`` on the index rows, and every
file in which Spark finds a matching row must have may_match TRUE.  All predicates of one
example run in one query per side to keep this fast.
"""

from __future__ import annotations

import datetime as dt
import math
import os
import shutil
import struct
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dbt.adapters.zspark.skipping.pruning import may_match_sql, stat_column

pyspark = pytest.importorskip("pyspark")
pytestmark = [
    pytest.mark.spark,
    pytest.mark.skipif(shutil.which("java") is None, reason="Spark needs a Java runtime"),
]

Draw = Callable[[st.SearchStrategy[Any]], Any]


def _f32(x: float) -> float:
    return float(struct.unpack("f", struct.pack("f", x))[0])


NAN = float("nan")
INF = float("inf")
UTC = dt.timezone.utc


def _utc(*args: int) -> dt.datetime:
    return dt.datetime(*args, tzinfo=UTC)


@dataclass(frozen=True)
class Col:
    name: str
    spark_type: str
    pool: tuple[Any, ...]  # sorted in Spark's order; NaN is added separately for floats
    indexed: bool = True

    @property
    def floating(self) -> bool:
        return self.spark_type in ("float", "double")


COLUMNS = (
    Col("i", "int", (-(2**31), -7, -1, 0, 1, 2, 3, 5, 8, 100, 2**31 - 1)),
    Col("l", "bigint", (-(2**63), -(2**53) - 1, -1, 0, 1, 2, 2**53, 2**53 + 1, 2**63 - 1)),
    Col("ty", "tinyint", (-128, -1, 0, 1, 5, 127)),
    Col("d", "double", (-INF, -1e300, -2.5, -1.0, -0.0, 0.0, 0.5, 1.0, 2.5, 1e300, INF)),
    Col(
        "f",
        "float",
        tuple(_f32(x) for x in (-INF, -3e38, -1.5, -0.0, 0.0, 0.1, 1.5, 16777216.0, 3e38, INF)),
    ),
    Col(
        "m",
        "decimal(10,2)",
        tuple(Decimal(x) for x in ("-99999999.99", "-1.25", "-0.01", "0.00", "0.01", "1.25")),
    ),
    Col(
        "s",
        "string",
        tuple(
            sorted(
                (
                    "",
                    " ",
                    "B",
                    "a",
                    "a%",
                    "a_b",
                    "ab",
                    "ab~",
                    "abc",
                    "abd",
                    "abz",
                    "b",
                    "back\\slash",
                    "it's",
                    'say "hi"',
                    "prefix_shared_long_1",
                    "prefix_shared_long_2",
                    "prefix_shared_long_20",
                    "z\x7f",
                    "é",
                    "éa",
                    "日本",
                    "日本語",
                    "x\U0010ffff",
                    "\U0010ffff",
                )
            )
        ),
    ),
    Col(
        "dt",
        "date",
        (
            dt.date(1, 1, 1),
            dt.date(1969, 12, 31),
            dt.date(1970, 1, 1),
            dt.date(2020, 2, 29),
            dt.date(2020, 3, 1),
            dt.date(2021, 3, 14),
            dt.date(9999, 12, 31),
        ),
    ),
    Col(
        "ts",
        "timestamp",
        (
            _utc(1969, 12, 31, 23, 59, 59, 999999),
            _utc(1970, 1, 1),
            _utc(2020, 1, 1, 0, 0, 0, 1),
            _utc(2021, 3, 14, 9, 59, 59),  # 01:59:59 PST, just before the DST gap
            _utc(2021, 3, 14, 10),  # 03:00 PDT
            _utc(2021, 11, 7, 8, 30),  # 01:30 PDT
            _utc(2021, 11, 7, 9, 30),  # 01:30 PST
        ),
    ),
    Col(
        "ntz",
        "timestamp_ntz",
        (
            dt.datetime(1970, 1, 1),
            dt.datetime(2020, 1, 1, 0, 0, 0, 500000),
            dt.datetime(2021, 3, 14, 2, 30),  # does not exist in Los Angeles
            dt.datetime(2021, 3, 14, 3),
            dt.datetime(2021, 11, 7, 1, 30),  # happens twice in Los Angeles
            dt.datetime(9999, 12, 31, 23, 59, 59),
        ),
    ),
    Col("b", "boolean", (False, True)),
    Col("z", "int", (0, 1, 2), indexed=False),
)
BY_NAME = {c.name: c for c in COLUMNS}
INDEXED = tuple(c for c in COLUMNS if c.indexed)
COLUMN_TYPES = {c.name: c.spark_type for c in INDEXED}


# ----------------------------------------------------------------------------- SQL values


def _hex_string(value: str) -> str:
    return f"cast(X'{value.encode('utf-8').hex()}' as string)"


def value_sql(col: Col, value: Any) -> str:
    """An exact, typed Spark SQL rendering of a data or stat value (no escaping involved)."""
    t = col.spark_type
    if value is None:
        return f"cast(null as {t})"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if math.isnan(value):
            text = "NaN"
        elif math.isinf(value):
            text = "Infinity" if value > 0 else "-Infinity"
        else:
            text = repr(value)
        return f"cast('{text}' as {t})"
    if isinstance(value, str):
        return _hex_string(value)
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        return f"cast('{value.astimezone(UTC):%Y-%m-%d %H:%M:%S.%f}+00:00' as timestamp)"
    if isinstance(value, dt.datetime):
        return f"cast('{value:%Y-%m-%d %H:%M:%S.%f}' as timestamp_ntz)"
    if isinstance(value, dt.date):
        return f"cast('{value.year:04d}-{value.month:02d}-{value.day:02d}' as date)"
    return f"cast('{value}' as {t})"


# ----------------------------------------------------------------------------- files and stats


def _is_nan(v: Any) -> bool:
    return isinstance(v, float) and math.isnan(v)


@st.composite
def files(draw: Draw) -> list[list[dict[str, Any]]]:
    """1-5 files of 0-6 rows; each file draws each column from a window of its pool."""
    result = []
    for _ in range(draw(st.integers(1, 5))):
        n = draw(st.integers(0, 6))
        windows: dict[str, tuple[Any, ...]] = {}
        null_modes: dict[str, str] = {}
        for c in COLUMNS:
            start = draw(st.integers(0, len(c.pool) - 1))
            size = draw(st.integers(1, len(c.pool) - start))
            windows[c.name] = c.pool[start : start + size]
            null_modes[c.name] = draw(st.sampled_from(("none", "some", "some", "all")))
        rows = []
        for _ in range(n):
            row: dict[str, Any] = {}
            for c in COLUMNS:
                mode = null_modes[c.name]
                if mode == "all" or (mode == "some" and draw(st.integers(0, 3)) == 0):
                    row[c.name] = None
                elif c.floating and draw(st.integers(0, 6)) == 0:
                    row[c.name] = NAN
                else:
                    row[c.name] = draw(st.sampled_from(windows[c.name]))
            rows.append(row)
        result.append(rows)
    return result


def exact_stats(col: Col, values: Sequence[Any]) -> dict[str, Any]:
    non_null = [v for v in values if v is not None]
    ordered = [v for v in non_null if not _is_nan(v)]
    stats: dict[str, Any] = {
        "min": min(ordered) if ordered else None,
        "max": max(ordered) if ordered else None,
        "nulls": len(values) - len(non_null),
    }
    if col.floating:
        stats["nans"] = len(non_null) - len(ordered)
    return stats


@st.composite
def index_for(draw: Draw, data: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Index rows: exact stats, sometimes unknown (NULL) or loosened as a footer may give them."""
    index = []
    for rows in data:
        entry: dict[str, Any] = {"row_count": len(rows)}
        for c in INDEXED:
            stats = exact_stats(c, [r[c.name] for r in rows])
            for stat in list(stats):
                how = draw(st.sampled_from(("exact",) * 6 + ("unknown", "loose")))
                if how == "unknown":
                    stats[stat] = None
                elif how == "loose" and stat in ("min", "max") and stats[stat] is not None:
                    v = stats[stat]
                    wider = [p for p in c.pool if (p <= v if stat == "min" else p >= v)]
                    stats[stat] = draw(st.sampled_from(wider))
            for stat, v in stats.items():
                entry[stat_column(c.name, stat)] = v
        index.append(entry)
    return index


# ----------------------------------------------------------------------------- predicates


def sql_string(value: str, quote: str = "'") -> str:
    """A Spark string literal (backslash escapes, as Spark reads them by default)."""
    return quote + value.replace("\\", "\\\\").replace(quote, "\\" + quote) + quote


def _ts_text(v: dt.datetime) -> str:
    return f"{v:%Y-%m-%d %H:%M:%S.%f}"


@st.composite
def literal(draw: Draw, col: Col, ansi: bool) -> str:
    """A literal for comparisons with ``col``, in one of many spellings.

    With ANSI on, spellings whose implicit cast could fail at run time are avoided: the check
    needs Spark to evaluate the predicate on the rows.
    """
    if draw(st.integers(0, 14)) == 0:
        return draw(st.sampled_from(("null", f"cast(null as {col.spark_type})")))
    t = col.spark_type
    if t in ("int", "bigint", "tinyint"):
        v = draw(st.sampled_from((*col.pool, 4, -3, 6, 2**31, -(2**31) - 1)))
        forms = [str(v), f"'{v}'", f"{v}.0", f"{v}.5", f"{v}e0", f"cast({v} as decimal(21,1))"]
        if -(2**63) <= v < 2**63:
            forms += [f"{v}L", f"cast('{v}' as bigint)"]
        if not ansi:
            forms += ["true", "'NaN'"]
        return str(draw(st.sampled_from(forms)))
    if t in ("double", "float"):
        v = draw(st.sampled_from((*col.pool, NAN, 0.25, -4.0, 16777217.0)))
        if math.isnan(v) or math.isinf(v):
            text = "NaN" if math.isnan(v) else ("Infinity" if v > 0 else "-Infinity")
            return str(
                draw(
                    st.sampled_from(
                        (f"'{text}'", f"cast('{text}' as double)", f"cast('{text}' as float)")
                    )
                )
            )
        r = repr(v)
        forms = [r, f"'{r}'", f"{r}D", f"cast('{r}' as float)", f"{r}e0" if "e" not in r else r]
        if v == int(v) and abs(v) < 2**63:
            forms += [str(int(v)), f"{int(v)}L"]
        return str(draw(st.sampled_from(forms)))
    if t.startswith("decimal"):
        v = draw(st.sampled_from((*col.pool, Decimal("1.255"), Decimal("-1.2"), Decimal(3))))
        forms = [str(v), f"'{v}'", f"{v}e0", f"cast('{v}' as decimal(12,3))", f"{v}BD"]
        return str(draw(st.sampled_from(forms)))
    if t == "string":
        v = draw(st.sampled_from((*col.pool, "abb", "prefix_shared_long_", "日")))
        forms = [sql_string(v), sql_string(v), sql_string(v, '"')]
        if not ansi:
            forms += ["1", "date'2020-01-01'"]
        return str(draw(st.sampled_from(forms)))
    if t in ("date", "timestamp", "timestamp_ntz"):
        v = draw(st.sampled_from(BY_NAME[draw(st.sampled_from(("dt", "ts", "ntz")))].pool))
        if isinstance(v, dt.datetime):
            aware = v.tzinfo is not None
            text = _ts_text(v.astimezone(UTC)) + "+00:00" if aware else _ts_text(v)
            forms = [f"timestamp'{text}'", f"'{text}'", f"cast('{text}' as timestamp)"]
            if v.tzinfo is None:
                forms += [f"timestamp_ntz'{text}'", f"timestamp_ltz'{text}'"]
            forms += [f"date'{v:%Y-%m-%d}'"]
        else:
            text = f"{v.year:04d}-{v.month:02d}-{v.day:02d}"
            forms = [f"date'{text}'", f"'{text}'", f"timestamp_ntz'{text} 00:00:00'"]
        return str(draw(st.sampled_from(forms)))
    assert t == "boolean"
    forms = ["true", "false", "'true'", "'false'"]
    if not ansi:
        forms += ["1"]
    return str(draw(st.sampled_from(forms)))


@st.composite
def column_ref(draw: Draw, col: Col) -> str:
    form = draw(st.sampled_from(("plain", "plain", "upper", "backticks", "qualified")))
    return {
        "plain": col.name,
        "upper": col.name.upper(),
        "backticks": f"`{col.name}`",
        "qualified": f"src.{col.name}",
    }[form]


OPS = ("=", "==", "<>", "!=", "<", "<=", ">", ">=", "<=>")


@st.composite
def leaf(draw: Draw, ansi: bool) -> str:
    col = draw(st.sampled_from(COLUMNS))
    ref = draw(column_ref(col))
    kind = draw(
        st.sampled_from(
            ("cmp", "cmp", "cmp", "between", "in", "null", "like", "bool", "other", "const")
        )
    )
    if kind == "cmp":
        op, lit = draw(st.sampled_from(OPS)), draw(literal(col, ansi))
        return f"{ref} {op} {lit}" if draw(st.booleans()) else f"{lit} {op} {ref}"
    if kind == "between":
        low, high = draw(literal(col, ansi)), draw(literal(col, ansi))
        neg = "not " if draw(st.booleans()) else ""
        return f"{ref} {neg}between {low} and {high}"
    if kind == "in":
        values = draw(st.lists(literal(col, ansi), min_size=1, max_size=4))
        neg = "not " if draw(st.booleans()) else ""
        return f"{ref} {neg}in ({', '.join(values)})"
    if kind == "null":
        return f"{ref} is {draw(st.sampled_from(('', 'not ')))}null"
    if kind == "like":
        s = BY_NAME["s"]
        v = draw(st.sampled_from(s.pool))
        cut = draw(st.integers(0, len(v)))
        pattern = draw(
            st.sampled_from(
                (v[:cut] + "%", v, v[:cut] + "_%", "%" + v[cut:], v[:cut] + "\\%%", v[:cut])
            )
        )
        ref = draw(column_ref(s))
        op = draw(st.sampled_from(("like", "like", "not like", "ilike")))
        if draw(st.integers(0, 3)) == 0:
            return f"startswith({ref}, {sql_string(v[:cut])})"
        return f"{ref} {op} {sql_string(pattern)}"
    if kind == "bool":
        return str(draw(st.sampled_from(("b", "not b", "B", "`b`", "src.b"))))
    if kind == "other":
        return str(
            draw(
                st.sampled_from(
                    (
                        "upper(s) = 'AB'",
                        "i - 0 > 3",
                        "i = l",
                        "d > f",
                        "z = 1",
                        "z < 2",
                        "isnan(d)",
                        "abs(d) > 1",
                        "s is not distinct from 'ab'",
                        "i is distinct from 5",
                        "d <=> cast('NaN' as double)",
                        "length(s) > 2",
                        "s in ('a', 'ab') and i in (1, 2, null)",
                        "coalesce(i, 0) = 0",
                    )
                )
            )
        )
    return str(draw(st.sampled_from(("true", "false", "null", "not null", "1 = 1"))))


@st.composite
def predicate(draw: Draw, ansi: bool, depth: int = 0) -> str:
    if depth >= 3 or draw(st.integers(0, 2)) == 0:
        return str(draw(leaf(ansi)))
    kind = draw(st.sampled_from(("and", "or", "not")))
    if kind == "not":
        return f"not ({draw(predicate(ansi, depth + 1))})"
    left, right = draw(predicate(ansi, depth + 1)), draw(predicate(ansi, depth + 1))
    return f"({left}) {kind} ({right})"


# ----------------------------------------------------------------------------- Spark


@pytest.fixture(scope="module")
def session() -> Iterator[Any]:
    """A local Spark session of its own SQL conf (shares a running SparkContext if any)."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    from pyspark.sql import SparkSession

    existing = SparkSession.getActiveSession()
    base = (
        SparkSession.builder.master("local[1]")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "1")
        .getOrCreate()
    )
    base.sparkContext.setLogLevel("ERROR")
    spark = base.newSession()
    for key, value in {
        # A time zone with DST gaps and overlaps makes any non-monotone datetime cast visible.
        "spark.sql.session.timeZone": "America/Los_Angeles",
        "spark.sql.shuffle.partitions": "1",
        "spark.sql.adaptive.enabled": "false",
        # Tiny data, many one-off expressions: interpreting beats compiling.
        "spark.sql.codegen.wholeStage": "false",
        "spark.sql.codegen.factoryMode": "NO_CODEGEN",
    }.items():
        spark.conf.set(key, value)
    yield spark
    if existing is None:
        base.stop()


def _rows_sql(data: list[list[dict[str, Any]]]) -> str:
    # A typed all-NULL row with file_id -1 keeps VALUES non-empty and fixes the column types.
    tuples = ["(-1, " + ", ".join(value_sql(c, None) for c in COLUMNS) + ")"]
    for file_id, rows in enumerate(data):
        for row in rows:
            cells = ", ".join(value_sql(c, row[c.name]) for c in COLUMNS)
            tuples.append(f"({file_id}, {cells})")
    names = ", ".join(c.name for c in COLUMNS)
    return (
        f"(select * from values {', '.join(tuples)} as v(file_id, {names}) "
        "where file_id >= 0) src"
    )


def _index_sql(index: list[dict[str, Any]]) -> str:
    names = ["file_id", "row_count"]
    tuples = []
    for file_id, entry in enumerate(index):
        cells = [str(file_id), f"cast({entry['row_count']} as bigint)"]
        for c in INDEXED:
            for stat in ("min", "max", "nulls", "nans"):
                key = stat_column(c.name, stat)
                if key not in entry:
                    continue
                if file_id == 0:
                    names.append(key)
                v = entry[key]
                if stat in ("min", "max"):
                    cells.append(value_sql(c, v))
                else:
                    cells.append(f"cast({'null' if v is None else v} as bigint)")
        tuples.append("(" + ", ".join(cells) + ")")
    return f"(select * from values {', '.join(tuples)} as x({', '.join(names)}))"


def evaluate(
    spark: Any,
    data: list[list[dict[str, Any]]],
    index: list[dict[str, Any]],
    predicates: Sequence[str],
) -> list[tuple[int, int, bool, Any]]:
    """(file, predicate number, Spark found a matching row, may_match) for every pair.

    A predicate Spark itself refuses (``where null``, a LIKE pattern with a stray escape)
    fails the user's plain query as well, so there is nothing to prune: such pairs are left
    out.
    """
    from pyspark.errors import AnalysisException

    rows_sql = _rows_sql(data)

    def truth_of(valid: list[int]) -> dict[int, Any]:
        columns = ", ".join(
            f"max(case when ({predicates[k]}) then 1 else 0 end) as m{k}" for k in valid
        )
        query = f"select file_id, {columns} from {rows_sql} group by file_id"
        return {row["file_id"]: row for row in spark.sql(query).collect()}

    valid = list(range(len(predicates)))
    try:
        truth = truth_of(valid)
    except AnalysisException:
        valid = [k for k, p in enumerate(predicates) if _spark_accepts(spark, rows_sql, p)]
        if not valid:
            return []
        truth = truth_of(valid)
    may_cols = ", ".join(
        f"({may_match_sql(predicates[k], COLUMN_TYPES)}) as q{k}" for k in valid
    )
    result = []
    for row in spark.sql(f"select file_id, {may_cols} from {_index_sql(index)}").collect():
        file_id = row["file_id"]
        for k in valid:
            matched = file_id in truth and truth[file_id][f"m{k}"] == 1
            result.append((file_id, k, matched, row[f"q{k}"]))
    return result


def _spark_accepts(spark: Any, rows_sql: str, predicate: str) -> bool:
    from pyspark.errors import AnalysisException

    try:
        # Run, not just analyse: an invalid LIKE pattern fails only once rows reach it.
        spark.sql(f"select count(*) from {rows_sql} where {predicate}").collect()
    except AnalysisException:
        return False
    return True


@st.composite
def cases(draw: Draw) -> tuple[bool, Any, Any, list[str]]:
    ansi = draw(st.booleans())
    data = draw(files())
    index = draw(index_for(data))
    preds = draw(st.lists(predicate(ansi), min_size=40, max_size=40))
    return ansi, data, index, preds


@settings(
    max_examples=24,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(case=cases())
def test_may_match_is_true_for_every_file_with_a_matching_row(
    session: Any, case: tuple[bool, Any, Any, list[str]]
) -> None:
    ansi, data, index, preds = case
    session.conf.set("spark.sql.ansi.enabled", str(ansi).lower())
    for file_id, k, matched, may in evaluate(session, data, index, preds):
        assert may is not None, f"may_match is NULL for {preds[k]!r}"
        if matched:
            assert may is True, (
                f"file {file_id} was pruned but holds a row matching {preds[k]!r}\n"
                f"may_match: {may_match_sql(preds[k], COLUMN_TYPES)}\n"
                f"rows: {data[file_id]}\nindex: {index[file_id]}\nansi: {ansi}"
            )


def test_pruning_is_not_vacuous(session: Any) -> None:
    """Point and range predicates on disjoint files skip every file but the right one."""
    session.conf.set("spark.sql.ansi.enabled", "true")
    data = [
        [
            {
                **{c.name: None for c in COLUMNS},
                "i": 10 * k + j,
                "d": 10.0 * k + j,
                "s": f"k{k}_{j}",
                "dt": dt.date(2020, k + 1, j + 1),
                "ts": _utc(2020, k + 1, j + 1),
                "b": k == 2,
            }
            for j in range(3)
        ]
        for k in range(4)
    ]
    index = []
    for rows in data:
        entry: dict[str, Any] = {"row_count": len(rows)}
        for c in INDEXED:
            for stat, v in exact_stats(c, [r[c.name] for r in rows]).items():
                entry[stat_column(c.name, stat)] = v
        index.append(entry)
    expected = {
        "i = 12": {1},
        "i between 21 and 29": {2},
        "i in (2, 31)": {0, 3},
        "i >= 30 or d < 1": {0, 3},
        "d = 22.0": {2},
        "s like 'k3%'": {3},
        "startswith(s, 'k1_')": {1},
        "s = 'k0_2'": {0},
        "dt >= date'2020-04-01'": {3},
        "ts < timestamp'2020-02-01 00:00:00+00:00'": {0},
        "b": {2},
        "not b": {0, 1, 3},
        "i is null": set(),
        "not (i >= 10)": {0},
    }
    preds = list(expected)
    kept: dict[str, set[int]] = {p: set() for p in preds}
    for file_id, k, matched, may in evaluate(session, data, index, preds):
        assert may is not None
        assert may or not matched
        if may:
            kept[preds[k]].add(file_id)
    assert kept == expected
