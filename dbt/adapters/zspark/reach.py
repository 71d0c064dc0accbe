"""The two ways the adapter reaches Spark: a Python session in this process, or a server
reached by SQL alone (thrift, http, odbc), each behind :class:`SparkReach`.

A session runs Python inside Spark (the ``direct`` curve method's UDFs, footer reads) and
reaches the JVM APIs a table format commits through; a server runs SQL only: keys in Spark
SQL, samples and file bounds fetched as rows. The adapter asks for one per step
(``ZSparkAdapter._reach``) and calls it without asking which it is.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import pandas as pd

    from dbt.adapters.zspark.clustering import InputSample, PreparedBuild
    from dbt.adapters.zspark.folders import Folders
    from dbt.adapters.zspark.formats import FormatTable, TypedColumn
    from dbt.adapters.zspark.layout_state import StoredLayout
    from dbt.adapters.zspark.planning import ClusteringPlan

#: A query's column names and rows; a statement run for its effect.
Query = Callable[[str], tuple[list[str], list[tuple[Any, ...]]]]
Execute = Callable[[str], Any]


class SparkReach(Protocol):
    """What a clustered build, a run's planning and the layout figures ask of Spark."""

    #: Whether Python runs inside Spark (UDF keys, footer reads, a format's JVM API).
    runs_python: bool
    #: The SparkSession (None over a server).
    spark: Any

    def schema(self, sql: str) -> dict[str, str]:
        """Output columns of ``sql`` and their Spark types, without running it."""
        ...

    def sample(self, plan: ClusteringPlan, sql: str, schema: Mapping[str, str],
               expected_rows: int | None) -> InputSample:
        """The first pass over ``sql``: a uniform sample and the row count."""
        ...

    def keyed(self, plan: ClusteringPlan, sql: str, sampled: InputSample,
              stored: StoredLayout | None, file_count: int, schema: Mapping[str, str],
              pieces: bool, file_per_partition: bool) -> PreparedBuild:
        """The clustered SELECT of a sampled input."""
        ...

    def frame(self, sql: str, types: Mapping[str, str]) -> pd.DataFrame:
        """A query's rows as a pandas frame (``types``: the Spark types of its columns that
        need converting from what a server returns)."""
        ...

    def files_view(self, written_as: FormatTable, table: str,
                   columns: Sequence[TypedColumn], view: str) -> None:
        """A temporary view ``view`` of a Delta or Iceberg table's live files, one
        ``__zindex`` file row each."""
        ...

    def folders(self) -> Folders:
        """The warehouse's folders as this connection sees them."""
        ...


class SessionReach:
    """Spark in this process: UDFs and the JVM are at hand."""

    runs_python = True

    def __init__(self, spark: Any) -> None:
        self.spark = spark

    def schema(self, sql: str) -> dict[str, str]:
        from dbt.adapters.zspark.clustering import model_schema

        return model_schema(self.spark, sql)

    def sample(self, plan: ClusteringPlan, sql: str, schema: Mapping[str, str],
               expected_rows: int | None) -> InputSample:
        from dbt.adapters.zspark.clustering import sample_input

        return sample_input(self.spark, plan, sql, expected_rows)

    def keyed(self, plan: ClusteringPlan, sql: str, sampled: InputSample,
              stored: StoredLayout | None, file_count: int, schema: Mapping[str, str],
              pieces: bool, file_per_partition: bool) -> PreparedBuild:
        from dbt.adapters.zspark.clustering import keyed_build

        return keyed_build(self.spark, plan, sql, sampled, stored, file_count, pieces,
                           file_per_partition)

    def frame(self, sql: str, types: Mapping[str, str]) -> pd.DataFrame:
        return self.spark.sql(sql).toPandas()

    def files_view(self, written_as: FormatTable, table: str,
                   columns: Sequence[TypedColumn], view: str) -> None:
        written_as.active_files(self.spark, table, columns).createOrReplaceTempView(view)

    def folders(self) -> Folders:
        from dbt.adapters.zspark.folders import SessionFolders

        return SessionFolders(self.spark)


class ServerReach:
    """A server reached by SQL alone: every step is a statement or a query."""

    runs_python = False
    spark = None

    def __init__(self, query: Query, execute: Execute, cores: Callable[[], int]) -> None:
        self._query, self._execute, self._cores = query, execute, cores

    def _fetch(self, sql: str) -> list[tuple[Any, ...]]:
        return self._query(sql)[1]

    def schema(self, sql: str) -> dict[str, str]:
        return described(self._fetch(f"describe query {sql}"))

    def sample(self, plan: ClusteringPlan, sql: str, schema: Mapping[str, str],
               expected_rows: int | None) -> InputSample:
        from dbt.adapters.zspark.sql_build import sample_input_sql

        return sample_input_sql(self._fetch, plan, sql, schema, expected_rows)

    def keyed(self, plan: ClusteringPlan, sql: str, sampled: InputSample,
              stored: StoredLayout | None, file_count: int, schema: Mapping[str, str],
              pieces: bool, file_per_partition: bool) -> PreparedBuild:
        from dbt.adapters.zspark.sql_build import keyed_sql_build

        return keyed_sql_build(self._fetch, plan, sql, sampled, stored, file_count,
                               self._cores(), schema, pieces, file_per_partition)

    def frame(self, sql: str, types: Mapping[str, str]) -> pd.DataFrame:
        import pandas as pd

        from dbt.adapters.zspark.sql_build import thrift_value

        names, rows = self._query(sql)
        frame = pd.DataFrame.from_records(rows, columns=names)
        for name, spark_type in types.items():
            frame[name] = pd.Series([thrift_value(v, spark_type) for v in frame[name]],
                                    dtype=None if len(frame) else object)
        return frame

    def files_view(self, written_as: FormatTable, table: str,
                   columns: Sequence[TypedColumn], view: str) -> None:
        # The server's session keeps the view for the statements that follow.
        self._execute(f"create or replace temporary view {view} as "
                      f"{written_as.active_files_sql(table, columns)}")

    def folders(self) -> Folders:
        from dbt.adapters.zspark.folders import ServerFolders

        return ServerFolders()


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
