"""Plain Parquet: the table's own files, no log. A clustered build or a re-clustering
writes the table's next version and swaps it in (``swap.py``), and the per-file
statistics are zspark's own ``<table>__zindex``, read from the files' footers
(``index.py``), whose file rows already have the shape every format's active files take.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from dbt.adapters.zspark.formats.base import Fetch, Jvm, TypedColumn
from dbt.adapters.zspark.skipping.index import INDEX_SUFFIX

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


class ParquetTable:
    name = "parquet"
    commits_on_its_own = False
    engines_skip_files = False
    stats_table_suffix = INDEX_SUFFIX
    cuts_files_by_rows = True
    incremental_strategies: tuple[str, ...] = ("append", "insert_overwrite")
    relation_flag = ""
    replaced_by_v2_writer = False

    def stats_properties(self, columns: Sequence[TypedColumn],
                         string_length: int) -> dict[str, str]:
        return {}  # its statistics are the index's, read from the footers

    def write_settings(self, string_length: int) -> dict[str, str]:
        return {}  # footers keep whole values: the index cuts none

    def recorded_write_settings(self, properties: Mapping[str, str]) -> dict[str, str]:
        return {}

    def active_files(self, jvm: Jvm, table: str,
                     columns: Sequence[TypedColumn]) -> DataFrame:
        return jvm.spark.sql(self.active_files_sql(table, columns))

    def commits_sql(self, location: Callable[[], str]) -> str | None:
        return None  # a file's name carries its write's id

    def active_files_sql(self, table: str, columns: Sequence[TypedColumn],
                         fetch: Fetch | None = None) -> str:
        """The index's file rows (every column it indexes: ``columns`` were chosen when
        it was built). The caller repairs an index that no longer lists the table's
        files first (``_repair_index``)."""
        return f"select * from {table}{INDEX_SUFFIX} where row_group is null"
