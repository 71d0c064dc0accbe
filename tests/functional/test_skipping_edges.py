"""Skipping never drops a row: one test per class of data that once made `zspark_scan` lose
rows or the index job crash, run as a user hits it (dbt run, dbt compile of `zspark_scan`),
asserting the plain query's rows and that the class still prunes where it safely can."""

from __future__ import annotations

import shutil
import urllib.parse
from pathlib import Path
from typing import Any

import pytest

from dbt.adapters.zspark.reach.session import index_tables as index_module
from dbt.adapters.zspark.reach.session import reach as reach_module
from tests.functional.dbt_project import SCHEMA, DbtProject, files_read
from tests.functional.test_scan import compile_scan


def check_scan(project: DbtProject, table: str, predicate: str,
               source: bool = False) -> tuple[int, int]:
    """Scan rows equal the plain filter's; returns (files opened by the scan, files of the
    plain query). ``source``: a table written outside dbt (see :func:`index_source`)."""
    relation = f"{SCHEMA}.{table}"
    project.spark.catalog.refreshTable(relation)
    node = f"source('{table}', '{table}')" if source else f"ref('{table}')"
    sql = compile_scan(project, node, predicate)
    plain = f"select * from {relation} where {predicate}"
    assert project.rows(sql) == project.rows(plain), predicate
    _, opened = files_read(project.spark, sql)
    _, total = files_read(project.spark, plain)
    return opened, total


def index_source(project: DbtProject, table: str) -> None:
    """Declare a table written outside dbt as the source ``table.table`` and index it."""
    project.write(f"models/edges/{table}_src.yml", f"""
        version: 2
        sources:
          - name: {table}
            schema: {SCHEMA}
            tables: [{{name: {table}}}]
    """)
    project.dbt("run-operation", "zspark_build_index", "--args", f"{{relation: {SCHEMA}.{table}}}")


def index_rows(project: DbtProject, table: str, columns: str) -> list[Any]:
    return project.spark.sql(f"select {columns} from {SCHEMA}.{table}__zindex "
                             f"where row_group is null order by file_path").collect()


@pytest.fixture(scope="module")
def nested(project: DbtProject) -> DbtProject:
    # payload.user_id and the top-level user_id differ by 1000: pruning one with the other's
    # statistics loses every row. `st.i` (one column) and st.i (a struct field) differ too.
    project.write("models/edges/nested.sql", """
        {{ config(materialized='table', hilbert_by=['user_id'], file_count=4) }}
        select cast(id as int) as user_id,
               named_struct('user_id', cast(id + 1000 as int),
                            'city', concat('c', lpad(cast(id as string), 3, '0'))) as payload,
               cast(id * 10 as int) as `st.i`,
               named_struct('i', cast(id * 100 as int)) as st,
               array(cast(id as int)) as tags
        from range(400)
    """)
    project.dbt("run", "--select", "nested")
    return project


@pytest.mark.parametrize("predicate", [
    "payload.user_id = 1005",
    "payload.user_id between 1390 and 1399",
    "payload.city = 'c007'",
    "payload.user_id = 1005 and user_id = 5",
    "nested.user_id = 5",  # the table's own name qualifies a column
    "zspark_test.nested.user_id < 20",
    "nested.payload.user_id >= 1390",
    "`st.i` = 50",
    "st.i = 500",
    "`st`.`i` = 500",
])
def test_nested_and_dotted_columns_prune_on_their_own_statistics(nested: DbtProject,
                                                                 predicate: str) -> None:
    opened, total = check_scan(nested, "nested", predicate)
    assert total == 4
    assert opened < total, f"{predicate}: nothing pruned"


@pytest.mark.parametrize("predicate", [
    "payload.user_id = 5",  # the top-level user_id's value: no row has it nested
    "st.i = 50",            # the dotted top-level column's value
    "`st.i` = 500",         # the struct field's value
    "tags[0] = 5",
    "payload['user_id'] = 1005",
])
def test_a_value_of_the_wrong_column_is_never_found_in_its_statistics(
        nested: DbtProject, predicate: str) -> None:
    check_scan(nested, "nested", predicate)


