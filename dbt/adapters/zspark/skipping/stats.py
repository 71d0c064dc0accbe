"""Parquet footers -> per-file and per-row-group column statistics (pure pyarrow).

The footers' bytes come through the session's file systems (``hadoop_files.py``); this
module only parses them. Values are emitted as canonical strings that cast back to the
column's Spark type exactly (see :func:`spark_cast`); a statistic that is missing or not
trustworthy is ``None`` and can never prune a file. Never trusted: INT96 timestamps,
strings that are not valid UTF-8, dates and timestamps before 1900 in files whose calendar
Spark may rebase, columns under lists or maps, and any chunk whose statistics fail to read.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from dbt.adapters.zspark.core.value_ranks import normalize_type
from dbt.adapters.zspark.skipping.pruning import STATS, path_name, stat_column

FLOAT_TYPES = ("float", "double")
_EPOCH = dt.datetime(1970, 1, 1)
# Spark rebases dates and timestamps of legacy-calendar files; from 1900 on the Julian-hybrid
# and proleptic Gregorian values agree in every time zone, so stats from there are exact.
_REBASE_SAFE_DAYS = (dt.date(1900, 1, 1) - _EPOCH.date()).days
_REBASE_SAFE_MICROS = _REBASE_SAFE_DAYS * 86_400 * 1_000_000
# Errors reading one chunk's statistics: the statistic is unknown, the index job goes on.
_UNREADABLE = (ValueError, TypeError, OverflowError, ArithmeticError, pa.ArrowException)


@dataclass(frozen=True)
class ColumnRef:
    """An indexed column: its path in the table (one part, or a struct leaf's parts), its
    Spark type and, for ``char(n)`` columns, ``n``."""

    parts: tuple[str, ...]
    spark_type: str
    char_length: int | None = None


def stats_for(spark_type: str) -> tuple[str, ...]:
    """The statistics kept for a column of this type (NaN counts only for floats)."""
    return STATS if normalize_type(spark_type) in FLOAT_TYPES else STATS[:3]


@dataclass
class _Bounds:
    low: Any = None
    high: Any = None
    nulls: int | None = 0
    nan_free: bool = True
    known: bool = True

    def merge(self, other: _Bounds) -> None:
        if not (self.known and other.known):
            self.known = False
        elif other.low is not None:
            self.low = other.low if self.low is None else _lower(self.low, other.low)
            self.high = other.high if self.high is None else _higher(self.high, other.high)
        self.nulls = None if self.nulls is None or other.nulls is None else self.nulls + other.nulls
        self.nan_free = self.nan_free and other.nan_free


def _is_nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


def _lower(a: Any, b: Any) -> Any:
    return a if a <= b else b


def _higher(a: Any, b: Any) -> Any:
    # NaN sorts above everything in Spark, and a NaN max must survive the merge.
    if _is_nan(a) or _is_nan(b):
        return math.nan
    return a if a >= b else b


def _timestamp_micros(raw: int, unit: str, round_up: bool) -> int:
    """Microseconds of a footer timestamp; nanoseconds round outwards so bounds stay bounds."""
    if unit == "ns":
        return -((-raw) // 1000) if round_up else raw // 1000
    return raw * 1000 if unit == "ms" else raw


def _chunk_bounds(chunk: Any, column: ColumnRef, trusted_nans: bool,
                  legacy_calendar: bool) -> _Bounds:
    try:
        return _read_bounds(chunk, column, trusted_nans, legacy_calendar)
    except _UNREADABLE:
        return _Bounds(known=False, nulls=None, nan_free=False)


def _read_bounds(chunk: Any, column: ColumnRef, trusted_nans: bool,
                 legacy_calendar: bool) -> _Bounds:
    statistics = chunk.statistics
    if statistics is None:
        return _Bounds(known=False, nulls=None, nan_free=False)
    nulls = statistics.null_count if statistics.has_null_count else None
    if not statistics.has_min_max:
        all_null = nulls is not None and nulls == chunk.num_values
        return _Bounds(known=all_null, nulls=nulls, nan_free=all_null)
    family = normalize_type(column.spark_type)
    logical = str(statistics.logical_type)
    low: Any
    high: Any
    if family in ("timestamp", "timestamp_ntz"):
        if statistics.physical_type != "INT64":
            return _Bounds(known=False, nulls=nulls)
        unit = "ms" if "milliseconds" in logical else "ns" if "nanoseconds" in logical else "us"
        low = _timestamp_micros(statistics.min_raw, unit, round_up=False)
        high = _timestamp_micros(statistics.max_raw, unit, round_up=True)
        if legacy_calendar and low < _REBASE_SAFE_MICROS:
            return _Bounds(known=False, nulls=nulls)
    elif family == "date":
        low, high = statistics.min_raw, statistics.max_raw
        if legacy_calendar and low < _REBASE_SAFE_DAYS:
            return _Bounds(known=False, nulls=nulls)
    elif family == "string":
        if statistics.physical_type != "BYTE_ARRAY":
            return _Bounds(known=False, nulls=nulls)
        # Strict decoding: a statistic that is not UTF-8 cannot be compared like Spark does.
        low = bytes(statistics.min_raw).decode("utf-8")
        high = bytes(statistics.max_raw).decode("utf-8")
        if column.char_length is not None:
            high = _char_upper_bound(high, column.char_length)
            if high is None:
                return _Bounds(known=False, nulls=nulls)
    else:
        low, high = statistics.min, statistics.max
    nan_free = family not in FLOAT_TYPES or (trusted_nans and not _is_nan(high))
    return _Bounds(low=low, high=high, nulls=nulls, nan_free=nan_free)


def _char_upper_bound(high: str, length: int) -> str | None:
    """An upper bound of the values of a char(length) column as Spark reads them (padded
    with spaces to ``length``) from the raw max, or None when there is none this cheap.

    The raw min is already a lower bound: padding only ever makes a value larger.
    Padding the max bounds every padded value unless the max holds a character below the
    space (a shorter value padded would then sort above it) or is longer than ``length``.
    """
    if len(high) > length or any(ch < " " for ch in high):
        return None
    return high.ljust(length)


def _text(value: Any, spark_type: str) -> str | None:
    """The canonical string :func:`spark_cast` turns back into the exact value."""
    if value is None:
        return None
    family = normalize_type(spark_type)
    if family == "timestamp_ntz":
        return (_EPOCH + dt.timedelta(microseconds=value)).isoformat(sep=" ")
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return repr(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def spark_cast(text_column: str, spark_type: str) -> str:
    """SQL turning a canonical-string column back into the Spark type."""
    family = normalize_type(spark_type)
    if family == "timestamp":
        return f"timestamp_micros(cast({text_column} as bigint))"
    if family == "date":
        return f"date_from_unix_date(cast({text_column} as int))"
    return f"cast({text_column} as {spark_type})"


def _writer_keeps_nan_in_max(created_by: str | None) -> bool:
    # parquet-java (Spark's writer) orders doubles with Double.compare, so a NaN in a column
    # chunk always shows up as its max. Other writers may drop NaN from the statistics.
    return bool(created_by) and str(created_by).startswith("parquet-mr")


def _row(path: str, size: int, mtime: int | None, row_group: int | None, rows: int,
         bounds: Sequence[_Bounds], columns: Sequence[ColumnRef]) -> tuple[Any, ...]:
    values: list[Any] = [path, size, mtime, row_group, rows]
    for b, column in zip(bounds, columns, strict=True):
        values += [_text(b.low, column.spark_type) if b.known else None,
                   _text(b.high, column.spark_type) if b.known else None,
                   b.nulls]
        if normalize_type(column.spark_type) in FLOAT_TYPES:
            values.append(0 if b.known and b.nan_free else None)
    return tuple(values)


def spark_path(path: str) -> str:
    """The form ``_metadata.file_path`` takes (``file:/x`` rather than ``file:///x``)."""
    return "file:/" + path[len("file:///"):] if path.startswith("file:///") else path


def _leaf_positions(metadata: Any) -> dict[tuple[str, ...], int]:
    """Column chunk position of every leaf reachable through structs only, keyed by the
    path's parts, so a top-level ``st.i`` and a field ``i`` of a struct ``st`` stay apart."""
    schema = metadata.schema
    leaves: list[tuple[str, ...] | None] = []

    def walk(field: pa.Field, parts: tuple[str, ...], plain: bool) -> None:
        kind = field.type
        if pa.types.is_struct(kind):
            for i in range(kind.num_fields):
                walk(kind.field(i), (*parts, kind.field(i).name), plain)
        elif pa.types.is_map(kind):  # statistics of keys or values are not per row
            walk(kind.key_field, parts, False)
            walk(kind.item_field, parts, False)
        elif pa.types.is_list(kind) or pa.types.is_large_list(kind) \
                or pa.types.is_fixed_size_list(kind):
            walk(kind.value_field, parts, False)
        else:
            leaves.append(parts if plain else None)

    try:
        for field in schema.to_arrow_schema():
            walk(field, (field.name,), True)
    except _UNREADABLE:
        leaves = []
    positions: dict[tuple[str, ...], int] = {}
    if len(leaves) == metadata.num_columns:
        for i, parts in enumerate(leaves):
            chunk = schema.column(i)
            if parts and chunk.max_repetition_level == 0 and ".".join(parts) == chunk.path:
                positions[parts] = i
        return positions
    # A schema pyarrow maps differently: only names that cannot be mistaken for paths.
    for i in range(metadata.num_columns):
        chunk = schema.column(i)
        if chunk.max_repetition_level == 0 and "." not in chunk.path:
            positions[(chunk.path,)] = i
    return positions


def _legacy_calendar(metadata: Any) -> bool:
    """May Spark rebase this file's dates and timestamps from the Julian-hybrid calendar?
    Yes when Spark wrote it in LEGACY mode or before 3.0; also for files of other writers,
    which Spark rebases or not by the reading session's settings."""
    keys = metadata.metadata or {}
    if b"org.apache.spark.legacyDateTime" in keys:
        return True
    version = keys.get(b"org.apache.spark.version")
    if version is None:
        return True
    major = version.decode("ascii", "replace").split(".")[0]
    return not (major.isdigit() and int(major) >= 3)


def footer_metadata(footer: bytes) -> Any:
    """The ``FileMetaData`` of a Parquet footer (as a file's tail ends: the footer, its
    length, the magic), parsed alone: nothing else of the file is needed."""
    return pq.read_metadata(pa.BufferReader(b"PAR1" + footer))


def footer_rows(tails: Iterable[tuple[str, int, int, bytes]], columns: Sequence[ColumnRef],
                ) -> Iterator[tuple[Any, ...]]:
    """One row per file and one per row group: path, size, modification time (ms), row
    group, rows, then the stats of each column (:func:`index_fields`). ``tails``: each
    file's path, size, modification time and footer, read through the session's file
    systems."""
    for path, size, mtime, footer in tails:
        try:
            metadata = footer_metadata(footer)
        except (OSError, pa.ArrowException) as error:
            raise RuntimeError(f"zspark: cannot read the Parquet footer of {path}: {error}") \
                from error
        positions = _leaf_positions(metadata)
        trusted_nans = _writer_keeps_nan_in_max(metadata.created_by)
        legacy = _legacy_calendar(metadata)
        file_bounds = [_Bounds() for _ in columns]
        group_rows = []
        for g in range(metadata.num_row_groups):
            group = metadata.row_group(g)
            bounds = [
                _chunk_bounds(group.column(positions[c.parts]), c, trusted_nans, legacy)
                if c.parts in positions else _Bounds(known=False, nulls=None, nan_free=False)
                for c in columns
            ]
            for total, part in zip(file_bounds, bounds, strict=True):
                total.merge(part)
            group_rows.append(_row(path, size, mtime, g, group.num_rows, bounds,
                                   columns))
        for total, column in zip(file_bounds, columns, strict=True):
            if column.parts not in positions:  # e.g. a partition column: not in the file
                total.known, total.nulls, total.nan_free = False, None, False
        yield _row(path, size, mtime, None, metadata.num_rows, file_bounds, columns)
        yield from group_rows


def index_fields(columns: Sequence[ColumnRef]) -> list[tuple[str, str]]:
    """The name and Spark type of each value of :func:`footer_rows`' rows: the bounds as
    text (cast to the column's type when written), the counts as longs."""
    fields = [("file_path", "string"), ("file_size", "bigint"), ("file_mtime", "bigint"),
              ("row_group", "int"), ("row_count", "bigint")]
    for column in columns:
        name = path_name(column.parts)
        fields += [(stat_column(name, stat), "string" if stat in ("min", "max") else "bigint")
                   for stat in stats_for(column.spark_type)]
    return fields


_ARROW_TYPES = {"string": pa.string(), "bigint": pa.int64(), "int": pa.int32()}


def index_batch(rows: Sequence[tuple[Any, ...]], fields: Sequence[tuple[str, str]],
                ) -> pa.RecordBatch:
    """:func:`footer_rows`' rows as one Arrow batch of ``fields``."""
    values = list(zip(*rows, strict=True)) if rows else [()] * len(fields)
    return pa.RecordBatch.from_arrays(
        [pa.array(column, type=_ARROW_TYPES[kind])
         for (_, kind), column in zip(fields, values, strict=True)],
        names=[name for name, _ in fields])


def footer_batches(batches: Iterable[pa.RecordBatch], columns: Sequence[ColumnRef],
                   fields: Sequence[tuple[str, str]]) -> Iterator[pa.RecordBatch]:
    """:func:`footer_rows` over Arrow batches of tails (path, size, modification time,
    footer): the index rows (``fields``, :func:`index_fields`) of the files an executor's
    task read."""
    for batch in batches:
        tails = zip(*(batch.column(i).to_pylist() for i in range(4)), strict=True)
        yield index_batch(list(footer_rows(tails, columns)), fields)
