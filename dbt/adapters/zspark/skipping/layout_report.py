"""The layout report of a clustered table (``dbt run-operation zspark_layout_report``): its
health as a text table with the build log's figures, and a picture of its files over two
clustering columns, on the columns' own values.

The picture has two panels:

- the files' [min, max] boxes, with the files a sample point query on each column opens
  filled in, and files written since the last full clustering outlined in their own colour;
- a depth map: for each point of the plane, how many files a query ``x = . and y = .``
  opens. It stays readable where a thousand outlines would not.
"""

from __future__ import annotations

import bisect
import datetime as dt
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dbt.adapters.zspark.core.value_ranks import normalize_type
from dbt.adapters.zspark.skipping.health import LayoutHealth

_HEADERS = ("column", "files", "depth", "rebuild_depth", "skip_share", "value_skip_share",
            "rebuild_skip_share", "average_overlaps", "average_depth")
_SHARES = frozenset({"skip_share", "value_skip_share", "rebuild_skip_share"})
#: Spark type families drawn on their values; any other type is drawn on the ranks of its
#: values, labelled with the values.
_NUMBERS = frozenset({"tinyint", "smallint", "int", "bigint", "float", "double", "decimal"})
_MICROS = frozenset({"timestamp", "timestamp_ntz"})  # key inputs: microseconds (bigint)
_CONTINUOUS = frozenset({"float", "double", "decimal"})
_EPOCH = dt.date(1970, 1, 1)
#: Points per axis of the depth map.
_GRID = 200


