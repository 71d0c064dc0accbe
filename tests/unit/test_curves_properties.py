"""Property tests for the space-filling curve helpers."""

from __future__ import annotations

import datetime as dt
import decimal
import itertools
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dbt.adapters.zspark.core.curves import (
    bit_schedule,
    deinterleave_bits,
    hilbert_automaton,
    hilbert_index,
    hilbert_point,
    interleave_bits,
    interleave_codes_to_bytes,
)
from dbt.adapters.zspark.core.value_ranks import (
    order_preserving_codes,
    rank_values,
    sample_boundaries,
)

FAST = settings(max_examples=60, deadline=None)

INT_TYPES = {"tinyint": 8, "smallint": 16, "int": 32, "bigint": 64}


def float_key(v: float) -> tuple[bool, float]:
    """Spark order: NaN above everything, -0.0 == 0.0."""
    return (True, 0.0) if math.isnan(v) else (False, v + 0.0)


def assert_order_preserved(
    values: list[Any],
    codes: np.ndarray,
    key: Callable[[Any], Any],
    strict: bool,
) -> None:
    """Sorted by ``key``, codes never decrease (and rise between distinct keys if strict)."""
    pairs = sorted(zip(values, codes.tolist(), strict=True), key=lambda p: key(p[0]))
    for (a, ca), (b, cb) in itertools.pairwise(pairs):
        if key(a) == key(b):
            assert ca == cb, (a, b)
        elif strict:
            assert ca < cb, (a, b)
        else:
            assert ca <= cb, (a, b)


# --------------------------------------------------------------------------- direct codes


@st.composite
def typed_ints(draw: st.DrawFn) -> tuple[str, list[int]]:
    name = draw(st.sampled_from(sorted(INT_TYPES)))
    half = 1 << (INT_TYPES[name] - 1)
    return name, draw(st.lists(st.integers(-half, half - 1), max_size=40))


@FAST
@given(typed_ints())
def test_int_codes_strictly_ordered(case: tuple[str, list[int]]) -> None:
    name, ints = case
    codes = order_preserving_codes(pd.Series(ints, dtype=np.int64), name)
    assert_order_preserved(ints, codes, lambda v: v, strict=True)
    # Nullable input gives the same codes, and null the largest one.
    with_null = order_preserving_codes(pd.Series([*ints, None], dtype="Int64"), name)
    assert with_null[:-1].tolist() == codes.tolist()
    assert int(with_null[-1]) == max([*codes.tolist(), int(with_null[-1])])


@FAST
@given(st.lists(st.floats(allow_nan=True, allow_infinity=True), max_size=40))
def test_double_codes_ordered(values: list[float]) -> None:
    codes = order_preserving_codes(pd.Series(values, dtype=np.float64), "double")
    assert_order_preserved(values, codes, float_key, strict=True)


@FAST
@given(st.lists(st.floats(width=32, allow_nan=True, allow_infinity=True), max_size=40))
def test_float_codes_ordered(values: list[float]) -> None:
    codes = order_preserving_codes(pd.Series(values, dtype=np.float32), "float")
    assert_order_preserved(values, codes, float_key, strict=True)
    assert (codes & np.uint64(0xFFFF_FFFF) == 0).all()  # left-aligned 32-bit codes


@st.composite
def decimals(draw: st.DrawFn) -> tuple[int, int, list[decimal.Decimal]]:
    precision = draw(st.integers(1, 38))
    scale = draw(st.integers(0, precision))
    bound = 10**precision - 1
    unscaled = draw(st.lists(st.integers(-bound, bound), max_size=30))
    exact = decimal.Context(prec=60)  # the default 28 digits would round wide values
    return precision, scale, [decimal.Decimal(u).scaleb(-scale, exact) for u in unscaled]


@FAST
@given(decimals())
def test_decimal_codes_ordered(case: tuple[int, int, list[decimal.Decimal]]) -> None:
    precision, scale, values = case
    codes = order_preserving_codes(pd.Series(values, dtype=object), f"decimal({precision},{scale})")
    # Up to 18 digits the code is the exact unscaled long; wider ones keep the top bits.
    assert_order_preserved(values, codes, lambda v: v, strict=precision <= 18)


