"""Each column's rank among its boundaries in Spark SQL alone: the part of every layout's
SQL key before its curve (``layouts/*.py``).

The same ranks as ``value_ranks.rank_values`` in the key UDFs, bit for bit (a property test
holds the keys equal): nulls 0, NaN the top rank, else 1 + the boundaries strictly below
the value. The query is a chain of projections over the model's SQL, each adding columns
the next one reads (SQL has no variables, and one expression per step keeps each small):
a rank is a search unrolled into one step per ``STEP_BITS`` bits of the position, each
step a ``case`` tree over the boundaries that step may compare with. Each projection
passes on every column it keeps, and Spark ships the whole chain with every task of a
write whose sort sits above it (the sort's code refers to its plan), so the chain is
kept short and each step drops the columns it replaces.

No step uses a lambda (Spark interprets those) and no step grows with the boundaries but
the constant arrays, so the whole chain compiles into the stage's generated code. Steps
combine bits with ``|`` and look up with ``get`` (0-based, no error path): ANSI ``+`` and
``element_at`` add an overflow or bounds check per step, and with them the write stage's
generated method of a 23-column model grew past what the JVM's C1 compiler can allocate
registers for, so it never left the slowest compiled tier (its shuffle took 1.6x as long).

A constant array is written as one string split (and cast) rather than ``array(...)`` of
literals: Spark folds either into the same array literal before the stage's code is
generated, but until then every ``array`` element is an expression each analyzer and
optimizer rule walks, and a three-column Hilbert key has about 15,000 of them (seconds of
driver time per build, before the first task starts).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from dbt.adapters.zspark.core.sql_text import sql_string
from dbt.adapters.zspark.core.value_ranks import normalize_type

if TYPE_CHECKING:
    from dbt.adapters.zspark.layouts.base import ColumnSpec

#: Types whose nulls reach the key UDF as NaN (pandas holds them as floats): top rank.
NAN_IS_NULL = ("tinyint", "smallint", "int", "bigint", "float", "double")


def with_columns(sql: str, columns: Sequence[str], alias: str,
                 drop: Sequence[str] = ()) -> str:
    """``sql``'s rows with ``columns`` (SQL ``expression as name``) added and the helper
    columns ``drop`` (read by ``columns``, not after them) left out: every projection
    passes on each column it keeps, and each column it passes on travels with every task."""
    kept = f"* except ({', '.join(drop)})" if drop else "*"
    return f"select {kept}, {', '.join(columns)} from (\n{sql}\n) {alias}"


def boundaries_of(column: ColumnSpec) -> np.ndarray:
    """A column's sampled boundaries (none: an empty array)."""
    return column.boundaries if column.boundaries is not None else np.array([])


#: Bits of a position one search step finds: it compares the value with up to
#: ``2**STEP_BITS - 1`` probes, ``STEP_BITS`` of them for any one row (a ``case`` tree).
#: A search of n entries takes ``ceil(log2(n + 1) / STEP_BITS)`` projections.
STEP_BITS = 2
_RADIX = 1 << STEP_BITS


