"""What every clustered table format gives (:class:`FormatTable`, and
:class:`CommittingTable` for a format that commits on its own), and the statistics
settings the formats share. The registry of formats is the package's ``__init__``."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from dbt.adapters.zspark.skipping.index import DEFAULT_INDEXED_COLUMNS, INDEXABLE

if TYPE_CHECKING:
    import pandas as pd
    from pyspark.sql import DataFrame

#: A query's rows, by whichever reach runs it.
Fetch = Callable[[str], list[tuple[Any, ...]]]
#: An indexed column and its Spark type (``("s_city", "string")``).
TypedColumn = tuple[str, str]
#: A string column's statistics keep at least this many characters (both formats' default
#: cut is shorter: Delta's 32, Iceberg's 16).
MIN_STRING_STATS = 32
#: ... and at most this many, however long the sampled values: stats live in the log.
MAX_STRING_STATS = 256
#: The strategies of a clustered incremental model of a format that commits on its own:
#: insert rows, merge them on ``unique_key``, or overwrite partitions (a whole run, or
#: each batch of a microbatch model).
COMMIT_STRATEGIES: tuple[str, ...] = ("append", "merge", "insert_overwrite", "microbatch")


class Jvm(Protocol):
    """The JVM behind a session, as a format's own API needs it (Delta's log, Iceberg's
    commits): the one seam where zspark calls the JVM rather than Spark's DataFrame and
    SQL APIs (``reach/session/jvm.py`` implements it)."""

    #: The session (a ``pyspark.sql.SparkSession``), and py4j's view of the JVM.
    spark: Any
    jvm: Any

    @property
    def session(self) -> Any:
        """The session's JVM ``SparkSession``."""
        ...

    def set_active(self) -> None:
        """This session as the calling thread's active one in the JVM."""
        ...

    def dataframe(self, dataset: Any) -> DataFrame:
        """A JVM ``Dataset[Row]`` as a Python DataFrame."""
        ...

    def dataset(self, frame: DataFrame) -> Any:
        """A Python DataFrame's JVM ``Dataset[Row]``."""
        ...

    def java_list(self, items: Iterable[Any]) -> Any:
        ...

    def scala_list(self, items: Iterable[Any]) -> Any:
        ...

    def python_list(self, seq: Any) -> list[Any]:
        ...

    def scala_map(self, entries: Mapping[str, str]) -> Any:
        ...

    def java_map(self, scala_map: Any) -> dict[Any, Any]:
        ...

    def call_static(self, class_name: str, method: str, *args: Any) -> Any:
        """A static method of a class found where the session's SQL finds its classes."""
        ...

    def scala_object(self, name: str) -> Any:
        ...

    def iterable(self, items: Any, closeable: bool = False) -> list[Any]:
        """The elements of a Java ``Iterable`` (a ``closeable`` one closed after)."""
        ...


class FormatTable(Protocol):
    """What a clustered build and the skip figures ask of a table format."""

    name: str
    #: Whether the table keeps a log of its own commits (Delta, Iceberg): a build
    #: replaces it in one commit and a re-clustering replaces files in one
    #: (:class:`CommittingTable`); else (Parquet) each writes the table's next version
    #: and swaps it in, and ``__zindex`` holds the statistics.
    commits_on_its_own: bool
    #: Whether every engine reading the table skips its files by their statistics (kept
    #: in the format's log); else only ``zspark_scan`` does, through ``__zindex``.
    engines_skip_files: bool
    #: Where the per-file statistics live: a table named the table's name plus this
    #: (Parquet: its ``__zindex``), or '' where the format's log keeps them.
    stats_table_suffix: str
    #: Whether the writer cuts a shuffle partition into files of ``maxRecordsPerFile``
    #: rows; a format whose writer does not gets a shuffle partition per file.
    cuts_files_by_rows: bool
    #: The ``incremental_strategy`` values a clustered incremental model of it allows.
    incremental_strategies: tuple[str, ...]
    #: Whether a DataFrame replaces a table of it through the V2 writer
    #: (``createOrReplace``, one commit): its V1 ``saveAsTable`` refuses to replace one.
    replaced_by_v2_writer: bool
    #: dbt-spark's flag on a relation of this format (``is_delta``; '' for Parquet),
    #: which its statements read to write the format's SQL.
    relation_flag: str

    def stats_properties(self, columns: Sequence[TypedColumn],
                         string_length: int) -> dict[str, str]:
        """Table properties that make the format keep statistics on ``columns``, strings
        to ``string_length`` characters."""
        ...

    def write_settings(self, string_length: int) -> dict[str, str]:
        """Session settings around the write for the same (none when the table's
        properties say it all)."""
        ...

    def recorded_write_settings(self, properties: Mapping[str, str]) -> dict[str, str]:
        """The write settings of a later write into a table with these ``properties``:
        those its clustered build wrote its statistics with."""
        ...

    def active_files(self, jvm: Jvm, table: str,
                     columns: Sequence[TypedColumn]) -> DataFrame:
        """The table's live data files, one ``__zindex``-shaped row each (see above),
        every bound one the file's rows provably lie within (else NULL: unknown)."""
        ...

    def active_files_sql(self, table: str, columns: Sequence[TypedColumn],
                         fetch: Fetch) -> str:
        """The same rows by Spark SQL alone, for a reach without the JVM (thrift,
        Connect), which ``fetch`` may ask about the table first; bounds the format cannot
        give in SQL are read from the files' rows (exact)."""
        ...

    def commits_sql(self, location: Callable[[], str]) -> str | None:
        """Where a data file's name does not tell the write that made it (Delta names
        each file by an id of its own): a query of (file name, commit) for the files
        the table's log still lists as added, by any reach's SQL. None where the name
        tells (Parquet's writes, Iceberg's), without asking the table's ``location``
        (over a server, a statement)."""
        ...


