"""The next version of a Parquet table in a session (:class:`NextVersion`): the files
that stay are not touched; the new ones' footers are read before anything changes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from dbt.adapters.zspark.layouts.layout_state import clustered_writes_after
from dbt.adapters.zspark.reach.session.hadoop_files import HadoopFiles
from dbt.adapters.zspark.reach.session.index_tables import (
    index_frame,
    path_frame,
    replace_index_rows,
    table_location,
)
from dbt.adapters.zspark.skipping.index import index_columns, indexable_columns
from dbt.adapters.zspark.skipping.pruning import indexed_columns
from dbt.adapters.zspark.versions.next_version import CarriedVersion

if TYPE_CHECKING:
    from dbt.adapters.zspark.reach.base import Relation
    from dbt.adapters.zspark.reach.session.reach import SessionReach
    from dbt.adapters.zspark.skipping.index import IndexSummary


class SessionVersion:
    """A session: the files that stay are not touched; the new ones' footers are read."""

    def __init__(self, reach: SessionReach, table: Relation, staging: Relation,
                 index: Relation, in_place: bool) -> None:
        self._reach, self.in_place = reach, in_place
        self._table, self._staging, self._index = table, staging, index
        self._new_rows: Any = None
        self._location = self._staged_at = ""
        self._written: list[str] = []

    def carry(self, rewritten: Sequence[str], partition_by: Sequence[str], full: bool,
              properties: Mapping[str, str]) -> CarriedVersion:

        spark = self._reach.spark
        self._location = table_location(spark, str(self._table))
        self._staged_at = table_location(spark, str(self._staging))
        self._written = sorted(self._reach.table_files(self._staging))
        kept = sorted(self._reach.table_files(self._table) - set(rewritten))
        existing = spark.table(str(self._index))
        columns = index_columns(indexable_columns(spark.table(str(self._staging)).schema),
                                indexed_columns(existing.columns), [])
        self._new_rows = index_frame(
            spark, self._written, columns,
            f"zspark: reading {len(self._written)} new Parquet footers of {self._staging}")
        kept_rows = existing.where("row_group is null").join(path_frame(spark, kept),
                                                             "file_path")
        counted = sum(int(r[0] or 0) for r in [
            self._new_rows.where("row_group is null").selectExpr("sum(row_count)").first(),
            kept_rows.selectExpr("sum(row_count)").first()] if r is not None)
        # A full re-clustering keeps no file: its written files are the clustered base.
        clustered = clustered_writes_after(properties, kept, self._written) if full else {}
        return CarriedVersion(counted, kept == [] or self.in_place, clustered)

    def publish(self, rewritten: Sequence[str]) -> IndexSummary:
        spark = self._reach.spark
        if not self.in_place:
            # The table is now the next version: in its own folder (``swap.py``), or in
            # the managed table's folder it moved to.
            return replace_index_rows(spark, str(self._index), rewritten, self._new_rows,
                                      self._staged_at, self._location,
                                      table_location(spark, str(self._table)))
        # Moved into the table: on an object store a move is a copy, dated anew.
        moved = [self._location + path[len(self._staged_at):] for path in self._written]
        mtimes = {path: found.mtime for path, found in HadoopFiles(spark).identities(moved).items()}
        return replace_index_rows(spark, str(self._index), rewritten, self._new_rows,
                                  self._staged_at, self._location, self._location, mtimes)
