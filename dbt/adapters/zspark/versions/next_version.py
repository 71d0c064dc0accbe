"""The rows a re-clustering wrote, checked and brought into a Parquet table, in the way
the adapter reaches Spark (``reach/``).

- A session keeps every file that stays where it is. A full re-clustering's staging table
  is the whole next version, swapped in. A partial one's staging table is a batch whose
  files are published into the table in place of the files rewritten
  (``table_versions.py``). Either way the new files' footers are read before anything
  changes, and held until the index follows.
- A server writes files only through SQL: it copies the files that stay into the next
  version, one INSERT per run so each run stays a write of its own, indexes it by SQL and
  swaps it in.

Either reports the rows the table will hold before anything is changed, so that the
adapter stops with the table and its index unchanged when they are not the table's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from dbt.adapters.zspark.core.layout_state import (
    CLUSTERED_WRITES_KEY,
    clustered_writes,
    clustered_writes_after,
    write_id,
)
from dbt.adapters.zspark.reach.session.hadoop_files import HadoopFiles
from dbt.adapters.zspark.skipping.index import (
    INDEX_SUFFIX,
    StagedIndex,
    index_columns,
    index_frame,
    indexable_columns,
    path_frame,
    replace_index_rows,
    table_location,
)
from dbt.adapters.zspark.skipping.pruning import indexed_columns
from dbt.adapters.zspark.versions.rewrite import FILE_PER_TASK, copy_files_sql, table_runs

if TYPE_CHECKING:
    from dbt.adapters.zspark.reach.base import Relation
    from dbt.adapters.zspark.reach.server.reach import ServerReach
    from dbt.adapters.zspark.reach.session.reach import SessionReach
    from dbt.adapters.zspark.skipping.index import IndexSummary


@dataclass
class CarriedVersion:
    """The next version once the files that stay are in it: the ``rows`` its index
    counts, whether its files are exactly the written and the carried ones, and the
    table ``properties`` to set on it before the swap (its clustered writes)."""

    rows: int
    files_match: bool
    properties: dict[str, str] = field(default_factory=dict)


class NextVersion(Protocol):
    #: The staging table's files are published into the table in place of the rewritten
    #: ones (True), or the staging table is swapped in for the table (False).
    in_place: bool

    def carry(self, rewritten: Sequence[str], partition_by: Sequence[str], full: bool,
              properties: Mapping[str, str]) -> CarriedVersion:
        """Bring the table's files but the ``rewritten`` into the next version (where it
        does not keep them in place) and index it (``full``: a re-clustering of the whole
        table, whose written files are its clustered base; ``properties``: the table's)."""
        ...

    def publish(self, rewritten: Sequence[str]) -> IndexSummary:
        """Once the table is re-clustered: its index without the ``rewritten`` files' rows
        and with the new files'."""
        ...


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


class CopiedVersion:
    """A server: the files that stay are copied by SQL, each run into files of its own."""

    in_place = False

    def __init__(self, reach: ServerReach, table: Relation, staging: Relation,
                 index: Relation) -> None:

        self._reach, self._table, self._staging, self._index = reach, table, staging, index
        self._staged_index = staging.incorporate(
            path={"identifier": staging.identifier + INDEX_SUFFIX})
        self._staged_at = ""
        self._indexed: list[str] = []

    def carry(self, rewritten: Sequence[str], partition_by: Sequence[str], full: bool,
              properties: Mapping[str, str]) -> CarriedVersion:

        reach, index = self._reach, self._index
        written = reach.table_files(self._staging)
        now_clustered = {write_id(p) for p in written} if full else set()
        files = [(str(r[0]), int(r[1]), int(r[2] or 0)) for r in reach.fetch(
            f"select file_path, row_count, file_mtime from {index} where row_group is null")]
        columns = list(reach.describe(f"describe table {self._table}"))
        present, skipped = set(written), set(rewritten)
        for run in sorted(table_runs(files, clustered_writes(properties)),
                          key=lambda r: r.written_at):
            paths = [p for p in run.paths if p not in skipped]
            if not paths:
                continue
            reach.execute_with(FILE_PER_TASK, copy_files_sql(
                str(self._table), str(self._staging), columns, paths, partition_by))
            # Copies get names of their own: a clustered run's copies are recorded anew.
            copies = reach.table_files(self._staging) - present
            present |= copies
            if run.clustered:
                now_clustered |= {write_id(p) for p in copies}
        self._indexed = indexed_columns(reach.describe(f"describe table {index}"))
        summary = reach.build_index(self._staging, self._staged_index, self._indexed, [])
        self._staged_at = reach.location(self._staging)
        return CarriedVersion(summary.rows, summary.files == len(present), {
            CLUSTERED_WRITES_KEY: ",".join(sorted(w for w in now_clustered if w is not None))})

    def publish(self, rewritten: Sequence[str]) -> IndexSummary:
        return self._reach.publish_index(StagedIndex(self._staged_at, self._staged_index),
                                         self._table, self._index, self._indexed, [])
