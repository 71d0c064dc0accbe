"""Markdown pieces every experiment's section of BENCHMARKS.md is written with."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def pct(value: float) -> str:
    return f"{100 * value:.1f}"


def mb(value: float) -> str:
    return f"{value / 2**20:.1f}"


def ms(value: float) -> str:
    return f"{1000 * value:.0f}"


def number(value: float | None) -> str:
    """A figure to two places, or '-' where a run did not measure it."""
    return "-" if value is None else f"{value:.2f}"


def md_table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |",
             "|" + "|".join("---" if i == 0 else "--:" for i in range(len(header))) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def pieces_words(config: Mapping[str, Any]) -> str:
    """The size of an append's pieces and how runs merged in the policy a pipeline run
    measured (runs before the settings were recorded measured eighths of a file, every
    pending run merged once the file budget was full).

    >>> pieces_words({})
    'new rows in pieces of 1/8 of a file, every pending run merged when the files overflow'
    >>> pieces_words({"pieces_per_file": 4, "tier_runs": 4})
    'new rows in pieces of 1/4 of a file, runs merged 4 at a time by size'
    """
    merges = (f"runs merged {config['tier_runs']} at a time by size" if "tier_runs" in config
              else "every pending run merged when the files overflow")
    return f"new rows in pieces of 1/{config.get('pieces_per_file', 8)} of a file, {merges}"


def step_split(steps: dict[str, float] | None) -> str:
    """A build's seconds per step as "sample / write / index / log" ("-": none logged)."""
    found = steps or {}
    return " / ".join(f"{found[s]:.1f}" for s in ("sample", "write", "index", "log")
                      if s in found) or "-"
