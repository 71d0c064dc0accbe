"""How well a clustered table is laid out, from its index: pure numpy / pandas.

Per clustering column:

- ``depth``: the files whose [min, max] holds a point value drawn from the data, averaged
  over the values (what a point query opens, values asked as often as they occur);
  ``value_depth`` the same with each distinct sampled value asked once (every value as
  likely to be asked as any other, as a dashboard listing every city); ``rebuild_depth``
  the same for a full rebuild into as many files, estimated by cutting a sample sorted by
  the layout's key into that many groups of equal rows.
- ``average_overlaps`` and ``average_depth`` as Snowflake defines them for micro-partitions:
  the number of other files whose range overlaps a file's range, averaged over the files;
  and the overlap depth of a file (the most files covering any one value of its range,
  itself included), averaged over the files.

and for the table the share of rows in files written since its last full clustering.
Files without bounds on a column (all NULL, or statistics not trusted) overlap everything.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd


@dataclass(frozen=True)
class LayoutSample:
    """Rows sampled from a clustered table (or its build), to probe and rebuild its layout."""

    columns: Sequence[str]
    types: Sequence[str]
    #: Key inputs of the clustering columns and the table partition values, by row.
    rows: pd.DataFrame
    #: The layout's key of each sampled row.
    keys: Sequence[object]
    #: Names of the sample's table partition value columns.
    partitions: Sequence[str]


@dataclass(frozen=True)
class ColumnHealth:
    column: str
    files: int
    depth: float
    rebuild_depth: float | None
    average_overlaps: float
    average_depth: float
    value_depth: float

    @property
    def skip_share(self) -> float:
        """Share of the files a point query on this column skips (row-weighted)."""
        return 1 - self.depth / self.files if self.files else 0.0

    @property
    def value_skip_share(self) -> float:
        """Share of the files a point query on a distinct value skips (value-uniform)."""
        return 1 - self.value_depth / self.files if self.files else 0.0

    @property
    def rebuild_skip_share(self) -> float | None:
        if self.rebuild_depth is None or not self.files:
            return None
        return 1 - self.rebuild_depth / self.files


@dataclass(frozen=True)
class LayoutHealth:
    columns: tuple[ColumnHealth, ...]
    files: int
    rows: int
    #: Rows in files written since the last full clustering.
    pending_rows: int

    @property
    def pending_share(self) -> float:
        return self.pending_rows / self.rows if self.rows else 0.0

    def skip_words(self) -> str:
        """The run's short line: what a point query on each clustering column skips, and
        the rows awaiting re-clustering when there are any."""
        shares = [f"{c.skip_share:.0%} on {c.column}" for c in self.columns]
        if not shares:
            return ""
        words = f"a point query skips {shares[0].replace(' on ', ' of files on ', 1)}"
        words += "".join(f", {share}" for share in shares[1:])
        if self.pending_rows:
            words += f"; {self.pending_share:.0%} of rows await re-clustering"
        return words

    def describe(self) -> str:
        """The figures in detail, for dbt's debug log."""
        parts = []
        for c in self.columns:
            rebuild = ("" if c.rebuild_depth is None
                       else f" vs {c.rebuild_depth:.1f} rebuilt")
            parts.append(f"{c.column} depth {c.depth:.1f}{rebuild} ({c.skip_share:.1%} "
                         f"skipped; {c.value_skip_share:.1%} per distinct value), "
                         f"overlaps {c.average_overlaps:.1f}, overlap depth {c.average_depth:.1f}")
        return (f"{self.files} files; " + "; ".join(parts)
                + f"; {self.pending_share:.1%} of rows written since the last full clustering")

    def table(self) -> list[dict[str, object]]:
        """One row per clustering column, for a report."""
        return [{
            "column": c.column, "files": c.files, "depth": round(c.depth, 2),
            "rebuild_depth": None if c.rebuild_depth is None else round(c.rebuild_depth, 2),
            "skip_share": round(c.skip_share, 4),
            "value_skip_share": round(c.value_skip_share, 4),
            "rebuild_skip_share": (None if c.rebuild_skip_share is None
                                   else round(c.rebuild_skip_share, 4)),
            "average_overlaps": round(c.average_overlaps, 2),
            "average_depth": round(c.average_depth, 2),
            "pending_share": round(self.pending_share, 4),
        } for c in self.columns]


