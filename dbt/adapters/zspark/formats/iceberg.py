"""Apache Iceberg: a file per shuffle partition (its writer rolls files by size, not
rows), statistics in the table's manifests, read back through its ``data_files``
metadata table (plain SQL, so it works over thrift as well).

Iceberg keeps bounds for the first 100 columns, strings cut to 16 characters (a cut upper
bound is rounded up, so it stays a bound); ``write.metadata.metrics.column.<c>`` set to
``full`` keeps a column's values whole. Its writer is asked for no shuffle of its own
(``write.distribution-mode``), which would undo the build's range partitioning.
"""

from __future__ import annotations

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
from dbt.adapters.zspark.skipping.pruning import stat_column

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

METRICS = "write.metadata.metrics.column."
SPARK_PACKAGE = "org.apache.iceberg.spark"
_FLOATS = ("float", "double")


class IcebergTable:
    name = "iceberg"
    commits_on_its_own = True
    engines_skip_files = True
    stats_table_suffix = ""
    cuts_files_by_rows = False
    incremental_strategies: tuple[str, ...] = COMMIT_STRATEGIES
    relation_flag = "is_iceberg"
    replaced_by_v2_writer = True

    def stats_properties(self, columns: Sequence[TypedColumn],
                         string_length: int) -> dict[str, str]:
        # `full` rather than truncate(n): a column's bounds then never depend on the
        # sample's guess of its longest value.
        return {"write.distribution-mode": "none",
                **{f"{METRICS}{name}": "full" for name, _ in columns}}

    def write_settings(self, string_length: int) -> dict[str, str]:
        return {}

    def recorded_write_settings(self, properties: Mapping[str, str]) -> dict[str, str]:
        return {}  # the table's own properties keep its metrics whole

    def active_files(self, jvm: Jvm, table: str,
                     columns: Sequence[TypedColumn]) -> DataFrame:
        return jvm.spark.sql(self.active_files_sql(table, columns))

    def commits_sql(self, location: Callable[[], str]) -> str | None:
        return None  # a file's name carries its write's id

    def active_files_sql(self, table: str, columns: Sequence[TypedColumn],
                         fetch: Fetch | None = None) -> str:
        return active_files_sql(table, columns)  # its metadata tables are SQL already

    def replace_files(self, jvm: Jvm, table: str, rewritten: Sequence[str],
                      rewrite: Callable[[DataFrame], DataFrame],
                      properties: Callable[[list[str]], dict[str, str]] | None = None,
                      ) -> str:
        # Iceberg's own rewrite path: the rows of exactly those files (a scan task set),
        # written into the table's location uncommitted, then one rewrite commit that
        # validates against the snapshot read.
        spark = jvm.spark
        name = table if table.startswith("spark_catalog.") else f"spark_catalog.{table}"
        jvm.set_active()  # the catalog is read outside a query
        loaded = jvm.call_static(f"{SPARK_PACKAGE}.Spark3Util", "loadIcebergTable",
                                 jvm.session, name)
        snapshot = loaded.currentSnapshot().snapshotId()
        live = {str(task.file().location()): task for task in jvm.iterable(
            loaded.newScan().useSnapshot(snapshot).planFiles(), closeable=True)}
        require_live(table, rewritten, live)
        tasks = [live[path] for path in dict.fromkeys(rewritten)]
        # As Iceberg's own rewrite runners (1.12): the table cached under an id, the
        # tasks staged under it, read and written by that id, the written files fetched.
        group = str(uuid.uuid4())
        cache = jvm.call_static(f"{SPARK_PACKAGE}.SparkTableCache", "get")
        staged = jvm.call_static(f"{SPARK_PACKAGE}.ScanTaskSetManager", "get")
        coordinator = jvm.call_static(f"{SPARK_PACKAGE}.FileRewriteCoordinator", "get")
        cache.add(group, loaded)
        staged.stageTasks(loaded, group, jvm.java_list(tasks))
        try:
            # Exactly those files' rows (a filter on `_file` prunes no file: every one is
            # opened), split as any read of the table, for the tasks of every core.
            rows = spark.read.format("iceberg").load(group)
            (rewrite(rows).write.format("iceberg").option("distribution-mode", "none")
             .option("output-spec-id", str(tasks[0].spec().specId()))
             .mode("append").save(group))
            stop_point("format:rewritten")  # written, not committed
            # One transaction: the rewrite and the properties are one snapshot's change.
            transaction = loaded.newTransaction()
            commit = transaction.newRewrite().validateFromSnapshot(snapshot)
            for task in tasks:
                commit = commit.deleteFile(task.file())
            new_files = jvm.iterable(coordinator.fetchNewFiles(loaded, group))
            for written in new_files:
                commit = commit.addFile(written)
            commit.commit()
            changed = properties([str(f.location()) for f in new_files]) if properties else {}
            if changed:
                update = transaction.updateProperties()
                for key, value in changed.items():
                    update = update.set(key, value)
                update.commit()
            transaction.commitTransaction()
        finally:
            cache.remove(group)
            staged.removeTasks(loaded, group)
            coordinator.clearRewrite(loaded, group)
        loaded.refresh()
        return str(loaded.currentSnapshot().snapshotId())

    def replace_by_sql(self, fetch: Callable[[str], list[tuple[Any, ...]]],
                       execute: Callable[[str], Any], table: str,
                       overwrite: Callable[[str, str, bool], None],
                       properties: Callable[[list[str]], dict[str, str]] | None = None,
                       partitions_of: Sequence[str] | None = None,
                       partition_by: Sequence[str] = (), *,
                       location: Callable[[], str]) -> str:
        # The new rows are written on a branch of the snapshot read, and main is
        # fast-forwarded to it: Iceberg refuses that unless main is still the branch's
        # ancestor, so a writer committing meanwhile is kept and this changes nothing.
        # Branches a killed run left behind pin old files: dropped first (one run per
        # table holds the model's lock). Whole partitions are replaced by a dynamic
        # overwrite of the rows of their files.
        name = table if table.startswith("spark_catalog.") else f"spark_catalog.{table}"
        left = f"select name from {name}.refs where name like {sql_string(BRANCH + '%')}"
        for (stale,) in fetch(left):
            execute(f"alter table {name} drop branch if exists {quote(str(stale))}")
        main = fetch(f"select snapshot_id from {name}.refs where name = 'main'")
        if not main:
            raise FileNotFoundError(f"{table}: no snapshot to re-cluster")
        snapshot = int(main[0][0])
        branch = f"{BRANCH}{uuid.uuid4().hex}"
        execute(f"alter table {name} create branch {branch} as of version {snapshot}")
        source = f"{name} version as of {snapshot}"
        if partitions_of is not None:
            # Exactly those files' rows (every file is opened: no file is pruned by `_file`).
            listed = ", ".join(map(sql_string, dict.fromkeys(partitions_of)))
            source = f"(select * from {source} where _file in ({listed})) zspark_replaced"
        try:
            overwrite(f"{name}.branch_{branch}", source, partitions_of is not None)
            stop_point("format:rewritten")  # written on the branch, main untouched
            (written,) = fetch(f"select snapshot_id from {name}.refs where name = '{branch}'")[0]
            read_files = {str(path) for (path,) in fetch(
                f"select file_path from {name}.files version as of {snapshot}")}
            new_files = [str(path) for (path,) in fetch(
                f"select file_path from {name}.files version as of {int(written)}")
                if str(path) not in read_files]
            # The rows counted on both sides (from the manifests): a rewrite that lost or
            # doubled rows never reaches main.
            read, wrote = (fetch(f"select count(*) from {name} version as of {version}")[0][0]
                           for version in (snapshot, int(written)))
            if read != wrote:
                raise RuntimeError(f"{table}: the re-clustering wrote {wrote} rows of the "
                                   f"{read} it read; nothing of it was committed")
            fetch(f"call spark_catalog.system.fast_forward('{table_path(name)}', 'main', "
                  f"'{branch}')")
        finally:
            execute(f"alter table {name} drop branch if exists {branch}")
        changed = properties(new_files) if properties else {}
        if changed:
            stop_point("format:fast_forwarded")
            execute(f"alter table {name} set tblproperties {property_list(changed)}")
        return str(written)


