"""What every layout is: a strategy that orders rows before they are cut into files.

A layout maps each row to a sort key, once as a vectorised numpy function (the key UDF)
and once as Spark SQL (builds, and servers without Python), bit for bit the same. The
table build range-partitions on that key into ``file_count`` files and sorts each file by
it, so files (and the Parquet row groups inside them) hold rows that are close under the
key. This module and the layouts are pure (numpy / pandas and SQL text), so the keys can
be tested without Spark.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pandas as pd

from dbt.adapters.zspark.core import balanced, curves, value_ranks
from dbt.adapters.zspark.core.sql_text import quote
from dbt.adapters.zspark.layouts.ranks_sql import boundaries_of, ranked_sql, with_columns

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


def boundary_ranks(columns: Sequence[ColumnSpec], values: Sequence[pd.Series]) -> list[np.ndarray]:
    """Each column's values as ranks among its boundaries (``value_ranks.rank_values``)."""
    return [value_ranks.rank_values(v, spec.boundaries if spec.boundaries is not None
                                    else np.array([]))
            for v, spec in zip(values, columns, strict=True)]


def rank_grid_bits(boundary_count: int, dims: int) -> int:
    """Bits per column of a boundary-method curve key: a rank's bits, as many as fit."""
    return min(curves.rank_bits(boundary_count), curves.MAX_KEY_BITS // dims)


class Layout(ABC):
    """A strategy that orders rows before they are written."""

    name: ClassVar[str]
    #: The model config that selects this layout, e.g. ``zorder_by``.
    config_key: ClassVar[str]
    #: Whether rows of equal key are also sorted by the columns' own values.
    sorts_by_columns: ClassVar[bool] = False
    #: Whether ``cluster_weights`` (each column's share of point queries) shape its key.
    takes_weights: ClassVar[bool] = False
    #: The ``curve_method`` values it keys rows by.
    curve_methods: ClassVar[tuple[str, ...]] = CURVE_METHODS

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

    @abstractmethod
    def keyed_sql(self, columns: Sequence[ColumnSpec], values: Sequence[str],
                  boundary_count: int, source_sql: str, key_column: str,
                  tree: balanced.Tree | None = None, weights: Sequence[float] = ()) -> str:
        """:meth:`key_function`'s boundary-method key in Spark SQL: ``source_sql``'s rows
        with their key as ``key_column``, and helper columns named ``__zspark_*`` (select
        the model's columns from it). ``values`` are the columns' key inputs as SQL over
        the source (``keyed_plan.key_input_sql``: timestamps as microseconds) and
        ``columns`` their specs with the stored boundaries, typed as the key inputs."""

    def fit(self, columns: Sequence[ColumnSpec], sample: Sequence[pd.Series],
            boundary_count: int, file_count: int,
            weights: Sequence[float]) -> balanced.Tree | None:
        """The partition a layout fits on the build's sample before keying (curves: none)."""
        return None

    def key_type(self, curve_method: str) -> str:
        """The Spark type of the key the function returns."""
        return "bigint"


class CurveLayout(Layout):
    """A space-filling curve: columns -> integer ranks on a grid -> one curve index.

    A curve gives its combination of the grid's ranks twice: :meth:`curve` in numpy and
    :meth:`curve_sql` in SQL; the ranks before it are shared."""

    @staticmethod
    @abstractmethod
    def curve(ranks: Sequence[np.ndarray], bits: int,
              weights: Sequence[float] = ()) -> np.ndarray:
        """Combine per-column ranks of ``bits`` bits each into one uint64 key (``weights``:
        only a layout that :attr:`takes_weights` spends its bits by them)."""

    @abstractmethod
    def curve_sql(self, sql: str, grid: Sequence[str], bits: int,
                  weights: Sequence[float] = ()) -> tuple[str, str]:
        """:meth:`curve` over the columns ``grid`` of ``sql``: the query (with any helper
        columns the key reads) and the key's expression."""

    def key_function(self, columns: Sequence[ColumnSpec], curve_method: str,
                     boundary_count: int, tree: balanced.Tree | None = None,
                     weights: Sequence[float] = ()) -> KeyFunction:
        specs = tuple(columns)
        dims = len(specs)
        bits_fit = curves.MAX_KEY_BITS // dims
        if curve_method == "boundary":
            used = rank_grid_bits(boundary_count, dims)
            boundaries = [boundaries_of(spec) for spec in specs]

            def boundary_key(*values: pd.Series) -> pd.Series:
                ranks = [
                    stretch_ranks(value_ranks.rank_values(v, b), len(b) + 2, used)
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
                value_ranks.order_preserving_codes(v, t) >> np.uint64(64 - bits)
                for v, t in zip(values, types, strict=True)
            ]
            return pd.Series(self.curve(ranks, bits).astype(np.int64))

        return direct_key

    def keyed_sql(self, columns: Sequence[ColumnSpec], values: Sequence[str],
                  boundary_count: int, source_sql: str, key_column: str,
                  tree: balanced.Tree | None = None, weights: Sequence[float] = ()) -> str:
        sql, ranks = ranked_sql(values, columns, source_sql)
        dims = len(columns)
        bits = rank_grid_bits(boundary_count, dims)
        grid = [f"__zspark_grid_{i}" for i in range(dims)]
        # stretch_ranks: rank << bits // (boundaries + 2).
        sql = with_columns(sql, [
            f"cast(shiftleft({rank}, {bits}) div {len(boundaries_of(column)) + 2} "
            f"as bigint) as {name}"
            for rank, column, name in zip(ranks, columns, grid, strict=True)], "zspark_grid",
            ranks)
        sql, key = self.curve_sql(sql, grid, bits, weights)
        return with_columns(sql, [f"{key} as {quote(key_column)}"], "zspark_keyed", grid)
