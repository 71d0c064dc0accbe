"""zspark_scan opens only the files its predicate can touch and returns the plain filter's rows."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.functional.dbt_project import DbtProject, files_read

BASE = """
{{ config(materialized='table', hilbert_by=['city', 'brand'], file_count=20) }}
select id,
       concat('CITY', lpad(cast(pmod(hash(id, 1), 300) as string), 4, '0')) as city,
       concat('MFGR#', lpad(cast(pmod(hash(id, 2), 5000) as string), 5, '0')) as brand,
       cast(1992 + pmod(hash(id, 3), 7) as int) as year,
       date_add(date '1995-01-01', cast(pmod(hash(id, 4), 900) as int)) as day,
       cast(pmod(hash(id, 5), 100000) as decimal(10, 2)) / 100 as revenue
from range(8000)
"""

SELECTIVE = [
    "city = 'CITY0042'",
    "brand = 'MFGR#01234'",
    "city in ('CITY0001', 'CITY0299')",
    "city between 'CITY0100' and 'CITY0105'",
    "brand like 'MFGR#0012%'",
    "startswith(brand, 'MFGR#049')",
    "city = 'CITY0042' and year >= 1995",
    "city < 'CITY0003' or brand > 'MFGR#04990'",
    "not (city >= 'CITY0010')",
    "brand is null",  # no file has a null brand: nothing to open at all
]
UNPRUNABLE = [
    "upper(city) = 'CITY0042'",
    "year <> 1993",
    "city is not null",
    "revenue > 500.5 or day = date '1996-03-01'",
]


def compile_scan(project: DbtProject, relation: str, predicate: str) -> str:
    escaped = predicate.replace('"', '\\"')
    result = project.dbt("compile", "--inline",
                         f'select * from {{{{ zspark_scan({relation}, "{escaped}") }}}} t')
    return str(result.results[0].node.compiled_code)


@pytest.fixture(scope="module")
def scanned(project: DbtProject) -> DbtProject:
    project.write("models/scan/scan_base.sql", BASE)
    project.write("models/scan/sources.yml", """
        version: 2
        sources:
          - name: warehouse
            schema: zspark_test
            tables:
              - name: scan_base
    """)
    project.dbt("run", "--select", "scan_base")
    return project


@pytest.mark.parametrize("predicate", SELECTIVE + UNPRUNABLE)
def test_scan_rows_equal_plain_filter_and_skips_files(scanned: DbtProject,
                                                      predicate: str) -> None:
    table = scanned.table("scan_base")
    sql = compile_scan(scanned, "ref('scan_base')", predicate)
    plain_rows, plain_files = files_read(scanned.spark, f"select * from {table} where {predicate}")
    rows, opened = files_read(scanned.spark, sql)
    assert scanned.rows(sql) == scanned.rows(f"select * from {table} where {predicate}")
    assert rows == plain_rows
    assert plain_files == 20
    if predicate in SELECTIVE:
        assert opened < plain_files, f"{predicate}: opened {opened} of {plain_files}"
    else:
        assert opened == plain_files


@pytest.mark.parametrize(("predicate", "files"), [
    ("true", 20), ("1 = 1", 20), ("false", 0), ("null", 0), ("not true", 0),
    ("year = 1995 or true", 20)])
def test_constant_predicates_behave_as_the_plain_filter(scanned: DbtProject, predicate: str,
                                                        files: int) -> None:
    """Through the index, and through the scan without one (Spark reads `t where (true)`
    as the alias `where` of `t`, with a column alias `true`). A bare `where null` Spark
    refuses (its type is void); the scan reads it as the boolean null it stands for."""
    from dbt.adapters.zspark.skipping.scan import scan_sql

    table = scanned.table("scan_base")
    plain = scanned.rows(f"select * from {table} where "
                         f"{'cast(null as boolean)' if predicate == 'null' else predicate}")
    sql = compile_scan(scanned, "ref('scan_base')", predicate)
    assert scanned.rows(sql) == plain
    assert scanned.rows(f"select * from {scan_sql(table, predicate, [])} t") == plain
    assert files_read(scanned.spark, sql)[1] == files


def test_point_query_opens_a_small_share_of_files(scanned: DbtProject) -> None:
    sql = compile_scan(scanned, "ref('scan_base')", "city = 'CITY0042'")
    _, opened = files_read(scanned.spark, sql)
    assert opened <= 8


def test_scan_works_on_a_source(scanned: DbtProject) -> None:
    sql = compile_scan(scanned, "source('warehouse', 'scan_base')", "city = 'CITY0042'")
    _, opened = files_read(scanned.spark, sql)
    assert 0 < opened < 20


def test_refused_predicates_say_why(scanned: DbtProject) -> None:
    from dbt_common.exceptions import DbtRuntimeError

    for predicate in ["city = 'a'; drop table x", "id in (select 1)", "drop table x"]:
        with pytest.raises(DbtRuntimeError, match="zspark_scan: predicate"):
            compile_scan(scanned, "ref('scan_base')", predicate)


def test_a_broken_predicate_fails_its_model_by_name_and_the_others_build(
        scanned: DbtProject) -> None:
    """dbt's own compilation error of that model, naming its file and what is wrong in
    plain words; the invocation goes on (no parse failure) and the next model builds."""
    bad = scanned.root / "models/scan/bad_scan.sql"
    scanned.write("models/scan/bad_scan.sql",
                  "select * from {{ zspark_scan(ref('scan_base'), \"city =\") }} t")
    scanned.write("models/scan/good_scan.sql",
                  "select count(*) as n from {{ ref('scan_base') }}")
    try:
        results = scanned.dbt("run", "--select", "bad_scan", "good_scan", expect_pass=False)
    finally:
        bad.unlink()  # the shared project's other runs never meet it
    text = " ".join(scanned.log_text().split())
    assert "Compilation Error in model bad_scan (models/scan/bad_scan.sql)" in text, text[-3000:]
    assert "zspark_scan: predicate 'city =' does not parse (an operand of = is missing" in text
    assert "sqlglot" not in text
    assert {r.node.name: str(r.status) for r in results.results} == \
        {"bad_scan": "error", "good_scan": "success"}


def test_appended_and_unindexed_files_are_always_read(project: DbtProject) -> None:
    project.write("models/scan/appended.sql", """
        {{ config(materialized='table', zorder_by=['k'], file_count=4) }}
        select id, cast(id % 40 as int) as k from range(400)
    """)
    project.dbt("run", "--select", "appended")
    table = project.table("appended")
    project.spark.sql(f"insert into {table} values (100000, 7), (100001, 7)")
    sql = compile_scan(project, "ref('appended')", "k = 7")
    assert project.rows(sql) == project.rows(f"select * from {table} where k = 7")
    assert len(project.rows(sql)) == 12


def test_missing_index_means_full_scan_with_warning(project: DbtProject) -> None:
    project.write("models/scan/no_index.sql", """
        {{ config(materialized='table', zorder_by=['k'], file_count=4, zspark_index=false) }}
        select id, cast(id % 40 as int) as k from range(400)
    """)
    project.dbt("run", "--select", "no_index")
    assert not project.spark.catalog.tableExists(project.table("no_index__zindex"))
    sql = compile_scan(project, "ref('no_index')", "k = 7")
    assert "index unusable" in project.log_text()
    rows, opened = files_read(project.spark, sql)
    assert rows == 10
    assert opened == 4


def test_index_on_demand_and_its_contents(project: DbtProject) -> None:
    project.write("models/scan/plain_table.sql", """
        {{ config(materialized='table', file_count=3) }}
        select id, cast(id % 5 as double) as x, cast(null as string) as nothing
        from range(90)
    """)
    project.dbt("run", "--select", "plain_table")
    assert not project.spark.catalog.tableExists(project.table("plain_table__zindex"))
    project.dbt("run-operation", "zspark_build_index",
                "--args", "{relation: zspark_test.plain_table}")
    index: list[Any] = project.spark.sql(
        f"select file_path, row_count, x__min, x__max, x__nulls, x__nans, nothing__nulls "
        f"from {project.table('plain_table__zindex')} where row_group is null"
    ).collect()
    assert len(index) == 3
    assert sum(r.row_count for r in index) == 90
    for row in index:
        assert row.file_path.startswith("file:/")
        assert (row.x__min, row.x__max, row.x__nulls, row.x__nans) == (0.0, 4.0, 0, 0)
        assert row.nothing__nulls == row.row_count


def test_skip_coverage_passes_and_fails_with_the_measured_ratio(scanned: DbtProject) -> None:
    scanned.write("models/scan/coverage.yml", """
        version: 2
        models:
          - name: scan_base
            data_tests:
              - skip_coverage:
                  name: coverage_loose
                  arguments:
                    predicates: ["city = 'CITY0042'", "brand = 'MFGR#01234'"]
                    min_skip_ratio: 0.5
              - skip_coverage:
                  name: coverage_strict
                  arguments:
                    predicates: ["city = 'CITY0042'", "brand = 'MFGR#01234'"]
                    min_skip_ratio: 0.995
    """)
    # Compiling measures nothing (`dbt compile`, `dbt docs generate`): the test runs do.
    compiled = scanned.dbt("compile", "--select", "coverage_loose")
    assert re.search(r"skips \d+/\d+ files", scanned.log_text()) is None
    assert "measured when the test runs" in str(compiled.results[0].node.compiled_code)
    scanned.dbt("test", "--select", "coverage_loose")
    assert re.search(r"skips \d+/\d+ files", scanned.log_text()), scanned.log_text()[-2000:]
    assert "Deprecation" not in scanned.log_text()
    scanned.dbt("test", "--select", "coverage_strict", expect_pass=False)
    text = scanned.log_text()
    assert "\"city = 'CITY0042'\" skips" in text
    assert "required 0.995) TOO LOW" in text


def test_an_index_folder_a_killed_run_left_without_its_table_is_replaced(
        project: DbtProject) -> None:
    """A run killed while it wrote an index (or while the old index's folder was being
    deleted) leaves the folder with no table: the next index build deletes it and
    writes the index, where Spark would refuse a managed table over it."""
    spark = project.spark
    table = project.table("orphaned_index")
    spark.sql("create database if not exists zspark_test")
    spark.sql(f"drop table if exists {table}__zindex")
    spark.sql(f"drop table if exists {table}")
    spark.sql(f"create table {table} using parquet as "
              f"select /*+ REPARTITION_BY_RANGE(3, id) */ id from range(30)")
    location = spark.catalog.getDatabase("zspark_test").locationUri.rstrip("/")
    spark.range(3).write.mode("overwrite").parquet(f"{location}/orphaned_index__zindex")
    project.dbt("run-operation", "zspark_build_index", "--args", f"{{relation: {table}}}")
    indexed = spark.sql(f"select count(*) from {table}__zindex where row_group is null")
    assert indexed.first()[0] == 3


def test_int96_timestamps_have_no_stats_and_never_prune(project: DbtProject) -> None:
    spark = project.spark
    table = project.table("int96_times")
    spark.conf.set("spark.sql.parquet.outputTimestampType", "INT96")
    try:
        spark.sql("create database if not exists zspark_test")
        spark.sql(f"drop table if exists {table}")
        spark.sql(f"create table {table} using parquet as select /*+ REPARTITION_BY_RANGE(4, id) */"
                  f" id, timestamp_seconds(id * 86400) as ts from range(100)")
    finally:
        spark.conf.set("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
    project.dbt("run-operation", "zspark_build_index", "--args", f"{{relation: {table}}}")
    index = spark.sql(f"select ts__min, ts__max, id__min from {table}__zindex "
                      f"where row_group is null").collect()
    assert all(r.ts__min is None and r.ts__max is None for r in index)
    assert all(r.id__min is not None for r in index)
    relation = "api.Relation.create(schema='zspark_test', identifier='int96_times')"
    sql = compile_scan(project, relation, "ts = timestamp '1970-01-02 00:00:00'")
    rows, opened = files_read(spark, sql)
    assert rows == 1
    assert opened == 4
