"""Layout health figures against their definitions, computed the slow way."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dbt.adapters.zspark.skipping.health import (
    ColumnHealth,
    LayoutHealth,
    layout_health,
    overlap_figures,
    point_depth,
    rebuild_bounds,
)

ranges = st.lists(
    st.one_of(st.none(), st.tuples(st.integers(0, 30), st.integers(0, 10))),
    min_size=1, max_size=25,
).map(lambda items: pd.DataFrame(
    {"min": [None if i is None else i[0] for i in items],
     "max": [None if i is None else i[0] + i[1] for i in items]}, dtype=object))


def covers(bounds: pd.DataFrame, value: int) -> int:
    return sum(1 for lo, hi in zip(bounds["min"], bounds["max"], strict=True)
               if lo is None or lo <= value <= hi)


@settings(max_examples=200, deadline=None)
@given(ranges)
def test_overlaps_and_depth_follow_their_definitions(bounds: pd.DataFrame) -> None:
    rows = list(zip(bounds["min"], bounds["max"], strict=True))
    overlaps, depths = [], []
    for i, (lo, hi) in enumerate(rows):
        others = [j for j, (l2, h2) in enumerate(rows) if j != i and (
            lo is None or l2 is None or (l2 <= hi and h2 >= lo))]
        overlaps.append(len(others))
        span = range(0, 41) if lo is None else range(lo, hi + 1)
        depths.append(max(covers(bounds, v) for v in span))
    average_overlaps, average_depth = overlap_figures(bounds)
    assert average_overlaps == pytest.approx(np.mean(overlaps))
    assert average_depth == pytest.approx(np.mean(depths))


@settings(max_examples=200, deadline=None)
@given(ranges, st.lists(st.integers(-2, 45), min_size=1, max_size=30))
def test_point_depth_counts_the_files_holding_each_value(bounds: pd.DataFrame,
                                                         probes: list[int]) -> None:
    expected = np.mean([covers(bounds, v) for v in probes])
    assert point_depth(bounds, pd.Series(probes, dtype=object)) == pytest.approx(expected)


def test_a_sorted_sample_cut_into_groups_gives_narrow_rebuild_bounds() -> None:
    sample = pd.DataFrame({"a": np.arange(1000) % 100, "b": np.arange(1000) // 10})
    keys = sample["a"].to_numpy() * 1000 + sample["b"].to_numpy()  # a linear key: (a, b)
    rebuilt = rebuild_bounds(sample, [], keys, ["a", "b"], files=10)
    assert rebuilt is not None
    assert list(rebuilt["a"]["min"]) == list(range(0, 100, 10))
    assert list(rebuilt["a"]["max"]) == list(range(9, 100, 10))
    assert rebuild_bounds(sample, [], keys, ["a"], files=2000) is None

    health = layout_health(rebuilt, sample, rebuilt, rows=1000, pending_rows=250)
    first = health.columns[0]
    assert (first.depth, first.rebuild_depth, first.skip_share) == (1.0, 1.0, 0.9)
    assert health.columns[1].depth > 9  # every group spans almost all of b
    assert health.pending_share == 0.25
    assert "25.0% of rows written since the last full clustering" in health.describe()


def test_a_popular_value_weighs_by_its_rows_in_one_model_and_once_in_the_other() -> None:
    """Value 0 holds most rows and fills eight of ten files; 100 rare values share the
    other two. A query asked as often as values occur mostly reads the eight; a query on
    any distinct value mostly reads one."""
    bounds = pd.DataFrame({"min": [0] * 8 + [1, 51], "max": [0] * 8 + [50, 100]}, dtype=object)
    probes = pd.DataFrame({"a": [0] * 900 + list(range(1, 101))}, dtype=object)
    health = layout_health({"a": bounds}, probes, None, rows=1000, pending_rows=0)
    column = health.columns[0]
    assert column.depth == pytest.approx((900 * 8 + 100) / 1000)
    assert column.value_depth == pytest.approx((8 + 100) / 101)
    assert column.value_skip_share == pytest.approx(1 - (8 + 100) / 101 / 10)
    assert column.value_skip_share > 0.85 > 0.4 > column.skip_share
    assert f"({column.skip_share:.1%} skipped; {column.value_skip_share:.1%} per distinct " \
           "value)" in health.describe()
    assert health.table()[0]["value_skip_share"] == round(column.value_skip_share, 4)


def test_the_console_line_gives_each_columns_skip_and_the_rows_awaiting_reclustering() -> None:
    def column(name: str, depth: float) -> ColumnHealth:
        return ColumnHealth(name, 64, depth, None, 0.0, 0.0, depth)

    clustered = LayoutHealth((column("city", 17.9), column("day", 4.0)), 64, 1000, 0)
    assert clustered.skip_words() == "a point query skips 72% of files on city, 94% on day"
    pending = LayoutHealth((column("city", 64.0),), 64, 1000, 130)
    assert pending.skip_words() == ("a point query skips 0% of files on city; 13% of rows "
                                    "await re-clustering")
    assert LayoutHealth((), 0, 0, 0).skip_words() == ""
