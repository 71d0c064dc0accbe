"""A profile's ``table_format``: the session settings it adds, and its refusals."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from dbt_common.exceptions import DbtRuntimeError

from dbt.adapters.zspark.connections import ZSparkCredentials
from dbt.adapters.zspark.formats.settings import (
    DELTA,
    ICEBERG,
    TableFormatError,
    enabled_formats,
    unwritable_format_error,
    with_table_format,
)


def test_fetched_jars_are_used_else_spark_fetches_the_packages(tmp_path: Path) -> None:
    assert DELTA.session_settings(tmp_path)["spark.jars.packages"] == \
        "io.delta:delta-spark_4.1_2.13:4.4.0,io.delta:delta-storage:4.4.0"
    for name in ("delta-spark_4.1_2.13-4.4.0.jar", "delta-storage-4.4.0.jar"):
        (tmp_path / name).write_bytes(b"")
    settings = DELTA.session_settings(tmp_path)
    assert "spark.jars.packages" not in settings
    assert settings["spark.jars"].split(",") == [
        str(tmp_path / "delta-spark_4.1_2.13-4.4.0.jar"), str(tmp_path / "delta-storage-4.4.0.jar")]
    assert settings["spark.sql.extensions"] == "io.delta.sql.DeltaSparkSessionExtension"


def test_the_profiles_own_settings_win_and_its_jars_are_kept() -> None:
    mine = {"spark.sql.catalog.spark_catalog.type": "hadoop", "spark.jars": "/opt/mine.jar",
            "spark.jars.packages": "org.example:mine:1"}
    merged = with_table_format(mine, "ICEBERG")
    assert merged["spark.sql.catalog.spark_catalog.type"] == "hadoop"
    assert merged["spark.sql.catalog.spark_catalog"] == ICEBERG.settings[
        "spark.sql.catalog.spark_catalog"]
    where = ICEBERG.session_settings()
    key = "spark.jars" if "spark.jars" in where else "spark.jars.packages"
    assert merged[key] == f"{mine[key]},{where[key]}"
    assert with_table_format(mine, None) == mine


def test_an_unknown_format_names_the_profile_line_and_what_is_allowed() -> None:
    with pytest.raises(TableFormatError, match=r"'table_format' is 'hudi'\. Allowed: "
                                               r"'delta' or 'iceberg'"):
        with_table_format({}, "hudi")
    with pytest.raises(DbtRuntimeError, match="'table_format' is 'orc'"):
        ZSparkCredentials(method="session", host="localhost", schema="s", table_format="orc")


def test_a_profile_line_for_a_session_is_refused_on_a_server() -> None:
    with pytest.raises(DbtRuntimeError, match="this target uses method: thrift"):
        ZSparkCredentials(method="thrift", host="localhost", port=10000, schema="s",
                          table_format="delta")


def test_a_session_profile_gets_the_formats_settings(tmp_path: Path) -> None:
    credentials = ZSparkCredentials(method="session", host="localhost", schema="s",
                                    session_dir=str(tmp_path), table_format="delta")
    settings = credentials.server_side_parameters
    assert settings["spark.sql.catalog.spark_catalog"] == DELTA.settings[
        "spark.sql.catalog.spark_catalog"]
    assert settings["spark.sql.warehouse.dir"] == str(tmp_path.resolve() / "warehouse")


def test_a_session_writes_a_format_only_when_its_extension_is_set() -> None:
    both = f"{DELTA.extension}, {ICEBERG.extension}"
    assert enabled_formats(both) == ["delta", "iceberg"]
    assert enabled_formats(None) == []
    assert unwritable_format_error("m", "parquet", None) is None
    assert unwritable_format_error("m", "delta", DELTA.extension) is None
    problem = unwritable_format_error("m", "iceberg", DELTA.extension)
    assert problem is not None
    assert problem.startswith("Model 'm': config 'file_format' is 'iceberg', which this "
                              "session cannot write")
    assert "`table_format: iceberg`" in problem


def test_the_format_modules_examples_hold() -> None:
    import doctest

    from dbt.adapters.zspark import connections, formats
    from dbt.adapters.zspark.formats import delta, delta_log, iceberg
    from dbt.adapters.zspark.layouts import layout_state
    from dbt.adapters.zspark.reach import base as reach
    from dbt.adapters.zspark.reach.session import hadoop_files, object_stores

    # layout_state: which write made a file, by the names Spark, Delta and Iceberg give;
    # reach: a server's DESCRIBE rows; connections: a cluster writing Iceberg;
    # object_stores: the s3a settings and what a session lacking a connector is told.
    for module in (formats, delta, delta_log, iceberg, layout_state, reach, connections,
                   object_stores, hadoop_files):
        assert doctest.testmod(module).failed == 0, module.__name__


@pytest.mark.spark
def test_delta_bounds_are_dropped_or_widened_where_delta_cut_them(spark: Any) -> None:
    """A snapshot's statistics as Spark parses them: a string maximum as long as the cut
    may be a cut prefix (not a bound); timestamps are kept to the millisecond, rounded
    down (the maximum is widened by one); a partition value bounds its column; a column
    without statistics proves nothing."""
    import datetime as dt
    import json

    from dbt.adapters.zspark.formats.delta import live_file_columns

    def stats(low: str, high: str, nulls: int, t: str | None) -> str:
        return json.dumps({"numRecords": 10, "minValues": {"s": low, "t": t},
                           "maxValues": {"s": high, "t": t}, "nullCount": {"s": nulls, "t": 0}})

    added = spark.createDataFrame(
        [("p=7/f0.parquet", 100, 5, stats("abc", "abd", 0, "2026-01-02T03:04:05.006Z"), {"p": "7"}),
         ("p=__HIVE_DEFAULT_PARTITION__/f1.parquet", 200, 6, stats("a" * 40, "b" * 40, 1, None),
          {"p": None})],
        "path string, size bigint, modificationTime bigint, stats string, "
        "partitionValues map<string, string>")
    columns = [("s", "string"), ("t", "timestamp"), ("p", "int"), ("gone", "int")]

    def rows(cut: int) -> list[tuple[Any, ...]]:
        found = added.selectExpr(*live_file_columns("s3a://b/t", columns, {"p": "p"}, cut))
        return [tuple(r) for r in found.orderBy("file_path").collect()]

    stamp = dt.datetime(2026, 1, 2, 3, 4, 5, 6000, tzinfo=dt.timezone.utc) \
        .astimezone().replace(tzinfo=None)  # Spark's timestamps in the session's zone
    first, second = rows(40)
    assert first == ("s3a://b/t/p=7/f0.parquet", 100, 5, None, 10, "abc", "abd", 0,
                     stamp, stamp + dt.timedelta(milliseconds=1), 0, 7, 7, 0,
                     None, None, None)
    assert second[5:8] == ("a" * 40, None, 1)
    assert second[11:14] == (None, None, 10)
    assert rows(64)[1][5:8] == ("a" * 40, "b" * 40, 1)


def test_stats_cover_the_clustering_columns_first_then_as_configured() -> None:
    from dbt.adapters.zspark.formats import stats_columns, string_stats_length
    from dbt.adapters.zspark.formats.delta import DeltaTable
    from dbt.adapters.zspark.formats.iceberg import IcebergTable

    schema = {f"c{i}": "int" for i in range(40)} | {"late": "string", "tags": "array<string>"}
    columns = stats_columns(schema, ["late"], None)
    assert columns[0] == ("late", "string")
    assert len(columns) == 33
    assert stats_columns(schema, ["late"], ["c39", "tags"]) == [("late", "string"),
                                                               ("c39", "int")]
    length = string_stats_length(45)
    assert DeltaTable().stats_properties([("late", "string"), ("c39", "int")], length) == {
        "delta.dataSkippingStatsColumns": "`late`,`c39`", "zspark.string_stats_length": "46"}
    assert DeltaTable().write_settings(length) == {
        "spark.databricks.io.skipping.stringPrefixLength": "46"}
    assert IcebergTable().stats_properties([("late", "string")], length) == {
        "write.distribution-mode": "none", "write.metadata.metrics.column.late": "full"}


def test_icebergs_own_settings_get_what_the_embedded_metastore_needs() -> None:
    """Iceberg's documented session catalog over Hive, in a session whose metastore is
    Spark's embedded Derby one: without a connection pool Hive can load, its first table
    fails (ClassNotFoundException: com.jolbox.bonecp.BoneCPConfig)."""
    from dbt.adapters.zspark.connections import with_session_defaults
    from dbt.adapters.zspark.formats.settings import ICEBERG_ON_EMBEDDED_METASTORE

    documented = {"spark.sql.extensions":
                  "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions",
                  "spark.sql.catalog.spark_catalog": "org.apache.iceberg.spark.SparkSessionCatalog",
                  "spark.sql.catalog.spark_catalog.type": "hive"}
    settings = with_session_defaults(documented, "s")
    assert ICEBERG_ON_EMBEDDED_METASTORE.items() <= settings.items()
    # A metastore server, another database or the profile's own pool: left as they are.
    served = with_session_defaults({**documented,
                                    "spark.hadoop.hive.metastore.uris": "thrift://m:9083"}, "s")
    assert "spark.hadoop.datanucleus.connectionPoolingType" not in served
    mysql = with_session_defaults({**documented, "spark.hadoop.javax.jdo.option.ConnectionURL":
                                   "jdbc:mysql://db/metastore"}, "s")
    assert "spark.hadoop.datanucleus.schema.autoCreateAll" not in mysql
    own = with_session_defaults({**documented,
                                 "spark.hadoop.datanucleus.connectionPoolingType": "dbcp"}, "s")
    assert own["spark.hadoop.datanucleus.connectionPoolingType"] == "dbcp"
    # Delta's catalog, or Iceberg's over a REST service: nothing of Hive's.
    delta = with_session_defaults(
        {"spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog"},
        "s")
    assert "spark.hadoop.datanucleus.connectionPoolingType" not in delta
    rest = with_session_defaults({"spark.sql.catalog.lake": "org.apache.iceberg.spark.SparkCatalog",
                                  "spark.sql.catalog.lake.type": "rest"}, "s")
    assert "spark.hadoop.datanucleus.connectionPoolingType" not in rest


def test_jars_spark_fetches_go_to_zsparks_cache_folder_unless_the_profile_says(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A pip-only install's format jars come from Maven by ``spark.jars.packages``: into
    zspark's cache folder (``$XDG_CACHE_HOME/zspark/ivy``), not Spark's ``~/.ivy2``."""
    from dbt.adapters.zspark.connections import IVY_DIR, with_session_defaults

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    fetched = with_session_defaults({"spark.jars.packages": "org.example:mine:1"}, "s")
    assert fetched[IVY_DIR] == str(tmp_path / "cache" / "zspark" / "ivy")
    own = with_session_defaults({"spark.jars.packages": "org.example:mine:1",
                                 IVY_DIR: "/opt/ivy"}, "s")
    assert own[IVY_DIR] == "/opt/ivy"
    assert IVY_DIR not in with_session_defaults({"spark.jars": "/opt/mine.jar"}, "s")


