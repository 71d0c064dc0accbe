"""Delta Lake: files cut by Spark's ``maxRecordsPerFile`` (its writer is Spark's file
writer), statistics in the table's ``_delta_log``, read back through the session's own
Delta (its snapshot's files, parsed by Spark): wherever the session's storage reaches.
A reach without the JVM replays the log by SQL (``delta_log.py``).

Delta keeps min/max/null counts for the columns ``delta.dataSkippingStatsColumns`` names
(by default the first 32) and cuts strings to the session's
``spark.databricks.io.skipping.stringPrefixLength`` characters (32): a cut maximum is no
longer a bound a value provably lies under, and timestamps are kept to the millisecond.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from dbt.adapters.zspark.core.sql_text import property_list, quote, sql_string
from dbt.adapters.zspark.core.stop_points import stop_point
from dbt.adapters.zspark.formats.base import (
    COMMIT_STRATEGIES,
    Fetch,
    Jvm,
    TypedColumn,
    require_live,
)
from dbt.adapters.zspark.formats.delta_log import (
    RECENT,
    LogFiles,
    checkpoints_sql,
    listed_sql,
    log_folder,
    newest_checkpoint,
    partition_columns,
    planned_log_files,
    replayable,
    replayed_adds_sql,
)
from dbt.adapters.zspark.skipping.pruning import stat_column
from dbt.adapters.zspark.skipping.sql_index import index_sql
from dbt.adapters.zspark.skipping.stats import ColumnRef, spark_path

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

STATS_COLUMNS = "delta.dataSkippingStatsColumns"
STRING_PREFIX = "spark.databricks.io.skipping.stringPrefixLength"
#: Where a clustered build records the string cut it wrote statistics with.
STRING_STATS_PROPERTY = "zspark.string_stats_length"
DEFAULT_STRING_PREFIX = 32
_TIMESTAMPS = ("timestamp", "timestamp_ntz")
DELTA_LOG = "org.apache.spark.sql.delta.DeltaLog"
#: The setting whose value Delta records in its commit's history (``userMetadata``), and
#: the prefix of a re-clustering's by SQL.
USER_METADATA = "spark.databricks.delta.commitInfo.userMetadata"
COMMIT_TAG = "zspark_recluster_"
HISTORY_READ = 100
#: ``AddFile``'s fields (delta-spark 4.4), and where ``dataChange`` is among them.
ADD_FILE_FIELDS, ADD_FILE_DATA_CHANGE = 13, 4
#: ``Metadata``'s fields, and where the table properties (``configuration``) are.
METADATA_FIELDS, METADATA_CONFIGURATION = 8, 6


class DeltaTable:
    name = "delta"
    commits_on_its_own = True
    engines_skip_files = True
    stats_table_suffix = ""
    cuts_files_by_rows = True
    incremental_strategies: tuple[str, ...] = COMMIT_STRATEGIES
    relation_flag = "is_delta"
    replaced_by_v2_writer = False

    def stats_properties(self, columns: Sequence[TypedColumn],
                         string_length: int) -> dict[str, str]:
        return {STATS_COLUMNS: ",".join(quote(name) for name, _ in columns),
                STRING_STATS_PROPERTY: str(string_length)}

    def write_settings(self, string_length: int) -> dict[str, str]:
        return {STRING_PREFIX: str(string_length)}

    def recorded_write_settings(self, properties: Mapping[str, str]) -> dict[str, str]:
        # Every write keeps the build's cut: the bounds read back assume it.
        return self.write_settings(
            int(properties.get(STRING_STATS_PROPERTY, DEFAULT_STRING_PREFIX)))

    def active_files(self, jvm: Jvm, table: str,
                     columns: Sequence[TypedColumn]) -> DataFrame:
        detail = jvm.spark.sql(f"describe detail {table}").collect()[0]
        properties = {str(k): str(v) for k, v in (detail["properties"] or {}).items()}
        cut = int(properties.get(STRING_STATS_PROPERTY, DEFAULT_STRING_PREFIX))
        partitioned = {str(c).lower(): str(c) for c in detail["partitionColumns"] or []}
        location = str(detail["location"])
        # The snapshot a transaction reads is the table's latest version; nothing commits.
        log = jvm.call_static(DELTA_LOG, "forTable", jvm.session, location)
        added = jvm.dataframe(log.startTransaction().snapshot().allFiles().toDF())
        # Held once read: every query of the view would otherwise read the log again.
        return added.selectExpr(*live_file_columns(location, columns, partitioned, cut)) \
            .localCheckpoint(eager=True)

    def active_files_sql(self, table: str, columns: Sequence[TypedColumn],
                         fetch: Fetch) -> str:
        # The log replayed by SQL (``delta_log.py``): a checkpoint and a few commits read.
        # Where it cannot be replayed exactly, each live file's bounds are aggregated from
        # its rows (exact; the columns alone are read, but every row of them).
        properties = {str(key): str(value) for key, value, *_ in
                      fetch(f"show tblproperties {table}")}
        described = fetch(f"describe table extended {table}")
        location = spark_path(next((str(row[1]) for row in described
                                    if str(row[0]) == "Location"), ""))
        if location and replayable(properties, location):
            log = _named_log_files(fetch, table, location)
            if log is not None:
                cut = int(properties.get(STRING_STATS_PROPERTY, DEFAULT_STRING_PREFIX))
                partitioned = {name.lower(): name for name in partition_columns(described)}
                picked = live_file_columns(location, columns, partitioned, cut)
                return (f"select {', '.join(picked)} from "
                        f"({replayed_adds_sql(location, log)}) zspark_live")
        return index_sql(table, [ColumnRef((name,), spark_type) for name, spark_type in columns])

    def commits_sql(self, location: Callable[[], str]) -> str | None:
        # Delta's writer names every file by a random id, so the files of one append
        # share no write id; the commits still in the log (30 days by default) say
        # which files each added. Read as text by the executors: a request per commit.
        return delta_commits_sql(location())

    def replace_by_sql(self, fetch: Callable[[str], list[tuple[Any, ...]]],
                       execute: Callable[[str], Any], table: str,
                       overwrite: Callable[[str, str, bool], None],
                       properties: Callable[[list[str]], dict[str, str]] | None = None,
                       partitions_of: Sequence[str] | None = None,
                       partition_by: Sequence[str] = (), *,
                       location: Callable[[], str]) -> str:
        # One statement: Delta's overwrite reads ``table`` at the snapshot its transaction
        # replaces (the rows of an append committed before it starts are read and kept),
        # and an append committed while it runs fails it with nothing of it visible. Its
        # commit is tagged, to find the files it added in its own log entry. A partition's
        # rows are those of the partitions the files lie in, as that snapshot holds them
        # (a dynamic overwrite replaces exactly those).
        source = table
        if partitions_of is not None:
            # A semi join on the partition values, null-safe: a null partition is one too.
            columns = ", ".join(map(quote, partition_by))
            listed = ", ".join(map(sql_string, dict.fromkeys(partitions_of)))
            same = " and ".join(f"zspark_rows.{quote(c)} <=> zspark_parts.{quote(c)}"
                                for c in partition_by)
            source = (f"(select zspark_rows.* from {table} zspark_rows left semi join "
                      f"(select distinct {columns} from {table} "
                      f"where _metadata.file_path in ({listed})) zspark_parts on {same}"
                      f") zspark_replaced")
        tag = f"{COMMIT_TAG}{uuid.uuid4().hex}"
        execute(f"set {USER_METADATA}={tag}")
        try:
            overwrite(table, source, partitions_of is not None)
        finally:
            execute(f"reset {USER_METADATA}")
        stop_point("format:overwritten")  # the rows replaced, the new base not recorded
        # The latest commits alone (each one a read of the log): this one is among them
        # unless a hundred writers committed since.
        found = [int(row[0]) for row in fetch(f"describe history {table} limit {HISTORY_READ}")
                 if tag in (str(value) for value in row)]
        if not found:
            raise RuntimeError(f"{table}: the re-clustering's commit ({tag}) is not among "
                               f"its latest {HISTORY_READ}; its files stay unrecorded and "
                               f"the next run re-clusters them")
        version = found[0]
        folder = location().rstrip("/")
        log = f"{log_folder(folder)}/{version:020d}.json"
        new_files = [f"{folder}/{path}" for (path,) in fetch(
            f"select add.path from json.`{log}` where add is not null")]
        changed = properties(new_files) if properties else {}
        if changed:
            execute(f"alter table {table} set tblproperties {property_list(changed)}")
        return str(version)

    def replace_files(self, jvm: Jvm, table: str, rewritten: Sequence[str],
                      rewrite: Callable[[DataFrame], DataFrame],
                      properties: Callable[[list[str]], dict[str, str]] | None = None,
                      ) -> str:
        # As OPTIMIZE commits: every action marked as no data change, so the transaction
        # runs at snapshot isolation and a concurrent append is no conflict; with table
        # properties in the same commit (a metadata action) Delta checks it against every
        # concurrent commit, and an append meanwhile fails it before anything is visible.

        location = str(jvm.spark.sql(f"describe detail {table}").collect()[0]["location"])
        log = jvm.call_static(DELTA_LOG, "forTable", jvm.session, location)
        transaction = log.startTransaction()
        base = location.rstrip("/")
        live = {f"{base}/{add.path()}": add for add in jvm.python_list(transaction.filterFiles())}
        require_live(table, rewritten, live)
        # Exactly those files at the version the transaction read, opening only them (a
        # filter on `_metadata.file_name` prunes no file of a Delta table: every one is
        # opened); deletion vectors and column mapping applied as in any read.
        adds = jvm.scala_list([live[path] for path in dict.fromkeys(rewritten)])
        rows = jvm.dataframe(log.createDataFrame(transaction.snapshot(), adds, False,
                                                 jvm.jvm.scala.Option.empty()))
        added = [_no_data_change(add) for add in
                 jvm.python_list(transaction.writeFiles(jvm.dataset(rewrite(rows))))]
        now = int(time.time() * 1000)
        removed = [live[path].removeWithTimestamp(now, False) for path in rewritten]
        changed = properties([f"{base}/{add.path()}" for add in added]) if properties else {}
        if changed:  # a metadata action of the same commit (the files are written)
            removed.append(_with_configuration(jvm, transaction.metadata(), changed))
        optimize = jvm.scala_object("org.apache.spark.sql.delta.DeltaOperations$Optimize")
        operation = optimize.apply(jvm.scala_list([]), jvm.scala_list([]), False,
                                   jvm.jvm.scala.Option.empty(), False)
        stop_point("format:rewritten")  # written, not committed
        return str(transaction.commit(jvm.scala_list(added + removed), operation))


def _named_log_files(fetch: Fetch, table: str, location: str) -> LogFiles | None:
    """The log files that replay ``table``'s latest version, each confirmed there by a
    listing; None where one is missing (no checkpoint found and the first commits
    cleaned up)."""
    [(latest, *_)] = fetch(f"describe history {table} limit 1")
    latest = int(latest)
    checkpoint = newest_checkpoint((str(name) for (name,) in fetch(
        checkpoints_sql(location, latest))), latest)
    if checkpoint is None and latest >= RECENT:  # none recent: any the log keeps
        checkpoint = newest_checkpoint((str(name) for (name,) in fetch(
            checkpoints_sql(location, latest, recent=False))), latest)
    log = planned_log_files(latest, checkpoint)
    listed = {str(name) for (name,) in fetch(listed_sql(location, log))}
    return log if listed == {*log.checkpoint, *log.commits} else None


def _with_configuration(jvm: Jvm, metadata: Any, changed: dict[str, str]) -> Any:
    """A copy of a table's ``Metadata`` with ``changed`` table properties."""

    configuration = jvm.java_map(metadata.configuration())
    fields = [getattr(metadata, f"copy$default${i}")() for i in range(1, METADATA_FIELDS + 1)]
    fields[METADATA_CONFIGURATION] = jvm.scala_map({**configuration, **changed})
    return metadata.copy(*fields)


