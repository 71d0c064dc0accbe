"""The layout report of a clustered table: its health as a text table, and a picture of
its files' [min, max] boxes over two clustering columns, appended files in their own
colour (``dbt run-operation zspark_layout_report``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from dbt.adapters.zspark.health import LayoutHealth

_HEADERS = ("column", "files", "depth", "rebuild_depth", "skip_share", "value_skip_share",
            "rebuild_skip_share", "average_overlaps", "average_depth")


def health_table(health: LayoutHealth) -> str:
    """The per-column figures as an aligned text table, with the pending share below."""
    rows = [[str(row[h]) for h in _HEADERS] for row in health.table()]
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(_HEADERS)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(_HEADERS, widths, strict=True))]
    lines += ["  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)) for r in rows]
    lines.append(f"{health.files} files, {health.rows} rows; {health.pending_share:.1%} of "
                 f"rows written since the last full clustering")
    return "\n".join(lines)


def _ranks(low: pd.Series, high: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Bounds as positions among every bound value of the column (any comparable type);
    a file without bounds spans the whole axis."""
    unknown = (pd.isna(low) | pd.isna(high)).to_numpy()
    values = np.sort(np.unique(np.concatenate([low[~unknown].to_numpy(dtype=object),
                                               high[~unknown].to_numpy(dtype=object)])))
    top = max(len(values) - 1, 0)
    lows = np.zeros(len(low))
    highs = np.full(len(low), float(top))
    if len(values):
        lows[~unknown] = np.searchsorted(values, low[~unknown].to_numpy(dtype=object))
        highs[~unknown] = np.searchsorted(values, high[~unknown].to_numpy(dtype=object))
    return lows, highs


def draw_boxes(path: Path, bounds_x: pd.DataFrame, bounds_y: pd.DataFrame,
               pending: Sequence[bool], x: str, y: str, title: str) -> Path:
    """One rectangle per file over the ranks of ``x`` and ``y``; files written since the
    last full clustering in orange."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    x_low, x_high = _ranks(bounds_x["min"], bounds_x["max"])
    y_low, y_high = _ranks(bounds_y["min"], bounds_y["max"])
    figure, axes = plt.subplots(figsize=(7, 7))
    for is_pending in (False, True):
        colour = "tab:orange" if is_pending else "tab:blue"
        for i in np.flatnonzero(np.asarray(pending) == is_pending):
            axes.add_patch(Rectangle((x_low[i], y_low[i]), max(x_high[i] - x_low[i], 0.5),
                                     max(y_high[i] - y_low[i], 0.5), fill=False,
                                     edgecolor=colour, linewidth=0.6, alpha=0.7))
    axes.set_xlim(0, max(float(x_high.max(initial=0)), 1))
    axes.set_ylim(0, max(float(y_high.max(initial=0)), 1))
    axes.set_xlabel(f"{x} (rank of its file bounds)")
    axes.set_ylabel(f"{y} (rank of its file bounds)")
    axes.set_title(title)
    axes.legend(handles=[Rectangle((0, 0), 1, 1, fill=False, edgecolor="tab:blue"),
                         Rectangle((0, 0), 1, 1, fill=False, edgecolor="tab:orange")],
                labels=["clustered", "written since"], loc="upper right")
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(figure)
    return path