@dataclass(frozen=True)
class _Search:
    """An unrolled search of a sorted list: how many of its entries are below the value
    (``at_or_below``: at or below it). Step ``k`` finds the next ``STEP_BITS`` bits of
    that count, the position: positions so far are multiples of ``radix * size``
    (``size = radix**(depth - 1 - k)``), and its probes for digit ``d`` are the entries at
    1-based positions ``d * size``, ``d * size + radix * size``, ... Past the list's end a
    probe reads null (``get``), which counts as above every value, so the count never
    passes the list's length and the list needs no padding."""

    value: str
    family: str
    count: int
    #: Per step, per digit 1 .. radix - 1, its probes as values of ``family``.
    probes: tuple[tuple[tuple[object, ...], ...], ...]
    at_or_below: bool = False

    @classmethod
    def of(cls, value: str, family: str, entries: Sequence[object],
           at_or_below: bool = False) -> _Search:
        depth = -(-len(entries).bit_length() // STEP_BITS)  # radix**depth > len(entries)
        probes = tuple(
            tuple(tuple(entries[digit * size - 1::_RADIX * size]) for digit in range(1, _RADIX))
            for size in (_RADIX ** (depth - 1 - k) for k in range(depth)))
        return cls(value, family, len(entries), probes, at_or_below)

    def step(self, k: int, position: str) -> str:
        """The position after step ``k``: entries below the value among those seen."""
        size = _RADIX ** (len(self.probes) - 1 - k)
        # The ordinal of the position so far among multiples of radix * size.
        ordinal = f"shiftright({position}, {STEP_BITS * (len(self.probes) - k)})"
        below = "<=" if self.at_or_below else "<"

        def probe(digit: int) -> str | None:
            probes = self.probes[k][digit - 1]
            if not probes:
                return None
            if k == 0:  # the first step starts at position 0: one probe per digit
                return literal(probes[0], self.family)
            return f"get({constant_array(probes, self.family)}, {ordinal})"

        def digit(low: int, high: int) -> str:
            """The step's digit (times its size), known to be in ``low .. high``."""
            if low == high:
                return str(low * size)
            middle = (low + high + 1) // 2
            test = probe(middle)
            if test is None:
                return digit(low, middle - 1)
            return (f"case when {test} {below} {self.value} then {digit(middle, high)} "
                    f"else {digit(low, middle - 1)} end")

        return f"{position} | {digit(0, _RADIX - 1)}"

    def rank(self, position: str) -> str:
        """``value_ranks.rank_values``: 1 + the boundaries strictly below the value, 0 for
        null, and the top rank for NaN and for nulls of the numbers the UDF receives as
        floats (pandas makes their nulls NaN)."""
        if self.family in NAN_IS_NULL:
            missing = f"when {self.value} is null or isnan({self.value}) then {self.count + 1}L"
        else:
            missing = f"when {self.value} is null then 0L"
        return f"(case {missing} else 1L + {position} end)"


def searched_sql(sql: str, searches: Sequence[_Search], names: Sequence[str],
                 prefix: str) -> tuple[str, list[str]]:
    """``sql``'s rows with each search's position (``_Search``) as a column, and those
    columns' names: all searches step together, one projection per step, the shorter
    searches joining the later steps; each step drops the positions it replaces."""
    depth = max((len(s.probes) for s in searches), default=0)
    positions = ["0"] * len(searches)
    for k in range(depth):
        steps, replaced = [], []
        for i, search in enumerate(searches):
            own = k - (depth - len(search.probes))
            if own < 0:
                continue
            name = f"{names[i]}_{k}"
            steps.append(f"{search.step(own, positions[i])} as {name}")
            replaced += [positions[i]] if positions[i] != "0" else []
            positions[i] = name
        sql = with_columns(sql, steps, f"{prefix}_{k}", replaced)
    return sql, positions


def ranked_sql(values: Sequence[str], columns: Sequence[ColumnSpec],
               source_sql: str) -> tuple[str, list[str]]:
    """``source_sql``'s rows with each column's rank (``value_ranks.rank_values``) as a column,
    and those columns' names."""
    inputs = [f"__zspark_value_{i}" for i in range(len(columns))]
    families = [normalize_type(c.spark_type) for c in columns]
    sql = with_columns(f"select * from (\n{source_sql}\n) zspark_source",
                       [f"{_comparable_sql(v, f)} as {name}"
                        for v, f, name in zip(values, families, inputs, strict=True)],
                       "zspark_values")
    searches = [_Search.of(name, family, list(boundaries_of(column)))
                for name, family, column in zip(inputs, families, columns, strict=True)]
    sql, positions = searched_sql(sql, searches,
                                  [f"__zspark_position_{i}" for i in range(len(columns))],
                                  "zspark_search")
    ranks = [f"__zspark_rank_{i}" for i in range(len(searches))]
    return with_columns(sql, [f"{s.rank(p)} as {r}" for s, p, r
                              in zip(searches, positions, ranks, strict=True)], "zspark_ranked",
                        [*inputs, *(p for p in positions if p != "0")]), ranks


def cuts_at_or_below_sql(key: str, cuts: Sequence[int], source_sql: str,
                         name: str) -> str:
    """``source_sql``'s rows with ``name``: how many of the ascending bigint ``cuts`` sit at
    or below the row's non-null bigint ``key`` (its shuffle partition), by the ranks'
    unrolled search, one projection per step. A ``case`` tree over a thousand cuts
    (a write of a file per partition) is one expression of thousands of nodes, whose
    generated code ran an Iceberg write of 5 M rows into 1,000 files 8 s slower than
    Spark's own range partitioning."""
    search = _Search.of(key, "bigint", [int(c) for c in cuts], at_or_below=True)
    sql, (position,) = searched_sql(f"select * from (\n{source_sql}\n) zspark_unowned",
                                    [search], ["__zspark_cut"], "zspark_cuts")
    return with_columns(sql, [f"cast({position} as int) as {name}"], "zspark_owned",
                        [position] if position != "0" else [])


def _comparable_sql(value: str, family: str) -> str:
    """The value in the form its boundaries are stored (``value_ranks._comparable``)."""
    if family == "boolean":
        return f"cast({value} as bigint)"
    if family in ("float", "double"):
        return f"cast({value} as double)"
    if family == "decimal":
        # Through its text: Java parses decimal text to the nearest double, as Python's
        # float(Decimal) rounds; a scaled long divided by a power of ten may not.
        return f"cast(cast({value} as string) as double)"
    return value


def literal(value: object, family: str) -> str:
    """One boundary as a Spark SQL literal of its column's comparable type."""
    text = _text(value, family)
    if family in ("float", "double", "decimal"):
        return f"cast({sql_string(text)} as double)"
    if family == "date":
        return f"date{sql_string(text)}"
    if family == "string":
        return sql_string(text)
    return f"{text}L"


#: Characters a constant array's text may be split on (none is special in a regex).
_SEPARATORS = "\x1f\x1e\x1d\x1c" + "".join(map(chr, range(0xE000, 0xE100)))


def constant_array(values: Sequence[object], family: str) -> str:
    """``values`` (boundaries, or a table of ints) as one SQL expression Spark folds into
    an array literal of the column's comparable type: their text split on a character
    none of them holds, cast from strings unless they are strings."""
    texts = [_text(v, family) for v in values]
    separator = next((c for c in _SEPARATORS if not any(c in t for t in texts)), None)
    if separator is None:  # every candidate occurs: one literal per element
        return f"array({', '.join(literal(v, family) for v in values)})"
    split = f"split({sql_string(separator.join(texts))}, {sql_string(separator)}, -1)"
    if family == "string":
        return split
    element = {"float": "double", "double": "double", "decimal": "double", "date": "date",
               "int": "int"}.get(family, "bigint")
    return f"cast({split} as array<{element}>)"


def _text(value: object, family: str) -> str:
    """One boundary as the text Spark reads back as exactly its value."""
    if family in ("float", "double", "decimal"):
        return repr(float(value))  # type: ignore[arg-type]
    if family == "date":
        return str(np.datetime_as_string(np.asarray(value, dtype="datetime64[D]")))
    if family == "string":
        return str(value)
    return str(int(value))  # type: ignore[call-overload]