def _known(bounds: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, int]:
    """Lows and highs of the files with bounds (object arrays), and how many have none."""
    low = bounds["min"].to_numpy(dtype=object)
    high = bounds["max"].to_numpy(dtype=object)
    unknown = pd.isna(low) | pd.isna(high)
    return low[~unknown], high[~unknown], int(unknown.sum())


def point_depth(bounds: pd.DataFrame, probes: pd.Series) -> float:
    """Average number of files whose [min, max] holds a value drawn from the data.

    ``bounds`` has ``min`` and ``max`` columns, one row per file (NULL: the file cannot be
    ruled out); ``probes`` are sample values. Both should come from Spark's ``toPandas`` so
    they compare alike.
    """
    values = probes.dropna()
    if isinstance(values.dtype, np.dtype) and values.dtype.kind == "f":
        values = values[~np.isnan(values.to_numpy())]
    if values.empty or bounds.empty:
        return float(len(bounds))
    low, high, unknown = _known(bounds)
    points = np.sort(values.to_numpy(dtype=object))
    # Files holding a point: those starting at or below it minus those ending below it.
    starts = np.searchsorted(np.sort(low), points, side="right")
    ends = np.searchsorted(np.sort(high), points, side="left")
    return float((starts - ends).mean()) + unknown


def overlap_figures(bounds: pd.DataFrame) -> tuple[float, float]:
    """(average_overlaps, average_depth) of the files' [min, max] ranges on one column."""
    total = len(bounds)
    if total == 0:
        return 0.0, 0.0
    low, high, unknown = _known(bounds)
    if len(low) == 0:
        return float(total - 1), float(total)
    lows, highs = np.sort(low), np.sort(high)
    # Other files overlapping file i: starting at or below its high, minus those ending
    # below its low, minus itself; files without bounds overlap every file.
    overlaps = (np.searchsorted(lows, high, side="right")
                - np.searchsorted(highs, low, side="left") - 1 + unknown)
    # Coverage only rises at a range's start, so the deepest value of a file's range is
    # one of the starts inside it.
    coverage = (np.searchsorted(lows, lows, side="right")
                - np.searchsorted(highs, lows, side="left") + unknown)
    first = np.searchsorted(lows, low, side="left")
    last = np.searchsorted(lows, high, side="right")
    depths = np.array([coverage[a:b].max() for a, b in zip(first, last, strict=True)])
    all_overlaps = np.concatenate([overlaps, np.full(unknown, total - 1)])
    all_depths = np.concatenate([depths, np.full(unknown, coverage.max())])
    return float(all_overlaps.mean()), float(all_depths.mean())


def rebuild_bounds(sample: pd.DataFrame, order: Sequence[str], keys: np.ndarray,
                   columns: Sequence[str], files: int) -> dict[str, pd.DataFrame] | None:
    """Per column, the [min, max] of ``files`` groups of equal rows of a sample sorted by
    ``order`` columns (table partitions) then ``keys``: the bounds a full rebuild into as
    many files would give. None when the sample has fewer rows than files."""
    if files <= 0 or len(sample) < files:
        return None
    frame = sample.reset_index(drop=True).assign(__key=keys)
    frame = frame.sort_values([*order, "__key"], kind="stable", na_position="first")
    # Groups of equal rows are consecutive slices of the sorted sample.
    edges = (np.arange(files + 1) * len(frame)) // files
    result = {}
    for column in columns:
        values = frame[column].to_numpy(dtype=object)
        lows, highs = [], []
        for start, stop in itertools.pairwise(edges):
            live = [v for v in values[start:stop] if not pd.isna(v)]
            lows.append(min(live) if live else None)
            highs.append(max(live) if live else None)
        result[column] = pd.DataFrame({"min": lows, "max": highs}, dtype=object)
    return result


def layout_health(bounds: dict[str, pd.DataFrame], probes: pd.DataFrame,
                  rebuilt: dict[str, pd.DataFrame] | None, rows: int,
                  pending_rows: int) -> LayoutHealth:
    """The figures of every clustering column in ``bounds`` (one row per file)."""
    columns = []
    files = 0
    for column, file_bounds in bounds.items():
        files = len(file_bounds)
        overlaps, depth = overlap_figures(file_bounds)
        probe = probes[column]
        columns.append(ColumnHealth(
            column=column, files=files, depth=point_depth(file_bounds, probe),
            rebuild_depth=None if rebuilt is None else point_depth(rebuilt[column], probe),
            average_overlaps=overlaps, average_depth=depth,
            value_depth=point_depth(file_bounds, probe.drop_duplicates())))
    return LayoutHealth(tuple(columns), files, rows, pending_rows)
