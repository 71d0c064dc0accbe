"""Space-filling curve keys (Z-order and Hilbert) for clustering rows.

Pure numpy/pandas so it can run inside pandas UDFs and be unit-tested without Spark.

Two ways to turn column values into per-dimension integers:

* boundary method: ``sample_boundaries`` + ``rank_values`` give small ranks
  (0 = null, 1..k+1 = bucket), so every column weighs the same in the key;
* direct method: ``order_preserving_codes`` gives a uint64 per value whose unsigned
  order equals Spark's ordering of the type.

Ranks are then combined by ``interleave_bits`` (Z-order) or ``hilbert_index``;
direct codes by ``interleave_codes_to_bytes``.
"""

from __future__ import annotations

import datetime as dt
import decimal
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = [
    "HilbertAutomaton",
    "bit_schedule",
    "deinterleave_bits",
    "fit_ranks",
    "hilbert_automaton",
    "hilbert_index",
    "hilbert_point",
    "interleave_bits",
    "interleave_codes_to_bytes",
    "order_preserving_codes",
    "rank_bits",
    "rank_values",
    "sample_boundaries",
]

# Keys are stored in a signed int64 column, so they must stay non-negative.
MAX_KEY_BITS = 63

# Long strings are cut to this many characters before ranking. Cutting a prefix is
# monotone, so ranks stay ordered; it only bounds memory of numpy 'U' arrays.
_STRING_CAP = 256
# Rows per chunk when ranking strings, again to bound 'U' array memory.
_STRING_CHUNK = 1 << 16

_U64 = np.uint64
_ALL_ONES = np.uint64(0xFFFF_FFFF_FFFF_FFFF)

_INT_WIDTHS = {
    "tinyint": 8,
    "byte": 8,
    "smallint": 16,
    "short": 16,
    "int": 32,
    "integer": 32,
    "bigint": 64,
    "long": 64,
}
_DECIMAL_RE = re.compile(r"^decimal\(\s*(\d+)\s*,\s*(\d+)\s*\)$")
_TIMESTAMP_TYPES = {"timestamp", "timestamp_ntz", "timestamp_ltz"}
_EPOCH_DATE = dt.date(1970, 1, 1)


# --------------------------------------------------------------------------- types

_TYPE_ALIASES = {
    "byte": "tinyint", "short": "smallint", "integer": "int", "long": "bigint",
    "real": "float", "bool": "boolean",
}

#: Families found so far: the index asks for one per footer value, of a handful of types.
#: (A dict, not functools.cache: this module is pickled by value for executors without the
#: plugin, and a cache wrapper pickles by reference.)
_FAMILIES: dict[str, str] = {}


def normalize_type(spark_type: str) -> str:
    """Spark's simple type string reduced to a family name (``decimal(10,2)`` -> ``decimal``)."""
    family = _FAMILIES.get(spark_type)
    if family is None:
        base = re.split(r"[(<]", spark_type.strip().lower(), maxsplit=1)[0].strip()
        family = "string" if base in ("char", "varchar") else _TYPE_ALIASES.get(base, base)
        _FAMILIES[spark_type] = family
    return family


# --------------------------------------------------------------------------- direct codes


def order_preserving_codes(values: pd.Series, spark_type: str) -> np.ndarray:
    """Map values to uint64 codes whose unsigned order is Spark's order of ``spark_type``.

    Fixed-width types narrower than 64 bits are left-aligned (a tinyint uses the top
    byte) so the significant bits lead when codes are interleaved. Numeric nulls get
    the type's largest code; string nulls the empty string's code (0).
    """
    t = spark_type.strip().lower()
    if t in _INT_WIDTHS:
        return _int_codes(values, _INT_WIDTHS[t])
    if t == "float":
        return _float_codes(values, 32)
    if t == "double":
        return _float_codes(values, 64)
    if t == "decimal":
        return _decimal_codes(values, 10, 0)  # Spark's default precision and scale
    m = _DECIMAL_RE.match(t)
    if m:
        return _decimal_codes(values, int(m.group(1)), int(m.group(2)))
    if t == "date":
        return _date_codes(values)
    if t in _TIMESTAMP_TYPES:
        return _timestamp_codes(values)
    if t == "string":
        return _string_codes(values)
    if t == "boolean":
        return _bool_codes(values)
    raise ValueError(f"order_preserving_codes: unsupported Spark type {spark_type!r}")


