"""The Gray-coded Z-order layout (``gray_by``): its key is a bijection of the grid, each
step of its curve changes one column, and with its neighbours it skips files."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dbt.adapters.zspark.layouts import LAYOUTS
from dbt.adapters.zspark.layouts.gray import gray_rank

FAST = settings(max_examples=60, deadline=None)


@FAST
@given(st.lists(st.integers(0, (1 << 63) - 1), min_size=1, max_size=50))
def test_the_rank_inverts_the_reflected_gray_code(values: list[int]) -> None:
    ranks = np.array(values, dtype=np.uint64)
    codes = ranks ^ (ranks >> np.uint64(1))
    assert gray_rank(codes).tolist() == values


@FAST
@given(st.integers(2, 3), st.integers(1, 4))
def test_the_key_walks_every_cell_once_changing_one_column_per_step(dims: int,
                                                                     bits: int) -> None:
    axes = np.meshgrid(*[np.arange(1 << bits, dtype=np.uint64)] * dims, indexing="ij")
    ranks = [a.ravel() for a in axes]
    keys = LAYOUTS["gray_by"].curve(ranks, bits)  # type: ignore[attr-defined]
    assert sorted(keys.tolist()) == list(range(1 << (dims * bits)))
    cells = np.stack(ranks, axis=1)[np.argsort(keys)]
    changed = (np.diff(cells.astype(np.int64), axis=0) != 0).sum(axis=1)
    assert (changed == 1).all()


@FAST
@given(st.lists(st.integers(0, 255), min_size=3, max_size=3),
       st.lists(st.floats(0.05, 1.0), min_size=3, max_size=3))
def test_weights_spend_the_bits_as_in_zorder_read_as_a_gray_code(cell: list[int],
                                                                   weights: list[float]) -> None:
    ranks = [np.array([v], dtype=np.uint64) for v in cell]
    gray, zorder = LAYOUTS["gray_by"], LAYOUTS["zorder_by"]
    assert gray.takes_weights
    expected = gray_rank(zorder.curve(ranks, 8, weights))  # type: ignore[attr-defined]
    assert gray.curve(ranks, 8, weights).tolist() == expected.tolist()  # type: ignore[attr-defined]