def test_an_iceberg_rewrite_by_sql_that_lost_rows_never_reaches_main() -> None:
    """The whole-table re-clustering by SQL (``replace_by_sql``), its statements
    answered as a server would: a left-behind branch is dropped first; when the branch
    counts fewer rows than the snapshot read, main is not fast-forwarded, the branch is
    dropped, the error says so and no property is set."""
    from dbt.adapters.zspark.formats.iceberg import BRANCH, IcebergTable

    counts = {"version as of 7": 100, "version as of 8": 99}
    statements: list[str] = []

    def fetch(sql: str) -> list[tuple[Any, ...]]:
        statements.append(sql)
        if "where name like" in sql:
            return [(f"{BRANCH}old",)]
        if "where name = 'main'" in sql:
            return [(7,)]
        if ".refs where name =" in sql:
            return [(8,)]
        if ".files version as of" in sql:
            return [("file:/w/t/data/new.parquet",)]
        if sql.startswith("select count(*)"):
            return [(next(n for key, n in counts.items() if sql.endswith(key)),)]
        return []

    def overwrite(target: str, source: str, dynamic: bool) -> None:
        assert not dynamic  # the whole table
        statements.append(f"insert overwrite {target} <keyed rows of {source}>")

    with pytest.raises(RuntimeError, match="wrote 99 rows of the 100 it read; nothing of it"):
        IcebergTable().replace_by_sql(fetch, statements.append, "db.t", overwrite,
                                          lambda paths: {"layout": ",".join(paths)},
                                          location=lambda: "file:/unread")
    assert statements[1] == f"alter table spark_catalog.db.t drop branch if exists `{BRANCH}old`"
    created = next(s for s in statements if "create branch" in s)
    branch = created.split("create branch ")[1].split()[0]
    assert created.endswith("as of version 7")
    assert f"insert overwrite spark_catalog.db.t.branch_{branch} <keyed rows of " \
           f"spark_catalog.db.t version as of 7>" in statements
    assert not any("fast_forward" in s or "set tblproperties" in s for s in statements)
    assert statements[-1] == f"alter table spark_catalog.db.t drop branch if exists {branch}"
