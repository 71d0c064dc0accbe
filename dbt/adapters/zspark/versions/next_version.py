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
adapter stops with the table and its index unchanged when they are not the table's. The
protocol is here; each reach's version is beside it (``reach/session/next_version.py``,
``reach/server/next_version.py``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
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
