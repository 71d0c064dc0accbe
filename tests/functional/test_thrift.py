"""dbt-spark's `thrift` method: a Spark Thrift Server on loopback, dbt as a client, no
Python on the server. Clustered tables are built with keys and index in SQL; the scan only
queries the index and writes SQL, so it works over any connection.

The data and its index are written by a short-lived embedded session (the real
`build_index`, in a subprocess with its own warehouse) and registered over thrift as
external Parquet tables, as a team indexing with one job and querying from another would.
"""

from __future__ import annotations

import itertools
import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from pyhive import hive  # dbt-spark[PyHive]: the thrift method's client

from tests.functional.dbt_project import skip_coverage_yml, thrift_profile, write_project
from tests.functional.format_project import FormatProject
from tests.functional.server_protocols import (
    killed_overwrite_is_finished_by_the_server,
    second_run_fails_fast_while_another_writes,
)
from tests.harness.servers import own_metastore, thrift_server

pytestmark = pytest.mark.spark

REPO = Path(__file__).resolve().parents[2]
SCHEMA = "zt"
# The string condition holds for every row and prunes no file; it makes the scan read the
# index's string statistics too, and a wrong one would prune a file and lose rows.
PREDICATE = "id >= 350 and city between 'city0' and 'city9'"
SPARK_ENV = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}


def write_indexed_parquet(root: Path) -> None:
    """The pyspark step, run in a subprocess: four files with disjoint `id` ranges in
    `root/events`, and their index as `build_index` writes it in `root/index`."""
    from pyspark.sql import SparkSession

    from dbt.adapters.zspark.connections import session_defaults
    from dbt.adapters.zspark.reach.session.index_tables import build_index

    # In-memory catalog: nothing here outlives the process but the Parquet files.
    builder = SparkSession.builder.master("local[1]")
    for key, value in {**session_defaults(str(root / "session")),
                       "spark.driver.memory": "1g"}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    data = root / "events"
    (spark.range(400).selectExpr("id", "concat('city', id % 7) as city")
     .repartitionByRange(4, "id").write.parquet(str(data)))
    spark.sql(f"create table events using parquet location '{data}'")
    summary = build_index(spark, "events", "events__zindex")
    assert (summary.files, summary.rows) == (4, 400), summary
    (root / "session" / "warehouse" / "events__zindex").rename(root / "index")
    spark.stop()


