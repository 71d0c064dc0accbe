"""Whether a table changes to a newly chosen layout: only when that pays, and never back
and forth on a workload that has not changed.

The saving is the files the workload's queries would not open, counted over the horizon's
queries (its queries per day times ``zspark_auto_horizon_days``); the cost is the files a
rewrite to the new layout reads and writes (none for a table model, rebuilt every run
anyway). A new layout must also read at least :data:`KEEP_WITHIN` fewer files than the
table's own: estimates from a sample move a little between runs, and a layout within that
margin of the best is kept. Pure Python.
"""

from __future__ import annotations

from dataclasses import dataclass

#: A new layout replaces the table's own only when it reads this much fewer files.
KEEP_WITHIN = 0.10


@dataclass(frozen=True)
class Decision:
    change: bool
    #: Files the workload's queries would not open under the new layout.
    saving: float
    #: Files the change costs to rewrite (read and written).
    cost: float
    reason: str


def layout_change(current_share: float, best_share: float, table_files: int,
                  queries: float, rewrite_files: int) -> Decision:
    """Change from a layout reading ``current_share`` of ``table_files`` per query to one
    reading ``best_share``, for ``queries`` queries, at a rewrite of ``rewrite_files``?

    >>> layout_change(0.5, 0.1, 100, 20, 0).change
    True
    >>> layout_change(0.5, 0.47, 100, 1000, 0).change  # within the margin: kept
    False
    >>> layout_change(0.5, 0.1, 100, 2, 100).change  # saves 80 files, costs 200
    False
    """
    saving = max(0.0, current_share - best_share) * table_files * queries
    cost = 2.0 * rewrite_files
    if best_share > current_share * (1 - KEEP_WITHIN):
        return Decision(False, saving, cost,
                        f"the best reads {_pct(best_share)} of the files per query against "
                        f"{_pct(current_share)}: within {_pct(KEEP_WITHIN)} of the table's "
                        "own layout, which stays")
    if saving <= cost:
        return Decision(False, saving, cost,
                        f"the workload's {queries:g} queries would open {saving:.0f} files "
                        f"fewer, less than the {cost:.0f} a rewrite reads and writes")
    return Decision(True, saving, cost,
                    f"the workload's {queries:g} queries would open {saving:.0f} files fewer"
                    + (f", more than the {cost:.0f} a rewrite reads and writes" if cost
                       else " (the table is rebuilt anyway)"))


def _pct(share: float) -> str:
    return f"{100 * share:.1f}%"