def health_table(health: LayoutHealth) -> str:
    """The per-column figures as an aligned text table, shares as percentages (as the build
    log gives them), with the pending share below."""
    def cell(header: str, value: object) -> str:
        if header in _SHARES and isinstance(value, float):
            return f"{value:.1%}"
        return str(value)

    rows = [[cell(h, row[h]) for h in _HEADERS] for row in health.table()]
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(_HEADERS)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(_HEADERS, widths, strict=True))]
    lines += ["  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)) for r in rows]
    lines.append(f"{health.files} files, {health.rows} rows; {health.pending_share:.1%} of "
                 f"rows written since the last full clustering")
    return "\n".join(lines)


@dataclass(frozen=True)
class ReportAxis:
    """One clustering column of the picture."""

    name: str
    spark_type: str
    #: ``min`` and ``max`` of each file (key inputs: timestamps in microseconds); NULL when
    #: the file has no bounds, so it may hold any value.
    bounds: pd.DataFrame
    #: A value drawn from the rows: the sample point query ``name = probe`` (None: none).
    probe: object = None


@dataclass(frozen=True)
class ProbeResult:
    """What the sample point query on one column opens."""

    column: str
    value: str
    opened: int
    files: int

    def describe(self) -> str:
        skipped = 1 - self.opened / self.files if self.files else 0.0
        return (f"{self.column} = {self.value} opens {self.opened} of {self.files} files "
                f"({skipped:.1%} skipped)")


def probe_value(values: pd.Series) -> object:
    """The sample query's value: the middle one of the sampled values, in their order."""
    present = sorted(v for v in values.to_numpy(dtype=object) if not pd.isna(v))
    return present[len(present) // 2] if present else None


def opened_files(bounds: pd.DataFrame, value: object) -> np.ndarray:
    """Which files a point query ``= value`` must open: those whose [min, max] holds it, and
    every file without bounds. Compared on the values themselves, as the index prunes."""
    low = bounds["min"].to_numpy(dtype=object)
    high = bounds["max"].to_numpy(dtype=object)
    unknown = pd.isna(low) | pd.isna(high)
    opened = unknown.copy()
    known = np.flatnonzero(~unknown)
    opened[known] = [bool(low[i] <= value <= high[i]) for i in known]
    return opened


@dataclass(frozen=True)
class _Scale:
    """An axis's positions: files' lows and highs and the probe as floats, and the label of
    a position."""

    lows: np.ndarray
    highs: np.ndarray
    probe: float | None
    label: Callable[[float], str]
    unit: str
    #: The axis's extent: the lowest and highest position of any bound or the probe.
    first: float
    last: float
    #: Whether its positions are whole numbers (ranks, integers, days, microseconds), so no
    #: value lies between two neighbours.
    discrete: bool = True

    @property
    def span(self) -> float:
        return max(self.last - self.first, 1e-9)


def _as_float(value: object, family: str) -> float:
    if family == "date":
        return float(((value if isinstance(value, dt.date) else pd.Timestamp(value).date())
                      - _EPOCH).days)
    return float(value)  # type: ignore[arg-type]


def _scale(axis: ReportAxis) -> _Scale:
    """Numbers and dates on their values, timestamps on their instants, and any other type
    on the ranks of its values among the files' bounds (labelled with the values)."""
    family = normalize_type(axis.spark_type)
    low = axis.bounds["min"].to_numpy(dtype=object)
    high = axis.bounds["max"].to_numpy(dtype=object)
    unknown = pd.isna(low) | pd.isna(high)
    known = ~unknown
    has_probe = axis.probe is not None
    if family in _NUMBERS or family in _MICROS or family == "date":
        def position(value: object) -> float:
            return _as_float(value, family)

        if family == "date":
            def label(at: float) -> str:
                return str(_EPOCH + dt.timedelta(days=round(at)))
        elif family in _MICROS:
            def label(at: float) -> str:
                return str(pd.Timestamp(round(at), unit="us"))[:16]
        else:
            def label(at: float) -> str:
                return f"{at:.6g}"
        unit = "value"
    else:
        values: list[Any] = sorted(set(low[known]) | set(high[known])
                                   | ({axis.probe} if has_probe else set()))

        def position(value: object) -> float:
            return float(bisect.bisect_left(values, value))

        def label(at: float) -> str:
            index = round(at)
            if not 0 <= index < len(values) or abs(at - index) > 0.05:
                return ""
            text = str(values[index])
            return text if len(text) <= 14 else text[:13] + "…"
        unit = "in the order of its values"
    lows = np.array([position(v) if k else np.nan for v, k in zip(low, known, strict=True)])
    highs = np.array([position(v) if k else np.nan
                      for v, k in zip(high, known, strict=True)])
    probe = position(axis.probe) if has_probe else None
    edges = [p for p in (*lows[known], *highs[known], probe) if p is not None]
    first, last = (min(edges), max(edges)) if edges else (0.0, 1.0)
    # A file without bounds may hold any value: it spans the whole axis.
    lows[unknown], highs[unknown] = first, last
    return _Scale(lows, highs, probe, label, unit, first, last,
                  discrete=family not in _CONTINUOUS)


def _lattice(scale: _Scale, grid: int) -> tuple[np.ndarray, float, float]:
    """Where the depth map probes an axis, and the extent of its cells: ``grid`` points
    from end to end, rounded to whole positions on a discrete axis (a point between two
    neighbouring values, where no bound lies, would show a gap no query can meet)."""
    points = np.linspace(scale.first, scale.first + scale.span, min(grid, max(
        round(scale.span) + 1, 2)) if scale.discrete else grid)
    if scale.discrete:
        points = np.unique(np.round(points))
    half = (points[-1] - points[0]) / (2 * (len(points) - 1)) if len(points) > 1 else 0.5
    return points, float(points[0] - half), float(points[-1] + half)


def depth_map(x: _Scale, y: _Scale, grid: int = _GRID
              ) -> tuple[np.ndarray, tuple[float, float, float, float]]:
    """How many files' boxes hold each point of a lattice over the plane (rows: y), and
    the lattice's extent (each point the centre of its cell)."""
    gx, x0, x1 = _lattice(x, grid)
    gy, y0, y1 = _lattice(y, grid)
    # A file holds a point when it holds its x and its y: one product of two indicators.
    in_x = ((x.lows[:, None] <= gx) & (gx <= x.highs[:, None])).astype(np.float32)
    in_y = ((y.lows[:, None] <= gy) & (gy <= y.highs[:, None])).astype(np.float32)
    return in_y.T @ in_x, (x0, x1, y0, y1)


def draw_layout(path: Path, x: ReportAxis, y: ReportAxis, pending: Sequence[bool],
                title: str, subtitle: str = "") -> list[ProbeResult]:
    """Write the picture to ``path``; what the sample queries open, as drawn."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch, Rectangle
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    files = len(x.bounds)
    sx, sy = _scale(x), _scale(y)
    probes = [(axis, scale, opened_files(axis.bounds, axis.probe))
              for axis, scale in ((x, sx), (y, sy)) if axis.probe is not None]
    results = [ProbeResult(axis.name, _shown(axis), int(opened.sum()), files)
               for axis, _, opened in probes]

    figure, (boxes, depth) = plt.subplots(1, 2, figsize=(14, 6.6))
    # Outlines thin out as files add up; the depth map carries the crowd.
    width = 0.9 if files <= 100 else 0.5 if files <= 400 else 0.25
    alpha = 0.9 if files <= 100 else 0.6 if files <= 400 else 0.35
    fills = ("tab:red", "tab:green")
    handles: list[object] = []
    for (axis, scale, opened), colour in zip(probes, fills, strict=False):
        for i in np.flatnonzero(opened):
            boxes.add_patch(_box(sx, sy, int(i), Rectangle, facecolor=colour,
                                 alpha=0.18, edgecolor="none"))
        line = boxes.axvline if axis is x else boxes.axhline
        line(scale.probe, color=colour, linestyle="--", linewidth=1.2)
        handles.append(Patch(facecolor=colour, alpha=0.35,
                             label=next(r for r in results if r.column == axis.name
                                        ).describe()))
    is_pending = np.asarray(pending, dtype=bool)
    for flag, colour, label in ((False, "tab:blue", "files of the last full clustering"),
                                (True, "tab:orange", "files written since")):
        chosen = np.flatnonzero(is_pending == flag)
        for i in chosen:
            boxes.add_patch(_box(sx, sy, int(i), Rectangle, fill=False,
                                 edgecolor=colour, linewidth=width, alpha=alpha))
        if len(chosen):  # no legend entry for a series that is not drawn
            handles.append(Line2D([], [], color=colour, label=f"{label} ({len(chosen)})"))
    boxes.set_xlim(sx.first - sx.span * 0.02, sx.last + sx.span * 0.02)
    boxes.set_ylim(sy.first - sy.span * 0.02, sy.last + sy.span * 0.02)
    boxes.set_title(f"{files} files' [min, max] boxes")
    boxes.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.14),
                 fontsize=8, frameon=False)

    counts, extent = depth_map(sx, sy)
    image = depth.imshow(counts, origin="lower", extent=extent, aspect="auto",
                         cmap="viridis", interpolation="nearest", vmin=0)
    bar = figure.colorbar(image, ax=depth,
                          label=f"files a query on {x.name} and {y.name} opens")
    bar.ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    for _, scale, _ in probes:
        (depth.axvline if scale is sx else depth.axhline)(
            scale.probe, color="white", linestyle="--", linewidth=1)
    depth.set_title("files holding each point")

    for axes in (boxes, depth):
        for axis, scale, ruler in ((x, sx, axes.xaxis), (y, sy, axes.yaxis)):
            ruler.set_major_locator(MaxNLocator(8, integer=scale.unit != "value"))
            ruler.set_major_formatter(FuncFormatter(lambda at, _, s=scale: s.label(at)))
            (axes.set_xlabel if ruler is axes.xaxis else axes.set_ylabel)(
                f"{axis.name} ({scale.unit})" if scale.unit != "value" else axis.name)
        axes.tick_params(axis="x", labelrotation=30, labelsize=8)
        axes.tick_params(axis="y", labelsize=8)
    figure.suptitle(title + (f"\n{subtitle}" if subtitle else ""), fontsize=10)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(figure)
    return results


def _box(sx: _Scale, sy: _Scale, i: int, rectangle: type, **style: object) -> object:
    """File ``i``'s box, at least a sliver wide and high so a one-value file shows."""
    width = max(sx.highs[i] - sx.lows[i], sx.span * 0.004)
    height = max(sy.highs[i] - sy.lows[i], sy.span * 0.004)
    return rectangle((sx.lows[i], sy.lows[i]), width, height, **style)


def _shown(axis: ReportAxis) -> str:
    """A probe value as a query would write it."""
    value, family = axis.probe, normalize_type(axis.spark_type)
    if family in _MICROS:
        return f"timestamp'{pd.Timestamp(int(value), unit='us')}'"  # type: ignore[call-overload]
    if family == "date":
        return f"date'{value}'"
    if isinstance(value, str):
        return "'" + value.replace("'", "\\'") + "'"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)