def _no_data_change(add: Any) -> Any:
    """A copy of an ``AddFile`` marked as no data change (its writer marks it one)."""
    fields = [getattr(add, f"copy$default${i}")() for i in range(1, ADD_FILE_FIELDS + 1)]
    fields[ADD_FILE_DATA_CHANGE] = False
    return add.copy(*fields)


def live_file_columns(location: str, columns: Sequence[TypedColumn],
                      partitioned: Mapping[str, str], cut: int) -> list[str]:
    """``__zindex``-shaped columns of a snapshot's ``AddFile`` rows: the statistics'
    JSON parsed by Spark, each bound null where it proves nothing (a string maximum as
    long as Delta's cut, which may have been cut) and a timestamp's maximum rounded up
    (Delta keeps milliseconds).

    >>> picked = live_file_columns("s3a://b/t", [("a", "int")], {}, 32)
    >>> picked[0][-46:], picked[1]
    ("path, concat('s3a://b/t/', path)) as file_path", 'size as file_size')
    """
    kept = [(name, spark_type) for name, spark_type in columns
            if name.lower() not in partitioned]
    fields = ", ".join(f"{quote(name)}: {spark_type}" for name, spark_type in kept) \
        or "zspark_none: int"
    counts = ", ".join(f"{quote(name)}: bigint" for name, _ in kept) or "zspark_none: int"
    schema = (f"struct<numRecords: bigint, minValues: struct<{fields}>, "
              f"maxValues: struct<{fields}>, nullCount: struct<{counts}>>")
    stats = f"from_json(stats, {sql_string(schema)})"
    # A path is relative to the table unless absolute (a shallow clone's files).
    absolute = "path rlike '^[A-Za-z][A-Za-z0-9+.-]*:/'"
    picked = [f"if({absolute}, path, concat({sql_string(location.rstrip('/') + '/')}, path)) "
              "as file_path",
              "size as file_size", "modificationTime as file_mtime",
              "cast(null as int) as row_group", f"{stats}.numRecords as row_count"]
    for name, spark_type in columns:
        low, high, nulls = (quote(stat_column(name, stat)) for stat in ("min", "max", "nulls"))
        if name.lower() in partitioned:
            value = f"cast(partitionValues[{sql_string(partitioned[name.lower()])}] " \
                    f"as {spark_type})"
            picked += [f"{value} as {low}", f"{value} as {high}",
                       f"if({value} is null, {stats}.numRecords, 0) as {nulls}"]
            continue
        maximum = f"{stats}.maxValues.{quote(name)}"
        if spark_type == "string":
            # Possibly cut to the prefix (plus a tie-breaker): no longer a bound.
            maximum = f"if(length({maximum}) >= {cut}, null, {maximum})"
        elif spark_type in _TIMESTAMPS:
            maximum = f"{maximum} + interval 1 millisecond"
        picked += [f"{stats}.minValues.{quote(name)} as {low}", f"{maximum} as {high}",
                   f"{stats}.nullCount.{quote(name)} as {nulls}"]
    return picked