def test_index_keys_struct_leaves_by_their_parts(nested: DbtProject) -> None:
    columns = nested.spark.table(f"{SCHEMA}.nested__zindex").columns
    assert "`payload`.`user_id`__min" in columns
    assert "`st`.`i`__max" in columns
    assert "st.i__max" in columns
    assert not any(c.startswith("tags") for c in columns)  # array elements: no row stats
    rows = index_rows(nested, "nested", "`st.i__max`, ```st``.``i``__max`")
    assert all(deep == flat * 10 for flat, deep in rows)


@pytest.fixture(scope="module")
def chars(project: DbtProject) -> DbtProject:
    # Hive-style DDL: Spark stores char(5) padded and pads literals compared with it.
    spark = project.spark
    spark.sql(f"create database if not exists {SCHEMA}")
    spark.sql(f"drop table if exists {SCHEMA}.chars")
    spark.sql(f"create table {SCHEMA}.chars (c char(5), v varchar(5), n int) using parquet")
    for values in (["a", "ab"], ["b", "bb"], ["c", "c c"], ["dddd", "ddddd"]):
        rows = ", ".join(f"('{v}', '{v}', {k})" for k, v in enumerate(values))
        spark.sql(f"insert into {SCHEMA}.chars values {rows}")
    index_source(project, "chars")
    return project


@pytest.mark.parametrize(("predicate", "prunes"), [
    ("c = 'a'", True),
    ("c = 'a    '", True),
    ("'b' = c", True),
    ("c in ('a', 'c c')", True),
    ("c like 'dd%'", True),
    ("c > 'c'", True),
    ("c <= 'a'", True),
    ("c = 'a     '", False),  # longer than 5: Spark pads the column instead
    ("c = 'dddd'", True),
    ("c between 'a' and 'a'", False),  # BETWEEN compares the literals unpadded: no row
    ("not (c between '' and '')", False),  # every non-null row
    ("c between 'a' and 'b'", True),
    ("c in ('a', null)", True),  # a NULL in the list: Spark pads nothing
    ("v = 'a'", True),
    ("v = 'a    '", True),  # varchar is not padded: no row matches
    ("v like 'b%'", True),
    ("v >= 'ddddd'", True),
])
def test_char_and_varchar_columns_compare_as_spark_pads_them(chars: DbtProject, predicate: str,
                                                             prunes: bool) -> None:
    opened, total = check_scan(chars, "chars", predicate, source=True)
    assert total >= 4
    if prunes:
        assert opened < total, f"{predicate}: nothing pruned"


@pytest.fixture(scope="module")
def legacy(project: DbtProject) -> DbtProject:
    """Files written with the Julian-hybrid calendar, as Spark 2.x and Hive writers do."""
    spark = project.spark
    spark.sql(f"drop table if exists {SCHEMA}.legacy_dates")
    key = "spark.sql.parquet.datetimeRebaseModeInWrite"
    spark.conf.set(key, "LEGACY")
    try:
        for first in ("1000-01-01", "1582-10-01", "1899-12-25", "2001-01-01"):
            spark.sql(f"""
                select cast(id as int) as id, date_add(date '{first}', cast(id as int)) as d,
                       timestamp_micros(unix_micros(timestamp '{first} 00:00:00')
                                        + id * 3600000000) as ts
                from range(20)
            """).coalesce(1).write.mode("append").format("parquet").saveAsTable(
                f"{SCHEMA}.legacy_dates")
    finally:
        spark.conf.unset(key)
    index_source(project, "legacy_dates")
    return project


@pytest.mark.parametrize(("predicate", "prunes"), [
    ("d = date '1000-01-01'", True),  # the modern file is ruled out, ancient ones are read
    ("d = date '1000-01-10'", True),
    ("d between date '1582-10-01' and date '1582-10-20'", True),
    ("ts < timestamp '1000-01-01 05:00:00'", True),
    ("ts = timestamp '1899-12-25 03:00:00'", True),
    ("d >= date '2001-01-05'", False),  # only the modern file matches; old ones stay unknown
    ("d < date '1900-01-01'", True),
])
def test_legacy_calendar_files_keep_every_row(legacy: DbtProject, predicate: str,
                                              prunes: bool) -> None:
    opened, _ = check_scan(legacy, "legacy_dates", predicate, source=True)
    plain = f"select * from {SCHEMA}.legacy_dates where {predicate}"
    assert legacy.rows(plain), f"{predicate}: the case needs matching rows"
    if prunes:
        assert opened < 4, predicate


