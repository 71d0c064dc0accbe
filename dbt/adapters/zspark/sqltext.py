"""Spark SQL text helpers shared by the modules that write SQL."""

from __future__ import annotations


def quote(identifier: str) -> str:
    """A backtick-quoted Spark identifier."""
    return "`" + identifier.replace("`", "``") + "`"


def sql_string(value: str) -> str:
    """A Spark SQL string literal."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
