"""Curve keys in Spark SQL alone: no Python worker, every step in Spark's generated code.

The same keys as the vectorised UDFs of ``layouts.py`` with ``curve_method='boundary'``,
bit for bit (a property test holds them equal): each column's rank among its boundaries
(nulls 0, NaN the top rank, else 1 + the boundaries strictly below the value), stretched
over the grid's bits, then the linear, Z-order or Hilbert curve over the ranks.

The query is a chain of projections over the model's SQL, each adding columns the next
one reads (SQL has no variables, and one expression per step keeps each small):

* a rank is a binary search unrolled into one step per bit: the step of size ``s`` asks
  whether the boundary ``s`` past the position found so far is below the value;
* the Hilbert key walks ``curves.hilbert_automaton``, one table lookup per few bit
  levels.

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

import numpy as np

from dbt.adapters.zspark import balanced, curves
from dbt.adapters.zspark.layouts import (
    ColumnSpec,
    group_shift,
    rank_grid_bits,
    zorder_schedule,
)
from dbt.adapters.zspark.planning import normalize_type
from dbt.adapters.zspark.sqltext import quote, sql_string

#: Types whose nulls reach the key UDF as NaN (pandas holds them as floats): top rank.
NAN_IS_NULL = ("tinyint", "smallint", "int", "bigint", "float", "double")


def keyed_sql(layout: str, columns: Sequence[ColumnSpec], values: Sequence[str],
              boundary_count: int, source_sql: str, key_column: str,
              tree: balanced.Tree | None = None, weights: Sequence[float] = ()) -> str:
    """``source_sql``'s rows with their key as ``key_column``, and helper columns named
    ``__zspark_*`` (select the model's columns from it). ``layout`` is ``linear``,
    ``zorder``, ``hilbert`` or ``balanced`` (with its fitted ``tree``); ``values`` are the
    columns' key inputs as SQL over the source (``clustering.key_input_sql``: timestamps
    as microseconds) and ``columns`` their specs with the stored boundaries, typed as the
    key inputs (``clustering.key_input_type``); ``weights`` order Z-order's bits."""
    if layout == "balanced":
        if tree is None:
            raise ValueError("the balanced layout keys rows with its fitted tree")
        if tree.curve:
            return keyed_sql(tree.curve, columns, values, boundary_count, source_sql,
                             key_column)
    elif layout not in ("linear", "zorder", "hilbert"):
        raise ValueError(f"no SQL key for layout {layout!r}")
    sql, ranks = ranked_sql(values, columns, source_sql)
    if layout == "balanced":
        assert tree is not None
        group, _ = _group_sql(tree.root, 0, 0, [ranks[i] for i in tree.order])
        key = f"shiftleft(cast({group} as bigint), {group_shift(boundary_count)}) | " \
              f"{ranks[tree.by_rows]}"
        return _with(sql, [f"{key} as {quote(key_column)}"], "zspark_keyed")
    dims = len(columns)
    bits = rank_grid_bits(boundary_count, dims)
    grid = [f"__zspark_grid_{i}" for i in range(dims)]
    sql = _with(sql, [f"cast(shiftleft({rank}, {bits}) div {len(_boundaries(column)) + 2} "
                      f"as bigint) as {name}"
                      for rank, column, name in zip(ranks, columns, grid, strict=True)],
                "zspark_grid")
    if layout == "linear":
        key = " | ".join(f"shiftleft({r}, {bits * (dims - 1 - j)})" for j, r in enumerate(grid))
    elif layout == "zorder":
        key = _interleave(grid, bits, zorder_schedule(weights, bits))
    else:
        automaton = curves.hilbert_automaton(dims, bits)
        if automaton is None:
            key = _skilling(grid, bits)
        else:
            sql, key = _walk(sql, automaton, grid)
    return _with(sql, [f"{key} as {quote(key_column)}"], "zspark_keyed")


