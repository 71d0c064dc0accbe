"""The next version of a Parquet table over a server (:class:`NextVersion`): the files
that stay are copied by SQL, each run into files of its own, and indexed by SQL."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from dbt.adapters.zspark.layouts.layout_state import (
    CLUSTERED_WRITES_KEY,
    clustered_writes,
    write_id,
)
from dbt.adapters.zspark.skipping.index import INDEX_SUFFIX, StagedIndex
from dbt.adapters.zspark.skipping.pruning import indexed_columns
from dbt.adapters.zspark.versions.next_version import CarriedVersion
from dbt.adapters.zspark.versions.rewrite import FILE_PER_TASK, copy_files_sql, table_runs

if TYPE_CHECKING:
    from dbt.adapters.zspark.reach.base import Relation
    from dbt.adapters.zspark.reach.server.reach import ServerReach
    from dbt.adapters.zspark.skipping.index import IndexSummary


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
            copies = reach.table_files(self._staging, known=present) - present
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