@pytest.fixture(scope="module")
def thrift_port(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    home = tmp_path_factory.mktemp("thrift_server")
    with thrift_server(home, own_metastore(home), SPARK_ENV) as port:
        yield port


def _sql(port: int, statement: str) -> list[tuple[Any, ...]]:
    connection = hive.connect(host="127.0.0.1", port=port, username="dbt")
    try:
        cursor = connection.cursor()
        cursor.execute(statement)
        return [tuple(row) for row in cursor.fetchall()] if cursor.description else []
    finally:
        connection.close()


@pytest.fixture(scope="module")
def project(thrift_port: int, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The indexed Parquet files as tables of the Thrift server, and a dbt project on it."""
    files = tmp_path_factory.mktemp("thrift_files")
    subprocess.run([sys.executable, "-m", "tests.functional.test_thrift", str(files)],
                   cwd=REPO, env=SPARK_ENV, check=True, timeout=300)
    port = thrift_port
    _sql(port, f"create schema if not exists {SCHEMA}")
    # The same files twice: once with its index, once without one.
    _sql(port, f"create table {SCHEMA}.events using parquet location '{files / 'events'}'")
    _sql(port, f"create table {SCHEMA}.events_unindexed using parquet "
               f"location '{files / 'events'}'")
    _sql(port, f"create table {SCHEMA}.events__zindex using parquet "
               f"location '{files / 'index'}'")

    root = tmp_path_factory.mktemp("thrift_project")
    models = {
        "sources.yml": f"""
            version: 2
            sources:
              - name: zt
                schema: {SCHEMA}
                tables: [{{name: events}}, {{name: events_unindexed}}]
        """,
        "high_ids.sql": f"""
            {{{{ config(materialized='table') }}}}
            select * from {{{{ zspark_scan(source('zt', 'events'), "{PREDICATE}") }}}} t
        """,
        "high_ids_unindexed.sql": """
            {{ config(materialized='table') }}
            select * from {{ zspark_scan(source('zt', 'events_unindexed'), 'id >= 350') }} t
        """,
    }
    write_project(root, "zspark_thrift",
                  {name: textwrap.dedent(text).lstrip() for name, text in models.items()},
                  thrift_profile(port, SCHEMA))
    return root


def _dbt(root: Path, *args: str, expect_pass: bool = True) -> str:
    """A dbt command over thrift, run in the project's kept dbt process
    (``format_project.py``): a process of its own, as dbt's adapter is a per-process
    singleton and this one may hold one on the session profile; kept for the test's
    commands, so that it imports dbt once rather than once per command."""
    done = FormatProject(root, root).dbt(*args)
    assert (done.returncode == 0) == expect_pass, done.stdout[-4000:]
    return done.stdout


def test_scan_over_thrift_returns_the_plain_rows_and_excludes_files(
        project: Path, thrift_port: int) -> None:
    output = _dbt(project, "run", "-s", "high_ids")
    assert "Completed successfully" in output
    assert "index unusable" not in output

    plain = sorted(_sql(thrift_port, f"select * from {SCHEMA}.events where {PREDICATE}"))
    assert len(plain) == 50
    assert sorted(_sql(thrift_port, f"select * from {SCHEMA}.high_ids")) == plain

    # The compiled SQL names exactly the files the index proves hold no id >= 350, so the
    # Thrift server's Spark never opens them; row-group rows of the index are not files.
    compiled = next(project.glob("target/compiled/**/high_ids.sql")).read_text()
    assert "_metadata.file_path" in compiled
    index = _sql(thrift_port, f"select file_path, file_size, file_mtime, id__max from "
                              f"{SCHEMA}.events__zindex where row_group is null")
    assert len(index) == 4
    assert sum(highest < 350 for *_, highest in index) == 3
    for path, size, mtime, highest in index:
        assert path.startswith("file:/")
        assert (f"'{path}#{size}#{mtime}'" in compiled) == (highest < 350), (path, highest)


def test_missing_index_over_thrift_is_a_full_scan_with_a_warning(
        project: Path, thrift_port: int) -> None:
    output = _dbt(project, "run", "-s", "high_ids_unindexed")
    assert "index unusable" in output
    assert "full scan" in output
    compiled = next(project.glob("target/compiled/**/high_ids_unindexed.sql")).read_text()
    assert "_metadata" not in compiled

    plain = sorted(_sql(thrift_port, f"select * from {SCHEMA}.events where id >= 350"))
    assert sorted(_sql(thrift_port, f"select * from {SCHEMA}.high_ids_unindexed")) == plain


CLUSTERED_SQL = """
select id,
       concat('CITY', lpad(cast(pmod(hash(id, 1), 50) as string), 3, '0')) as city,
       cast(pmod(hash(id, 2), 1000) as int) as brand,
       date_add(date'2024-01-01', cast(pmod(hash(id, 3), 365) as int)) as day,
       case when id % 97 = 0 then null else cast(pmod(hash(id, 4), 1000) as double) / 10
       end as price
from range(4000)
"""
POINT_QUERIES = ("city = 'CITY007'", "brand = 42", "day = date'2024-03-01'")


def _file_keys(properties: dict[str, str], path: str, store: Any = None) -> list[int]:
    """The keys of a data file's rows, in file order, by the stored layout's UDF key
    function (the session's own): the server computed them in SQL. ``store``: pyarrow's
    file system of an ``s3a://`` path."""
    import pyarrow.parquet as pq

    from dbt.adapters.zspark.layouts.keyed_plan import key_input_type
    from dbt.adapters.zspark.layouts.layout_state import StoredLayout

    stored = StoredLayout.from_properties(properties)
    assert stored is not None
    function = stored.key_function([key_input_type(t) for t in stored.column_types])
    located = path.removeprefix("file:") if store is None else path.split("://", 1)[1]
    frame = pq.read_table(located, filesystem=store).to_pandas()
    return [int(k) for k in function(*(frame[c] for c in stored.columns))]


def test_a_clustered_table_builds_over_thrift_with_keys_and_index_in_sql(
        project: Path, thrift_port: int) -> None:
    """No Python on the server: the keys, the write and the index are SQL. Rows are the
    model's, every file is sorted by the UDF key and the files' key ranges are disjoint,
    the index holds each file's exact bounds, and point queries through `zspark_scan`
    return the plain filter's rows from at most half the files (64 files of a
    three-column curve: about a quarter hold a value); skip_coverage passes."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    name = "thrift_clustered"
    models = project / "models"
    (models / f"{name}.sql").write_text(
        "{{ config(materialized='table', hilbert_by=['city', 'brand', 'day'], file_count=64) }}"
        + CLUSTERED_SQL)
    for i, predicate in enumerate(POINT_QUERIES):
        (models / f"{name}_scan{i}.sql").write_text(
            f"{{{{ config(materialized='table') }}}}\n"
            f"select * from {{{{ zspark_scan(ref('{name}'), \"{predicate}\") }}}} t\n")
    (models / f"{name}.yml").write_text(skip_coverage_yml([name], POINT_QUERIES))
    output = " ".join(_dbt(project, "run", "-s", f"{name}*").split())
    assert "keys in Spark SQL: no Python on the server" in output
    assert "index built by SQL (no Python on the server): bounds per file, row groups not " \
           "indexed" in output
    assert "city depth" in output  # the layout's health, from the index over thrift

    table = f"{SCHEMA}.{name}"
    assert sorted(_sql(thrift_port, f"select * from {table}")) == \
        sorted(_sql(thrift_port, CLUSTERED_SQL))
    properties = {str(k): str(v) for k, v in _sql(thrift_port, f"show tblproperties {table}")}
    files = sorted(str(r[0]) for r in
                   _sql(thrift_port, f"select distinct _metadata.file_path from {table}"))
    assert len(files) == 64
    ranges = []
    for path in files:
        keys = _file_keys(properties, path)
        assert keys == sorted(keys), path
        ranges.append((keys[0], keys[-1]))
    ranges.sort()
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(ranges))

    index = {str(r[0]): r[1:] for r in _sql(
        thrift_port, f"select file_path, row_group, row_count, city__min, city__max, "
                     f"brand__min, brand__max, price__min, price__max, price__nulls "
                     f"from {table}__zindex")}
    assert sorted(index) == files
    for path in files:
        data = pq.read_table(path.removeprefix("file:"))
        bounds = [pc.min_max(data[c]).as_py() for c in ("city", "brand", "price")]
        assert index[path] == (None, data.num_rows,
                               bounds[0]["min"], bounds[0]["max"], bounds[1]["min"],
                               bounds[1]["max"], bounds[2]["min"], bounds[2]["max"],
                               data["price"].null_count), path

    for i, predicate in enumerate(POINT_QUERIES):
        plain = sorted(_sql(thrift_port, f"select * from {table} where {predicate}"))
        assert plain
        assert sorted(_sql(thrift_port, f"select * from {SCHEMA}.{name}_scan{i}")) == plain
        compiled = next(project.glob(f"target/compiled/**/{name}_scan{i}.sql")).read_text()
        excluded = sum(f"'{path}#" in compiled for path in files)
        assert excluded >= 32, (predicate, excluded)

    # Partitioned: files cut within each table partition, the cut points typed literals.
    parted = f"{name}_parted"
    (models / f"{parted}.sql").write_text(
        "{{ config(materialized='table', hilbert_by=['city', 'brand'], file_count=12, "
        "partition_by=['day']) }}"
        f"select * from ({CLUSTERED_SQL}) where day < date'2024-01-04'")
    _dbt(project, "run", "-s", parted)
    listed = "id, city, brand, day, price"  # a partition column comes last in the table
    assert sorted(_sql(thrift_port, f"select {listed} from {SCHEMA}.{parted}")) == sorted(
        _sql(thrift_port, f"select * from ({CLUSTERED_SQL}) where day < date'2024-01-04'"))
    parted_properties = {str(k): str(v) for k, v in
                         _sql(thrift_port, f"show tblproperties {SCHEMA}.{parted}")}
    parted_files = sorted(str(r[0]) for r in _sql(
        thrift_port, f"select distinct _metadata.file_path from {SCHEMA}.{parted}"))
    assert all("/day=2024-01-0" in path for path in parted_files)
    for path in parted_files:
        keys = _file_keys(parted_properties, path)
        assert keys == sorted(keys), path
    assert sorted(str(r[0]) for r in _sql(
        thrift_port, f"select file_path from {SCHEMA}.{parted}__zindex")) == parted_files

    tested = " ".join(_dbt(project, "test", "-s", name).split())
    assert "skip_coverage" in tested
    assert "PASS=1" in tested


def _check_files_and_index(port: int | Callable[[str], list[tuple[Any, ...]]], table: str,
                           landed: int = 0) -> dict[str, list[tuple[Any, ...]]]:
    """Every data file of ``table`` is sorted by the stored layout's key (but ``landed``
    files, an append's as the model gave them), and its index row holds its exact rows and
    bounds (pyarrow); returns each file's rows in file order. ``port``: the thrift
    server's, or a function that runs SQL on a server."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    sql = port if callable(port) else partial(_sql, port)
    properties = {str(k): str(v) for k, v in sql(f"show tblproperties {table}")}
    files = sorted(str(r[0]) for r in
                   sql(f"select distinct _metadata.file_path from {table}"))
    index = {str(r[0]): r[1:] for r in sql(
        f"select file_path, row_group, row_count, city__min, city__max, brand__min, "
        f"brand__max from {table}__zindex")}
    assert sorted(index) == files
    contents = {}
    unsorted = 0
    for path in files:
        keys = _file_keys(properties, path)
        unsorted += keys != sorted(keys)
        data = pq.read_table(path.removeprefix("file:"))
        bounds = [pc.min_max(data[c]).as_py() for c in ("city", "brand")]
        assert index[path] == (None, data.num_rows, bounds[0]["min"], bounds[0]["max"],
                               bounds[1]["min"], bounds[1]["max"]), path
        contents[path] = [tuple(r.values()) for r in data.to_pylist()]
    assert unsorted <= landed, (unsorted, landed)
    return contents


def _incremental_model(project: Path, port: int, name: str, layout: str,
                       sort_appends: bool = True) -> Callable[[int, int], str]:
    """Write an incremental model of CLUSTERED_SQL's ids in ``[lo, hi)`` clustered by
    ``layout`` (8 files; appends sorted as written unless not ``sort_appends``); returns a
    run of it that checks the table holds ids below ``hi`` and gives dbt's output on one
    line."""
    table = f"{SCHEMA}.{name}"
    (project / "models" / f"{name}.sql").write_text(
        f"{{{{ config(materialized='incremental', {layout}, file_count=8, "
        f"zspark_recluster_runs=2, zspark_sort_appends={str(sort_appends).lower()}) }}}}"
        f"select * from ({CLUSTERED_SQL}) where id >= {{{{ var('lo') }}}} "
        f"and id < {{{{ var('hi') }}}}")

    def run(lo: int, hi: int) -> str:
        output = _dbt(project, "run", "-s", name, "--vars", f"{{lo: {lo}, hi: {hi}}}")
        assert sorted(_sql(port, f"select * from {table}")) == sorted(
            _sql(port, f"select * from ({CLUSTERED_SQL}) where id < {hi}"))
        return " ".join(output.split())

    return run


def test_an_append_lands_as_written_and_its_merge_sorts_it_over_thrift(
        project: Path, thrift_port: int) -> None:
    """By default an append over thrift lands as the model gives it (the base's files
    untouched, the landed files' index rows exact); the next append of its size merges
    both runs, and every file is sorted by the key again."""
    name = "thrift_landed"
    table = f"{SCHEMA}.{name}"
    run = _incremental_model(project, thrift_port, name, "hilbert_by=['city', 'brand']",
                             sort_appends=False)
    run(0, 2000)
    base = _check_files_and_index(thrift_port, table)
    landed_log = run(2000, 2200)
    assert f"zspark: {name}: append (landed as written" in landed_log
    assert "writing 200 rows as the model gives them, unsorted" in landed_log
    landed = _check_files_and_index(thrift_port, table, landed=2)
    assert {p: landed[p] for p in base} == base
    assert 1 <= len(landed) - len(base) <= 2
    merged_log = run(2200, 2400)
    assert f"zspark: {name}: merge (" in merged_log
    # The test's server runs without -XX:-DontCompileHugeMethods: the keyed write gets
    # Spark's limit on whole-stage code (core/generated_code.py); the landed one needs none.
    assert "keyed writes run with spark.sql.codegen.hugeMethodLimit=8000" in merged_log
    assert "hugeMethodLimit" not in landed_log
    merged = _check_files_and_index(thrift_port, table)
    assert not (set(landed) - set(base)) & set(merged)  # the landed files rewritten


@pytest.mark.slow
def test_an_incremental_model_stays_clustered_over_thrift(
        project: Path, thrift_port: int) -> None:
    """A clustered incremental model over thrift: its first run builds the base; an append
    writes narrow pieces keyed with the stored layout (the base's files untouched, the
    pieces' index rows added by SQL); a larger one merges the pending run with the new
    rows (the base's files copied by SQL row for row, as runs of their own); a full
    re-clustering on demand rewrites all. After every step the rows are the source's, and
    every file is sorted by the key with its exact bounds in the index. The layout report
    samples the table by query."""
    name = "thrift_incremental"
    table = f"{SCHEMA}.{name}"
    run = _incremental_model(project, thrift_port, name, "hilbert_by=['city', 'brand']")

    run(0, 2000)
    base = _check_files_and_index(thrift_port, table)
    assert len(base) == 8

    assert f"zspark: {name}: append (3 pieces fit in 18 files)" in run(2000, 2200)
    appended = _check_files_and_index(thrift_port, table)
    assert {p: appended[p] for p in base} == base  # the base's files untouched
    assert 8 < len(appended) <= 12

    merged_log = run(2200, 2400)
    assert f"zspark: {name}: merge (" in merged_log
    assert f"rewriting 200 rows of {len(appended) - 8} files" in merged_log
    merged = _check_files_and_index(thrift_port, table)
    # The base's files were copied one to one, their rows in the same order.
    assert sorted(base.values()) == sorted(v for p, v in merged.items()
                                          if v in base.values())
    properties = {str(k): str(v) for k, v in _sql(thrift_port, f"show tblproperties {table}")}
    from dbt.adapters.zspark.layouts.layout_state import clustered_writes, write_id

    copies = {write_id(p) for p, v in merged.items() if v in base.values()}
    assert len(copies) == 1
    assert clustered_writes(properties) == copies
    assert not _sql(thrift_port, f"show tables in {SCHEMA} like '{name}__zspark*'")

    picture = project / "target" / "thrift_layout.png"
    report = " ".join(_dbt(project, "run-operation", "zspark_layout_report", "--args",
                           f"{{relation: {table}, path: '{picture}'}}").split())
    assert "column files depth rebuild_depth skip_share" in report
    assert "2400 rows; " in report
    assert picture.read_bytes().startswith(b"\x89PNG")

    _dbt(project, "run-operation", "zspark_recluster", "--args",
         f"{{relation: {table}, full: true}}")
    assert sorted(_sql(thrift_port, f"select * from {table}")) == sorted(
        _sql(thrift_port, f"select * from ({CLUSTERED_SQL}) where id < 2400"))
    rebuilt = _check_files_and_index(thrift_port, table)
    properties = {str(k): str(v) for k, v in _sql(thrift_port, f"show tblproperties {table}")}
    assert clustered_writes(properties) == {write_id(p) for p in rebuilt}
    assert len(rebuilt) == 10  # 2400 rows at the table's 250 rows per file


@pytest.mark.slow
def test_insert_overwrite_replaces_partitions_and_their_index_rows_over_thrift(
        project: Path, thrift_port: int) -> None:
    """insert_overwrite of a partitioned clustered model over thrift: the partitions the
    new rows fall in are replaced, the others keep their files; the index drops the
    replaced files' rows and adds the new ones', each with its exact bounds."""
    name = "thrift_overwrite"
    table = f"{SCHEMA}.{name}"
    (project / "models" / f"{name}.sql").write_text(
        "{{ config(materialized='incremental', incremental_strategy='insert_overwrite', "
        "hilbert_by=['city', 'brand'], file_count=6, partition_by=['day']) }}"
        f"select * from ({CLUSTERED_SQL}) where day between {{{{ var('first') }}}} "
        f"and {{{{ var('last') }}}} and id < {{{{ var('ids') }}}}")
    listed = "id, city, brand, day, price"

    def run(first: str, last: str, ids: int) -> dict[str, list[tuple[Any, ...]]]:
        _dbt(project, "run", "-s", name, "--vars",
             f"{{first: \"date'{first}'\", last: \"date'{last}'\", ids: {ids}}}")
        return _check_files_and_index(thrift_port, table)

    before = run("2024-01-01", "2024-01-03", 4000)
    after = run("2024-01-03", "2024-01-04", 3000)
    expected = _sql(thrift_port, f"select * from ({CLUSTERED_SQL}) where day < date'2024-01-03'"
                                 f" or (day between date'2024-01-03' and date'2024-01-04' "
                                 f"and id < 3000)")
    assert sorted(_sql(thrift_port, f"select {listed} from {table}")) == sorted(expected)
    kept = {p for p in before if "day=2024-01-03" not in p}
    assert {p: after[p] for p in kept} == {p: before[p] for p in kept}
    assert not any(p in after for p in before if "day=2024-01-03" in p)
    assert any("day=2024-01-04" in p for p in after)


# Two table partitions of about 2000 rows each (the partition column last, as in the table).
PARTED_SQL = f"""
select id, city, brand, price, date_add(date'2024-01-01', cast(id % 2 as int)) as day
from ({CLUSTERED_SQL})
"""


@pytest.mark.slow
def test_a_partitioned_incremental_model_merges_within_its_partitions_over_thrift(
        project: Path, thrift_port: int) -> None:
    """Appends into two table partitions of a clustered model over thrift, until the
    pending pieces no longer fit and merge: the files that stay are copied into their own
    partitions row for row, the rows stay the source's and every index row is exact."""
    name = "thrift_parted_merge"
    table = f"{SCHEMA}.{name}"
    (project / "models" / f"{name}.sql").write_text(
        "{{ config(materialized='incremental', hilbert_by=['city', 'brand'], file_count=8, "
        "partition_by=['day'], zspark_recluster_runs=2, zspark_sort_appends=true) }}"
        f"select * from ({PARTED_SQL}) "
        f"where id >= {{{{ var('lo') }}}} and id < {{{{ var('hi') }}}}")

    def run(lo: int, hi: int) -> tuple[str, dict[str, list[tuple[Any, ...]]]]:
        output = " ".join(_dbt(project, "run", "-s", name, "--vars",
                               f"{{lo: {lo}, hi: {hi}}}").split())
        assert sorted(_sql(thrift_port, f"select * from {table}")) == sorted(_sql(
            thrift_port, f"select * from ({PARTED_SQL}) where id < {hi}"))
        return output, _check_files_and_index(thrift_port, table)

    _, base = run(0, 3000)
    _, appended = run(3000, 3400)
    assert set(base) < set(appended)
    merged_log, merged = run(3400, 3800)
    assert f"zspark: {name}: merge (" in merged_log
    kept = [v for v in base.values() if v in merged.values()]
    assert sorted(kept) == sorted(base.values())  # every base file copied row for row
    for path, rows in merged.items():
        if rows in base.values():
            source = next(p for p, v in base.items() if v == rows)
            assert path.rsplit("/", 2)[-2] == source.rsplit("/", 2)[-2]  # same partition


def test_what_clustering_cannot_do_over_thrift_stops_before_writing_with_a_clear_error(
        project: Path, thrift_port: int) -> None:
    name = "clustered_direct"
    (project / "models" / f"{name}.sql").write_text(
        "{{ config(materialized='table', zorder_by=['id', 'city'], curve_method='direct') }}\n"
        "select * from {{ source('zt', 'events') }}\n")
    try:
        output = _dbt(project, "run", "-s", name, expect_pass=False)
    finally:
        (project / "models" / f"{name}.sql").unlink()
    expected = (f"Model '{name}': config 'curve_method' is 'direct', which computes keys in "
                f"Python; `method: thrift` runs no Python in Spark. Allowed there: "
                f"'boundary'.")
    assert expected in " ".join(output.split())
    tables = {row[1] for row in _sql(thrift_port, f"show tables in {SCHEMA}")}
    assert not {t for t in tables if t.startswith(name)}


@pytest.mark.slow
def test_a_balanced_incremental_model_keys_groups_in_sql_over_thrift(
        project: Path, thrift_port: int) -> None:
    """balanced_by over thrift: the tree is fitted on the sample in dbt's process and each
    row's group found by SQL over the tree's cuts. The base's groups are whole files, every
    file is sorted by the session's own key, the index is exact, appends and merges keep
    the stored tree, and point queries through zspark_scan return the plain rows."""
    name = "thrift_balanced"
    table = f"{SCHEMA}.{name}"
    run = _incremental_model(project, thrift_port, name, "balanced_by=['city', 'brand']")

    built = run(0, 2000)
    assert re.search(rf"{name}: balanced layout: \d+ groups, fan-out city \d+", built)
    base = _check_files_and_index(thrift_port, table)
    assert 4 <= len(base) <= 8
    properties = {str(k): str(v) for k, v in _sql(thrift_port, f"show tblproperties {table}")}
    stored = {k: v for k, v in properties.items() if not k.endswith("clustered_writes")}
    from dbt.adapters.zspark.layouts import group_shift

    shift = group_shift(1000)
    groups = {path: {k >> shift for k in _file_keys(properties, path)} for path in base}
    assert all(len(g) == 1 for g in groups.values()), groups  # no file holds two groups
    assert len(set.union(*groups.values())) >= 2

    assert f"zspark: {name}: append (" in run(2000, 2200)
    appended = _check_files_and_index(thrift_port, table)
    assert {p: appended[p] for p in base} == base
    assert f"zspark: {name}: merge (" in run(2200, 2400)
    _check_files_and_index(thrift_port, table)
    properties = {str(k): str(v) for k, v in _sql(thrift_port, f"show tblproperties {table}")}
    assert {k: v for k, v in properties.items() if not k.endswith("clustered_writes")} == stored

    for i, predicate in enumerate(POINT_QUERIES[:2]):
        (project / "models" / f"{name}_scan{i}.sql").write_text(
            f"{{{{ config(materialized='table') }}}}\n"
            f"select * from {{{{ zspark_scan(ref('{name}'), \"{predicate}\") }}}} t\n")
    _dbt(project, "run", "-s", f"{name}_scan0", f"{name}_scan1")
    for i, predicate in enumerate(POINT_QUERIES[:2]):
        plain = sorted(_sql(thrift_port, f"select * from {table} where {predicate}"))
        assert plain
        assert sorted(_sql(thrift_port, f"select * from {table}_scan{i}")) == plain


if __name__ == "__main__":  # the `project` fixture's pyspark step
    write_indexed_parquet(Path(sys.argv[1]))


@pytest.mark.slow
def test_killed_runs_recover_over_thrift_with_the_server_up(
        thrift_port: int, tmp_path: Path) -> None:
    """dbt clients killed (SIGKILL) at the steps of a build, an append, a merge, a full
    re-clustering and their swaps, the server staying up: each killed run repairs what
    the one before left, then dies at its own step; a plain `dbt build` at the end checks
    rows, index and scan (the checks of test_kills)."""
    from tests.harness.kills import MODEL, KilledProject

    killed = KilledProject(tmp_path, thrift_port=thrift_port)
    killed.build(1500)
    full_refresh = ("run", "--full-refresh", "--vars", f"{{stop: {killed.stop}}}")
    for step in ("build:written", "swap:previous_renamed", "swap:next_renamed",
                 "swap:previous_dropped"):
        killed.killed(step, *full_refresh)
    for count, step in enumerate(("append:inserted", "append:indexed"), start=1):
        killed.killed(step, "run", "--vars",
                      f"{{stop: {killed.stop + 300 * count}, recluster: false}}")
    killed.killed("swap:previous_renamed", *killed.recluster())  # a merge
    for step in ("rewrite:written", "rewrite:checked"):
        killed.killed(step, *killed.recluster(full=True))
    killed.build(killed.stop + 900)
    # Every version was written into a folder of its own, and each replaced one (a kill
    # between its drop and its deletion included) was deleted by the server.
    [location] = [str(row[1]) for row in _sql(
        thrift_port, f"describe table extended {killed.schema}.{MODEL}") if row[0] == "Location"]
    version = Path(location.removeprefix("file:"))
    assert sorted(p.name for p in version.parent.iterdir()) == [version.name]


@pytest.mark.slow
def test_a_killed_overwrite_over_thrift_is_finished_by_the_server(
        thrift_port: int, tmp_path: Path) -> None:
    """A client killed once its overwrite ran (server_protocols.py)."""
    from tests.harness.kills import KilledProject

    killed_overwrite_is_finished_by_the_server(
        KilledProject(tmp_path, thrift_port=thrift_port, strategy="insert_overwrite"))


@pytest.mark.slow
def test_a_second_run_of_a_model_fails_fast_while_another_process_writes_it(
        thrift_port: int, tmp_path: Path) -> None:
    """The lock, two schedulers against one server (server_protocols.py)."""
    from tests.harness.kills import KilledProject

    second_run_fails_fast_while_another_writes(
        KilledProject(tmp_path / "project", thrift_port=thrift_port, schema="zspark_lock"),
        tmp_path / "gate")


def test_a_python_model_over_thrift_is_refused_naming_the_methods_that_run_one(
        project: Path, thrift_port: int) -> None:
    """A Thrift server runs no Python of dbt's and offers no DataFrames: a Python model is
    refused by name, with the methods that run one, and no table is written."""
    model = project / "models" / "py_refused.py"
    model.write_text("def model(dbt, session):\n    return session.range(3)\n")
    try:
        output = " ".join(_dbt(project, "run", "-s", "py_refused", expect_pass=False).split())
    finally:
        model.unlink()
    assert "Python model py_refused (models/py_refused.py): the profile's method is " \
           "'thrift'" in output, output[-3000:]
    assert "`method: session`" in output
    assert "`method: connect`" in output
    assert not _sql(thrift_port, f"show tables in {SCHEMA} like 'py_refused*'")
