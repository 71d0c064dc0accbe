"""Lexicographic order on the columns: what ``ORDER BY a, b, c`` gives (``linear_by``)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dbt.adapters.zspark.layouts.base import CurveLayout


class LinearLayout(CurveLayout):
    """Each column's rank after the previous one's: files are ordered and cut at the key;
    inside a file, rows of one key are sorted by the values themselves."""

    name = "linear"
    config_key = "linear_by"
    sorts_by_columns = True

    @staticmethod
    def curve(ranks: Sequence[np.ndarray], bits: int,
              weights: Sequence[float] = ()) -> np.ndarray:
        key = np.zeros(len(ranks[0]) if ranks else 0, dtype=np.uint64)
        for rank in ranks:
            key = (key << np.uint64(bits)) | rank.astype(np.uint64)
        return key

    def curve_sql(self, sql: str, grid: Sequence[str], bits: int,
                  weights: Sequence[float] = ()) -> tuple[str, str]:
        dims = len(grid)
        return sql, " | ".join(f"shiftleft({r}, {bits * (dims - 1 - j)})"
                               for j, r in enumerate(grid))