def test_modern_files_keep_their_date_statistics(legacy: DbtProject) -> None:
    known = [r[0] for r in index_rows(legacy, "legacy_dates", "d__min")]
    assert sum(v is not None for v in known) == 1  # only the file from 2001 is exact


@pytest.fixture(scope="module")
def same_size(project: DbtProject) -> tuple[DbtProject, Path, Path]:
    """Four uncompressed files of equal size with disjoint id ranges, indexed."""
    spark = project.spark
    spark.sql(f"drop table if exists {SCHEMA}.rewritten")
    (spark.range(400).selectExpr("cast(id as int) as id").repartitionByRange(4, "id")
     .write.option("compression", "none").option("parquet.enable.dictionary", "false")
     .format("parquet").saveAsTable(f"{SCHEMA}.rewritten"))
    index_source(project, "rewritten")
    rows = index_rows(project, "rewritten", "file_path, id__min")
    paths = [Path(urllib.parse.unquote(urllib.parse.urlsplit(r[0]).path)) for r in rows]
    return project, paths[0], paths[-1]


def test_a_file_rewritten_in_place_to_the_same_size_is_read(
        same_size: tuple[DbtProject, Path, Path]) -> None:
    project, low_file, high_file = same_size
    assert low_file.stat().st_size == high_file.stat().st_size
    opened, total = check_scan(project, "rewritten", "id >= 390", source=True)
    assert (opened, total) == (1, 4)
    # The low file now holds the high file's rows: same path, same size, new content.
    shutil.copyfile(high_file, low_file)
    # A checksummed Hadoop file system keeps a side file of checksums: it follows the content.
    # Embedded sessions write through the raw local file system, which keeps none.
    high_crc = high_file.with_name(f".{high_file.name}.crc")
    if high_crc.exists():
        shutil.copyfile(high_crc, low_file.with_name(f".{low_file.name}.crc"))
    opened, _ = check_scan(project, "rewritten", "id >= 390", source=True)
    assert opened == 2
    plain = project.rows(f"select * from {SCHEMA}.rewritten where id >= 390")
    assert len(plain) == 2 * 10


@pytest.mark.parametrize("predicate", [
    "id >= 390 -- only the last rows",
    "id >= 390 /* only the last rows */",
    "id >= 390\n-- a comment on a line of its own",
    "-- leading\nid >= 390",
])
def test_comments_in_the_predicate_leave_the_scan_whole(
        same_size: tuple[DbtProject, Path, Path], predicate: str) -> None:
    project = same_size[0]
    relation = f"{SCHEMA}.rewritten"
    sql = compile_scan(project, "source('rewritten', 'rewritten')", predicate)
    assert project.rows(sql) == project.rows(f"select * from {relation} where {predicate}\n")


def test_invalid_utf8_strings_index_and_never_prune(project: DbtProject) -> None:
    project.write("models/edges/bad_utf8.sql", """
        {{ config(materialized='table', hilbert_by=['id'], file_count=4) }}
        select id, case when id >= 300 and id % 2 = 0 then cast(x'ff41' as string)
                        else concat('s', lpad(cast(id as string), 3, '0')) end as s
        from range(400)
    """)
    project.dbt("run", "--select", "bad_utf8")
    stats = [(r[0], r[1]) for r in index_rows(project, "bad_utf8", "s__min, s__max")]
    assert sum(1 for low, _ in stats if low is None) == 1  # the file holding the bad bytes
    for predicate in ("s = 's005'", "s >= 's390'", "s = cast(x'ff41' as string)",
                      "s > 's2'"):
        check_scan(project, "bad_utf8", predicate)
    assert check_scan(project, "bad_utf8", "s = 's005'")[0] < 4


