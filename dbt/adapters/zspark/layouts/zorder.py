"""Z-order (Morton): the bits of each column's rank interleaved (``zorder_by``)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from dbt.adapters.zspark.core import curves, value_ranks
from dbt.adapters.zspark.layouts.base import CurveLayout, KeyFunction


def zorder_schedule(weights: Sequence[float], bits: int) -> tuple[int, ...] | None:
    """Z-order's bit order for ``weights``; ``None`` (plain round robin) when they are equal
    or unset."""
    return curves.bit_schedule(weights, bits) if len(set(weights)) > 1 else None


class ZOrderLayout(CurveLayout):
    """With unequal ``cluster_weights`` the leading bits go to the heavier columns
    (``curves.bit_schedule``)."""

    name = "zorder"
    config_key = "zorder_by"
    takes_weights = True

    @staticmethod
    def curve(ranks: Sequence[np.ndarray], bits: int,
              weights: Sequence[float] = ()) -> np.ndarray:
        return curves.interleave_bits(ranks, bits, zorder_schedule(weights, bits))

    def curve_sql(self, sql: str, grid: Sequence[str], bits: int,
                  weights: Sequence[float] = ()) -> tuple[str, str]:
        # curves.interleave_bits: each dimension's bits placed where the schedule puts them.
        schedule = zorder_schedule(weights, bits)
        return sql, " | ".join(f"shiftleft(shiftright({grid[j]}, {bit}) & 1L, {slot})"
                               for j, bit, slot in curves.bit_positions(len(grid), bits,
                                                                        schedule))

    def key_type(self, curve_method: str) -> str:
        return "binary" if curve_method == "direct" else "bigint"

    def _direct_key_function(self, types: Sequence[str], bits: int) -> KeyFunction:
        # The seeds' direct Z-order keeps every 64-bit code whole: a byte-string key.
        def direct_key(*values: pd.Series) -> pd.Series:
            codes = [value_ranks.order_preserving_codes(v, t)
                     for v, t in zip(values, types, strict=True)]
            return pd.Series(curves.interleave_codes_to_bytes(codes), dtype=object)

        return direct_key
