"""A column's values as integers in their order, pure numpy/pandas (it runs in pandas UDFs).

Two ways, one per curve method:

* boundary method: ``sample_boundaries`` + ``rank_values`` give small ranks
  (0 = null, 1..k+1 = bucket), so every column weighs the same in the key;
* direct method: ``order_preserving_codes`` gives a uint64 per value whose unsigned
  order equals Spark's ordering of the type.

``curves.py`` combines them into Z-order and Hilbert keys.
"""

from __future__ import annotations

import datetime as dt
import decimal
import re

import numpy as np
import pandas as pd

__all__ = ["normalize_type", "order_preserving_codes", "rank_values", "sample_boundaries"]

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
    if not all(isinstance(v, dt.date) for v in objs):
        raise ValueError("unsupported date values (expected date objects)")
    # A date's (or a datetime's, a date subclass) ordinal: 20x faster than numpy's
    # conversion of the objects.
    days = np.fromiter((v.toordinal() for v in objs), np.int64, len(objs))
    return days - _EPOCH_DATE.toordinal(), null


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


