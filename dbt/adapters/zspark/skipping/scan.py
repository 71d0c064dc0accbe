"""SQL of a skip-aware scan: the index says which files cannot match; Spark never opens them.

Files are excluded by (path, size, modification time) through Spark's hidden ``_metadata``
column, which Spark evaluates while listing files, so excluded files are not opened at all.
Excluding (rather than listing the files to read) keeps every file the index does not know
about: appended files and files rewritten in place (even to the same size) are always read,
and indexed files that are gone match nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

from dbt.adapters.zspark.core.sql_text import sql_string

FileKey = tuple[str, int, int]  # path as Spark lists it, size, modification time (ms)


def skippable_files_sql(index_table: str, may_match: str) -> str:
    """Query of the index: every data file, and whether the predicate rules it out.

    A file whose identity is not fully known is never skippable.
    """
    return (
        f"select file_path, file_size, file_mtime, file_mtime is not null and "
        f"(row_count = 0 or not ({may_match})) as skippable "
        f"from {index_table} where row_group is null"
    )


def scan_sql(relation: str, predicate: str, skipped: Sequence[FileKey]) -> str:
    """A parenthesised subquery equal to ``select * from relation where predicate``.

    The predicate stands on lines of its own, so a trailing ``--`` comment in it cannot
    swallow the SQL around it.
    """
    where = f"(\n{predicate}\n)"
    if not skipped:
        # Not `where (...)` right after the table: Spark reads `t where (x)` as the alias
        # `where` with a column alias `x` when x is one word (`true`, a boolean column).
        return f"(select * from {relation} where true and {where}\n)"
    # One string per file ("path#size#mtime") keeps the IN list cheap for Spark to parse and
    # evaluate (a list of structs costs ~10x more) and still only matches unchanged files.
    excluded = ", ".join(sql_string(f"{path}#{size}#{mtime}") for path, size, mtime in skipped)
    return (
        f"(select * from {relation} where not (concat(_metadata.file_path, '#', "
        f"_metadata.file_size, '#', unix_millis(_metadata.file_modification_time)) "
        f"in ({excluded})) and {where}\n)"
    )