def _with(sql: str, columns: Sequence[str], alias: str) -> str:
    """``sql``'s rows with ``columns`` (SQL ``expression as name``) added."""
    return f"select *, {', '.join(columns)} from (\n{sql}\n) {alias}"


def _boundaries(column: ColumnSpec) -> np.ndarray:
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
        boundaries = list(_boundaries(column))
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
        probe = _literal(probes[0], self.family) if len(probes) == 1 else (
            f"get({_constant_array(probes, self.family)}, "
            f"shiftright({position}, {size.bit_length()}))")
        return f"{position} | case when {probe} < {self.value} then {size} else 0 end"

    def rank(self, position: str) -> str:
        """``curves.rank_values``: 1 + the boundaries strictly below the value, 0 for
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
    """``source_sql``'s rows with each column's rank (``curves.rank_values``) as a column,
    and those columns' names. All columns search together, one projection per step, the
    shorter searches joining the later steps."""
    searches = [_Search.of(v, c) for v, c in zip(values, columns, strict=True)]
    inputs = [f"__zspark_value_{i}" for i in range(len(searches))]
    sql = _with(f"select * from (\n{source_sql}\n) zspark_source",
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
        sql = _with(sql, steps, f"zspark_search_{k}")
    ranks = [f"__zspark_rank_{i}" for i in range(len(searches))]
    return _with(sql, [f"{s.rank(p)} as {r}" for s, p, r
                       in zip(searches, positions, ranks, strict=True)], "zspark_ranked"), ranks


def _walk(sql: str, automaton: curves.HilbertAutomaton,
          grid: Sequence[str]) -> tuple[str, str]:
    """``sql`` with one column per lookup of the automaton (a few bit levels at a time)
    holding its table entry, and the Hilbert key over those columns."""
    dims, bits = automaton.dims, automaton.bits
    per_step = automaton.levels_per_step()
    state, top, entries = str(automaton.start), 0, []
    while top < bits:
        levels = min(per_step, bits - top)
        table = _constant_array(automaton.step_table(levels), "int")
        # The digits of levels top .. top+levels-1, the top one most significant.
        digits = " | ".join(
            f"shiftleft(shiftright({g}, {bits - 1 - level}) & 1L, "
            f"{dims * (top + levels - 1 - level) + dims - 1 - j})"
            for level in range(top, top + levels) for j, g in enumerate(grid))
        entry = f"__zspark_hilbert_{top}"
        sql = _with(sql, [f"get({table}, cast(shiftleft({state}, {dims * levels}) | "
                          f"{digits} as int)) as {entry}"], f"zspark_hilbert_{top}")
        state = f"shiftright({entry}, {dims * levels})"
        top += levels
        entries.append((entry, dims * levels, dims * (bits - top)))
    key = " | ".join(f"shiftleft(cast({e} & {(1 << width) - 1} as bigint), {shift})"
                     for e, width, shift in entries)
    return sql, key


def _group_sql(node: balanced.Node, level: int, first: int,
               ranks: Sequence[str]) -> tuple[str, int]:
    """The group ordinal of a row under ``node`` (``balanced.assign``: a child holds the
    ranks from its cut up to the next), and the first ordinal after the node's groups;
    ``ranks`` in level order."""
    if not node.children:
        return str(first), first + 1
    branches = []
    for child in node.children:
        branch, first = _group_sql(child, level + 1, first, ranks)
        branches.append(branch)
    if len(branches) == 1:  # a node its sample could not cut: one child
        return branches[0], first
    whens = " ".join(f"when {ranks[level]} < {int(cut)} then {branch}"
                     for cut, branch in zip(node.cuts, branches, strict=False))
    return f"(case {whens} else {branches[-1]} end)", first


def _comparable_sql(value: str, family: str) -> str:
    """The value in the form its boundaries are stored (``curves._comparable``)."""
    if family == "boolean":
        return f"cast({value} as bigint)"
    if family in ("float", "double"):
        return f"cast({value} as double)"
    if family == "decimal":
        # Through its text: Java parses decimal text to the nearest double, as Python's
        # float(Decimal) rounds; a scaled long divided by a power of ten may not.
        return f"cast(cast({value} as string) as double)"
    return value


def _literal(value: object, family: str) -> str:
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


def _constant_array(values: Sequence[object], family: str) -> str:
    """``values`` (boundaries, or a table of ints) as one SQL expression Spark folds into
    an array literal of the column's comparable type: their text split on a character
    none of them holds, cast from strings unless they are strings."""
    texts = [_text(v, family) for v in values]
    separator = next((c for c in _SEPARATORS if not any(c in t for t in texts)), None)
    if separator is None:  # every candidate occurs: one literal per element
        return f"array({', '.join(_literal(v, family) for v in values)})"
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


def _interleave(ranks: Sequence[str], bits: int, schedule: Sequence[int] | None) -> str:
    """``curves.interleave_bits``: each dimension's bits placed where ``schedule`` puts them."""
    return " | ".join(f"shiftleft(shiftright({ranks[j]}, {bit}) & 1L, {slot})"
                      for j, bit, slot in curves.bit_positions(len(ranks), bits, schedule))


