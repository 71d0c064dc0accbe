"""Layout strategies: how rows are ordered before they are cut into files.

A layout maps each row to a sort key. The table build range-partitions on that key into
``file_count`` files and sorts each file by it, so files (and the Parquet row groups inside
them) hold rows that are close under the key. Adding a strategy means subclassing
:class:`Layout` and registering it in :data:`LAYOUTS`; nothing else changes.

This module is pure (numpy/pandas only) so the key construction can be tested without Spark.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pandas as pd

from dbt.adapters.zspark import balanced, curves

KeyFunction = Callable[..., pd.Series]

CURVE_METHODS = ("boundary", "direct")


@dataclass(frozen=True)
class ColumnSpec:
    """A clustering column, its Spark type and (boundary method) its sampled boundaries."""

    name: str
    spark_type: str
    boundaries: np.ndarray | None = None


def stretch_ranks(ranks: np.ndarray, levels: int, bits: int) -> np.ndarray:
    """Spread ranks ``0 .. levels-1`` evenly over ``0 .. 2**bits - 1``.

    A column with fewer distinct values than ``boundary_count`` has fewer boundaries; left
    as is, its ranks would use only the low bits and the curve would order by the other
    columns first. Stretched, every column spans the whole grid and weighs the same.
    """
    return (ranks.astype(np.uint64) << np.uint64(bits)) // np.uint64(levels)


class Layout(ABC):
    """A strategy that orders rows before they are written."""

    name: ClassVar[str]
    #: The model config that selects this layout, e.g. ``zorder_by``.
    config_key: ClassVar[str]
    #: Whether rows of equal key are also sorted by the columns' own values.
    sorts_by_columns: ClassVar[bool] = False

    def tie_break(self, columns: Sequence[str],
                  tree: balanced.Tree | None = None) -> list[str]:
        """The columns that order rows of equal key, most significant first."""
        return list(columns) if self.sorts_by_columns else []

    @abstractmethod
    def key_function(self, columns: Sequence[ColumnSpec], curve_method: str,
                     boundary_count: int, tree: balanced.Tree | None = None,
                     weights: Sequence[float] = ()) -> KeyFunction:
        """A vectorised function: one pandas Series per column in, the key Series out
        (``tree``: the fitted partition of a layout that fits one; ``weights``: the
        columns' shares of point queries, for a layout keyed by weight)."""

    def fit(self, columns: Sequence[ColumnSpec], sample: Sequence[pd.Series],
            boundary_count: int, file_count: int,
            weights: Sequence[float]) -> balanced.Tree | None:
        """The partition a layout fits on the build's sample before keying (curves: none)."""
        return None

    def key_type(self, curve_method: str) -> str:
        """The Spark type of the key the function returns."""
        return "bigint"


class _CurveLayout(Layout):
    """Shared work of the space-filling curves: columns -> integer ranks -> curve index."""

    @staticmethod
    @abstractmethod
    def curve(ranks: Sequence[np.ndarray], bits: int,
              weights: Sequence[float] = ()) -> np.ndarray:
        """Combine per-column ranks of ``bits`` bits each into one uint64 key (``weights``:
        only Z-order spends its bits by weight; planning refuses them elsewhere)."""

    def key_function(self, columns: Sequence[ColumnSpec], curve_method: str,
                     boundary_count: int, tree: balanced.Tree | None = None,
                     weights: Sequence[float] = ()) -> KeyFunction:
        specs = tuple(columns)
        dims = len(specs)
        bits_fit = curves.MAX_KEY_BITS // dims
        if curve_method == "boundary":
            used = rank_grid_bits(boundary_count, dims)
            boundaries = [
                spec.boundaries if spec.boundaries is not None else np.array([])
                for spec in specs
            ]

            def boundary_key(*values: pd.Series) -> pd.Series:
                ranks = [
                    stretch_ranks(curves.rank_values(v, b), len(b) + 2, used)
                    for v, b in zip(values, boundaries, strict=True)
                ]
                return pd.Series(self.curve(ranks, used, weights).astype(np.int64))

            return boundary_key

        types = [spec.spark_type for spec in specs]
        return self._direct_key_function(types, bits_fit)

    def _direct_key_function(self, types: Sequence[str], bits: int) -> KeyFunction:
        # Direct codes are 64 bits each; keep the top bits of each so the key fits a long.
        def direct_key(*values: pd.Series) -> pd.Series:
            ranks = [
                curves.order_preserving_codes(v, t) >> np.uint64(64 - bits)
                for v, t in zip(values, types, strict=True)
            ]
            return pd.Series(self.curve(ranks, bits).astype(np.int64))

        return direct_key


class LinearLayout(_CurveLayout):
    """Lexicographic order on the columns (what ``ORDER BY a, b, c`` gives).

    Its key puts each column's rank after the previous one's, which orders files and cuts
    them at the key; inside a file, rows of one key are sorted by the values themselves.
    """

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


class ZOrderLayout(_CurveLayout):
    """Z-order (Morton): the bits of each column's rank interleaved; with unequal weights
    the leading bits go to the heavier columns (``curves.bit_schedule``)."""

    name = "zorder"
    config_key = "zorder_by"

    @staticmethod
    def curve(ranks: Sequence[np.ndarray], bits: int,
              weights: Sequence[float] = ()) -> np.ndarray:
        return curves.interleave_bits(ranks, bits, zorder_schedule(weights, bits))

    def key_type(self, curve_method: str) -> str:
        return "binary" if curve_method == "direct" else "bigint"

    def _direct_key_function(self, types: Sequence[str], bits: int) -> KeyFunction:
        # The seeds' direct Z-order keeps every 64-bit code whole: a byte-string key.
        def direct_key(*values: pd.Series) -> pd.Series:
            codes = [curves.order_preserving_codes(v, t)
                     for v, t in zip(values, types, strict=True)]
            return pd.Series(curves.interleave_codes_to_bytes(codes), dtype=object)

        return direct_key


class HilbertLayout(_CurveLayout):
    """Hilbert curve: like Z-order but every step moves to a neighbouring cell."""

    name = "hilbert"
    config_key = "hilbert_by"

    @staticmethod
    def curve(ranks: Sequence[np.ndarray], bits: int,
              weights: Sequence[float] = ()) -> np.ndarray:
        return curves.hilbert_index(ranks, bits)


class BalancedLayout(Layout):
    """A multiway partition fitted on the sample (``balanced.py``): the rows split into
    groups of whole files by nested ranges of every column but the last, fan-outs by
    weight, distinct values and skew; each group sorted by the last column.

    The key is the row's group, then its rank on the last column: each group is written
    by a shuffle partition of its own and cut into files by row count.
    """

    name = "balanced"
    config_key = "balanced_by"
    sorts_by_columns = True

    #: The curve kept instead of the tree where the sample shows it reads fewer files.
    fallback: ClassVar[str] = "hilbert"

    def tie_break(self, columns: Sequence[str],
                  tree: balanced.Tree | None = None) -> list[str]:
        if tree is not None and tree.curve:
            return LAYOUTS_BY_NAME[tree.curve].tie_break(columns)
        # A group's rows follow the column cut by rows (its rank in the key, then its values).
        last = columns[tree.by_rows] if tree is not None else columns[-1]
        return [last, *(c for c in columns if c != last)]

    def fit(self, columns: Sequence[ColumnSpec], sample: Sequence[pd.Series],
            boundary_count: int, file_count: int,
            weights: Sequence[float]) -> balanced.Tree | None:
        ranks = boundary_ranks(columns, sample)
        curve_keys = LAYOUTS_BY_NAME[self.fallback].key_function(
            columns, "boundary", boundary_count)(*sample).to_numpy()
        # The values themselves, not their ranks: a rank holds many rare values, each a
        # value a value-uniform query asks for (null one value too).
        value_ids = [pd.factorize(values, use_na_sentinel=False)[0] for values in sample]
        return balanced.choose_layout(ranks, weights, file_count, self.fallback, curve_keys,
                                      value_ids)

    def key_function(self, columns: Sequence[ColumnSpec], curve_method: str,
                     boundary_count: int, tree: balanced.Tree | None = None,
                     weights: Sequence[float] = ()) -> KeyFunction:
        if tree is None:
            raise ValueError("the balanced layout keys rows with its fitted tree")
        if tree.curve:
            return LAYOUTS_BY_NAME[tree.curve].key_function(columns, curve_method,
                                                            boundary_count)
        specs = tuple(columns)
        bits = np.uint64(group_shift(boundary_count))
        fitted = tree

        def balanced_key(*values: pd.Series) -> pd.Series:
            ranks = boundary_ranks(specs, values)
            group = balanced.assign(fitted, ranks).astype(np.uint64)
            return pd.Series(((group << bits) | ranks[fitted.by_rows]).astype(np.int64))

        return balanced_key


def boundary_ranks(columns: Sequence[ColumnSpec], values: Sequence[pd.Series]) -> list[np.ndarray]:
    """Each column's values as ranks among its boundaries (``curves.rank_values``)."""
    return [curves.rank_values(v, spec.boundaries if spec.boundaries is not None
                               else np.array([]))
            for v, spec in zip(values, columns, strict=True)]


def rank_grid_bits(boundary_count: int, dims: int) -> int:
    """Bits per column of a boundary-method curve key: a rank's bits, as many as fit."""
    return min(curves.rank_bits(boundary_count), curves.MAX_KEY_BITS // dims)


def zorder_schedule(weights: Sequence[float], bits: int) -> tuple[int, ...] | None:
    """Z-order's bit order for ``weights``; ``None`` (plain round robin) when they are equal
    or unset."""
    return curves.bit_schedule(weights, bits) if len(set(weights)) > 1 else None


def group_shift(boundary_count: int) -> int:
    """Bits of the last column's rank below the group in a balanced key."""
    return curves.rank_bits(boundary_count)


LAYOUTS: dict[str, Layout] = {
    layout.config_key: layout
    for layout in (LinearLayout(), ZOrderLayout(), HilbertLayout(), BalancedLayout())
}
LAYOUTS_BY_NAME: dict[str, Layout] = {layout.name: layout for layout in LAYOUTS.values()}