def test_non_ascii_partition_values_index_and_prune(project: DbtProject) -> None:
    project.write("models/edges/odd_partitions.sql", """
        {{ config(materialized='table', hilbert_by=['id'], partition_by=['p'], file_count=2) }}
        select id, element_at(array('ü', 'a b', 'a%b', '日本', 'q=1', '#x'),
                              cast(id div 100 + 1 as int)) as p
        from range(600)
    """)
    project.dbt("run", "--select", "odd_partitions")
    relation = f"{SCHEMA}.odd_partitions"
    listed = {r[0] for r in project.spark.sql(
        f"select distinct _metadata.file_path from {relation}").collect()}
    assert {r[0] for r in index_rows(project, "odd_partitions", "file_path")} == listed
    for predicate in ("id = 5", "p = 'ü' and id < 100", "id > 590", "p = 'a%b'"):
        check_scan(project, "odd_partitions", predicate)
    opened, total = check_scan(project, "odd_partitions", "id = 5")
    assert opened < total


@pytest.mark.parametrize("key", ["hilbert_by", "zorder_by"])
@pytest.mark.parametrize("method", ["boundary", "direct"])
def test_timestamps_of_every_year_cluster_and_prune(project: DbtProject, key: str,
                                                    method: str) -> None:
    name = f"far_times_{key.removesuffix('_by')}_{method}"
    project.write(f"models/edges/{name}.sql", f"""
        {{{{ config(materialized='table', {key}=['ts', 'ntz'], curve_method='{method}',
                    file_count=4, boundary_count=8) }}}}
        select id,
               case when id % 13 = 0 then null
                    else timestamp_micros(unix_micros(timestamp '0001-01-01 00:00:00')
                                          + id * 790000000000000) end as ts,
               case when id % 17 = 0 then null
                    else timestamp_ntz '9999-12-31 23:59:59.999999'
                         - make_interval(0, 0, 0, cast(id * 9 as int)) end as ntz
        from range(400)
    """)
    project.dbt("run", "--select", name)
    assert "; ts depth " in project.log_text()
    for predicate in ("ts < timestamp '1000-01-01 00:00:00'",
                      "ts >= timestamp '9000-01-01 00:00:00'",
                      "ntz > timestamp_ntz '9999-01-01 00:00:00'",
                      "ts is null"):
        opened, total = check_scan(project, name, predicate)
        assert opened < total, predicate


def test_an_index_failure_keeps_the_previous_table_and_index(project: DbtProject) -> None:
    model = """
        {{{{ config(materialized='table', hilbert_by=['id'], file_count=3) }}}}
        select id, {version} as version from range(300)
    """
    project.write("models/edges/index_fails.sql", model.format(version=1))
    project.dbt("run", "--select", "index_fails")
    relation = f"{SCHEMA}.index_fails"
    before = index_rows(project, "index_fails", "*")

    project.write("models/edges/index_fails.sql", model.format(version=2))
    with pytest.MonkeyPatch.context() as patch:
        # Where the footers are read: a build stages its index through the reach.
        for module in (index_module, reach_module):
            patch.setattr(module, "read_index", _raise)
        project.dbt("run", "--select", "index_fails", expect_pass=False)
    assert "injected failure" in project.log_text()
    project.spark.catalog.refreshTable(relation)
    assert project.rows(f"select distinct version from {relation}") == [(1,)]
    assert index_rows(project, "index_fails", "*") == before
    listed = {r[0] for r in project.spark.sql(
        f"select distinct _metadata.file_path from {relation}").collect()}
    assert {r.file_path for r in before} == listed
    assert check_scan(project, "index_fails", "id = 5")[0] == 1

    project.dbt("run", "--select", "index_fails")
    assert project.rows(f"select distinct version from {relation}") == [(2,)]
    assert check_scan(project, "index_fails", "id = 5")[0] == 1
    assert not project.spark.catalog.tableExists(f"{SCHEMA}.index_fails__zspark_new__zindex")


def _raise(*args: Any, **kwargs: Any) -> Any:
    raise RuntimeError("injected failure while reading footers")
