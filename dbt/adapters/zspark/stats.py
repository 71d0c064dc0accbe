"""Parquet footers -> per-file and per-row-group column statistics (pure pyarrow).

Runs inside Spark tasks (``mapPartitions`` over file paths) so it reads the footers where
Spark reads the files. Values are emitted as canonical strings that cast back to the
column's Spark type exactly (see :func:`spark_cast`); a statistic that is missing or not
trustworthy is ``None`` and can never prune a file.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow.fs as pafs
import pyarrow.parquet as pq

from dbt.adapters.zspark.planning import normalize_type
from dbt.adapters.zspark.pruning import STATS

FLOAT_TYPES = ("float", "double")
_EPOCH = dt.datetime(1970, 1, 1)


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


def _chunk_bounds(chunk: Any, spark_type: str, trusted_nans: bool) -> _Bounds:
    statistics = chunk.statistics
    if statistics is None:
        return _Bounds(known=False, nulls=None, nan_free=False)
    nulls = statistics.null_count if statistics.has_null_count else None
    if not statistics.has_min_max:
        all_null = nulls is not None and nulls == chunk.num_values
        return _Bounds(known=all_null, nulls=nulls, nan_free=all_null)
    family = normalize_type(spark_type)
    low, high = statistics.min, statistics.max
    logical = str(statistics.logical_type)
    if family in ("timestamp", "timestamp_ntz"):
        if statistics.physical_type != "INT64":
            return _Bounds(known=False, nulls=nulls)
        unit = "ms" if "milliseconds" in logical else "ns" if "nanoseconds" in logical else "us"
        low = _timestamp_micros(statistics.min_raw, unit, round_up=False)
        high = _timestamp_micros(statistics.max_raw, unit, round_up=True)
    elif family == "date":
        low, high = statistics.min_raw, statistics.max_raw
    elif family == "string" and not (isinstance(low, str) and isinstance(high, str)):
        return _Bounds(known=False, nulls=nulls)
    nan_free = family not in FLOAT_TYPES or (trusted_nans and not _is_nan(high))
    return _Bounds(low=low, high=high, nulls=nulls, nan_free=nan_free)


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


def _row(path: str, size: int, row_group: int | None, rows: int,
         bounds: Sequence[_Bounds], types: Sequence[str]) -> tuple[Any, ...]:
    values: list[Any] = [path, size, row_group, rows]
    for b, spark_type in zip(bounds, types, strict=True):
        values += [_text(b.low, spark_type) if b.known else None,
                   _text(b.high, spark_type) if b.known else None,
                   b.nulls]
        if normalize_type(spark_type) in FLOAT_TYPES:
            values.append(0 if b.known and b.nan_free else None)
    return tuple(values)


def spark_path(path: str) -> str:
    """The form ``_metadata.file_path`` takes (``file:/x`` rather than ``file:///x``)."""
    return "file:/" + path[len("file:///"):] if path.startswith("file:///") else path


def footer_rows(paths: Iterable[str], columns: Sequence[str],
                types: Sequence[str]) -> Iterator[tuple[Any, ...]]:
    """One row per file and one per row group: path, size, row group, rows, then stats."""
    for path in paths:
        filesystem, local = pafs.FileSystem.from_uri(
            "file:///" + path[len("file:/"):].lstrip("/") if path.startswith("file:/") else path
        )
        size = filesystem.get_file_info(local).size or 0
        with filesystem.open_input_file(local) as handle:
            metadata = pq.ParquetFile(handle).metadata
        positions = {
            metadata.schema.column(i).path: i for i in range(metadata.num_columns)
        }
        trusted_nans = _writer_keeps_nan_in_max(metadata.created_by)
        file_bounds = [_Bounds() for _ in columns]
        group_rows = []
        for g in range(metadata.num_row_groups):
            group = metadata.row_group(g)
            bounds = [
                _chunk_bounds(group.column(positions[c]), t, trusted_nans)
                if c in positions else _Bounds(known=False, nulls=None, nan_free=False)
                for c, t in zip(columns, types, strict=True)
            ]
            for total, part in zip(file_bounds, bounds, strict=True):
                total.merge(part)
            group_rows.append(_row(spark_path(path), size, g, group.num_rows, bounds, types))
        for total, column in zip(file_bounds, columns, strict=True):
            if column not in positions:  # e.g. a partition column: not in the file at all
                total.known, total.nulls, total.nan_free = False, None, False
        yield _row(spark_path(path), size, None, metadata.num_rows, file_bounds, types)
        yield from group_rows