@FAST
@given(st.lists(st.dates(), max_size=40))
def test_date_codes_strictly_ordered(values: list[dt.date]) -> None:
    codes = order_preserving_codes(pd.Series(values, dtype=object), "date")
    assert_order_preserved(values, codes, lambda v: v, strict=True)


PD_MIN = dt.datetime(1678, 1, 1)
PD_MAX = dt.datetime(2261, 12, 31)


@FAST
@given(
    st.lists(st.datetimes(min_value=PD_MIN, max_value=PD_MAX), max_size=40),
    st.integers(-14 * 60, 14 * 60),
)
def test_timestamp_codes_strictly_ordered(values: list[dt.datetime], offset_min: int) -> None:
    naive = pd.Series(pd.to_datetime(values), dtype="datetime64[ns]")
    codes = order_preserving_codes(naive, "timestamp_ntz")
    assert_order_preserved(values, codes, lambda v: v, strict=True)
    # The same instants shown in another zone give the same codes.
    tz = dt.timezone(dt.timedelta(minutes=offset_min))
    aware = naive.dt.tz_localize("UTC").dt.tz_convert(tz)
    assert order_preserving_codes(aware, "timestamp").tolist() == codes.tolist()


short_text = st.text(st.characters(codec="utf-8", exclude_characters="\x00"), max_size=8).filter(
    lambda s: len(s.encode()) <= 8
)


@FAST
@given(st.lists(short_text, max_size=40))
def test_short_string_codes_strictly_ordered(values: list[str]) -> None:
    codes = order_preserving_codes(pd.Series(values, dtype=object), "string")
    assert_order_preserved(values, codes, lambda v: v, strict=True)


@FAST
@given(st.lists(st.text(max_size=20), max_size=40))
def test_string_codes_ordered(values: list[str]) -> None:
    codes = order_preserving_codes(pd.Series(values, dtype=object), "string")
    assert_order_preserved(values, codes, lambda v: v, strict=False)


# --------------------------------------------------------------------------- boundary ranks


def check_ranks(
    sample: list[Any], values: list[Any], k: int, key: Callable[[Any], Any], dtype: Any = None
) -> None:
    b = sample_boundaries(pd.Series(sample, dtype=dtype), k)
    assert len(b) <= k
    blist = b.tolist()
    assert all(key(x) < key(y) for x, y in itertools.pairwise(blist))
    ranks = rank_values(pd.Series(values, dtype=dtype), b)
    assert ranks.dtype == np.uint64
    assert_order_preserved(values, ranks, key, strict=False)
    assert all(1 <= r <= len(b) + 1 for r in ranks.tolist())


@FAST
@given(st.lists(st.integers(-1000, 1000)), st.lists(st.integers(-2000, 2000)), st.integers(0, 20))
def test_rank_ints_monotone_and_exact(sample: list[int], values: list[int], k: int) -> None:
    check_ranks(sample, values, k, lambda v: v, dtype=np.int64)
    b = sample_boundaries(pd.Series(sample, dtype=np.int64), k).tolist()
    ranks = rank_values(pd.Series(values, dtype=np.int64), np.array(b, dtype=np.int64))
    assert ranks.tolist() == [1 + sum(x < v for x in b) for v in values]


@FAST
@given(
    st.lists(st.floats(allow_nan=True), max_size=50),
    st.lists(st.floats(allow_nan=True), max_size=50),
    st.integers(1, 20),
)
def test_rank_floats_monotone(sample: list[float], values: list[float], k: int) -> None:
    check_ranks(sample, values, k, float_key, dtype=np.float64)
    b = sample_boundaries(pd.Series(sample, dtype=np.float64), k)
    ranks = rank_values(pd.Series(values, dtype=np.float64), b).tolist()
    assert all(r == len(b) + 1 for v, r in zip(values, ranks, strict=True) if math.isnan(v))


