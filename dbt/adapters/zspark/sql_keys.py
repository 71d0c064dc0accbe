"""Curve keys in Spark SQL alone, for servers that run no Python (a Thrift server).

The same keys as the vectorised UDFs of ``layouts.py`` with ``curve_method='boundary'``,
bit for bit (a property test holds them equal): each column's rank among its boundaries
(nulls 0, NaN the top rank, else 1 + the boundaries strictly below the value), stretched
over the grid's bits, then the linear, Z-order or Hilbert curve over the ranks.

A rank is a binary search over the boundaries as an array literal, in ``aggregate``; the
Hilbert curve is Skilling's transform, one ``aggregate`` step per (bit level, dimension).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

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
    """``source_sql``'s rows with their key as ``key_column``. ``layout`` is ``linear``,
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
        return _balanced_sql(tree, columns, values, boundary_count, source_sql, key_column)
    dims = len(columns)
    bits = rank_grid_bits(boundary_count, dims)
    ranks = [stretched_rank_sql(v, c, bits) for v, c in zip(values, columns, strict=True)]
    if layout == "linear":
        key = " | ".join(f"shiftleft({r}, {bits * (dims - 1 - j)})" for j, r in enumerate(ranks))
    elif layout == "zorder":
        key = _interleave(ranks, bits, zorder_schedule(weights, bits))
    elif layout == "hilbert":
        key = _hilbert(ranks, bits)
    else:
        raise ValueError(f"no SQL key for layout {layout!r}")
    return f"select *, {key} as {quote(key_column)} from (\n{source_sql}\n) zspark_source"


def _balanced_sql(tree: balanced.Tree, columns: Sequence[ColumnSpec], values: Sequence[str],
                  boundary_count: int, source_sql: str, key_column: str) -> str:
    """``layouts.BalancedLayout``'s key in SQL: the row's group, found by a CASE per tree
    node over the columns' ranks (in the tree's level order), then its rank on the column
    cut by rows. The ranks are columns of an inner query, so each binary search runs once
    per row."""
    ranks = [f"__zspark_rank_{i}" for i in range(len(columns))]
    ranked = ", ".join(f"{rank_sql(v, c)} as {quote(r)}"
                       for v, c, r in zip(values, columns, ranks, strict=True))
    group, _ = _group_sql(tree.root, 0, 0, [quote(ranks[i]) for i in tree.order])
    key = f"shiftleft(cast({group} as bigint), {group_shift(boundary_count)}) | " \
          f"{quote(ranks[tree.by_rows])}"
    return (f"select *, {key} as {quote(key_column)} from (\n"
            f"select *, {ranked} from (\n{source_sql}\n) zspark_source\n) zspark_ranked")


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


def stretched_rank_sql(value: str, column: ColumnSpec, bits: int) -> str:
    """The column's rank spread over ``bits`` bits, as ``layouts.stretch_ranks``."""
    boundaries = column.boundaries if column.boundaries is not None else np.array([])
    levels = len(boundaries) + 2
    return f"cast(shiftleft({rank_sql(value, column)}, {bits}) div {levels} as bigint)"


def rank_sql(value: str, column: ColumnSpec) -> str:
    """``curves.rank_values`` in SQL: 1 + the number of boundaries strictly below the
    value (a binary search), 0 for null, and the top rank for NaN and for nulls of the
    numbers the UDF receives as floats (pandas makes their nulls NaN)."""
    family = normalize_type(column.spark_type)
    boundaries = column.boundaries if column.boundaries is not None else np.array([])
    count = len(boundaries)
    compared = _comparable_sql(value, family)
    if family in NAN_IS_NULL:
        missing = f"when {value} is null or isnan({compared}) then {count + 1}L"
    else:
        missing = f"when {value} is null then 0L"
    if count == 0:
        return f"(case {missing} else 1L end)"
    # The array of literals folds to one constant; the value is a column or a cast of one.
    literal = f"array({', '.join(_literal(b, family) for b in boundaries)})"
    # [lo, hi] brackets the first boundary not below the value; each step halves it.
    steps = math.ceil(math.log2(count + 1)) + 1
    mid = "cast((s.lo + s.hi) div 2 as int)"
    below = (f"aggregate(sequence(1, {steps}), named_struct('lo', 0, 'hi', {count}), "
             f"(s, _) -> case when s.lo >= s.hi then s "
             f"when element_at({literal}, {mid} + 1) < {compared} "
             f"then named_struct('lo', {mid} + 1, 'hi', s.hi) "
             f"else named_struct('lo', s.lo, 'hi', {mid}) end).lo")
    return f"(case {missing} else 1L + {below} end)"


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
    if family in ("float", "double", "decimal"):
        number = float(value)  # type: ignore[arg-type]
        return f"cast({sql_string(repr(number))} as double)"
    if family == "date":
        day = np.datetime_as_string(np.asarray(value, dtype="datetime64[D]"))
        return f"date{sql_string(str(day))}"
    if family == "string":
        return sql_string(str(value))
    return f"{int(value)}L"  # type: ignore[call-overload]


def _interleave(ranks: Sequence[str], bits: int, schedule: Sequence[int] | None) -> str:
    """``curves.interleave_bits``: each dimension's bits placed where ``schedule`` puts them."""
    return " | ".join(f"shiftleft(shiftright({ranks[j]}, {bit}) & 1L, {slot})"
                      for j, bit, slot in curves.bit_positions(len(ranks), bits, schedule))


def _hilbert(ranks: Sequence[str], bits: int) -> str:
    """``curves.hilbert_index``: Skilling's AxestoTranspose over the ranks, interleaved, in
    one expression. The ranks travel packed in one bigint (dimension ``i`` in bits
    ``i * bits ..``; at most 63 bits in all, so shifts never meet the sign), so each of the
    (bit level, dimension) steps of an ``aggregate`` is a few operations on a long rather
    than a new array; ``transform(array(e), x -> ...)[0]`` binds a result once (SQL has no
    ``let``). A chain of one projection per step would avoid the lambda, but Spark's
    CollapseProject can take minutes merging such a chain when planning it."""
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
