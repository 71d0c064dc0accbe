"""Skip ratios counted from the data files' own Parquet footers (independent of the adapter).

A file can be skipped by a point query ``c = v`` when ``v`` lies outside the file's
[min, max] of ``c`` (the min over its row groups' minimums, the max over their maximums).
This is what Iceberg's file-level min/max index did in seed 002, so the same count works for
Spark-written and delta-rs-written files alike.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.dataset as ds
import pyarrow.parquet as pq


@dataclass
class FileBounds:
    """Per file: rows, bytes and the [min, max] of each requested column (None: unknown)."""

    paths: list[str]
    rows: np.ndarray
    sizes: np.ndarray
    low: dict[str, list[Any]] = field(default_factory=dict)
    high: dict[str, list[Any]] = field(default_factory=dict)

    @property
    def files(self) -> int:
        return len(self.paths)


def read_bounds(files: Iterable[str | Path], columns: Sequence[str]) -> FileBounds:
    """Read only the footers of ``files``: no data pages are touched."""
    paths, rows, sizes = [], [], []
    low: dict[str, list[Any]] = {c: [] for c in columns}
    high: dict[str, list[Any]] = {c: [] for c in columns}
    for file in files:
        path = str(file)
        meta = pq.ParquetFile(path).metadata
        names = [meta.schema.column(i).name for i in range(meta.num_columns)]
        paths.append(path)
        rows.append(meta.num_rows)
        sizes.append(Path(path).stat().st_size)
        for column in columns:
            index = names.index(column)
            lows, highs, known = [], [], True
            for group in range(meta.num_row_groups):
                chunk = meta.row_group(group).column(index)
                stats = chunk.statistics
                if meta.row_group(group).num_rows == 0:
                    continue
                if stats is None or not stats.has_min_max:
                    known = False
                    break
                lows.append(stats.min)
                highs.append(stats.max)
            low[column].append(min(lows) if known and lows else None)
            high[column].append(max(highs) if known and highs else None)
    return FileBounds(paths, np.array(rows, dtype=np.int64), np.array(sizes, dtype=np.int64),
                      low, high)


def files_holding(bounds: FileBounds, column: str, values: Sequence[Any]) -> np.ndarray:
    """For each value, how many files a point query on it must open."""
    if not values:
        return np.zeros(0, dtype=np.int64)
    return np.asarray(_opened(bounds, column, values).sum(axis=1), dtype=np.int64)


def rows_skip_share(bounds: FileBounds, column: str, values: Sequence[Any]) -> float:
    """Mean share of the rows a point query skips (in the files it need not open), over
    ``values``: small files count for their rows, not as much as a full one."""
    total = int(bounds.rows.sum())
    if not values or total == 0:
        return 0.0
    read = _opened(bounds, column, values) @ bounds.rows
    return float(1.0 - read.mean() / total)


def _opened(bounds: FileBounds, column: str, values: Sequence[Any]) -> np.ndarray:
    """values x files: whether a point query on the value must open the file."""
    points = np.array(values, dtype=object)
    low_list, high_list = bounds.low[column], bounds.high[column]
    # A file without stats may hold anything: give it the widest possible range.
    floor, ceil = min(values), max(values)
    low = np.array([floor if v is None else v for v in low_list], dtype=object)
    high = np.array([ceil if v is None else v for v in high_list], dtype=object)
    empty = bounds.rows == 0
    return np.asarray((low[None, :] <= points[:, None]) & (points[:, None] <= high[None, :])
                      & ~empty)


def skip_share(bounds: FileBounds, column: str, values: Sequence[Any]) -> float:
    """Mean share of files a point query skips, over ``values``."""
    if bounds.files == 0:
        return 0.0
    opened = files_holding(bounds, column, values)
    return float(1.0 - opened.mean() / bounds.files)


def sample_values(files: Sequence[str | Path], columns: Sequence[str], count: int,
                  seed: int = 2) -> dict[str, list[Any]]:
    """``count`` values per column drawn from random rows (popular values come up more)."""
    table = ds.dataset([str(f) for f in files], format="parquet").to_table(columns=list(columns))
    rng = np.random.default_rng(seed)
    picks = rng.choice(table.num_rows, size=min(count, table.num_rows), replace=False)
    taken = table.take(picks)
    return {c: taken.column(c).to_pylist() for c in columns}


def distinct_values(files: Sequence[str | Path], columns: Sequence[str], count: int,
                    seed: int = 2) -> dict[str, list[Any]]:
    """``count`` values per column drawn from its distinct values, each as likely as any
    other (the value-uniform point queries; :func:`sample_values` gives row-weighted ones)."""
    rng = np.random.default_rng(seed)
    drawn = {}
    for column in columns:
        values = distinct_sorted(files, column)
        drawn[column] = [values[i] for i in
                         np.sort(rng.choice(values.size, size=min(count, values.size),
                                            replace=False))]
    return drawn


def distinct_sorted(files: Sequence[str | Path], column: str) -> np.ndarray:
    """All distinct values of a column in sort order (for ranks on plots)."""
    table = ds.dataset([str(f) for f in files], format="parquet").to_table(columns=[column])
    values = table.column(column).unique().drop_null().to_numpy(zero_copy_only=False)
    return np.sort(values.astype(object))
