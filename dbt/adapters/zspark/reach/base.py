"""The ways the adapter reaches Spark, each behind :class:`SparkReach`, each built on the
one before:

- ``ServerReach`` (``reach/server``): a server reached by SQL alone (thrift, http, odbc):
  keys in Spark SQL, samples and file bounds fetched as rows;
- ``FrameReach`` (``reach/frames``): a DataFrame session, a Spark Connect client's: the
  sample and the count in one job, rows sent to their shuffle partitions by number,
  Python's keys as UDFs, rows handed over as Arrow;
- ``SessionReach`` (``reach/session``): the embedded session, a ``FrameReach`` whose JVM
  is at hand: footers read on the executors through Hadoop, the warehouse's folders, and
  the JVM APIs a table format commits through.

The adapter asks for one per step (``reach_of``) and calls it without asking which it is.

A Parquet table's ``__zindex`` follows the same line: a session reads the files' footers
(``index.py``) and holds a staging table's rows in its executors until the swap; over a
server the files' rows are aggregated by SQL (``sql_index.py``) into a table of their own.
Each runs its statements through dbt's connection, so they are logged in the order they
run.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Protocol

from dbt.adapters.events.logging import AdapterLogger

from dbt.adapters.zspark.skipping.index import (
    IndexSummary,
    StagedIndex,
)

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

    from dbt.adapters.zspark.formats import FormatTable, TypedColumn
    from dbt.adapters.zspark.formats.base import Jvm
    from dbt.adapters.zspark.layouts.keyed_plan import InputSample, PreparedBuild
    from dbt.adapters.zspark.layouts.layout_state import StoredLayout
    from dbt.adapters.zspark.layouts.planning import ClusteringPlan
    from dbt.adapters.zspark.reach.folders import Folders
    from dbt.adapters.zspark.versions.next_version import NextVersion

logger = AdapterLogger("zspark")

#: A query's column names and rows; a statement run for its effect.
Query = Callable[[str], tuple[list[str], list[tuple[Any, ...]]]]
Execute = Callable[[str], Any]
#: A dbt relation: ``str()`` is its name in SQL; ``schema`` and ``identifier`` its parts.
Relation = Any


class SparkReach(Protocol):
    """What a clustered build, a run's planning, the layout figures and the file-stats
    index ask of Spark."""

    #: Whether Python runs inside Spark: key UDFs, footer reads on executors.
    runs_python: bool
    #: Whether this process holds the SparkSession and its JVM: DataFrames of the
    #: driver's rows (a seed), a table format's API that commits (a re-clustering that
    #: changes no data). A Spark Connect client would run Python UDFs but have no JVM.
    reaches_jvm: bool
    #: Whether rows this process holds go to Spark as one DataFrame write (a seed's):
    #: a session's, a Spark Connect client's; not a Thrift server's (SQL alone).
    loads_frames: bool
    #: Whether an append, an overwrite or a partial re-clustering writes a batch table
    #: first and moves its files into the table (``table_versions.py``: the folders are
    #: at hand), rather than let Spark's own commit write into the table (or, for a
    #: re-clustering, copy the files that stay into a new version).
    journals_batches: bool

    def schema(self, sql: str) -> dict[str, str]:
        """Output columns of ``sql`` and their Spark types, without running it."""
        ...

    def sample(self, plan: ClusteringPlan, sql: str, schema: Mapping[str, str],
               expected_rows: int | None) -> InputSample:
        """The first pass over ``sql``: a uniform sample and the row count."""
        ...

    def keyed(self, plan: ClusteringPlan, sql: str, sampled: InputSample,
              stored: StoredLayout | None, file_count: int, schema: Mapping[str, str],
              pieces: bool, file_per_partition: bool, select: bool = True) -> PreparedBuild:
        """The clustered SELECT of a sampled input. Without ``select``, only the sample's
        keys and the spread, no SELECT planned: a write that lands rows as the model gives
        them logs its layout by them."""
        ...

    def frame(self, sql: str, types: Mapping[str, str]) -> pd.DataFrame:
        """A query's rows as a pandas frame (``types``: the Spark types of its columns that
        need converting from what a server returns)."""
        ...

    def event_log_scans(self, folders: Sequence[str],
                        tables: Sequence[str]) -> pd.DataFrame:
        """Scans of ``tables`` (lower-case ``schema.table``) in the Spark event logs under
        ``folders``, grouped: ``table_name``, ``pushed_filters``, ``queries``, ``logs``,
        ``first_ms``, ``last_ms`` (``advice/event_logs.py``)."""
        ...

    def files_view(self, written_as: FormatTable, table: str,
                   columns: Sequence[TypedColumn], view: str) -> None:
        """A temporary view ``view`` of a Delta or Iceberg table's live files, one
        ``__zindex`` file row each."""
        ...

    def folders(self) -> Folders:
        """The warehouse's folders as this connection sees them."""
        ...

    def location(self, table: Relation) -> str:
        """A table's location in the form of its files' paths (``file:/...``, no
        trailing /)."""
        ...

    def refresh(self, table: Relation) -> None:
        """Forget the files this connection remembers of ``table``, so the next read
        lists them afresh."""
        ...

    def table_files(self, table: Relation, known: Collection[str] = ()) -> set[str]:
        """A table's data files (holding rows), named as the index names them. ``known``:
        files known to hold rows (the index's), which a reach that lists a table's files
        need not open to tell."""
        ...

    def fresh_rows(self, table: Relation, sql: str) -> list[tuple[Any, ...]] | None:
        """The rows of ``sql``, a query of ``table``, its files listed afresh; None when
        there is no ``table``."""
        ...

    def build_index(self, table: Relation, index: Relation, clustering: Sequence[str] | None,
                    configured: Sequence[str] | None) -> IndexSummary:
        """(Re)write ``index`` from every data file of ``table``: the ``clustering``
        columns first, then the ``configured`` ones (None: the first 32 indexable)."""
        ...

    def update_index(self, table: Relation, index: Relation, added: Sequence[str],
                     removed: Sequence[str], clustering: Sequence[str] | None,
                     configured: Sequence[str] | None) -> IndexSummary | None:
        """Add the rows of the files ``added`` to ``table`` to its ``index`` and drop those
        of the files ``removed``. None (nothing written) when there is no index, or its
        columns are not the ones asked for now."""
        ...

    def stage_index(self, table: Relation, index: Relation, clustering: Sequence[str] | None,
                    configured: Sequence[str] | None) -> StagedIndex:
        """The index of a build's staging ``table``, read before it replaces the model's
        table (over a server written to ``index``). With ``clustering``, the table's
        properties record its files as clustered writes, before the swap, so the table
        and that record appear together."""
        ...

    def publish_index(self, staged: StagedIndex, table: Relation, index: Relation,
                      clustering: Sequence[str] | None,
                      configured: Sequence[str] | None) -> IndexSummary:
        """After the swap: the ``staged`` rows, their paths moved to ``table``, written as
        its ``index``; should they not list exactly the table's files, or be gone, the
        index is built again."""
        ...

    def jvm(self) -> Jvm:
        """The session's JVM, for a format's own API (only where ``reaches_jvm``)."""
        ...

    def load_seed(self, table: str, names: Sequence[str],
                  texts: Sequence[pa.Array]) -> int | None:
        """Insert a seed's cells (``texts``: per column, in the CSV's order) into the
        table dbt created for it, in one write; its rows, or None where this reach has
        no such write (dbt-spark's own statements insert the seed)."""
        ...

    def next_version(self, table: Relation, staging: Relation, index: Relation,
                     in_place: bool) -> NextVersion:
        """How a re-clustering's rows of a Parquet ``table`` (written as ``staging``: a
        batch published ``in_place``, or its next version) are checked and indexed, and
        how the next version gets the files that stay (``next_version.py``)."""
        ...



