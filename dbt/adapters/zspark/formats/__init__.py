"""Clustered tables by format: plain Parquet (``parquet.py``: its own files, swapped in as
whole versions, statistics in ``__zindex``) and the formats that keep their own log,
Delta Lake and Iceberg.

A clustered build of such a table writes the same keyed, sorted and cut rows as a Parquet
build, but through the format's own writer in one ``create or replace`` commit (history
kept, no staging table and rename), and the format's own per-file statistics are its
index: every engine that reads the table skips files by them, and zspark reads them back
for ``skip_coverage`` and the layout figures instead of writing a ``__zindex`` table.

Each format is a module behind :class:`FormatTable`: what its writer needs to cut files
and keep statistics that prune, and its active files with their statistics in the shape
of a ``__zindex`` file row (``file_path``, ``file_size``, ``file_mtime``, ``row_group``,
``row_count`` and per column ``<c>__min``, ``<c>__max``, ``<c>__nulls``, ``<c>__nans``).
"""

from __future__ import annotations

from collections.abc import Mapping

from dbt.adapters.zspark.formats.base import (
    MAX_STRING_STATS,
    MIN_STRING_STATS,
    CommittingTable,
    FormatTable,
    TypedColumn,
    longest_string,
    require_live,
    stats_columns,
    string_stats_length,
)
from dbt.adapters.zspark.formats.delta import DeltaTable
from dbt.adapters.zspark.formats.iceberg import IcebergTable
from dbt.adapters.zspark.formats.parquet import ParquetTable

__all__ = ["CLUSTERED_FORMATS", "MAX_STRING_STATS", "MIN_STRING_STATS", "CommittingTable",
           "FormatTable", "TypedColumn", "committing_table", "format_of", "format_table",
           "longest_string", "require_live", "stats_columns", "string_stats_length"]


def format_of(properties: Mapping[str, str]) -> str | None:
    """'delta' or 'iceberg' for a table of that format (read from its properties, as
    ``SHOW TBLPROPERTIES`` gives them), else None.

    >>> format_of({"delta.minReaderVersion": "1"}), format_of({"format": "iceberg/parquet"})
    ('delta', 'iceberg')
    >>> format_of({"zspark.layout": "hilbert"}) is None
    True
    """
    # Iceberg's catalog gives its own properties ('format', 'provider'); a metastore's
    # view of the same table has 'table_type'.
    if (str(properties.get("table_type", "")).upper() == "ICEBERG"
            or str(properties.get("provider", "")).lower() == "iceberg"
            or str(properties.get("format", "")).lower().startswith("iceberg/")):
        return "iceberg"
    if any(key.startswith("delta.") for key in properties):
        return "delta"
    return None


def format_table(file_format: str | None) -> FormatTable:
    """The clustered-table module of ``file_format`` (one of :data:`CLUSTERED_FORMATS`;
    None: a table of neither Delta nor Iceberg, so Parquet)."""
    if file_format is None or file_format.lower() == "parquet":
        return ParquetTable()
    return committing_table(file_format)


def committing_table(file_format: str) -> CommittingTable:
    """The module of a format that commits on its own ('delta' or 'iceberg')."""
    found: dict[str, CommittingTable] = {"delta": DeltaTable(), "iceberg": IcebergTable()}
    if file_format.lower() not in found:
        raise ValueError(f"zspark clusters {', '.join(CLUSTERED_FORMATS)} tables, not "
                         f"{file_format!r}")
    return found[file_format.lower()]


#: The formats zspark clusters, in tables and incremental models (Parquet first: its
#: own files and ``__zindex``).
CLUSTERED_FORMATS = ("parquet", "delta", "iceberg")
