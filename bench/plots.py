"""Pictures of the benchmark (matplotlib, Agg backend: no display needed)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib

# The backend must be chosen before pyplot is imported.
matplotlib.use("Agg")

import matplotlib.pyplot as plt
from matplotlib.collections import PatchCollection
from matplotlib.patches import Rectangle

COLUMN_COLORS = {"s_city": "#4C72B0", "c_city": "#DD8452", "p_brand": "#55A868"}
LABELS = {"random": "random", "linear": "linear", "z_direct": "Z-order, direct",
          "z": "Z-order", "hilbert": "Hilbert", "delta": "delta-rs Z-order",
          "z, weighted": "Z-order, weighted", "balanced, weighted": "balanced, weighted"}


def skip_chart(path: Path, ours: Mapping[str, Mapping[str, float]],
               seed: Mapping[str, Mapping[str, float]], columns: Sequence[str],
               title: str) -> None:
    """Grouped bars: share of files skipped (%) per layout and column; seed 002 as ticks."""
    layouts = list(ours)
    width = 0.8 / len(columns)
    fig, ax = plt.subplots(figsize=(9, 4.5))
    for j, column in enumerate(columns):
        xs = [i + (j - (len(columns) - 1) / 2) * width for i in range(len(layouts))]
        values = [100 * ours[layout][column] for layout in layouts]
        ax.bar(xs, values, width * 0.95, color=COLUMN_COLORS.get(column), label=column)
        for x, value in zip(xs, values, strict=True):
            # Inside tall bars, so the seed's tick above them stays readable.
            inside = value >= 12
            ax.text(x, value - 2 if inside else value + 1, f"{value:.0f}", ha="center",
                    va="top" if inside else "bottom", fontsize=7,
                    color="white" if inside else "black")
        seed_x = [x for x, layout in zip(xs, layouts, strict=True) if layout in seed]
        seed_y = [seed[layout][column] for layout in layouts if layout in seed]
        ax.scatter(seed_x, seed_y, marker="_", s=260, linewidths=2.5, color="black", zorder=3,
                   label="seed 002 (533M rows, 1000 files)" if j == 0 and seed else None)
    ax.set_xticks(range(len(layouts)), [LABELS.get(layout, layout) for layout in layouts])
    ax.set_ylabel("files skipped by a point query (%)")
    ax.set_ylim(0, 112)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8, loc="upper left", ncol=4, bbox_to_anchor=(0, -0.08))
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def boxes_chart(path: Path, boxes: Mapping[str, Sequence[Sequence[float]]],
                ranges: tuple[int, int], probe: tuple[float, str] | None,
                title: str) -> None:
    """Per layout, every file's [min, max] box over two clustering columns (as value ranks).

    ``boxes`` maps a layout to [x_low, x_high, y_low, y_high] per file; files whose box
    crosses the probe's vertical line are the ones a point query on the x column opens.
    """
    names = list(boxes)
    fig, axes = plt.subplots(1, len(names), figsize=(3.3 * len(names), 3.6), squeeze=False)
    for ax, name in zip(axes[0], names, strict=True):
        hit: list[Rectangle] = []
        miss: list[Rectangle] = []
        for x0, x1, y0, y1 in boxes[name]:
            # Degenerate boxes (one value) still get a visible width.
            rect = Rectangle((x0, y0), max(x1 - x0, 1), max(y1 - y0, 1))
            (hit if probe is not None and x0 <= probe[0] <= x1 else miss).append(rect)
        # Outlines only: with 1000 files, filled boxes stack into one opaque block.
        ax.add_collection(PatchCollection(miss, facecolor="none", edgecolor="#4C72B0",
                                          alpha=0.35, linewidth=0.3))
        ax.add_collection(PatchCollection(hit, facecolor="#C44E52", edgecolor="#C44E52",
                                          alpha=0.15, linewidth=0.5))
        if probe is not None:
            ax.axvline(probe[0], color="#C44E52", linewidth=0.8)
        ax.set_xlim(0, ranges[0])
        ax.set_ylim(0, ranges[1])
        total = len(boxes[name])
        ax.set_title(f"{LABELS.get(name, name)}\n{len(hit)} of {total} files opened", fontsize=9)
        ax.set_xlabel("rank of s_city", fontsize=8)
        ax.tick_params(labelsize=7)
    axes[0][0].set_ylabel("rank of c_city", fontsize=8)
    if probe is not None:
        title += f"  (red: files a query s_city = '{probe[1]}' must open)"
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def build_time_chart(path: Path, seconds: Mapping[str, float], title: str,
                     warm: Mapping[str, float] | None = None) -> None:
    """Horizontal bars of build time per layout; with ``warm``, a second bar per layout
    for the same build repeated in a warm JVM (layouts without one get none)."""
    import numpy as np

    names = list(seconds)
    warm = warm or {}
    rows = np.arange(len(names))
    height = 0.4 if warm else 0.8
    fig, ax = plt.subplots(figsize=(7, (0.8 if warm else 0.5) * len(names) + 1.2))
    bars = ax.barh(rows, [seconds[n] for n in names], height=height, color="#8172B3",
                   label="fresh JVM (its first build)" if warm else None)
    ax.bar_label(bars, fmt="%.1f s", fontsize=8, padding=3)
    if warm:
        again = [n for n in names if n in warm]
        bars = ax.barh([rows[names.index(n)] + height for n in again],
                       [warm[n] for n in again], height=height, color="#55A868",
                       label="rebuilt in the same JVM")
        ax.bar_label(bars, fmt="%.1f s", fontsize=8, padding=3)
        ax.legend(fontsize=8, loc="lower right")
    ax.set_yticks(rows + (height / 2 if warm else 0), [LABELS.get(n, n) for n in names])
    ax.invert_yaxis()
    ax.set_xlabel("seconds")
    ax.set_title(title, fontsize=10)
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def as_boxes(low_x: Sequence[Any], high_x: Sequence[Any], low_y: Sequence[Any],
             high_y: Sequence[Any], rank_x: Any, rank_y: Any) -> list[list[float]]:
    """Per-file boxes in rank space; ``rank_*`` map a value (None: unknown) to its rank."""
    return [[float(rank_x(a, 0)), float(rank_x(b, 1)), float(rank_y(c, 0)), float(rank_y(d, 1))]
            for a, b, c, d in zip(low_x, high_x, low_y, high_y, strict=True)]


def scale_chart(path: Path, series: Mapping[str, Sequence[tuple[int, float]]],
                title: str) -> None:
    """Build time against rows, one line per layout."""
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for name, points in series.items():
        xs = [rows / 1e6 for rows, _ in points]
        ax.plot(xs, [seconds for _, seconds in points], marker="o", label=LABELS.get(name, name))
    ax.set_xlabel("rows (millions)")
    ax.set_ylabel("build seconds")
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


POLICY_COLORS = {"default": "#4C72B0", "never": "#C44E52", "optimize": "#55A868"}
POLICY_LABELS = {"default": "zspark default policy", "never": "never re-cluster",
                 "optimize": "full re-cluster every run (OPTIMIZE)"}


def pipeline_chart(path: Path, variants: Mapping[str, Mapping[str, Sequence[float]]],
                   title: str) -> None:
    """Per data variant, the lowest skip share over the clustering columns after each run,
    one line per re-clustering policy."""
    fig, axes = plt.subplots(1, len(variants), figsize=(5.5 * len(variants), 4), squeeze=False)
    for ax, (variant, policies) in zip(axes[0], variants.items(), strict=True):
        for policy, shares in policies.items():
            ax.plot(range(len(shares)), [100 * s for s in shares], marker="o", markersize=3,
                    color=POLICY_COLORS.get(policy), label=POLICY_LABELS.get(policy, policy))
        ax.set_title(f"{variant} data", fontsize=10)
        ax.set_xlabel("dbt run (0: base build of 50% of the rows)")
        ax.set_ylabel("rows skipped by a point query, worst column (%)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
