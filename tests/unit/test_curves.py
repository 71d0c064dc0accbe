"""Example tests for the space-filling curve helpers."""

from __future__ import annotations

import datetime as dt
import decimal
import itertools
from typing import Any

import numpy as np
import pandas as pd
import pytest

from dbt.adapters.zspark.core.curves import (
    deinterleave_bits,
    fit_ranks,
    hilbert_index,
    hilbert_point,
    interleave_bits,
    interleave_codes_to_bytes,
    rank_bits,
)
from dbt.adapters.zspark.core.value_ranks import (
    _flip_sign,
    order_preserving_codes,
    rank_values,
    sample_boundaries,
)

D = decimal.Decimal


def u64(*values: int) -> np.ndarray:
    return np.array(values, dtype=np.uint64)


# --------------------------------------------------------------------------- Z-order


def test_seed_worked_example_y_supplies_first_bit() -> None:
    x, y = u64(97), u64(214)
    key = interleave_bits([y, x], 8)
    assert int(key[0]) == 0b1011011000101001
    back = deinterleave_bits(key, 2, 8)
    assert [int(a[0]) for a in back] == [214, 97]


def test_interleave_bits_rejects_more_than_63_bits() -> None:
    with pytest.raises(ValueError, match="63"):
        interleave_bits([u64(0)] * 4, 16)
    with pytest.raises(ValueError, match="63"):
        hilbert_index([u64(0)] * 2, 32)
    # 63 bits exactly is fine and stays a non-negative int64.
    key = interleave_bits([u64((1 << 21) - 1)] * 3, 21)
    assert int(key[0]) == (1 << 63) - 1
    assert key.astype(np.int64)[0] > 0


def test_interleave_bits_rejects_ranks_too_wide() -> None:
    with pytest.raises(ValueError, match="does not fit"):
        interleave_bits([u64(4)], 2)
    with pytest.raises(ValueError, match="non-negative"):
        interleave_bits([np.array([-1], dtype=np.int64)], 2)


def test_fit_ranks_shifts_only_when_needed() -> None:
    r = u64(0, 1, 255, 1000)
    assert fit_ranks(r, 10, 4).tolist() == [0, 0, 3, 15]
    assert fit_ranks(r, 10, 12).tolist() == [0, 1, 255, 1000]


def test_rank_bits() -> None:
    # Ranks run 0..k+1.
    assert [rank_bits(k) for k in (0, 1, 2, 6, 7, 1000)] == [1, 2, 2, 3, 4, 10]


def test_empty_inputs() -> None:
    empty = np.empty(0, dtype=np.uint64)
    assert interleave_bits([empty, empty], 4).size == 0
    assert hilbert_index([empty, empty, empty], 4).size == 0
    assert interleave_codes_to_bytes([empty]) == []
    assert order_preserving_codes(pd.Series([], dtype=object), "string").size == 0
    assert order_preserving_codes(pd.Series([], dtype=np.int32), "int").size == 0
    assert sample_boundaries(pd.Series([], dtype=object), 10).size == 0
    assert sample_boundaries(pd.Series([None, None]), 10).size == 0
    assert rank_values(pd.Series([], dtype=np.float64), np.array([1.0])).size == 0


def test_interleave_codes_to_bytes_layout() -> None:
    # Bit 63 of columns 0, 1 -> "10", then bit 62 -> "01": first byte 0b1001_0000.
    out = interleave_codes_to_bytes([u64(0x8000_0000_0000_0000), u64(0x4000_0000_0000_0000)])
    assert out == [bytes([0b1001_0000]) + bytes(15)]
    assert interleave_codes_to_bytes([u64(5)]) == [(5).to_bytes(8, "big")]


# --------------------------------------------------------------------------- Hilbert


def _assert_unit_steps(points: list[tuple[Any, ...]]) -> None:
    assert len(set(points)) == len(points)
    for a, b in itertools.pairwise(points):
        assert sum(abs(p - q) for p, q in zip(a, b, strict=True)) == 1, (a, b)


