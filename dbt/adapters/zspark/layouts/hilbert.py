"""Hilbert curve: like Z-order, but every step of the curve moves to a neighbouring cell
(``hilbert_by``).

In SQL the key walks ``curves.hilbert_automaton``, one table lookup per few bit levels;
grids too large for an automaton take Skilling's transform in one expression.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dbt.adapters.zspark.core import curves
from dbt.adapters.zspark.layouts.base import CurveLayout
from dbt.adapters.zspark.layouts.ranks_sql import constant_array, with_columns


class HilbertLayout(CurveLayout):
    name = "hilbert"
    config_key = "hilbert_by"

    @staticmethod
    def curve(ranks: Sequence[np.ndarray], bits: int,
              weights: Sequence[float] = ()) -> np.ndarray:
        return curves.hilbert_index(ranks, bits)

    def curve_sql(self, sql: str, grid: Sequence[str], bits: int,
                  weights: Sequence[float] = ()) -> tuple[str, str]:
        automaton = curves.hilbert_automaton(len(grid), bits)
        if automaton is None:
            return sql, _skilling(grid, bits)
        return _walk(sql, automaton, grid)


def _walk(sql: str, automaton: curves.HilbertAutomaton,
          grid: Sequence[str]) -> tuple[str, str]:
    """``sql`` with one column per lookup of the automaton (a few bit levels at a time)
    holding its table entry, and the Hilbert key over those columns."""
    dims, bits = automaton.dims, automaton.bits
    per_step = automaton.levels_per_step()
    state, top, entries = str(automaton.start), 0, []
    while top < bits:
        levels = min(per_step, bits - top)
        table = constant_array(automaton.step_table(levels), "int")
        # The digits of levels top .. top+levels-1, the top one most significant.
        digits = " | ".join(
            f"shiftleft(shiftright({g}, {bits - 1 - level}) & 1L, "
            f"{dims * (top + levels - 1 - level) + dims - 1 - j})"
            for level in range(top, top + levels) for j, g in enumerate(grid))
        entry = f"__zspark_hilbert_{top}"
        sql = with_columns(sql, [f"get({table}, cast(shiftleft({state}, {dims * levels}) | "
                          f"{digits} as int)) as {entry}"], f"zspark_hilbert_{top}")
        state = f"shiftright({entry}, {dims * levels})"
        top += levels
        entries.append((entry, dims * levels, dims * (bits - top)))
    key = " | ".join(f"shiftleft(cast({e} & {(1 << width) - 1} as bigint), {shift})"
                     for e, width, shift in entries)
    return sql, key


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
