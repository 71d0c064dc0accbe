"""SQL of a skip-aware scan: the index says which files cannot match; Spark never opens them.

Files are excluded by (path, size) through Spark's hidden ``_metadata`` column, which Spark
evaluates while listing files, so excluded files are not opened at all. Excluding (rather
than listing the files to read) keeps every file the index does not know about: appended or
rewritten files are always read, and indexed files that are gone match nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

from dbt.adapters.zspark.sqltext import sql_string


def skippable_files_sql(index_table: str, may_match: str) -> str:
    """Query of the index: every data file, and whether the predicate rules it out."""
    return (
        f"select file_path, file_size, row_count = 0 or not ({may_match}) as skippable "
        f"from {index_table} where row_group is null"
    )


def scan_sql(relation: str, predicate: str, skipped: Sequence[tuple[str, int]]) -> str:
    """A parenthesised subquery equal to ``select * from relation where predicate``."""
    if not skipped:
        return f"(select * from {relation} where {predicate})"
    # One string per file ("path#size") keeps the IN list cheap for Spark to parse and
    # evaluate (a list of structs costs ~10x more) and still only matches unchanged files.
    excluded = ", ".join(sql_string(f"{path}#{size}") for path, size in skipped)
    return (
        f"(select * from {relation} where not ("
        f"concat(_metadata.file_path, '#', _metadata.file_size) in ({excluded})) "
        f"and ({predicate}))"
    )