PREFIXES = st.sampled_from(["", "https://example.com/a/", "zzzzzzzzzz"])
no_nul_text = st.builds(
    lambda p, s: p + s, PREFIXES, st.text(st.characters(codec="utf-8", exclude_characters="\x00"))
)
any_text = st.builds(lambda p, s: p + s, PREFIXES, st.text(st.characters(codec="utf-8")))


@FAST
@given(st.lists(any_text, max_size=50), st.lists(any_text, max_size=50), st.integers(1, 20))
def test_rank_strings_monotone(sample: list[str], values: list[str], k: int) -> None:
    check_ranks(sample, values, k, lambda v: v, dtype=object)


@FAST
@given(st.lists(no_nul_text, max_size=50), st.lists(no_nul_text, max_size=50), st.integers(1, 20))
def test_rank_strings_exact(sample: list[str], values: list[str], k: int) -> None:
    b = sample_boundaries(pd.Series(sample, dtype=object), k).tolist()
    ranks = rank_values(pd.Series(values, dtype=object), np.array(b)).tolist()
    # Short NUL-free boundaries are stored exactly, so ranks count the boundaries below.
    assert ranks == [1 + sum(x < v for x in b) for v in values]


@FAST
@given(st.lists(st.dates(), max_size=40), st.lists(st.dates(), max_size=40), st.integers(1, 10))
def test_rank_dates_monotone(sample: list[dt.date], values: list[dt.date], k: int) -> None:
    check_ranks(sample, values, k, lambda v: v, dtype=object)


@FAST
@given(
    st.lists(st.datetimes(min_value=PD_MIN, max_value=PD_MAX), max_size=40),
    st.lists(st.datetimes(min_value=PD_MIN, max_value=PD_MAX), max_size=40),
    st.integers(1, 10),
)
def test_rank_timestamps_monotone(
    sample: list[dt.datetime], values: list[dt.datetime], k: int
) -> None:
    b = sample_boundaries(pd.Series(pd.to_datetime(sample), dtype="datetime64[ns]"), k)
    ranks = rank_values(pd.Series(pd.to_datetime(values), dtype="datetime64[ns]"), b)
    assert_order_preserved(values, ranks, lambda v: v, strict=False)


@FAST
@given(decimals(), decimals(), st.integers(1, 10))
def test_rank_decimals_monotone(
    sample: tuple[int, int, list[decimal.Decimal]],
    values: tuple[int, int, list[decimal.Decimal]],
    k: int,
) -> None:
    b = sample_boundaries(pd.Series(sample[2], dtype=object), k)
    ranks = rank_values(pd.Series(values[2], dtype=object), b)
    assert_order_preserved(values[2], ranks, lambda v: v, strict=False)


@FAST
@given(st.lists(st.one_of(st.none(), st.integers(0, 9)), max_size=30), st.integers(1, 5))
def test_rank_nulls_are_zero(values: list[int | None], k: int) -> None:
    s = pd.Series(values, dtype="Int64")
    ranks = rank_values(s, sample_boundaries(s, k)).tolist()
    assert [r == 0 for r in ranks] == [v is None for v in values]


# --------------------------------------------------------------------------- curves


def full_grid(dims: int, bits: int) -> list[np.ndarray]:
    side = 1 << bits
    grid = np.indices((side,) * dims).reshape(dims, -1)
    return [row.astype(np.uint64) for row in grid]