#: The prefix of the branches a re-clustering by SQL writes on.
BRANCH = "zspark_recluster_"


def table_path(name: str) -> str:
    """A table's name as Iceberg's procedures take it (no catalog).

    >>> table_path("spark_catalog.db.t")
    'db.t'
    """
    return name.removeprefix("spark_catalog.")


def active_files_sql(table: str, columns: Sequence[TypedColumn]) -> str:
    """The ``__zindex``-shaped rows of an Iceberg table's data files.

    >>> print(active_files_sql("db.t", [("x", "double")]))  # doctest: +NORMALIZE_WHITESPACE
    select file_path, file_size_in_bytes as file_size, cast(0 as bigint) as file_mtime,
    cast(null as int) as row_group, record_count as row_count,
    readable_metrics.`x`.lower_bound as `x__min`, readable_metrics.`x`.upper_bound as `x__max`,
    readable_metrics.`x`.null_value_count as `x__nulls`,
    readable_metrics.`x`.nan_value_count as `x__nans` from db.t.data_files
    """
    picked = []
    for name, spark_type in columns:
        metrics = f"readable_metrics.{quote(name)}"
        picked += [f"{metrics}.lower_bound as {quote(stat_column(name, 'min'))}",
                   f"{metrics}.upper_bound as {quote(stat_column(name, 'max'))}",
                   f"{metrics}.null_value_count as {quote(stat_column(name, 'nulls'))}"]
        if spark_type in _FLOATS:
            picked.append(f"{metrics}.nan_value_count as {quote(stat_column(name, 'nans'))}")
    return ("select file_path, file_size_in_bytes as file_size, "
            "cast(0 as bigint) as file_mtime, cast(null as int) as row_group, "
            "record_count as row_count, " + ", ".join(picked) + f" from {table}.data_files")
