"""When and how much to re-cluster a clustered incremental table (pure Python).

A table is a set of runs: the files one write produced. The runs of the last full
clustering are the base; every later run is pending. How well a run skips depends on how
many narrow key ranges it is cut into, not on its rows: a run of 5% of the rows written in
files of the table's size is cut into few ranges, each wide on every clustering column.

The policy:

1. New rows are written as a run of pieces: files of 1/8 the table's rows per file, each a
   narrow range of the layout's key, so the run skips about as well as the base; but a run
   is never cut into more than a quarter of a full rebuild's files (its pieces then grow
   with it: every piece of a large run spans about four base files' key range).
2. Runs merge by size, as a log-structured store merges its tiers: runs are peers when
   neither holds 4 times the other's rows. When the new rows would make the fourth peer
   among the runs written since the last run 4 times their size, they are written together
   with those runs (and any smaller ones among them) as one run, which may in turn merge
   with three peers of its own. A pending row is so rewritten about once per fourfold
   growth of its run, and an append between merges rewrites nothing.
   (``zspark_recluster_runs`` sets the 4: 2 merges more often, into narrower runs,
   rewriting rows more often.)
3. The table may hold at most twice the files of a full rebuild of its rows. When a run
   does not fit, every pending run is rewritten together with the new rows into one run.
   Only pending rows are rewritten; the base's files stay as they are.
4. Once pending rows reach half the base's rows, the whole table is re-clustered: rows are
   re-sampled and rewritten into files of the table's size, and become the new base.
5. Rows that land where the table has no rows yet (a new table partition) are written in
   files of the table's size and are the base there.

On a partitioned table the policy sees only the partitions the new rows fall in: the
others are never rewritten, and their pending runs wait until rows reach them again.

Measured on the seed-002 shape (2 M rows, Hilbert on three columns, base of 50% in 500
files, ten appends of 5%; BENCHMARKS.md), the policy before tiers (every pending run merged
once the budget filled) stayed within 0.91 points (uniform data; 1.03 on Zipf) of a full
rebuild's skip share at every step and rewrote 1.45x the final table (the OPTIMIZE
policy: 7.75x); ``make bench-pipeline`` measures this one.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

#: Pending runs are cut into files of this fraction of the table's rows per file...
PIECES_PER_FILE = 8
#: ...but a run into at most this share of a full rebuild's files.
RUN_FILES_SHARE = 0.25
#: Runs merge once there would be this many of a tier (and a tier is this factor of rows).
TIER_RUNS = 4
#: A full re-clustering once pending rows reach this share of the base's rows.
FULL_SHARE = 0.5
#: The table never holds more than this many times the files of a full rebuild.
MAX_FILES_FACTOR = 2

APPEND, MERGE, FULL, NOTHING = "append", "merge", "full", "none"


@dataclass(frozen=True)
class Run:
    """The files of one write: pending unless written by the last full clustering."""

    write: str
    paths: tuple[str, ...]
    rows: int
    written_at: int
    clustered: bool

    @property
    def files(self) -> int:
        return len(self.paths)


@dataclass(frozen=True)
class ReclusterPlan:
    action: str
    #: Files of the runs rewritten together with the new rows (merge and full).
    rewritten_paths: tuple[str, ...]
    rewritten_rows: int
    #: Files the written rows are cut into (full: the table's file count).
    pieces: int
    reason: str
    #: The written files count as clustered (the first rows of a new table partition).
    clustered_write: bool = False
    #: The new rows land in the order the model gives them, unsorted: a pending run that
    #: its tier merge clusters (``zspark_sort_appends: false``).
    as_written: bool = False

    @property
    def rewrites(self) -> bool:
        return self.action in (MERGE, FULL)


def rebuild_files(rows: int, rows_per_file: int) -> int:
    """Files of a full rebuild of ``rows`` rows."""
    return max(1, math.ceil(rows / max(1, rows_per_file)))


def plan_increment(runs: Sequence[Run], new_rows: int, rows_per_file: int,
                   automatic: bool = True, tier_runs: int = TIER_RUNS) -> ReclusterPlan:
    """How an incremental run writes ``new_rows`` rows into a table of ``runs``, merging
    runs ``tier_runs`` at a time."""
    table_files = rebuild_files(new_rows, rows_per_file)
    if not runs:
        return ReclusterPlan(APPEND, (), 0, table_files,
                             "no rows yet where the new rows land: written as their "
                             "clustered base", clustered_write=True)
    if not automatic:
        return ReclusterPlan(APPEND, (), 0, table_files,
                             "automatic re-clustering is off (zspark_recluster: false)")
    base = sum(r.rows for r in runs if r.clustered)
    pending = sorted((r for r in runs if not r.clustered), key=lambda r: r.written_at)
    pending_rows = sum(r.rows for r in pending) + new_rows
    total = base + pending_rows
    if pending_rows >= FULL_SHARE * base:
        existing = tuple(p for r in runs for p in r.paths)
        return ReclusterPlan(
            FULL, existing, base + pending_rows - new_rows,
            rebuild_files(total, rows_per_file),
            f"pending rows ({pending_rows}) reach {FULL_SHARE:.0%} of the clustered rows "
            f"({base})")
    budget = MAX_FILES_FACTOR * rebuild_files(total, rows_per_file)
    most = most_run_pieces(total, rows_per_file)
    files = sum(r.files for r in runs)
    merged = tier_merge(pending, new_rows, tier_runs)
    if merged:
        rows = new_rows + sum(r.rows for r in merged)
        pieces = min(_pieces(rows, rows_per_file), most)
        if files - sum(r.files for r in merged) + pieces <= budget:
            return ReclusterPlan(
                MERGE, tuple(p for r in merged for p in r.paths), rows - new_rows, pieces,
                f"the new rows make {tier_runs} pending runs of their size: "
                f"{len(merged)} pending runs merged with them")
    else:
        wanted = min(_pieces(new_rows, rows_per_file), most)
        if files + wanted <= budget or not pending:
            return ReclusterPlan(APPEND, (), 0, max(1, min(wanted, budget - files)),
                                 f"{_count(wanted, 'piece')} fit{'s' if wanted == 1 else ''} "
                                 f"in {budget} files")
    return _merge_all(runs, pending, new_rows, budget, most, rows_per_file)


def tier_merge(pending: Sequence[Run], new_rows: int, tier_runs: int = TIER_RUNS
               ) -> list[Run]:
    """The newest pending runs (in write order) that merge with ``new_rows``: those
    written since the last run ``tier_runs`` times their rows or more, once they hold
    ``tier_runs - 1`` peers of the new rows (runs of more than a ``tier_runs``-th of their
    rows); none while they hold fewer. A merged run may merge on with peers of its own.

    >>> runs = [Run(str(i), (str(i),), 1000, i, False) for i in range(3)]
    >>> len(tier_merge(runs[:2], 1000)), len(tier_merge(runs, 1000)), len(tier_merge(runs, 200))
    (0, 3, 0)
    """
    taken, rows = 0, new_rows
    while True:
        start, peers = len(pending) - taken, 1
        while start > 0 and pending[start - 1].rows < tier_runs * rows:
            start -= 1
            peers += pending[start].rows * tier_runs > rows
        if peers < tier_runs:
            return list(pending[len(pending) - taken:])
        rows += sum(r.rows for r in pending[start:len(pending) - taken])
        taken = len(pending) - start


def most_run_pieces(table_rows: int, rows_per_file: int) -> int:
    """The most files one run of a table of ``table_rows`` rows is cut into."""
    return max(1, math.ceil(RUN_FILES_SHARE * rebuild_files(table_rows, rows_per_file)))


def relayout(runs: Sequence[Run], new_rows: int, rows_per_file: int, reason: str
             ) -> ReclusterPlan:
    """Every file of the table rewritten together with ``new_rows`` new rows, by a new
    layout (``cluster_by='auto'``: the workload asks for one that pays for the rewrite).

    >>> relayout([Run("a", ("p", "q"), 50, 1, True)], 10, 20, "moved").pieces
    3
    """
    existing = tuple(p for r in runs for p in r.paths)
    total = sum(r.rows for r in runs)
    return ReclusterPlan(FULL, existing, total, rebuild_files(total + new_rows, rows_per_file),
                         reason)


def plan_on_demand(runs: Sequence[Run], rows_per_file: int, full: bool) -> ReclusterPlan:
    """``zspark_recluster``: rewrite the whole table (``full``), or merge every pending run
    into one run of pieces. Nothing to do is a plan that rewrites nothing."""
    pending = [r for r in runs if not r.clustered]
    if not pending:
        return ReclusterPlan(NOTHING, (), 0, 0, "no rows written since the last full "
                                                "clustering")
    total = sum(r.rows for r in runs)
    if full:
        return ReclusterPlan(FULL, tuple(p for r in runs for p in r.paths), total,
                             rebuild_files(total, rows_per_file), "asked for a full re-clustering")
    if len(pending) == 1:
        return ReclusterPlan(NOTHING, (), 0, 0, "the rows written since the last full "
                                                "clustering are already one run")
    rows = sum(r.rows for r in pending)
    budget = MAX_FILES_FACTOR * rebuild_files(total, rows_per_file)
    others = sum(r.files for r in runs if r.clustered)
    return ReclusterPlan(MERGE, tuple(p for r in pending for p in r.paths), rows,
                         max(1, min(_pieces(rows, rows_per_file),
                                    most_run_pieces(total, rows_per_file), budget - others)),
                         f"{len(pending)} pending runs merged into one")


def new_run(rows: int, rows_per_file: int, reason: str, table_rows: int = 0) -> ReclusterPlan:
    """New rows written as a run of pieces of their own, whatever the plan for the table
    (a Delta or Iceberg table commits them first, then re-clusters in a commit of its own),
    into at most a quarter of the files of a table of ``table_rows`` rows, when known.

    >>> new_run(1000, 800, "first").pieces, new_run(1000, 800, "first", 16000).pieces
    (10, 5)
    """
    pieces = _pieces(rows, rows_per_file)
    if table_rows:
        pieces = min(pieces, most_run_pieces(table_rows, rows_per_file))
    return ReclusterPlan(APPEND, (), 0, pieces, reason)


def deferred(decision: ReclusterPlan, why: str) -> ReclusterPlan:
    """``decision`` without its re-clustering, which waits (``why``): nothing rewritten,
    the rows it would have merged stay pending.

    >>> deferred(ReclusterPlan(MERGE, ("a",), 9, 2, "2 runs"), "no session").reason
    'merge of 9 rows deferred: no session'
    >>> deferred(new_run(10, 5, "own run"), "no session").action
    'append'
    """
    if not decision.rewrites:
        return decision
    return ReclusterPlan(APPEND, (), 0, decision.pieces,
                         f"{decision.action} of {decision.rewritten_rows} rows deferred: {why}")


def _pieces(rows: int, rows_per_file: int) -> int:
    piece_rows = max(1, rows_per_file // PIECES_PER_FILE)
    return max(1, math.ceil(rows / piece_rows))


def _merge_all(runs: Sequence[Run], pending: Sequence[Run], new_rows: int, budget: int,
               most: int, rows_per_file: int) -> ReclusterPlan:
    """Every pending run merged with the new rows: the table would not fit its budget."""
    rows = new_rows + sum(r.rows for r in pending)
    base_files = sum(r.files for r in runs) - sum(r.files for r in pending)
    wanted = min(_pieces(new_rows, rows_per_file), most)
    pieces = max(1, min(_pieces(rows, rows_per_file), most, budget - base_files))
    return ReclusterPlan(
        MERGE, tuple(p for r in pending for p in r.paths), rows - new_rows, pieces,
        f"{wanted} new pieces exceed {budget} files: {len(pending)} pending runs merged "
        f"with them")


def _count(number: int, thing: str) -> str:
    """A count and its noun.

    >>> _count(1, "piece"), _count(3, "piece")
    ('1 piece', '3 pieces')
    """
    return f"{number} {thing}{'' if number == 1 else 's'}"
