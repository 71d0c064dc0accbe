"""A multiway partition fitted on the build's sample (``balanced_by``; the fitting is
``balanced.py``): the rows split into groups of whole files by nested ranges of every
column but the last, fan-outs by weight, distinct values and skew; each group sorted by
the last column.

The key is the row's group, then its rank on the last column: each group is written by a
shuffle partition of its own and cut into files by row count.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

import numpy as np
import pandas as pd

from dbt.adapters.zspark.core import balanced, curves
from dbt.adapters.zspark.core.sql_text import quote
from dbt.adapters.zspark.layouts.base import (
    ColumnSpec,
    CurveLayout,
    KeyFunction,
    Layout,
    boundary_ranks,
)
from dbt.adapters.zspark.layouts.ranks_sql import ranked_sql, with_columns


def group_shift(boundary_count: int) -> int:
    """Bits of the last column's rank below the group in a balanced key."""
    return curves.rank_bits(boundary_count)


class BalancedLayout(Layout):
    name = "balanced"
    config_key = "balanced_by"
    sorts_by_columns = True
    takes_weights = True
    #: Its ranges are cut among sampled boundaries: no direct bit mapping.
    curve_methods = ("boundary",)

    #: The curve kept instead of the tree where the sample shows it reads fewer files.
    fallback: ClassVar[str] = "hilbert"

    def __init__(self, curve_layouts: Mapping[str, CurveLayout]) -> None:
        #: The curves a fitted tree may choose instead of itself, by name.
        self.curve_layouts = dict(curve_layouts)

    def tie_break(self, columns: Sequence[str],
                  tree: balanced.Tree | None = None) -> list[str]:
        if tree is not None and tree.curve:
            return self.curve_layouts[tree.curve].tie_break(columns)
        # A group's rows follow the column cut by rows (its rank in the key, then its values).
        last = columns[tree.by_rows] if tree is not None else columns[-1]
        return [last, *(c for c in columns if c != last)]

    def fit(self, columns: Sequence[ColumnSpec], sample: Sequence[pd.Series],
            boundary_count: int, file_count: int,
            weights: Sequence[float]) -> balanced.Tree | None:
        ranks = boundary_ranks(columns, sample)
        curve_keys = self.curve_layouts[self.fallback].key_function(
            columns, "boundary", boundary_count)(*sample).to_numpy()
        # The values themselves, not their ranks: a rank holds many rare values, each a
        # value a value-uniform query asks for (null one value too).
        value_ids = [pd.factorize(values, use_na_sentinel=False)[0] for values in sample]
        return balanced.choose_layout(ranks, weights, file_count, self.fallback, curve_keys,
                                      value_ids)

    def key_function(self, columns: Sequence[ColumnSpec], curve_method: str,
                     boundary_count: int, tree: balanced.Tree | None = None,
                     weights: Sequence[float] = ()) -> KeyFunction:
        fitted = _fitted(tree)
        if fitted.curve:
            return self.curve_layouts[fitted.curve].key_function(columns, curve_method,
                                                                 boundary_count)
        specs = tuple(columns)
        bits = np.uint64(group_shift(boundary_count))

        def balanced_key(*values: pd.Series) -> pd.Series:
            ranks = boundary_ranks(specs, values)
            group = balanced.assign(fitted, ranks).astype(np.uint64)
            return pd.Series(((group << bits) | ranks[fitted.by_rows]).astype(np.int64))

        return balanced_key

    def keyed_sql(self, columns: Sequence[ColumnSpec], values: Sequence[str],
                  boundary_count: int, source_sql: str, key_column: str,
                  tree: balanced.Tree | None = None, weights: Sequence[float] = ()) -> str:
        fitted = _fitted(tree)
        if fitted.curve:
            return self.curve_layouts[fitted.curve].keyed_sql(
                columns, values, boundary_count, source_sql, key_column)
        sql, ranks = ranked_sql(values, columns, source_sql)
        group, _ = _group_sql(fitted.root, 0, 0, [ranks[i] for i in fitted.order])
        key = (f"shiftleft(cast({group} as bigint), {group_shift(boundary_count)}) | "
               f"{ranks[fitted.by_rows]}")
        return with_columns(sql, [f"{key} as {quote(key_column)}"], "zspark_keyed", ranks)


def _fitted(tree: balanced.Tree | None) -> balanced.Tree:
    if tree is None:
        raise ValueError("the balanced layout keys rows with its fitted tree")
    return tree


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