def delta_commits_sql(location: str) -> str:
    """(file name, commit) for each file a commit in the Delta log at ``location`` added:
    the commits' own JSON files (not a compacted range of them, nor a checkpoint), each
    line parsed against the one field read (no pass to infer the log's schema).

    >>> print(delta_commits_sql("s3a://b/t"))  # doctest: +NORMALIZE_WHITESPACE
    select regexp_extract(add.path, '([^/]+)$', 1) as name,
    concat('delta-commit-', regexp_extract(file_name, '^([0-9]+)[.]json$', 1)) as commit
    from (select from_json(value, 'struct<add: struct<path: string>>').add as add,
    _metadata.file_name as file_name from text.`s3a://b/t/_delta_log/*.json`) zspark_commits
    where add is not null and file_name rlike '^[0-9]+[.]json$'
    """
    log = f"{log_folder(location)}/*.json"
    return ("select regexp_extract(add.path, '([^/]+)$', 1) as name, "
            "concat('delta-commit-', regexp_extract(file_name, '^([0-9]+)[.]json$', 1)) "
            "as commit from (select from_json(value, 'struct<add: struct<path: string>>').add "
            f"as add, _metadata.file_name as file_name from text.`{log}`) zspark_commits "
            "where add is not null and file_name rlike '^[0-9]+[.]json$'")
