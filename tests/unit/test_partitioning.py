"""How a write spreads rows over shuffle partitions and files (pure)."""

from __future__ import annotations

import doctest
import itertools
import math
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from dbt.adapters.zspark.core import partitioning
from dbt.adapters.zspark.core.partitioning import piece_spread


def test_the_examples_in_the_docstrings_hold() -> None:
    assert doctest.testmod(partitioning).failed == 0


@settings(max_examples=300, deadline=None)
@given(rows=st.integers(1, 5_000_000), file_count=st.integers(1, 3000),
       table_partitions=st.integers(1, 40), cores=st.integers(1, 16),
       shares=st.lists(st.floats(0.0, 1.0), min_size=1, max_size=200),
       data=st.data())
def test_pieces_never_exceed_their_file_budget_however_the_sample_misjudged_the_ranges(
        rows: int, file_count: int, table_partitions: int, cores: int, shares: list[float],
        data: st.DataObject) -> None:
    """Rows may land in the shuffle partitions in any proportions (the sample's cut points
    are only estimates), and every table partition boundary splits a partition's range:
    the files written never number more than the budget (or than the table partitions,
    each of which needs a file of its own)."""
    spread = piece_spread(list(range(1000)), rows, file_count, cores, 10**9, table_partitions)
    assert 1 <= spread.partitions <= file_count
    # Ranges in (table partition, key) order: each shuffle partition's rows are split
    # where a table partition starts; the boundaries fall anywhere.
    weights = [s + 1e-9 for s in shares[:spread.partitions]]
    weights += [1e-9] * (spread.partitions - len(weights))
    counts = [math.floor(rows * w / sum(weights)) for w in weights]
    counts[0] += rows - sum(counts)
    boundaries = data.draw(st.lists(st.integers(0, rows), min_size=table_partitions - 1,
                                    max_size=table_partitions - 1))
    edges = sorted({0, rows, *boundaries})
    files, start = 0, 0
    for count in counts:
        end = start + count
        for low, high in itertools.pairwise(edges):
            segment = min(end, high) - max(start, low)
            if segment > 0:
                files += 1 if spread.rows_per_file is None \
                    else math.ceil(segment / spread.rows_per_file)
        start = end
    assert files <= max(file_count, table_partitions)


def test_pieces_use_few_partitions_when_the_budget_allows() -> None:
    spread = piece_spread(list(range(1000)), 1_000_000, 400, 2, 10**8)
    assert spread.partitions == 8
    assert spread.rows_per_file is not None
    # Files only a little longer than an even split: the slack is one file per partition.
    assert 1_000_000 / 400 < spread.rows_per_file <= math.ceil(1_000_000 / (400 - 8))
    legacy = piece_spread(list(range(1000)), 1_000_000, 400, 2, 10**8, file_per_partition=True)
    assert (legacy.partitions, legacy.rows_per_file) == (400, None)


@settings(max_examples=200, deadline=None)
@given(cuts=st.lists(st.integers(-5, 5), max_size=12).map(sorted),
       keys=st.lists(st.integers(-7, 7), min_size=1, max_size=20))
def test_the_owner_search_counts_the_cuts_at_or_below_each_key(cuts: list[int],
                                                               keys: list[int]) -> None:
    owner = partitioning.owner_search(
        cuts, lambda cut: (lambda key: key >= cut),
        lambda test, then, otherwise: (lambda key: then(key) if test(key) else otherwise(key)),
        lambda j: (lambda key: j))
    assert [owner(k) for k in keys] == [sum(c <= k for c in cuts) for k in keys]


def test_a_balanced_spread_for_a_writer_without_row_cuts_gives_each_file_a_partition() -> None:
    """Iceberg's writer cuts no files by rows: each file of each group is a shuffle
    partition of its own, cut inside the group, so still no file holds two groups."""
    from types import SimpleNamespace

    import numpy as np

    from dbt.adapters.zspark.layouts.keyed_plan import _group_spread

    shift = 10
    rng = np.random.default_rng(3)
    groups = rng.choice(4, size=4000, p=[0.55, 0.25, 0.15, 0.05])
    keys = (groups << shift) + rng.integers(0, 1 << shift, size=4000)
    tree: Any = SimpleNamespace(groups=4)
    cut_by_rows = _group_spread(tree, keys, 40_000, 20, shift)
    own = _group_spread(tree, keys, 40_000, 20, shift, file_per_partition=True)
    assert own.rows_per_file is None
    assert own.key_shift is None
    cuts = [c[0] for c in own.cuts]
    assert cuts == sorted(set(cuts))
    assert {g << shift for g in range(1, 4)} <= set(cuts)  # every group starts a partition
    assert own.partitions <= 20 + 4  # the files the row cut makes, one spare per group
    per_file = np.bincount(np.searchsorted(cuts, keys, side="right"), minlength=own.partitions)
    assert per_file.max() <= 1.5 * cut_by_rows.rows_per_file * 4000 / 40_000