def test_hilbert_2d_order_1() -> None:
    xs, ys = hilbert_point(np.arange(4, dtype=np.uint64), 2, 1)
    points = list(zip(xs.tolist(), ys.tolist(), strict=True))
    assert points == [(0, 0), (0, 1), (1, 1), (1, 0)]
    _assert_unit_steps(points)


def test_hilbert_2d_order_2() -> None:
    xs, ys = hilbert_point(np.arange(16, dtype=np.uint64), 2, 2)
    points = list(zip(xs.tolist(), ys.tolist(), strict=True))
    # The classic order-2 curve (as on Wikipedia's d2xy, with the axes named (y, x)).
    assert points == [
        (0, 0), (1, 0), (1, 1), (0, 1),
        (0, 2), (0, 3), (1, 3), (1, 2),
        (2, 2), (2, 3), (3, 3), (3, 2),
        (3, 1), (2, 1), (2, 0), (3, 0),
    ]  # fmt: skip
    _assert_unit_steps(points)
    keys = hilbert_index([xs, ys], 2)
    assert keys.tolist() == list(range(16))


def test_hilbert_1d_is_identity() -> None:
    v = np.arange(32, dtype=np.uint64)
    assert hilbert_index([v], 5).tolist() == v.tolist()


# --------------------------------------------------------------------------- direct codes


def test_int8_sign_flip_table() -> None:
    table = {0: 128, 1: 129, 2: 130, 126: 254, 127: 255}
    table |= {-128: 0, -127: 1, -126: 2, -2: 126, -1: 127}
    ints = np.array(list(table), dtype=np.int64)
    assert _flip_sign(ints, 8).tolist() == list(table.values())
    codes = order_preserving_codes(pd.Series(list(table), dtype=np.int8), "tinyint")
    assert (codes >> np.uint64(56)).tolist() == list(table.values())


def test_int_codes_null_is_type_max() -> None:
    s = pd.Series([5, None, 32767], dtype="Int16")
    codes = order_preserving_codes(s, "smallint")
    assert int(codes[1]) == int(codes[2]) == 0xFFFF << 48
    # Nulls as float64 NaN or object None behave the same.
    as_float = order_preserving_codes(pd.Series([5.0, np.nan, 32767.0]), "smallint")
    as_obj = order_preserving_codes(pd.Series([5, None, 32767], dtype=object), "smallint")
    assert as_float.tolist() == as_obj.tolist() == codes.tolist()


def test_int_codes_out_of_range() -> None:
    with pytest.raises(ValueError, match="out of range"):
        order_preserving_codes(pd.Series([128]), "tinyint")


def test_bigint_codes_extremes() -> None:
    s = pd.Series([np.iinfo(np.int64).min, -1, 0, np.iinfo(np.int64).max], dtype=np.int64)
    assert order_preserving_codes(s, "bigint").tolist() == [0, (1 << 63) - 1, 1 << 63, 2**64 - 1]


@pytest.mark.parametrize(("dtype", "spark_type"), [(np.float64, "double"), (np.float32, "float")])
def test_float_special_values_order(dtype: type, spark_type: str) -> None:
    tiny = 1e-300 if dtype is np.float64 else 1e-40
    values = pd.Series([-np.inf, -1.5, -0.0, 0.0, tiny, np.inf, np.nan], dtype=dtype)
    c = order_preserving_codes(values, spark_type).tolist()
    assert c[0] < c[1] < c[2]
    assert c[2] == c[3]  # -0.0 == 0.0
    assert c[3] < c[4] < c[5] < c[6]  # NaN above +inf
    assert c[6] == 2**64 - 1 if spark_type == "double" else 0xFFFF_FFFF << 32


def test_float_null_sorts_last() -> None:
    c = order_preserving_codes(pd.Series([1.0, None, np.inf], dtype=object), "double").tolist()
    assert c[1] == 2**64 - 1 > c[2] > c[0]


