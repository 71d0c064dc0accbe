"""The file-stats index through Spark SQL alone, for servers that run no Python (thrift).

One aggregation over the table grouped by ``_metadata``'s file path, size and modification
time gives each file's rows and, per indexed column, min, max and null count (and the NaN
count of floats, their min and max taken without NaN) in the schema of ``index.py``. It
reads the indexed columns rather than the footers alone, its bounds are exact, and row
groups are not indexed (``row_group`` is always NULL: a scan skips whole files only).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from dbt.adapters.zspark.core.sql_text import quote, sql_string
from dbt.adapters.zspark.core.value_ranks import normalize_type
from dbt.adapters.zspark.skipping.index import INDEXABLE
from dbt.adapters.zspark.skipping.pruning import path_name, stat_column
from dbt.adapters.zspark.skipping.stats import FLOAT_TYPES, ColumnRef, stats_for

_CHAR = re.compile(r"char\((\d+)\)", re.IGNORECASE)

#: The file identity of a row, as the scan compares it.
FILE_SQL = ("_metadata.file_path", "_metadata.file_size",
            "unix_millis(_metadata.file_modification_time)")


def described_columns(described: Sequence[tuple[str, str]]) -> list[ColumnRef]:
    """Indexable top-level columns of a table's (name, type) columns, in order. Struct
    leaves are not indexed this way."""
    found = []
    for name, spark_type in described:
        char = _CHAR.fullmatch(spark_type.strip())
        if char is not None:
            found.append(ColumnRef((name,), "string", int(char.group(1))))
        elif normalize_type(spark_type) in INDEXABLE:
            found.append(ColumnRef((name,), spark_type))
    return found


def index_sql(table: str, columns: Sequence[ColumnRef],
              paths: Sequence[str] | None = None) -> str:
    """The index rows of every data file of ``table`` holding a row (of the files named in
    ``paths`` only, when given: Spark opens no other)."""
    picked = [f"{FILE_SQL[0]} as file_path", f"{FILE_SQL[1]} as file_size",
              f"{FILE_SQL[2]} as file_mtime", "cast(null as int) as row_group",
              "count(1) as row_count"]
    for column in columns:
        value = ".".join(quote(p) for p in column.parts)
        name = path_name(column.parts)
        stats = stats_for(column.spark_type)
        bounded = value
        if normalize_type(column.spark_type) in FLOAT_TYPES:
            bounded = f"case when isnan({value}) then null else {value} end"
        for stat in stats:
            expression = {"min": f"min({bounded})", "max": f"max({bounded})",
                          "nulls": f"count_if({value} is null)",
                          "nans": f"count_if(isnan({value}))"}[stat]
            picked.append(f"{expression} as {quote(stat_column(name, stat))}")
    return (f"select {', '.join(picked)} from {table} {_of_paths(paths)}"
            f"group by {', '.join(FILE_SQL)}")


def files_sql(table: str, paths: Sequence[str] | None = None) -> str:
    """The data files of ``table`` holding a row (of the files named in ``paths`` only,
    when given: Spark opens no other)."""
    return f"select distinct {FILE_SQL[0]} from {table} {_of_paths(paths)}".rstrip()


def _of_paths(paths: Sequence[str] | None) -> str:
    """A filter on the file's path (none: every file)."""
    return "" if paths is None else f"where {FILE_SQL[0]} in ({', '.join(map(sql_string, paths))}) "


def relocated_sql(staged_index: str, columns: Sequence[str], staged_at: str,
                  location: str) -> str:
    """The rows of an index read before its table was renamed, their paths moved from under
    ``staged_at`` to under ``location`` (a rename keeps names, sizes and times)."""
    moved = [f"concat({sql_string(location)}, substring(file_path, {len(staged_at) + 1})) "
             f"as file_path" if c == "file_path" else quote(c) for c in columns]
    return f"select {', '.join(moved)} from {staged_index}"


def unmatched_files_sql(index: str, table: str) -> str:
    """How many files the index and the table's data disagree on (either side)."""
    present = (f"select distinct {FILE_SQL[0]} as p, {FILE_SQL[1]} as s, {FILE_SQL[2]} as m "
               f"from {table}")
    listed = f"select file_path as p, file_size as s, file_mtime as m from {index}"
    return (f"select count(1) from (({present}) except ({listed})) "
            f"union all select count(1) from (({listed}) except ({present}))")