def _skilling(ranks: Sequence[str], bits: int) -> str:
    """``curves.hilbert_index`` for grids too large for an automaton: Skilling's
    AxestoTranspose over the ranks, interleaved, in one expression (with lambdas). The
    ranks travel packed in one bigint (dimension ``i`` in bits ``i * bits ..``; at most
    63 bits in all, so shifts never meet the sign), so each of the (bit level, dimension)
    steps of an ``aggregate`` is a few operations on a long rather than a new array;
    ``transform(array(e), x -> ...)[0]`` binds a result once (SQL has no ``let``)."""
    dims = len(ranks)
    packed = " | ".join(f"shiftleft({r}, {i * bits})" for i, r in enumerate(ranks))
    # Step (level, i): where x[i] has the level's bit, invert x[0]'s low bits; else
    # exchange the low bits t of x[0] and x[i]: x ^ t * (1 + 2^(i*bits)) flips both slots
    # at once (t fits below bit i*bits, so the product carries nothing).
    steps = [f"named_struct('bit', {i * bits + level}, 'at', {i * bits}, "
             f"'low', {(1 << level) - 1}L, 'both', {1 + (1 << (i * bits))}L)"
             for level in range(bits - 1, 0, -1) for i in range(dims)]
    undone = packed
    if steps:
        undone = (f"aggregate(array({', '.join(steps)}), {packed}, (x, s) -> "
                  f"case when (shiftright(x, s.bit) & 1L) = 1L then x ^ s.low "
                  f"else x ^ ((x ^ shiftright(x, s.at)) & s.low) * s.both end)")
    # Gray encode: slot i becomes the XOR of slots 0..i.
    mask = (1 << (dims * bits)) - 1
    gray = " ^ ".join(["u", *(f"shiftleft(u, {j * bits})" for j in range(1, dims))])
    gray = f"({gray}) & {mask}L"
    top = (dims - 1) * bits
    fold = " ^ ".join([f"case when (shiftright(g, {top + q}) & 1L) = 1L then {(1 << q) - 1}L "
                       f"else 0L end" for q in range(bits - 1, 0, -1)] or ["0L"])
    # t applied to every slot, then bit b of slot j goes to b * dims + dims - 1 - j.
    every_slot = sum(1 << (j * bits) for j in range(dims))
    interleaved = " | ".join(
        f"shiftleft(shiftright(v, {j * bits + b}) & 1L, {b * dims + dims - 1 - j})"
        for b in range(bits) for j in range(dims))
    return (f"transform(array({undone}), u -> transform(array({gray}), g -> "
            f"transform(array(g ^ ({fold}) * {every_slot}L), v -> {interleaved})[0])[0])[0]")