def test_decimal_codes() -> None:
    s = pd.Series([D("-1.50"), None, D("0"), D("2.25"), D("2.2")])
    c = order_preserving_codes(s, "decimal(10,2)").tolist()
    assert c[0] == (1 << 63) - 150
    assert c[1] == 2**64 - 1
    assert c[2] == 1 << 63
    assert c[3] == (1 << 63) + 225
    assert c[4] == (1 << 63) + 220


def test_decimal_wide_precision_keeps_order() -> None:
    big = D("9" * 30 + ".5")
    s = pd.Series([-big, D("-1"), D("0"), D("1"), big])
    c = order_preserving_codes(s, "decimal(38,1)").tolist()
    assert c == sorted(c)
    assert c[0] < c[-1]
    with pytest.raises(ValueError, match="does not fit"):
        order_preserving_codes(pd.Series([D("1e20")]), "decimal(20,2)")


def test_date_codes() -> None:
    s = pd.Series([dt.date(1969, 12, 31), dt.date(1970, 1, 1), dt.date(1970, 1, 2), None])
    c = (order_preserving_codes(s, "date") >> np.uint64(32)).tolist()
    assert c == [(1 << 31) - 1, 1 << 31, (1 << 31) + 1, 2**32 - 1]


def test_timestamp_codes_naive_and_tz_aware() -> None:
    stamps = ["1970-01-01 00:00:00.000001", None, "1969-12-31 23:59:59.000000"]
    naive = pd.Series(pd.to_datetime(stamps))
    c = order_preserving_codes(naive, "timestamp_ntz").tolist()
    assert c == [(1 << 63) + 1, 2**64 - 1, (1 << 63) - 1_000_000]
    aware = pd.Series(pd.to_datetime(["1970-01-01 01:00:00"]).tz_localize("Europe/Paris"))
    assert order_preserving_codes(aware, "timestamp").tolist() == [1 << 63]


def test_string_codes() -> None:
    s = pd.Series(["", "a", "ab", "abcdefgh", "abcdefghXYZ", None, "é"])
    c = order_preserving_codes(s, "string").tolist()
    assert c[0] == c[5] == 0  # null -> empty string
    assert c[1] == ord("a") << 56
    assert c[2] == (ord("a") << 56) | (ord("b") << 48)
    assert c[3] == c[4] == int.from_bytes(b"abcdefgh", "big")
    assert c[6] == int.from_bytes("é".encode() + bytes(6), "big")


def test_boolean_codes() -> None:
    c = order_preserving_codes(pd.Series([False, True, None], dtype=object), "boolean").tolist()
    assert c == [0, 1 << 63, 1 << 63]


@pytest.mark.parametrize("spark_type", ["binary", "array<int>", "map<string,int>", "interval"])
def test_unsupported_types(spark_type: str) -> None:
    with pytest.raises(ValueError, match="unsupported"):
        order_preserving_codes(pd.Series([b"x"]), spark_type)


def test_all_identical_values() -> None:
    s = pd.Series(["same"] * 50)
    b = sample_boundaries(s, 10)
    assert b.tolist() == ["same"]
    assert set(rank_values(s, b).tolist()) == {1}
    assert len(set(order_preserving_codes(s, "string").tolist())) == 1


# --------------------------------------------------------------------------- boundary ranks


def test_long_shared_prefix_boundary_vs_direct() -> None:
    urls = pd.Series([f"https://example.com/catalog/items/{i:04d}" for i in range(100)])
    b = sample_boundaries(urls, 200)
    ranks = rank_values(urls, b)
    assert len(set(ranks.tolist())) == 100
    assert ranks.tolist() == sorted(ranks.tolist())
    assert len(set(order_preserving_codes(urls, "string").tolist())) == 1


