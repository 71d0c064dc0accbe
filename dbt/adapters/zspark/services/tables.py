"""A table as the services read it: its stored layout, its format, its live files and their
statistics (a Parquet table's ``__zindex``, a Delta or Iceberg table's own log).
"""

from __future__ import annotations

from typing import Any

from dbt.adapters.events.logging import AdapterLogger
from dbt_common.exceptions import DbtRuntimeError

from dbt.adapters.zspark.formats import (
    format_of,
    format_table,
    stats_columns,
)
from dbt.adapters.zspark.layouts.keyed_plan import udf_name
from dbt.adapters.zspark.layouts.layout_state import (
    StoredLayout,
    StoredLayoutError,
)
from dbt.adapters.zspark.services.context import RunContext

logger = AdapterLogger("zspark")


class TableFiles:
    """A table as the services read it: its stored layout, its format, its live files and
    their statistics."""

    def __init__(self, ctx: RunContext) -> None:
        self.ctx = ctx

    def stored_layout(self, model: str, relation: Any,
                      properties: dict[str, str] | None = None) -> StoredLayout:
        """The layout stored with ``relation`` (``properties``: its own, when read)."""
        try:
            stored = StoredLayout.from_properties(
                self.ctx.table_properties(relation) if properties is None else properties)
        except StoredLayoutError as error:
            stored, problem = None, str(error)
        else:
            problem = "it has no stored clustering layout"
        if stored is None:
            raise DbtRuntimeError(
                f"Model '{model}': cannot add clustered rows to {relation}: {problem}. Run "
                f"`dbt run --full-refresh --select {model}` to rebuild it clustered.")
        return stored

    def format_of(self, relation: Any) -> tuple[str | None, dict[str, str]]:
        """('delta' or 'iceberg' when ``relation`` is a table of that format, else None;
        its properties)."""

        try:
            properties = self.ctx.table_properties(relation)
        except DbtRuntimeError:  # not a table (yet)
            return None, {}
        return format_of(properties), properties

    def format_files(self, relation: Any, file_format: str | None,
                     properties: dict[str, str], every_column: bool = False,
                     ) -> tuple[str, list[tuple[str, str]]]:
        """A temporary view of a table's live files, one ``__zindex`` file row each
        (``FormatTable.active_files``; over a server without Python, its SQL), and the
        columns a Delta or Iceberg table's statistics bound: those a clustered build keeps
        statistics on (its ``properties`` store the layout), or with ``every_column`` all
        it can bound."""

        written_as = format_table(file_format)
        reach = self.ctx.reach()
        schema = reach.schema(f"select * from {relation}")
        stored = StoredLayout.from_properties(properties)
        clustering = list(stored.columns) if stored is not None else []
        columns = stats_columns(schema, clustering, list(schema) if every_column else None)
        view = f"zspark_files_{udf_name(str(relation)).removeprefix('zspark_key_')}"
        reach.files_view(written_as, str(relation), columns, view)
        return view, columns

    def file_stats(self, relation: Any, properties: dict[str, str],
                   every_column: bool = False) -> str:
        """A view of a table's live files with their statistics, one ``__zindex`` file row
        each: a Parquet table's index's, a Delta or Iceberg table's from its log
        (``properties``: the table's; ``every_column``: every column the format bounds).
        LookupError when the table has none."""

        file_format = format_of(properties)
        held_in = relation.incorporate(path={
            "identifier": relation.identifier + format_table(file_format).stats_table_suffix})
        if not self.ctx.has_table(held_in):
            raise LookupError(f"no index table {held_in}")
        return self.format_files(relation, file_format, properties, every_column)[0]

    def commits(self, relation: Any, file_format: str | None) -> dict[str, str]:
        """File name -> the commit that added it, where a file's name does not tell the
        write that made it (a Delta table's: ``FormatTable.commits_sql``); else empty."""
        sql = format_table(file_format).commits_sql(lambda: self.ctx.reach().location(relation))
        if sql is None:
            return {}
        try:
            return {str(name): str(commit) for name, commit in self.ctx.fetch(sql)}
        except DbtRuntimeError as error:  # no commit in the log adds a file
            logger.debug(f"zspark: {relation}: no commits of files read: {error}")
            return {}

    def format_file_list(self, relation: Any, file_format: str,
                         properties: dict[str, str]) -> list[tuple[str, int, int]]:
        """A Delta or Iceberg table's live files as the policy reads an index: (path,
        rows, modification time in ms)."""
        view, _ = self.format_files(relation, file_format, properties)
        return [(str(r[0]), int(r[1] or 0), int(r[2] or 0)) for r in self.ctx.fetch(
            f"select file_path, row_count, file_mtime from {view}")]
