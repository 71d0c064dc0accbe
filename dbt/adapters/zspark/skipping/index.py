"""The file-stats index of a table: its name, the columns it holds, what a build or a
re-clustering reports of it. A session reads it from the Parquet footers
(``reach/session/index_tables.py``), a server by SQL (``skipping/sql_index.py``).

``<table>__zindex`` holds one row per data file (``row_group`` NULL) and one per row group:
path, size, rows and, per indexed column, min, max, null count (and NaN count for floats).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from dbt.adapters.zspark.core.value_ranks import normalize_type
from dbt.adapters.zspark.skipping.pruning import path_name
from dbt.adapters.zspark.skipping.stats import ColumnRef

INDEX_SUFFIX = "__zindex"
DEFAULT_INDEXED_COLUMNS = 32
INDEXABLE = ("tinyint", "smallint", "int", "bigint", "float", "double", "decimal", "date",
             "timestamp", "timestamp_ntz", "string", "boolean")
#: Identity of a data file in the index and in a scan: Spark's ``_metadata`` has all three.
FILE_COLUMNS = ("file_path", "file_size", "file_mtime")
_CHAR_METADATA = "__CHAR_VARCHAR_TYPE_STRING"  # where Spark keeps a column's char(n) type


def indexable_columns(schema: Any) -> list[ColumnRef]:
    """Every column and struct leaf of a Spark ``StructType`` the index can hold, in order.

    Leaves under arrays and maps have no per-row statistics and are left out, and so are
    struct fields declared char/varchar (Spark pads those on read in ways not tracked here).
    """
    from pyspark.sql.types import StructType

    found: list[ColumnRef] = []

    def walk(fields: Any, parts: tuple[str, ...]) -> None:
        for field in fields:
            path = (*parts, field.name)
            if isinstance(field.dataType, StructType):
                walk(field.dataType.fields, path)
                continue
            spark_type = field.dataType.simpleString()
            if normalize_type(spark_type) not in INDEXABLE:
                continue
            declared = str(field.metadata.get(_CHAR_METADATA, ""))
            char_length = None
            if declared.lower().startswith("char("):
                if len(path) > 1:
                    continue
                char_length = int(declared[len("char("):-1])
            found.append(ColumnRef(path, spark_type, char_length))

    walk(schema.fields, ())
    return found


def index_columns(available: Sequence[ColumnRef], clustering: Sequence[str],
                  configured: Sequence[str] | None) -> list[ColumnRef]:
    """Clustering columns first, then ``index_columns`` or the first 32 indexable columns.

    A struct leaf is named by its dotted path (``payload.user_id``) or its quoted path.
    """
    by_name: dict[str, ColumnRef] = {}
    for column in available:
        by_name.setdefault(".".join(column.parts).lower(), column)
        by_name.setdefault(path_name(column.parts).lower(), column)
    chosen = [by_name[c.lower()] for c in clustering if c.lower() in by_name]
    extra = ([by_name[c.lower()] for c in configured if c.lower() in by_name]
             if configured is not None else list(available[:DEFAULT_INDEXED_COLUMNS]))
    return list(dict.fromkeys(chosen + extra))


@dataclass
class IndexSummary:
    index_table: str
    files: int
    rows: int
    columns: list[str]


@dataclass
class StagedIndex:
    """The index of a build's staging table, read before the swap renames it into the
    model's table: the staging table's ``location`` (its files' paths' prefix until then)
    and where the ``rows`` wait (a session: a DataFrame its executors hold; a server: the
    relation they were written to, as a thrift session holds nothing between calls).
    ``files``: the staged files' rows (path, size, modification time, rows), where the
    reach read them when it staged the rows."""

    location: str
    rows: Any
    files: list[tuple[str, int, int, int]] | None = None