def setting_value(fetch: Callable[[str], list[tuple[Any, ...]]], key: str) -> str | None:
    """A Spark setting's value as ``SET`` answers it (``<undefined>`` when unset; None
    when the answer holds no value)."""
    rows = fetch(f"set {key}")
    return str(rows[0][1]) if rows and rows[0][1] is not None else None


def execute_with(fetch: Callable[[str], list[tuple[Any, ...]]], execute: Execute,
                 settings: Mapping[str, str], sql: str) -> Any:
    """Run ``sql`` with session ``settings``, restored afterwards (on a server too: its
    session keeps them between statements)."""
    previous = {key: setting_value(fetch, key) for key in settings}
    for key, value in settings.items():
        execute(f"set {key} = {value}")
    try:
        return execute(sql)
    finally:
        for key, before in previous.items():
            execute(f"set {key} = {before}" if before not in (None, "<undefined>")
                    else f"reset {key}")


@contextmanager
def session_settings(spark: Any, settings: Mapping[str, str]) -> Iterator[None]:
    """A DataFrame session's ``settings`` for the work inside, restored after (as
    :func:`execute_with` does by statements)."""
    previous = {key: spark.conf.get(key, None) for key in settings}
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in previous.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


def described(rows: Sequence[tuple[Any, ...]]) -> dict[str, str]:
    """Column name -> Spark type from a ``DESCRIBE`` statement's rows (its column section).

    >>> described([("a", "int", None), ("", "", ""), ("# Partition Information", "", "")])
    {'a': 'int'}
    """
    columns: dict[str, str] = {}
    for name, spark_type, *_ in rows:
        if not name or str(name).startswith("#"):
            break
        columns[str(name)] = str(spark_type)
    return columns