def _null_mask(values: pd.Series) -> np.ndarray:
    return np.asarray(values.isna().to_numpy(dtype=bool), dtype=bool)


def _max_code(width: int) -> np.uint64:
    """Largest code of a ``width``-bit type, left-aligned."""
    return _U64(((1 << width) - 1) << (64 - width))


def _flip_sign(ints: np.ndarray, width: int) -> np.ndarray:
    """Two's complement ``width``-bit ints -> unsigned with the same order (not aligned)."""
    u = np.asarray(ints, dtype=np.int64).view(np.uint64)
    mask = _U64((1 << width) - 1)
    return (u ^ _U64(1 << (width - 1))) & mask


def _signed_codes(ints: np.ndarray, null: np.ndarray, width: int) -> np.ndarray:
    codes = _flip_sign(ints, width) << _U64(64 - width)
    codes[null] = _max_code(width)
    return codes


def _check_range(ints: np.ndarray, null: np.ndarray, width: int, what: str) -> None:
    live = ints[~null]
    if live.size == 0:
        return
    lo, hi = -(1 << (width - 1)), (1 << (width - 1)) - 1
    if int(live.min()) < lo or int(live.max()) > hi:
        raise ValueError(f"{what} value out of range for a {width}-bit type")


def _int_codes(values: pd.Series, width: int) -> np.ndarray:
    null = _null_mask(values)
    if values.dtype.kind == "u" and values.dtype.itemsize == 8:
        raise ValueError("uint64 input is unsupported for Spark integer types")
    ints = np.asarray(values.to_numpy(dtype=np.int64, na_value=0), dtype=np.int64)
    _check_range(ints, null, width, "integer")
    return _signed_codes(ints, null, width)


def _float_codes(values: pd.Series, width: int) -> np.ndarray:
    ftype = np.float32 if width == 32 else np.float64
    utype = np.uint32 if width == 32 else np.uint64
    null = _null_mask(values)
    with np.errstate(over="ignore"):  # doubles beyond float range become +-inf, still ordered
        x = np.asarray(values.to_numpy(dtype=np.float64, na_value=np.nan)).astype(ftype)
    nan = np.isnan(x) | null
    # Spark treats -0.0 == 0.0, and NaN payload/sign must not matter.
    x[(x == 0) | nan] = 0
    bits = x.view(utype).astype(np.uint64)
    sign, mask = _U64(1 << (width - 1)), _U64((1 << width) - 1)
    # Negative: invert everything (larger magnitude -> smaller code); positive: set sign bit.
    flipped = np.where((bits & sign) != 0, ~bits & mask, bits | sign)
    codes = flipped << _U64(64 - width)
    # Spark orders NaN above +inf; float nulls arrive as NaN, so they share the top code.
    codes[nan] = _max_code(width)
    return codes


def _unscaled(value: object, scale: int) -> int:
    """Exact unscaled integer of a decimal (floored if it has more digits than ``scale``)."""
    d = value if isinstance(value, decimal.Decimal) else decimal.Decimal(value)  # type: ignore[arg-type]
    if not d.is_finite():
        raise ValueError(f"decimal value {d!r} is not finite")
    sign, digits, exp = d.as_tuple()
    assert isinstance(exp, int)
    mag = int("".join(map(str, digits)) or "0")
    shift = exp + scale
    if shift >= 0:
        n = mag * 10**shift
        return -n if sign else n
    # Floor division keeps the mapping monotone for over-precise inputs.
    n = -mag if sign else mag
    return n // 10 ** (-shift)


