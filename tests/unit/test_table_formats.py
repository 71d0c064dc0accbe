"""A profile's ``table_format``: the session settings it adds, and its refusals."""

from __future__ import annotations

from pathlib import Path

import pytest
from dbt_common.exceptions import DbtRuntimeError

from dbt.adapters.zspark.connections import ZSparkCredentials
from dbt.adapters.zspark.table_formats import (
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

    from dbt.adapters.zspark import connections, formats, layout_state, reach
    from dbt.adapters.zspark.formats import delta, iceberg

    # layout_state: which write made a file, by the names Spark, Delta and Iceberg give;
    # reach: a server's DESCRIBE rows; connections: a cluster writing Iceberg.
    for module in (formats, delta, iceberg, layout_state, reach, connections):
        assert doctest.testmod(module).failed == 0, module.__name__


def test_delta_bounds_are_dropped_or_widened_where_delta_cut_them() -> None:
    """A string maximum as long as the cut may be a cut prefix (not a bound); timestamps
    are kept to the millisecond, rounded down: the maximum is widened by one."""
    import datetime as dt

    from dbt.adapters.zspark.formats.delta import _bounds

    stamp = dt.datetime(2026, 1, 2, 3, 4, 5, 6000)
    listed = {"min.s": ["abc", "a" * 40], "max.s": ["abd", "b" * 40], "null_count.s": [0, 1],
              "min.t": [stamp, None], "max.t": [stamp, None], "null_count.t": [0, 2],
              "partition.p": [7, None]}
    assert _bounds(listed, 0, "s", "string", False, 10, cut=40) == ["abc", "abd", 0]
    assert _bounds(listed, 1, "s", "string", False, 10, cut=40) == ["a" * 40, None, 1]
    assert _bounds(listed, 1, "s", "string", False, 10, cut=64) == ["a" * 40, "b" * 40, 1]
    assert _bounds(listed, 0, "t", "timestamp", False, 10, cut=32) == \
        [stamp, stamp + dt.timedelta(milliseconds=1), 0]
    assert _bounds(listed, 0, "p", "int", True, 10, cut=32) == [7, 7, 0]
    assert _bounds(listed, 1, "p", "int", True, 10, cut=32) == [None, None, 10]
    assert _bounds(listed, 0, "gone", "int", False, 10, cut=32) == [None, None, None]


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
