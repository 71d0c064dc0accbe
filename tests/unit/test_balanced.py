"""The balanced layout's partition (pure): fan-outs, groups, files per group."""

from __future__ import annotations

import doctest
import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dbt.adapters.zspark.core import balanced
from dbt.adapters.zspark.layouts.planning import ClusteringConfigError, plan_clustering

RNG = np.random.default_rng(7)


def test_the_examples_in_the_docstrings_hold() -> None:
    assert doctest.testmod(balanced).failed == 0


def test_a_column_with_few_values_takes_no_more_ranges_than_values() -> None:
    """7 distinct values cannot take 10 cuts: the other columns split finer instead."""
    few = RNG.integers(0, 7, 20_000)
    many = RNG.integers(0, 10**6, (2, 20_000))
    tree = balanced.fit([few, *many], [1, 1, 1], 1000)
    assert tree.fan_outs[0] == [7]
    assert min(tree.fan_outs[1]) >= 11  # sqrt(1000 / 7) = 12: the rest of the budget


def test_a_heavy_value_keeps_a_range_of_its_own_and_its_subtree_gets_its_files() -> None:
    """A value holding 30% of the rows: cuts at equal quantiles collapse onto it, and the
    next column splits its range about twice as finely as the others' (sqrt(300) against
    sqrt(80) ranges)."""
    first = np.where(RNG.random(50_000) < 0.3, 500, RNG.integers(0, 1000, 50_000))
    others = RNG.integers(0, 10**6, (2, 50_000))
    tree = balanced.fit([first, *others], [1, 1, 1], 1000)
    children = tree.root.children
    assert len(children) < 10  # collapsed cuts
    heavy = int(np.searchsorted(tree.root.cuts, 500, side="right"))
    sizes = [len(child.cuts) + 1 for child in children]
    assert sizes[heavy] == max(sizes) >= 15
    assert sorted(sizes)[len(sizes) // 2] <= 10
    group = balanced.assign(tree, [first, *others])
    in_heavy = np.unique(group[first == 500])
    assert len(in_heavy) == sizes[heavy]  # the heavy value's rows fill its subtree


def test_weights_spend_the_resolution_where_queries_filter() -> None:
    columns = [RNG.integers(0, 10**6, 50_000) for _ in range(3)]
    equal = balanced.fit(columns, [1, 1, 1], 1000)
    weighted = balanced.fit(columns, [0.8, 0.2, 0], 1000)
    assert equal.fan_outs[0] == [10]
    assert set(equal.fan_outs[1]) <= {9, 10, 11}
    # Proportional to the weights (63 x 16 x 1): the column no query filters on takes one
    # range at the first level, so the second column is the one cut by rows in each group.
    assert weighted.order == (2, 0, 1)
    assert weighted.by_rows == 1
    assert weighted.fan_outs[0] == [1]
    assert weighted.fan_outs[1][0] >= 60
    assert 60 <= weighted.groups <= 66  # of about 16 files each, along the second column
    group = balanced.assign(weighted, columns)
    ranges = [np.ptp(columns[0][group == g]) for g in range(weighted.groups)]
    assert max(ranges) < 2 * 10**6 / 60  # each group a narrow range of the first column


columns_strategy = st.lists(
    st.one_of(st.integers(1, 5), st.integers(5, 200), st.just(10**6)), min_size=1,
    max_size=4)


@settings(max_examples=60, deadline=None)
@given(cardinalities=columns_strategy, rows=st.integers(1, 3000), files=st.integers(1, 400),
       seed=st.integers(0, 2**16), weights=st.lists(st.floats(0.0, 5.0), min_size=4,
                                                    max_size=4),
       blend=st.sampled_from(balanced.BLENDS))
def test_every_row_lands_in_exactly_one_group_and_the_tree_survives_storage(
        cardinalities: list[int], rows: int, files: int, seed: int,
        weights: list[float], blend: tuple[float, float]) -> None:
    rng = np.random.default_rng(seed)
    columns = [rng.integers(0, c, rows).astype(np.uint64) for c in cardinalities]
    chosen = weights[:len(columns)]
    if not any(chosen):
        chosen[0] = 1.0
    alpha, tilt = blend
    tree = balanced.fit(columns, chosen, files, alpha, tilt=tilt)
    group = balanced.assign(tree, columns)
    assert group.shape == (rows,)
    assert group.min() >= 0
    assert group.max() < tree.groups
    # Fresh values (unseen by the fit) land in a group too.
    fresh = [rng.integers(0, 2 * c + 2, 500).astype(np.uint64) for c in cardinalities]
    assert balanced.assign(tree, fresh).max() < tree.groups
    stored = balanced.from_json(balanced.to_json(tree), ["uint64"] * len(columns))
    assert (balanced.assign(stored, fresh) == balanced.assign(tree, fresh)).all()
    assert (stored.alpha, stored.tilt) == blend
    assert tree.groups <= max(1, math.ceil(1.1 * files))


def test_groups_hold_equal_rows_of_distinct_values() -> None:
    columns = [RNG.permutation(64_000).astype(np.uint64) for _ in range(3)]
    group = balanced.assign(balanced.fit(columns, [1, 1, 1], 1000), columns)
    counts = np.bincount(group)
    assert len(counts) == 100
    assert counts.max() / counts.mean() < 1.05


@settings(max_examples=200, deadline=None)
@given(groups=st.lists(st.integers(0, 100_000), min_size=1, max_size=60),
       files=st.integers(1, 3000))
def test_files_per_group_never_exceed_the_budget_and_the_cut_is_the_finest(
        groups: list[int], files: int) -> None:
    """Within the budget with the finest cut, unless a file would grow past 1.25x the
    mean file: then files are cut at that size (heavy groups take several)."""
    rows = balanced.file_rows(groups, files)
    cap = max(1, math.ceil(balanced.MAX_FILE_SHARE * sum(groups) / files))
    assert rows <= cap
    written = sum(math.ceil(g / rows) for g in groups)
    if rows == cap:
        return
    if sum(1 for g in groups if g) < files:
        assert written <= files
        if rows > 1:
            assert sum(math.ceil(g / (rows - 1)) for g in groups) > files
    else:
        assert rows >= max(groups)


@pytest.mark.parametrize(("config", "problem"), [
    ({"balanced_by": ["a", "b"], "curve_method": "direct"}, "is set with curve_method"),
    ({"balanced_by": ["a", "b"], "cluster_weights": {"c": 1}}, "names column 'c'"),
    ({"balanced_by": ["a", "b"], "cluster_weights": {"a": -1}}, "gives 'a' the weight -1"),
    ({"balanced_by": ["a", "b"], "cluster_weights": {"a": 0}}, "weighs every column 0"),
    ({"hilbert_by": ["a", "b"], "cluster_weights": {"a": 1}}, "is set with hilbert_by"),
])
def test_what_the_balanced_layout_cannot_take_is_refused_by_name(
        config: dict[str, object], problem: str) -> None:
    schema = {"a": "int", "b": "string", "c": "int", "p": "date"}
    with pytest.raises(ClusteringConfigError, match="Allowed:") as raised:
        plan_clustering("m", config, schema, "table")
    assert problem in str(raised.value)
    assert str(raised.value).startswith("Model 'm': config '")


def _layout_fit(columns: list[np.ndarray], files: int) -> tuple[balanced.Tree, list[Any]]:
    """What a build fits: boundaries and the tree (or the curve kept) from the sample."""
    import pandas as pd

    from dbt.adapters.zspark.core import value_ranks
    from dbt.adapters.zspark.layouts import LAYOUTS, ColumnSpec

    sample = [pd.Series(c) for c in columns]
    specs = [ColumnSpec(f"c{i}", "bigint", value_ranks.sample_boundaries(s, 1000))
             for i, s in enumerate(sample)]
    tree = LAYOUTS["balanced_by"].fit(specs, sample, 1000, files, [1.0] * len(columns))
    assert tree is not None
    return tree, specs


def _reads(columns: list[np.ndarray], group: np.ndarray, rows_per_file: float,
           order: np.ndarray, files: int) -> float:
    """Files a point query reads on average over the columns, were all rows written so."""
    skips = balanced.expected_skips(columns, group, rows_per_file, order=order).rows
    return balanced.expected_reads(skips, [1.0] * len(columns), files)


def test_on_correlated_columns_the_layout_keeps_the_curve_that_reads_fewer_files() -> None:
    """Rows near a line through three columns, a fifth of each column's values drawn at
    random: a group cut along one column spans its whole range of the others' noise, while
    each Hilbert file is a narrow box on all three. The build's sample (a tenth of the
    rows) shows it; written in full both ways, the curve indeed reads fewer files."""
    from dbt.adapters.zspark.layouts import LAYOUTS

    rows, files = 200_000, 200
    line = RNG.integers(0, 5000, rows)
    columns = [line, *(np.where(RNG.random(rows) < 0.2, RNG.integers(0, 5000, rows),
                                line + RNG.integers(-10, 11, rows)) for _ in range(2))]
    tree, specs = _layout_fit([c[::10] for c in columns], files)
    assert tree.curve == "hilbert"
    assert tree.groups == 1
    assert tree.compared["hilbert"].regret < tree.compared["tree"].regret
    assert tree.compared["hilbert"].worse < tree.compared["tree"].worse
    stored = balanced.from_json(balanced.to_json(tree), ["uint64"] * 3)
    assert (stored.curve, stored.compared, stored.groups) == ("hilbert", tree.compared, 1)

    import pandas as pd

    full = [pd.Series(c) for c in columns]
    keys = LAYOUTS["balanced_by"].key_function(specs, "boundary", 1000, tree)(*full)
    hilbert = LAYOUTS["hilbert_by"].key_function(specs, "boundary", 1000)(*full)
    assert keys.equals(hilbert)
    curve = _reads(columns, np.zeros(rows, dtype=np.int64), rows / files, keys.to_numpy(), files)
    fitted = balanced.fit([c[::10] for c in columns], [1, 1, 1], files)
    group = balanced.assign(fitted, columns)
    per_file = balanced.file_rows(np.bincount(group).tolist(), files)
    nested = _reads(columns, group, per_file, columns[fitted.by_rows], files)
    assert curve < 0.9 * nested, (curve, nested)


def test_on_independent_columns_the_layout_keeps_its_tree() -> None:
    columns = [RNG.integers(0, 10**6, 50_000) for _ in range(3)]
    tree, _ = _layout_fit(columns, 1000)
    assert tree.curve is None
    assert tree.groups > 50
    assert tree.compared["tree"].regret < tree.compared["hilbert"].regret
    assert tree.compared["tree"].worse < tree.compared["hilbert"].worse
