"""Gray-coded Z-order: the interleaved bits read as a reflected Gray code (``gray_by``).

Z-order walks the grid in the order of its interleaved bits, and jumps across it at every
carry. Read as a Gray code instead (Faloutsos, 1986), consecutive keys differ in a single
interleaved bit, so the curve leaves a cell for one that differs in one column only: it
jumps less often than Z-order, while its key stays a few bit operations in SQL (no
lookup table, unlike the Hilbert curve). The key is the Gray code's rank: the
interleaved word with every higher bit xored into each bit.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dbt.adapters.zspark.core.sql_text import quote
from dbt.adapters.zspark.layouts.base import CurveLayout
from dbt.adapters.zspark.layouts.ranks_sql import with_columns
from dbt.adapters.zspark.layouts.zorder import ZOrderLayout

#: Z-order's interleaving, whose word the Gray code's rank is taken of.
_ZORDER = ZOrderLayout()
#: Shifts that xor every higher bit of a 64-bit word into each bit (the Gray code's rank).
_PREFIX_SHIFTS = (1, 2, 4, 8, 16, 32)


def gray_rank(codes: np.ndarray) -> np.ndarray:
    """The position of each reflected Gray code in the Gray sequence.

    >>> gray_rank(np.array([0, 1, 3, 2, 6, 7, 5, 4], dtype=np.uint64)).tolist()
    [0, 1, 2, 3, 4, 5, 6, 7]
    """
    rank = codes.astype(np.uint64)
    for shift in _PREFIX_SHIFTS:
        rank = rank ^ (rank >> np.uint64(shift))
    return rank


class GrayLayout(CurveLayout):
    """With unequal ``cluster_weights`` the interleaving gives the leading bits to the
    heavier columns, as Z-order's does."""

    name = "gray"
    config_key = "gray_by"
    takes_weights = True

    @staticmethod
    def curve(ranks: Sequence[np.ndarray], bits: int,
              weights: Sequence[float] = ()) -> np.ndarray:
        return gray_rank(ZOrderLayout.curve(ranks, bits, weights))

    def curve_sql(self, sql: str, grid: Sequence[str], bits: int,
                  weights: Sequence[float] = ()) -> tuple[str, str]:
        sql, word = _ZORDER.curve_sql(sql, grid, bits, weights)
        # Each step a column of its own: nested, the word would be written 2**6 times.
        # The key is at most 63 bits, so every value is non-negative and shiftright is the
        # unsigned shift of numpy's.
        step = "__zspark_gray_0"
        sql = with_columns(sql, [f"cast({word} as bigint) as {quote(step)}"], "zspark_gray_0")
        for number, shift in enumerate(_PREFIX_SHIFTS, 1):
            previous, step = step, f"__zspark_gray_{number}"
            sql = with_columns(sql, [f"{previous} ^ shiftright({previous}, {shift}) as "
                                     f"{quote(step)}"], f"zspark_gray_{number}")
        return sql, step