def test_rank_values_counts_boundaries_below() -> None:
    b = np.array([10, 20, 30], dtype=np.int64)
    s = pd.Series([5, 10, 11, 20, 30, 31, None], dtype="Int64")
    assert rank_values(s, b).tolist() == [1, 1, 2, 2, 3, 4, 0]


def test_rank_values_nan_and_null() -> None:
    b = sample_boundaries(pd.Series([1.0, 2.0, 3.0, np.nan]), 3)
    assert b.tolist() == [1.0, 2.0, 3.0]
    ranks = rank_values(pd.Series([np.nan, -np.inf, -0.0, 0.0, 2.5, np.inf]), b)
    assert ranks.tolist() == [4, 1, 1, 1, 3, 4]
    obj = rank_values(pd.Series([None, float("nan"), 2.0], dtype=object), b)
    assert obj.tolist() == [0, 4, 2]


def test_skewed_sample_boundaries() -> None:
    rng = np.random.default_rng(7)
    sample = pd.Series(np.concatenate([np.full(900, 42), rng.integers(0, 1000, 100)]))
    b = sample_boundaries(sample, 16)
    assert 1 <= len(b) <= 16
    assert (np.diff(b) > 0).all()  # sorted and distinct
    assert 42 in b.tolist()
    values = np.sort(rng.integers(-10, 1010, 500))
    ranks = rank_values(pd.Series(values), b)
    assert (np.diff(ranks.astype(np.int64)) >= 0).all()
    assert ranks.min() >= 1
    assert ranks.max() <= len(b) + 1


def test_boundaries_of_small_sample_are_all_distinct_values() -> None:
    b = sample_boundaries(pd.Series([3, 1, 2, 3, 1]), 10)
    assert b.tolist() == [1, 2, 3]


def test_rank_dates_and_timestamps() -> None:
    dates = pd.Series([dt.date(2020, 1, d) for d in range(1, 11)] + [None])
    b = sample_boundaries(dates, 4)
    assert b.dtype == np.dtype("datetime64[D]")
    assert b.tolist() == [dt.date(2020, 1, d) for d in (3, 5, 7, 9)]
    assert rank_values(dates, b).tolist() == [1, 1, 1, 2, 2, 3, 3, 4, 4, 5, 0]
    ts = pd.Series(pd.date_range("2024-01-01", periods=20, freq="h", tz="UTC"))
    tb = sample_boundaries(ts, 5)
    tr = rank_values(ts, tb).tolist()
    assert tr == sorted(tr)
    assert len(set(tr)) > 1


def test_rank_decimals() -> None:
    s = pd.Series([D("1.10"), D("-3.5"), None, D("2.00"), D("1.10")])
    b = sample_boundaries(s, 10)
    assert b.tolist() == [-3.5, 1.1, 2.0]
    assert rank_values(s, b).tolist() == [2, 1, 0, 3, 2]


def test_rank_strings_with_nulls_and_object_boundaries() -> None:
    b = np.array(["b", "d"], dtype=object)
    s = pd.Series(["a", "b", "c", None, "d", "e", "dz"])
    assert rank_values(s, b).tolist() == [1, 1, 2, 0, 2, 3, 3]


def test_rank_values_rejects_mismatched_boundaries() -> None:
    with pytest.raises(ValueError, match="not comparable"):
        rank_values(pd.Series(["a"]), np.array([1.0]))


def test_rank_strings_chunked_and_capped() -> None:
    # More rows than one chunk, and a huge string that must not blow up memory.
    huge = "z" * 100_000
    s = pd.Series([f"k{i % 997:04d}" for i in range(70_000)] + [huge])
    b = sample_boundaries(s, 50)
    assert b.dtype.itemsize // 4 <= 256
    r = rank_values(s, b)
    order = np.argsort(s.to_numpy(dtype=object), kind="stable")  # Python str order
    assert (np.diff(r[order].astype(np.int64)) >= 0).all()
    assert int(r[-1]) == len(b) + 1
