"""Spark SQL text helpers shared by the modules that write SQL."""

from __future__ import annotations

from collections.abc import Mapping


def quote(identifier: str) -> str:
    """A backtick-quoted Spark identifier."""
    return "`" + identifier.replace("`", "``") + "`"


def sql_string(value: str) -> str:
    """A Spark SQL string literal."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def property_list(properties: Mapping[str, object]) -> str:
    """``('key' = 'value', ...)``, the form both OPTIONS and TBLPROPERTIES take."""
    pairs = ", ".join(f"{sql_string(str(k))} = {sql_string(str(v))}"
                      for k, v in properties.items())
    return f"({pairs})"