class CommittingTable(FormatTable, Protocol):
    """A format that commits on its own: files replaced in one commit of its log."""

    def replace_files(self, jvm: Jvm, table: str, rewritten: Sequence[str],
                      rewrite: Callable[[DataFrame], DataFrame],
                      properties: Callable[[list[str]], dict[str, str]] | None = None,
                      ) -> str:
        """Replace the live files ``rewritten`` (paths as ``active_files`` gives them) by
        the rows ``rewrite`` makes (it is given theirs, at the version read, a scan that
        opens those files alone: the formats prune no file by a filter on a row's file;
        it may read them more than once, as a sample and as the write), in one
        commit of the format marked as changing no data (Delta: an OPTIMIZE version;
        Iceberg: a ``replace`` snapshot), with the table ``properties`` made of the new
        files' paths set in the same commit. A writer committing meanwhile is kept, or
        this commit fails with nothing of it visible; so does one when a rewritten file
        is gone. Returns the new version's id."""
        ...

    def replace_by_sql(self, fetch: Callable[[str], list[tuple[Any, ...]]],
                       execute: Callable[[str], Any], table: str,
                       overwrite: Callable[[str, str, bool], None],
                       properties: Callable[[list[str]], dict[str, str]] | None = None,
                       partitions_of: Sequence[str] | None = None,
                       partition_by: Sequence[str] = (), *,
                       location: Callable[[], str]) -> str:
        """Replace live files of ``table`` by statements alone: all of them, or the files
        ``partitions_of`` (every file of the table partitions, by ``partition_by``, they
        lie in; ``location``: the table's folder, asked only where a format reads its log).
        ``overwrite(target, source, dynamic)`` writes into ``target``, by ``insert
        overwrite`` (``dynamic``: of the partitions its rows fall in), the rows it makes
        of ``source`` (the replaced rows at the version read). The new rows become the
        table's in one atomic step, refused with nothing of it visible when another
        writer committed meanwhile; then the ``properties`` made of the new files' paths
        are set (a commit of their own: a run killed between keeps every row, and the
        next run finds the files unrecorded and re-clusters them). Returns the new
        version's id."""
        ...


def string_stats_length(longest: int) -> int:
    """Characters a string column's statistics keep so that sampled values of ``longest``
    characters are kept whole.

    >>> string_stats_length(10), string_stats_length(45), string_stats_length(10_000)
    (32, 46, 256)
    """
    return max(MIN_STRING_STATS, min(MAX_STRING_STATS, longest + 1))


def stats_columns(schema: Mapping[str, str], clustering: Sequence[str],
                  configured: Sequence[str] | str | None) -> list[TypedColumn]:
    """The columns a clustered Delta or Iceberg table keeps statistics on, as a Parquet
    build indexes them: the clustering columns, then ``index_columns`` or the first 32
    columns of a type with bounds (top-level columns: the formats' nested statistics are
    not read back).

    >>> stats_columns({"a": "int", "m": "map<int,int>", "s": "string"}, ["s"], None)
    [('s', 'string'), ('a', 'int')]
    """

    typed = {name.lower(): (name, spark_type) for name, spark_type in schema.items()
             if spark_type.split("(")[0] in INDEXABLE}
    if isinstance(configured, str):
        configured = [configured]
    extra = (list(configured) if configured is not None
             else [name for name, _ in list(typed.values())[:DEFAULT_INDEXED_COLUMNS]])
    wanted = [typed[c.lower()] for c in [*clustering, *extra] if c.lower() in typed]
    return list(dict.fromkeys(wanted))


def longest_string(sample: pd.DataFrame, columns: Sequence[str]) -> int:
    """Characters of the longest sampled string of ``columns`` (0 without strings)."""
    longest = 0
    for column in columns:
        values: Any = sample.get(column)
        if values is not None and values.dtype == object:
            lengths = values.dropna().map(lambda v: len(v) if isinstance(v, str) else 0)
            longest = max(longest, int(lengths.max()) if len(lengths) else 0)
    return longest


def require_live(table: str, rewritten: Sequence[str], live: Collection[str]) -> None:
    """Refuse a replacement whose files are not all live in the version it read.

    >>> require_live("db.t", ["a"], {"b"})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    FileNotFoundError: db.t: 1 of the files to rewrite are no longer live ...: ['a']
    """
    missing = [path for path in rewritten if path not in live]
    if missing:
        raise FileNotFoundError(f"{table}: {len(missing)} of the files to rewrite are no "
                                f"longer live (a writer replaced them): {missing[:3]}")


