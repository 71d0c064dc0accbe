"""Each column's rank among its boundaries in Spark SQL alone: the part of every layout's
SQL key before its curve (``layouts/*.py``).

The same ranks as ``value_ranks.rank_values`` in the key UDFs, bit for bit (a property test
holds the keys equal): nulls 0, NaN the top rank, else 1 + the boundaries strictly below
the value. The query is a chain of projections over the model's SQL, each adding columns
the next one reads (SQL has no variables, and one expression per step keeps each small):
a rank is a binary search unrolled into one step per bit, the step of size ``s`` asking
whether the boundary ``s`` past the position found so far is below the value.

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


def with_columns(sql: str, columns: Sequence[str], alias: str) -> str:
    """``sql``'s rows with ``columns`` (SQL ``expression as name``) added."""
    return f"select *, {', '.join(columns)} from (\n{sql}\n) {alias}"


def boundaries_of(column: ColumnSpec) -> np.ndarray:
    """A column's sampled boundaries (none: an empty array)."""
    return column.boundaries if column.boundaries is not None else np.array([])


@dataclass(frozen=True)
class _Search:
    """One column's unrolled binary search: ``probes[k]`` are the boundaries step ``k``
    (of size ``2**(steps - 1 - k)``) may compare with, as SQL literals. The boundaries are
    padded to ``2**steps`` with copies of the last (a count of those below the value,
    capped at the real count, is unchanged), so every step is the same few operations."""

    value: str
    family: str
    count: int
    probes: tuple[tuple[object, ...], ...]

    @classmethod
    def of(cls, value: str, column: ColumnSpec) -> _Search:
        family = normalize_type(column.spark_type)
        boundaries = list(boundaries_of(column))
        steps = len(boundaries).bit_length()  # 2**steps > count: the last step can add 1
        padded = boundaries + boundaries[-1:] * ((1 << steps) - len(boundaries))
        # Step k, size s = 2**(steps-1-k): positions so far are multiples of 2s, so it
        # compares with the boundaries at 1-based positions s, 3s, 5s, ...
        probes = tuple(tuple(padded[size - 1::2 * size])
                       for size in (1 << (steps - 1 - k) for k in range(steps)))
        return cls(_comparable_sql(value, family), family, len(boundaries), probes)

    def step(self, k: int, position: str) -> str:
        """The position after step ``k``: boundaries below the value among those seen."""
        size = 1 << (len(self.probes) - 1 - k)
        probes = self.probes[k]
        # Positions so far are multiples of 2s = 2**size.bit_length(): their ordinal.
        probe = literal(probes[0], self.family) if len(probes) == 1 else (
            f"get({constant_array(probes, self.family)}, "
            f"shiftright({position}, {size.bit_length()}))")
        return f"{position} | case when {probe} < {self.value} then {size} else 0 end"

    def rank(self, position: str) -> str:
        """``value_ranks.rank_values``: 1 + the boundaries strictly below the value, 0 for
        null, and the top rank for NaN and for nulls of the numbers the UDF receives as
        floats (pandas makes their nulls NaN)."""
        if self.family in NAN_IS_NULL:
            missing = f"when {self.value} is null or isnan({self.value}) then {self.count + 1}L"
        else:
            missing = f"when {self.value} is null then 0L"
        found = f"1L + least({position}, {self.count})" if self.count else "1L"
        return f"(case {missing} else {found} end)"


def ranked_sql(values: Sequence[str], columns: Sequence[ColumnSpec],
               source_sql: str) -> tuple[str, list[str]]:
    """``source_sql``'s rows with each column's rank (``value_ranks.rank_values``) as a column,
    and those columns' names. All columns search together, one projection per step, the
    shorter searches joining the later steps."""
    searches = [_Search.of(v, c) for v, c in zip(values, columns, strict=True)]
    inputs = [f"__zspark_value_{i}" for i in range(len(searches))]
    sql = with_columns(f"select * from (\n{source_sql}\n) zspark_source",
                [f"{s.value} as {name}" for s, name in zip(searches, inputs, strict=True)],
                "zspark_values")
    searches = [_Search(name, s.family, s.count, s.probes)
                for s, name in zip(searches, inputs, strict=True)]
    depth = max(len(s.probes) for s in searches)
    positions = ["0"] * len(searches)
    for k in range(depth):
        steps = []
        for i, search in enumerate(searches):
            own = k - (depth - len(search.probes))
            if own < 0:
                continue
            name = f"__zspark_position_{i}_{k}"
            steps.append(f"{search.step(own, positions[i])} as {name}")
            positions[i] = name
        sql = with_columns(sql, steps, f"zspark_search_{k}")
    ranks = [f"__zspark_rank_{i}" for i in range(len(searches))]
    return with_columns(sql, [f"{s.rank(p)} as {r}" for s, p, r
                       in zip(searches, positions, ranks, strict=True)], "zspark_ranked"), ranks


def cuts_at_or_below_sql(key: str, cuts: Sequence[int], source_sql: str,
                         name: str) -> str:
    """``source_sql``'s rows with ``name``: how many of the ascending bigint ``cuts`` sit at
    or below the row's non-null bigint ``key`` (its shuffle partition), by the ranks'
    unrolled binary search, one projection per step. A ``case`` tree over a thousand cuts
    (a write of a file per partition) is one expression of thousands of nodes, whose
    generated code ran an Iceberg write of 5 M rows into 1,000 files 8 s slower than
    Spark's own range partitioning."""
    steps = len(cuts).bit_length()
    padded = [int(c) for c in cuts] + [int(cuts[-1])] * ((1 << steps) - len(cuts))
    sql = f"select * from (\n{source_sql}\n) zspark_unowned"
    position = "0"
    for k in range(steps):
        size = 1 << (steps - 1 - k)
        probes = padded[size - 1::2 * size]
        probe = f"{probes[0]}L" if len(probes) == 1 else (
            f"get({constant_array(probes, 'bigint')}, shiftright({position}, "
            f"{size.bit_length()}))")
        step = f"__zspark_cut_{k}"
        sql = with_columns(sql, [f"{position} | case when {probe} <= {key} then {size} "
                                 f"else 0 end as {step}"], f"zspark_cuts_{k}")
        position = step
    return with_columns(sql, [f"cast(least({position}, {len(cuts)}) as int) as {name}"],
                        "zspark_owned")


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
