"""The plans a model's steps hand each other within one run.

A service returns a plan to the materialization, which hands it back to each later step
(a plan is the one place a step finds what an earlier one decided): nothing waits in the
adapter keyed by a model's name.

- ``KeyedWrite``: a clustered write's SELECT, the session settings its statement runs
  with, its sample (the layout figures' probes) and its steps' timings.
- ``BuildPlan``: a table build, from its checks to its index.
- ``IncrementPlan``: an incremental run, from its plan to its last step; with a
  ``Rewrite`` (a re-clustering between its plan and its swap) or a ``FormatPlan`` (a
  Delta or Iceberg run between its rows' commit and its re-clustering).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from dbt.adapters.zspark.versions.recluster import TIER_RUNS

if TYPE_CHECKING:
    from dbt.adapters.zspark.layouts.layout_state import StoredLayout
    from dbt.adapters.zspark.layouts.planning import ClusteringPlan
    from dbt.adapters.zspark.skipping.health import LayoutSample
    from dbt.adapters.zspark.skipping.index import StagedIndex

#: Spark's rows-per-file cut of a write, set around each clustered write.
FILE_ROWS_SETTING = "spark.sql.files.maxRecordsPerFile"


@dataclass
class KeyedWrite:
    """One clustered write: its keyed SELECT, and what its statement and its log need."""

    sql: str
    #: Rows per file of its shuffle partitions (None: one file per partition).
    file_rows: int | None
    sample: LayoutSample
    #: Seconds per step (sample, write, index, log), and the clock of the last step.
    timings: dict[str, float]
    #: Session settings of the format around the statement (statistics' string cut).
    settings: dict[str, str] = field(default_factory=dict)
    #: What the run did, opening its log line ("appended as a run of its own").
    action: str = ""
    #: Settings that keep the keyed rows' generated code compiled (a server's JVMs may
    #: leave it to their interpreter: ``core/generated_code.py``).
    code_settings: dict[str, str] = field(default_factory=dict)

    def statement_settings(self) -> dict[str, str]:
        """The session settings the write's statement runs with, restored after: rows
        per file is one, not a writer option of the table, which would override it in
        every later write (pieces, merges)."""
        settings = {**self.code_settings, **self.settings}
        if self.file_rows:
            settings[FILE_ROWS_SETTING] = str(int(self.file_rows))
        return settings

    def lap(self, step: str) -> None:
        """Charge the time since the last step to ``step``."""
        now = time.perf_counter()
        self.timings[step] = self.timings.get(step, 0.0) + now - self.timings["since"]
        self.timings["since"] = now


def lap(write: KeyedWrite | None, step: str) -> None:
    """Charge the time since a write's last step to ``step`` (no write: nothing timed)."""
    if write is not None:
        write.lap(step)


@dataclass
class BuildPlan:
    """A table build from its checks (``zspark_build_plan``) to its index: the
    materialization writes ``sql`` into ``target`` (or its staging version) and hands the
    plan back to each later step."""

    target: Any
    #: The SELECT the build writes (a Python model: its code).
    sql: str
    language: str
    file_format: str
    #: It gets a ``__zindex`` (Parquet).
    want_index: bool
    #: Its clustered write (None: an unclustered build).
    write: KeyedWrite | None = None
    #: Table properties of the CREATE TABLE: the stored layout, the format's statistics.
    layout_properties: dict[str, str] = field(default_factory=dict)
    #: The staging table's index, read before the swap, written after it.
    staged: StagedIndex | None = None


@dataclass
class Rewrite:
    """A re-clustering between its plan and its swap."""

    decision: Any  # recluster.ReclusterPlan
    new_rows: int
    table_rows: int
    #: Table properties of a new layout (full re-clustering), else None.
    layout: dict[str, str] | None
    partition_by: list[str]
    #: It rewrites every file of the table (else some stay: the other partitions' files
    #: of a partitioned table's full re-clustering, the runs a merge leaves).
    whole_table: bool = True
    #: Its rows are a batch published in place of the files rewritten (in a session,
    #: when files stay), not a next version swapped in.
    in_place: bool = False


@dataclass
class FormatPlan:
    """A Delta or Iceberg incremental run between its plan and its re-clustering."""

    decision: Any  # recluster.ReclusterPlan: what the policy chose, new rows aside
    plan: ClusteringPlan
    stored: StoredLayout
    file_format: str
    properties: dict[str, str]
    #: The policy decides once the rows are committed (a MERGE rewrites files it
    #: matches, unknown before): with automatic re-clustering, or not.
    plan_after: bool = False
    automatic: bool = True
    tier_runs: int = TIER_RUNS


@dataclass
class IncrementPlan:
    """An incremental run of a clustered model from its plan (``zspark_increment``) to its
    last step: the materialization reads ``rows``, ``rewrite`` and ``sql`` and hands the
    plan back to each later step, which finds here what the plan decided."""

    #: New rows (0: nothing to write).
    rows: int
    #: The rows go into the table's next version with the runs they are merged with.
    rewrite: bool
    #: The table's files before the insert, whose difference after it is the new files.
    files_before: set[str] = field(default_factory=set)
    #: Its files are clustered as a build's (whole partitions, a partition's first rows).
    clustered_insert: bool = False
    #: A re-clustering between its plan and its swap.
    rewritten: Rewrite | None = None
    #: A Delta or Iceberg run between its rows' commit and its re-clustering.
    format_plan: FormatPlan | None = None
    #: Its clustered write (None: nothing to write).
    write: KeyedWrite | None = None

    @property
    def sql(self) -> str:
        """The SELECT of the rows to write ('' when there are none)."""
        return self.write.sql if self.write is not None else ""