def _decimal_codes(values: pd.Series, precision: int, scale: int) -> np.ndarray:
    if not 1 <= precision <= 38 or scale > precision:
        raise ValueError(f"unsupported decimal({precision},{scale})")
    null = _null_mask(values)
    objs = values.to_numpy(dtype=object)
    out = np.empty(len(objs), dtype=np.uint64)
    # Up to 18 digits the unscaled value is Spark's long; wider decimals keep the top
    # 64 bits of the sign-flipped 128-bit value (monotone, not strict).
    wide = precision > 18
    limit = 1 << (127 if wide else 63)
    digits = 10**precision
    for i, (v, is_null) in enumerate(zip(objs, null.tolist(), strict=True)):
        if is_null:
            out[i] = _ALL_ONES
            continue
        u = _unscaled(v, scale)
        if not -digits < u < digits:
            raise ValueError(f"decimal value {v!r} does not fit decimal({precision},{scale})")
        out[i] = (u + limit) >> 64 if wide else u + limit
    return out


def _days(values: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Days since 1970-01-01 (int64) and the null mask."""
    null = _null_mask(values)
    if values.dtype.kind == "M" or isinstance(values.dtype, pd.DatetimeTZDtype):
        days = _micros(values)[0] // (86_400 * 1_000_000)
        days[null] = 0
        return days, null
    objs = values.to_numpy(dtype=object, copy=True)
    objs[null] = _EPOCH_DATE
    try:
        # datetime.datetime is a date subclass: reduce to its date first.
        dates = [v.date() if isinstance(v, dt.datetime) else v for v in objs]
        days = np.array(dates, dtype="datetime64[D]").view(np.int64)
    except (TypeError, ValueError) as e:
        raise ValueError(f"unsupported date values: {e}") from e
    return days, null


def _date_codes(values: pd.Series) -> np.ndarray:
    days, null = _days(values)
    _check_range(days, null, 32, "date")  # Spark dates are int32 days
    return _signed_codes(days, null, 32)


def _micros(values: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Microseconds since the epoch (UTC for tz-aware input, int64) and the null mask."""
    null = _null_mask(values)
    if isinstance(values.dtype, pd.DatetimeTZDtype):
        values = values.dt.tz_convert("UTC").dt.tz_localize(None)
    elif values.dtype.kind != "M":
        objs = values.to_numpy(dtype=object)
        live = objs[~null]
        if live.size and not all(isinstance(v, dt.datetime) for v in live):
            raise ValueError("unsupported timestamp values (expected datetime objects)")
        if any(v.tzinfo is not None for v in live):
            values = pd.Series(pd.to_datetime(objs, utc=True)).dt.tz_localize(None)
        else:
            objs = objs.copy()
            objs[null] = None
            arr = np.array(objs, dtype="datetime64[us]").view(np.int64)
            arr[null] = 0
            return arr, null
    # numpy's unit cast floors, which keeps sub-microsecond values ordered.
    arr = np.asarray(values.to_numpy()).astype("datetime64[us]").view(np.int64).copy()
    arr[null] = 0
    return arr, null


def _timestamp_codes(values: pd.Series) -> np.ndarray:
    micros, null = _micros(values)
    return _signed_codes(micros, null, 64)


def _string_codes(values: pd.Series) -> np.ndarray:
    null = _null_mask(values)
    objs = values.to_numpy(dtype=object, copy=True)
    objs[null] = ""
    try:
        # 8 characters encode to >= 8 bytes, so slicing first is safe and cheap.
        enc = [s[:8].encode("utf-8") for s in objs]
    except AttributeError as e:
        raise ValueError("unsupported string values (expected str)") from e
    # 'S8' truncates to 8 bytes and zero-pads; big-endian makes byte order numeric order.
    packed = np.array(enc, dtype="S8") if enc else np.empty(0, dtype="S8")
    return packed.view(">u8").astype(np.uint64)


def _bool_codes(values: pd.Series) -> np.ndarray:
    null = _null_mask(values)
    flags = np.asarray(values.to_numpy(dtype=bool, na_value=True), dtype=bool)
    # A 1-bit type left-aligned: false -> 0, true (and null, the type's max) -> top bit.
    codes = flags.astype(np.uint64) << _U64(63)
    codes[null] = _max_code(1)
    return codes


# --------------------------------------------------------------------------- boundary ranks


def _object_kind(objs: np.ndarray, null: np.ndarray) -> str:
    live = np.flatnonzero(~null)
    if live.size == 0:
        return "empty"
    first = objs[live[0]]
    if isinstance(first, str):
        return "str"
    if isinstance(first, (bool, np.bool_)):
        return "bool"
    if isinstance(first, (int, np.integer)):
        return "int"
    if isinstance(first, (float, np.floating, decimal.Decimal)):
        return "float"
    if isinstance(first, dt.datetime):
        return "timestamp"
    if isinstance(first, dt.date):
        return "date"
    raise ValueError(f"unsupported value type for ranking: {type(first).__name__}")


def _comparable(values: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Values in a numpy-sortable form plus the null mask.

    Numbers -> int64/float64 (NaN kept), dates -> datetime64[D], timestamps ->
    datetime64[us], strings -> object array of str (nulls as "").
    """
    null = _null_mask(values)
    dtype = values.dtype
    if isinstance(dtype, pd.DatetimeTZDtype) or dtype.kind == "M":
        return _micros(values)[0].view("datetime64[us]"), null
    if dtype.kind == "b" or isinstance(dtype, pd.BooleanDtype):
        return np.asarray(values.to_numpy(dtype=np.int64, na_value=0)), null
    if dtype.kind in "iu":
        target = np.float64 if dtype.kind == "u" and dtype.itemsize == 8 else np.int64
        return np.asarray(values.to_numpy(dtype=target, na_value=0)), null
    if dtype.kind == "f":
        arr = np.asarray(values.to_numpy(dtype=np.float64, na_value=np.nan), dtype=np.float64)
        if isinstance(dtype, np.dtype):
            # Plain float arrays cannot tell null from NaN; treat it as NaN (Spark's top).
            null = np.zeros(len(arr), dtype=bool)
        return arr, null
    if dtype.kind not in "OSU" and not isinstance(dtype, pd.StringDtype):
        raise ValueError(f"unsupported dtype for ranking: {dtype}")
    objs = values.to_numpy(dtype=object, copy=True)
    kind = _object_kind(objs, null)
    if kind in ("str", "empty"):
        objs[null] = ""
        return objs, null
    if kind in ("bool", "int"):
        return np.asarray(values.to_numpy(dtype=np.int64, na_value=0)), null
    if kind == "float":
        # None is null but a float NaN is a real NaN.
        nan = np.fromiter((isinstance(v, float) and v != v for v in objs), bool, len(objs))
        null &= ~nan
        objs[null] = 0.0
        try:
            return objs.astype(np.float64), null
        except (TypeError, ValueError) as e:
            raise ValueError(f"unsupported numeric values for ranking: {e}") from e
    if kind == "timestamp":
        return _micros(values)[0].view("datetime64[us]"), null
    return _days(values)[0].view("datetime64[D]"), null


def _to_unicode(objs: np.ndarray, width: int) -> np.ndarray:
    """Object str array -> fixed-width 'U' array cut to ``width`` characters."""
    if objs.size == 0:
        return np.empty(0, dtype=f"U{width}")
    return np.asarray(objs, dtype=f"U{max(width, 1)}")


def sample_boundaries(sample: pd.Series, boundary_count: int) -> np.ndarray:
    """Sorted distinct quantile boundaries (at most ``boundary_count``) of a sample.

    Nulls and NaN are ignored; the result is in the comparable form ``rank_values`` uses.
    """
    if boundary_count < 0:
        raise ValueError("boundary_count must be >= 0")
    arr, null = _comparable(sample)
    live = arr[~null]
    if live.dtype.kind == "f":
        live = live[~np.isnan(live)]
    if live.dtype == object:
        # Cut before converting: one huge string must not widen the whole 'U' array.
        live = np.array([v[:_STRING_CAP] for v in live], dtype=str)
    if live.size == 0 or boundary_count == 0:
        return live[:0]
    ordered = np.sort(live)
    n = ordered.size
    # k boundaries split the sample into k + 1 equally filled buckets.
    idx = (np.arange(1, boundary_count + 1, dtype=np.int64) * n) // (boundary_count + 1)
    picked = np.unique(ordered[idx])
    if picked.dtype.kind == "U":
        # Narrow boundaries keep the value arrays in rank_values narrow too.
        picked = picked.astype(f"U{max(int(np.char.str_len(picked).max()), 1)}")
    return picked


def _as_boundaries(boundaries: np.ndarray) -> np.ndarray:
    b = np.asarray(boundaries)
    if b.dtype == object:
        b = _comparable(pd.Series(b, dtype=object))[0]
        if b.dtype == object:
            b = _to_unicode(b, _STRING_CAP)
    return b


def _group(kind: str) -> str:
    return {"b": "num", "i": "num", "u": "num", "f": "num", "M": "time", "U": "str"}.get(
        kind, "str" if kind == "O" else kind
    )


def rank_values(values: pd.Series, boundaries: np.ndarray) -> np.ndarray:
    """Rank = 1 + number of boundaries strictly below the value; nulls 0, NaN the top rank."""
    arr, null = _comparable(values)
    b = _as_boundaries(boundaries)
    top = len(b) + 1
    if null.all():
        return np.zeros(len(arr), dtype=np.uint64)
    if len(b) == 0:
        ranks = np.ones(len(arr), dtype=np.uint64)
    else:
        if _group(arr.dtype.kind) != _group(b.dtype.kind):
            raise ValueError(f"values ({arr.dtype}) and boundaries ({b.dtype}) are not comparable")
        if arr.dtype == object:
            pos = _search_strings(arr, b)
        else:
            pos = np.searchsorted(b, arr, side="left")
        ranks = pos.astype(np.uint64) + _U64(1)
    if arr.dtype.kind == "f":
        ranks[np.isnan(arr)] = top
    ranks[null] = 0
    return ranks


def _search_strings(objs: np.ndarray, b: np.ndarray) -> np.ndarray:
    """searchsorted for str values against 'U' boundaries, chunked to bound memory."""
    if b.dtype.kind != "U":
        b = _to_unicode(b, _STRING_CAP)
    # Comparing b < v only looks at v's first len(b) + 1 characters, so cutting v there
    # gives exact positions while keeping the 'U' arrays narrow.
    width = b.dtype.itemsize // 4 + 1
    out = np.empty(len(objs), dtype=np.int64)
    for start in range(0, len(objs), _STRING_CHUNK):
        chunk = _to_unicode(objs[start : start + _STRING_CHUNK], width)
        out[start : start + len(chunk)] = np.searchsorted(b, chunk, side="left")
    return out


def rank_bits(boundary_count: int) -> int:
    """Bits needed to hold ranks 0..boundary_count + 1."""
    if boundary_count < 0:
        raise ValueError("boundary_count must be >= 0")
    return (boundary_count + 1).bit_length()


def fit_ranks(ranks: np.ndarray, from_bits: int, to_bits: int) -> np.ndarray:
    """Drop low bits so ``from_bits``-bit ranks fit ``to_bits`` (order kept, ties may appear)."""
    if to_bits < 0 or from_bits < 0:
        raise ValueError("bit counts must be >= 0")
    r = _as_u64(ranks)
    if from_bits <= to_bits:
        return r
    return r >> _U64(from_bits - to_bits)


# --------------------------------------------------------------------------- Z-order


def _as_u64(a: np.ndarray) -> np.ndarray:
    arr = np.asarray(a)
    if arr.dtype.kind == "i":
        if arr.size and int(arr.min()) < 0:
            raise ValueError("ranks must be non-negative")
        return arr.astype(np.uint64)
    if arr.dtype.kind in "ub":
        return arr.astype(np.uint64)
    if arr.size == 0:
        return arr.astype(np.uint64)
    raise ValueError(f"ranks must be an integer array, got {arr.dtype}")


def _check_grid(ranks: Sequence[np.ndarray], bits: int) -> list[np.ndarray]:
    dims = len(ranks)
    if dims < 1:
        raise ValueError("need at least one dimension")
    if bits < 1 or dims * bits > MAX_KEY_BITS:
        raise ValueError(f"{dims} dims x {bits} bits must be within 1..{MAX_KEY_BITS} bits")
    cols = [_as_u64(r) for r in ranks]
    n = len(cols[0])
    if any(c.ndim != 1 or len(c) != n for c in cols):
        raise ValueError("rank arrays must be 1-d and of equal length")
    limit = 1 << bits
    for c in cols:
        if c.size and int(c.max()) >= limit:
            raise ValueError(f"rank {int(c.max())} does not fit in {bits} bits")
    return cols


def bit_schedule(weights: Sequence[float], bits: int) -> tuple[int, ...]:
    """The dimension of each key bit, most significant first, when dimensions weigh
    ``weights`` (shares of point queries): each next bit goes to the dimension whose
    queries it saves most, ``w / 2**taken``, so the leading bits, those that cut files,
    give each dimension ``2**taken`` ranges in proportion to its weight (what minimises
    files read, ``sum(w / ranges)``). Equal weights give plain Z-order's round robin;
    weight-0 dimensions take their bits last, in turn.

    >>> bit_schedule([1, 1, 1], 2), bit_schedule([0.8, 0.2, 0], 3)
    ((0, 1, 2, 0, 1, 2), (0, 0, 1, 0, 1, 1, 2, 2, 2))
    """
    taken = [0] * len(weights)
    schedule = []
    for _ in range(bits * len(weights)):
        open_dims = [j for j in range(len(weights)) if taken[j] < bits]
        chosen = max(open_dims, key=lambda j: (weights[j] / 2 ** taken[j], -taken[j], -j))
        schedule.append(chosen)
        taken[chosen] += 1
    return tuple(schedule)


def bit_positions(dims: int, bits: int,
                   schedule: Sequence[int] | None) -> list[tuple[int, int, int]]:
    """(dimension, its bit, key bit) of every key bit under ``schedule`` (default round
    robin, dimension 0 first)."""
    order = list(schedule) if schedule is not None else [j for _ in range(bits)
                                                         for j in range(dims)]
    if sorted(order) != sorted(j for j in range(dims) for _ in range(bits)):
        raise ValueError(f"a schedule names each of {dims} dims {bits} times")
    left = [bits] * dims
    positions = []
    for slot, j in enumerate(order):
        left[j] -= 1
        positions.append((j, left[j], dims * bits - 1 - slot))
    return positions


def interleave_bits(ranks: Sequence[np.ndarray], bits: int,
                    schedule: Sequence[int] | None = None) -> np.ndarray:
    """Z-order key: each dimension's bits from most to least significant, in the order of
    ``schedule`` (:func:`bit_schedule`; default: dimension 0 first at every level)."""
    cols = _check_grid(ranks, bits)
    key = np.zeros(len(cols[0]), dtype=np.uint64)
    one = _U64(1)
    for j, bit, slot in bit_positions(len(cols), bits, schedule):
        key |= ((cols[j] >> _U64(bit)) & one) << _U64(slot)
    return key


def _check_key(key: np.ndarray, dims: int, bits: int) -> np.ndarray:
    if dims < 1 or bits < 1 or dims * bits > MAX_KEY_BITS:
        raise ValueError(f"{dims} dims x {bits} bits must be within 1..{MAX_KEY_BITS} bits")
    k = _as_u64(key)
    if k.size and int(k.max()) >> (dims * bits):
        raise ValueError(f"key does not fit in {dims * bits} bits")
    return k


def deinterleave_bits(key: np.ndarray, dims: int, bits: int,
                      schedule: Sequence[int] | None = None) -> list[np.ndarray]:
    """Inverse of ``interleave_bits``."""
    k = _check_key(key, dims, bits)
    out = [np.zeros(len(k), dtype=np.uint64) for _ in range(dims)]
    one = _U64(1)
    for j, bit, slot in bit_positions(dims, bits, schedule):
        out[j] |= ((k >> _U64(slot)) & one) << _U64(bit)
    return out


# --------------------------------------------------------------------------- Hilbert


def _undo_step(x: list[np.ndarray], i: int, level: int) -> None:
    """Skilling's inner step for bit Q = 2**level: invert x0's low bits where x[i] has Q
    set, else exchange the low bits of x0 and x[i]. Branch-free over rows."""
    low = _U64((1 << level) - 1)
    # All ones where the bit is set, zero elsewhere (0 - 1 wraps in uint64).
    hit = _U64(0) - ((x[i] >> _U64(level)) & _U64(1))
    t = (x[0] ^ x[i]) & low & ~hit
    x[0] ^= (low & hit) | t
    if i:
        x[i] ^= t


def _axes_to_transpose(x: list[np.ndarray], bits: int) -> None:
    """Skilling (2004) AxestoTranspose, in place, vectorised over rows."""
    n = len(x)
    zero = _U64(0)
    # Inverse undo of the excess rotations/reflections, from the top bit down.
    for level in range(bits - 1, 0, -1):
        for i in range(n):
            _undo_step(x, i, level)
    # Gray encode.
    for i in range(1, n):
        x[i] ^= x[i - 1]
    t = np.zeros_like(x[0])
    q = 1 << (bits - 1)
    while q > 1:
        t ^= np.where((x[n - 1] & _U64(q)) != 0, _U64(q - 1), zero)
        q >>= 1
    for i in range(n):
        x[i] ^= t


def _transpose_to_axes(x: list[np.ndarray], bits: int) -> None:
    """Skilling (2004) TransposetoAxes, in place, vectorised over rows."""
    n = len(x)
    # Gray decode.
    t = x[n - 1] >> _U64(1)
    for i in range(n - 1, 0, -1):
        x[i] ^= x[i - 1]
    x[0] ^= t
    # Undo the excess work, from the low bits up.
    for level in range(1, bits):
        for i in range(n - 1, -1, -1):
            _undo_step(x, i, level)


def hilbert_index(ranks: Sequence[np.ndarray], bits: int) -> np.ndarray:
    """Hilbert key of points with ``bits``-bit coordinates in any number of dimensions."""
    cols = _check_grid(ranks, bits)  # fresh copies, safe to transform in place
    _axes_to_transpose(cols, bits)
    # The transposed form interleaved (dimension 0 most significant) is the index.
    return interleave_bits(cols, bits)


@dataclass(frozen=True)
class HilbertAutomaton:
    """``hilbert_index`` as a finite-state machine over the points' digits, one level at
    a time from the top (a digit: the level's bit of every dimension, dimension 0 most
    significant): ``table[state * 2**dims + digit]`` is ``next_state * 2**dims`` plus the
    index's digit at that level. So the index needs one table lookup per level, which a
    SQL engine does in generated code with no lambda and no Python."""

    dims: int
    bits: int
    start: int
    table: tuple[int, ...]

    @property
    def states(self) -> int:
        return len(self.table) >> self.dims

    def levels_per_step(self) -> int:
        """How many levels one lookup may take with a table of at most
        ``MAX_AUTOMATON_ENTRIES`` (fewer lookups make a shorter chain in SQL)."""
        levels = 1
        while levels < self.bits and \
                self.states << (self.dims * (levels + 1)) <= MAX_AUTOMATON_ENTRIES:
            levels += 1
        return levels

    def step_table(self, levels: int) -> tuple[int, ...]:
        """The machine taking ``levels`` digits at once (the top one most significant):
        ``[state * 2**(dims*levels) + digits]`` is ``next_state * 2**(dims*levels)`` plus
        the index's ``levels`` digits."""
        radix = 1 << self.dims
        table = []
        for state in range(self.states):
            for digits in range(radix ** levels):
                at, out = state, 0
                for level in range(levels - 1, -1, -1):
                    entry = self.table[at * radix + (digits >> (self.dims * level)) % radix]
                    at, out = entry // radix, out * radix + entry % radix
                table.append((at * radix ** levels) + out)
        return tuple(table)

    def index(self, ranks: Sequence[np.ndarray]) -> np.ndarray:
        """The index of points by walking the machine (equal to ``hilbert_index``)."""
        # The digits are the Z-order key's, a level (dims bits) at a time from the top.
        digits = interleave_bits(ranks, self.bits)
        table = np.asarray(self.table, dtype=np.uint64)
        radix = _U64(1 << self.dims)
        state = np.full(len(digits), _U64(self.start), dtype=np.uint64)
        key = np.zeros(len(digits), dtype=np.uint64)
        for level in range(self.bits):
            digit = (digits >> _U64(self.dims * (self.bits - 1 - level))) % radix
            entry = table[state * radix + digit]
            key = key * radix + entry % radix
            state = entry // radix
        return key


#: A machine with more table entries than this is not built (a key in SQL falls back to
#: Skilling's transform): 3 dims at 10 bits take 24 states x 8 digits, 4 dims 192 x 16.
MAX_AUTOMATON_ENTRIES = 4096


#: Machines built so far. A plain dict, not ``functools.cache``: this module travels to
#: executors by value, and a cache wrapper would travel by reference, importing dbt there.
_AUTOMATA: dict[tuple[int, int], HilbertAutomaton | None] = {}


def hilbert_automaton(dims: int, bits: int) -> HilbertAutomaton | None:
    """The machine of ``hilbert_index`` for ``dims`` x ``bits``, or None if its table
    would pass ``MAX_AUTOMATON_ENTRIES`` (built once per shape)."""
    if (dims, bits) not in _AUTOMATA:
        _AUTOMATA[dims, bits] = _build_automaton(dims, bits)
    return _AUTOMATA[dims, bits]


def _build_automaton(dims: int, bits: int) -> HilbertAutomaton | None:
    """The machine of ``hilbert_index``, found from the index itself, breadth first over
    digit prefixes: the state after a prefix is the order in which the index visits the
    sub-cells one level down (a Hilbert sub-curve is the whole curve turned and mirrored,
    and that order fixes the turn), so a prefix whose order was seen before reaches a
    known state."""
    if dims < 1 or bits < 1 or dims * bits > MAX_KEY_BITS:
        raise ValueError(f"{dims} dims x {bits} bits must be within 1..{MAX_KEY_BITS} bits")
    radix = 1 << dims

    def visit_order(prefix: tuple[int, ...]) -> tuple[int, ...]:
        """The index's digit at level ``len(prefix)`` for each next digit."""
        shift = _U64(dims * (bits - 1 - len(prefix)))
        # The cells whose Z-order digits are the prefix, then each next digit, then zeros.
        start = 0
        for digit in prefix:
            start = start * radix + digit
        cells = deinterleave_bits((np.arange(radix, dtype=np.uint64) + _U64(start * radix))
                                  << shift, dims, bits)
        return tuple(int(v) for v in (hilbert_index(cells, bits) >> shift) % _U64(radix))

    orders = {visit_order(()): 0}
    prefixes: list[tuple[int, ...]] = [()]
    following: dict[tuple[int, int], int] = {}
    for state, prefix in enumerate(prefixes):  # grows while it is walked
        if len(prefix) == bits - 1:
            continue  # first met at the last level: it has no next level
        for digit in range(radix):
            order = visit_order((*prefix, digit))
            if order not in orders:
                if (len(orders) + 1) * radix > MAX_AUTOMATON_ENTRIES:
                    return None
                orders[order] = len(prefixes)
                prefixes.append((*prefix, digit))
            following[state, digit] = orders[order]
    order_of = {state: order for order, state in orders.items()}
    table = tuple(following.get((state, digit), 0) * radix + order_of[state][digit]
                  for state in range(len(prefixes)) for digit in range(radix))
    return HilbertAutomaton(dims, bits, 0, table)


def hilbert_point(index: np.ndarray, dims: int, bits: int) -> list[np.ndarray]:
    """Inverse of ``hilbert_index``: the coordinates of each Hilbert key."""
    cols = deinterleave_bits(index, dims, bits)
    _transpose_to_axes(cols, bits)
    return cols


# --------------------------------------------------------------------------- direct Z-order


def interleave_codes_to_bytes(codes: Sequence[np.ndarray]) -> list[bytes]:
    """Bit-interleave n uint64 code columns into 8n big-endian bytes per row.

    Bit 63 of every column comes first (column 0 leading), so bytewise order is Z order.
    """
    if len(codes) == 0:
        raise ValueError("need at least one code column")
    cols = [np.asarray(c).astype(np.uint64) for c in codes]
    rows = len(cols[0])
    if any(c.ndim != 1 or len(c) != rows for c in cols):
        raise ValueError("code arrays must be 1-d and of equal length")
    dims = len(cols)
    # (rows, dims) big-endian words -> bits (rows, dims, 64) -> (rows, 64, dims) -> bytes.
    words = np.stack(cols, axis=1).astype(">u8")
    bits = np.unpackbits(words.view(np.uint8).reshape(rows, dims, 8), axis=2)
    packed = np.packbits(bits.transpose(0, 2, 1).reshape(rows, 64 * dims), axis=1)
    width = 8 * dims
    flat = packed.tobytes()
    return [flat[i : i + width] for i in range(0, rows * width, width)]