small_grid = st.integers(1, 5).flatmap(
    lambda d: st.tuples(st.just(d), st.integers(1, max(1, 15 // d)))
)
big_grid = st.integers(1, 9).flatmap(lambda d: st.tuples(st.just(d), st.integers(1, 63 // d)))


@settings(max_examples=25, deadline=None)
@given(small_grid)
def test_interleave_bijection_on_grid(shape: tuple[int, int]) -> None:
    dims, bits = shape
    pts = full_grid(dims, bits)
    keys = interleave_bits(pts, bits)
    assert np.array_equal(np.sort(keys), np.arange(1 << (dims * bits), dtype=np.uint64))
    back = deinterleave_bits(keys, dims, bits)
    assert all(np.array_equal(a, b) for a, b in zip(back, pts, strict=True))


weights_of = st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.0, 7.0]), min_size=1, max_size=4)


@settings(max_examples=25, deadline=None)
@given(small_grid, st.data())
def test_weighted_interleave_is_a_bijection_that_keeps_each_column_in_order(
        shape: tuple[int, int], data: st.DataObject) -> None:
    dims, bits = shape
    weights = data.draw(st.lists(st.sampled_from([0.0, 1.0, 3.0]), min_size=dims,
                                 max_size=dims))
    schedule = bit_schedule(weights, bits)
    pts = full_grid(dims, bits)
    keys = interleave_bits(pts, bits, schedule)
    assert np.array_equal(np.sort(keys), np.arange(1 << (dims * bits), dtype=np.uint64))
    back = deinterleave_bits(keys, dims, bits, schedule)
    assert all(np.array_equal(a, b) for a, b in zip(back, pts, strict=True))
    # Along any one column, with the others fixed, the key grows with the rank.
    grid = keys.astype(np.int64).reshape((1 << bits,) * dims)
    assert all((np.diff(grid, axis=j) > 0).all() for j in range(dims))


@FAST
@given(weights_of, st.integers(1, 12))
def test_the_bit_schedule_spends_every_prefix_at_the_least_expected_reads(
        weights: list[float], bits: int) -> None:
    """Each prefix of the schedule (the bits that cut 2**k files) gives column c ``b_c``
    bits so that ``sum(w_c / 2**b_c)``, the files a weighted point query reads per file,
    is the least of any split of those bits; equal weights give round robin."""
    schedule = bit_schedule(weights, bits)
    dims = len(weights)
    assert sorted(schedule) == sorted(j for j in range(dims) for _ in range(bits))
    for k in range(1, min(len(schedule), 6) + 1):
        taken = [schedule[:k].count(j) for j in range(dims)]
        reads = sum(w / 2 ** b for w, b in zip(weights, taken, strict=True))
        best = min(sum(w / 2 ** b for w, b in zip(weights, split, strict=True))
                   for split in itertools.product(range(min(k, bits) + 1), repeat=dims)
                   if sum(split) == k and max(split) <= bits)
        assert reads == pytest.approx(best)
    if len(set(weights)) == 1:
        assert schedule == tuple(j for _ in range(bits) for j in range(dims))


@settings(max_examples=25, deadline=None)
@given(small_grid)
def test_hilbert_bijection_and_unit_steps_on_grid(shape: tuple[int, int]) -> None:
    dims, bits = shape
    pts = full_grid(dims, bits)
    keys = hilbert_index(pts, bits)
    assert np.array_equal(np.sort(keys), np.arange(1 << (dims * bits), dtype=np.uint64))
    walk = np.stack(hilbert_point(np.arange(1 << (dims * bits), dtype=np.uint64), dims, bits))
    assert not walk[:, 0].any()  # the curve starts at the origin
    steps = np.abs(np.diff(walk.astype(np.int64), axis=1))
    assert (steps.sum(axis=0) == 1).all()  # one dimension moves by exactly one
    back = hilbert_point(keys, dims, bits)
    assert all(np.array_equal(a, b) for a, b in zip(back, pts, strict=True))


@FAST
@given(big_grid, st.data())
def test_curves_invert_up_to_63_bits(shape: tuple[int, int], data: st.DataObject) -> None:
    dims, bits = shape
    top = (1 << bits) - 1
    pts = [
        np.array(data.draw(st.lists(st.integers(0, top), min_size=8, max_size=8)), np.uint64)
        for _ in range(dims)
    ]
    for enc, dec in ((interleave_bits, deinterleave_bits), (hilbert_index, hilbert_point)):
        keys = enc(pts, bits)
        assert int(keys.max()) < 1 << (dims * bits) <= 1 << 63
        assert all(np.array_equal(a, b) for a, b in zip(dec(keys, dims, bits), pts, strict=True))
    # Neighbouring Hilbert keys are neighbouring cells anywhere along the curve.
    k = data.draw(st.integers(0, (1 << (dims * bits)) - 2))
    here, there = (
        np.stack(hilbert_point(np.array([k + i], np.uint64), dims, bits)) for i in (0, 1)
    )
    assert int(np.abs(here.astype(np.int64) - there.astype(np.int64)).sum()) == 1


def reference_interleave(codes: list[int], width: int) -> int:
    """Plain-Python Z interleave: bit ``width-1`` of every column first, column 0 leading."""
    key = 0
    for bit in range(width - 1, -1, -1):
        for c in codes:
            key = (key << 1) | ((c >> bit) & 1)
    return key


u64s = st.integers(0, 2**64 - 1)


@FAST
@given(st.integers(1, 4).flatmap(lambda n: st.lists(st.lists(u64s, min_size=n, max_size=n))))
def test_interleave_codes_to_bytes_matches_reference(rows: list[list[int]]) -> None:
    if not rows:
        return
    cols = [np.array(col, dtype=np.uint64) for col in zip(*rows, strict=True)]
    out = interleave_codes_to_bytes(cols)
    assert all(len(b) == 8 * len(cols) for b in out)
    assert [int.from_bytes(b, "big") for b in out] == [reference_interleave(r, 64) for r in rows]


@FAST
@given(
    st.integers(1, 4).flatmap(
        lambda n: st.tuples(
            st.just(n), st.lists(st.lists(st.integers(0, 255), min_size=n, max_size=n))
        )
    )
)
def test_interleave_codes_to_bytes_agrees_with_interleave_bits(
    case: tuple[int, list[list[int]]],
) -> None:
    n, rows = case
    cols = [np.array([r[j] for r in rows], dtype=np.uint64) for j in range(n)]
    as_bytes = interleave_codes_to_bytes(cols)
    keys = interleave_bits(cols, 8).tolist()
    assert [int.from_bytes(b, "big") for b in as_bytes] == keys
    # So sorting by bytes and by Z key gives the same order.
    assert sorted(range(len(rows)), key=lambda i: as_bytes[i]) == sorted(
        range(len(rows)), key=lambda i: keys[i]
    )


@settings(max_examples=40, deadline=None)
@given(st.data(), st.integers(1, 5), st.integers(1, 12))
def test_hilbert_automaton_walks_to_the_hilbert_index(data: st.DataObject, dims: int,
                                                      bits: int) -> None:
    """The machine (one level per lookup, and as many levels per lookup as SQL takes)
    gives ``hilbert_index`` on any points, corners of the grid included."""
    bits = min(bits, 63 // dims)
    automaton = hilbert_automaton(dims, bits)
    if automaton is None:  # a table too large: SQL keys use Skilling's transform
        assert dims >= 5
        return
    top = (1 << bits) - 1
    points = data.draw(st.lists(st.tuples(*[st.one_of(st.just(0), st.just(top),
                                                       st.integers(0, top))] * dims),
                                min_size=1, max_size=200))
    ranks = [np.array([p[j] for p in points], dtype=np.uint64) for j in range(dims)]
    expected = hilbert_index(ranks, bits)
    assert automaton.index(ranks).tolist() == expected.tolist()
    # Walked a few levels per lookup, as the SQL key walks it.
    per_step = automaton.levels_per_step()
    top_level, key = 0, [0] * len(points)
    states = [automaton.start] * len(points)
    while top_level < bits:
        levels = min(per_step, bits - top_level)
        table = automaton.step_table(levels)
        width = dims * levels
        for row, point in enumerate(points):
            digits = 0
            for level in range(top_level, top_level + levels):
                for j in range(dims):
                    digits = digits * 2 + ((point[j] >> (bits - 1 - level)) & 1)
            entry = table[(states[row] << width) | digits]
            states[row], key[row] = entry >> width, (key[row] << width) | (entry % (1 << width))
        top_level += levels
    assert key == expected.tolist()
