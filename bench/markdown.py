"""Markdown pieces every experiment's section of BENCHMARKS.md is written with."""

from __future__ import annotations


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
