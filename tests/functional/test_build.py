"""Clustered table builds through the real dbt CLI on embedded Spark."""

from __future__ import annotations

import re
import uuid
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from tests.functional.dbt_project import DbtProject

SOURCE = """
{{ config(materialized='table') }}
select id,
       cast(pmod(hash(id, 1), 40) as int) as a,
       concat('https://example.com/catalog/item/', cast(pmod(hash(id, 2), 300) as string)) as b,
       cast(pmod(hash(id, 3), 1000) as double) / 10 as c
from range(6000)
"""

# Rows near a line through a, b and c; a fifth of b's and of c's values drawn at random.
CORRELATED = """
{{ config(materialized='table') }}
select id, a,
       case when pmod(hash(id, 4), 5) = 0 then pmod(hash(id, 2), 1000)
            else a + pmod(hash(id, 5), 5) end as b,
       case when pmod(hash(id, 6), 5) = 0 then pmod(hash(id, 3), 1000)
            else a + pmod(hash(id, 7), 5) end as c
from (select id, pmod(hash(id, 1), 1000) as a from range(6000))
"""


def skipped_share(project: DbtProject, model: str, column: str) -> float:
    """Share of files a point query on ``column`` skips, over 200 values of the data."""
    from dbt.adapters.zspark.skipping.health import point_depth

    bounds = project.spark.sql(
        f"select {column}__min as min, {column}__max as max "
        f"from {project.table(model + '__zindex')} where row_group is null"
    ).toPandas()
    probes = project.spark.sql(
        f"select {column} from {project.table(model)} order by hash(id) limit 200"
    ).toPandas()[column]
    return 1 - point_depth(bounds, probes) / len(bounds)


@pytest.fixture(scope="module")
def layouts(project: DbtProject) -> DbtProject:
    project.write("models/build/build_source.sql", SOURCE)
    for key in ("zorder_by", "hilbert_by", "linear_by", "balanced_by"):
        name = key.removesuffix("_by")
        project.write(f"models/build/build_{name}.sql", f"""
            {{{{ config(materialized='table', {key}=['a', 'b', 'c'], file_count=16,
                        boundary_count=64) }}}}
            select * from {{{{ ref('build_source') }}}}
        """)
    project.write("models/build/build_direct.sql", """
        {{ config(materialized='table', zorder_by=['a', 'c'], curve_method='direct',
                  file_count=8) }}
        select * from {{ ref('build_source') }}
    """)
    project.write("models/build/build_balanced_workload.sql", """
        {{ config(materialized='table', balanced_by=['a', 'b', 'c'], file_count=16,
                  boundary_count=64, workload=[{'predicate': 'a = 3', 'count': 3},
                                               "b like 'https://example.com/%'"]) }}
        select * from {{ ref('build_source') }}
    """)
    project.write("models/build/build_correlated.sql", CORRELATED)
    for key in ("hilbert_by", "balanced_by"):
        project.write(f"models/build/build_{key.removesuffix('_by')}_correlated.sql", f"""
            {{{{ config(materialized='table', {key}=['a', 'b', 'c'], file_count=16,
                        boundary_count=64) }}}}
            select * from {{{{ ref('build_correlated') }}}}
        """)
    project.write("models/build/build_plain.sql", """
        {{ config(materialized='table', file_count=16, zspark_index=true) }}
        select * from {{ ref('build_source') }}
    """)
    project.dbt("run", "--select", "path:models/build")
    return project


@pytest.mark.parametrize("model", ["build_zorder", "build_hilbert", "build_linear",
                                   "build_balanced", "build_direct", "build_plain"])
def test_build_keeps_every_row_and_writes_the_asked_file_count(layouts: DbtProject,
                                                                model: str) -> None:
    source = layouts.rows(f"select * from {layouts.table('build_source')}")
    assert layouts.rows(f"select * from {layouts.table(model)}") == source
    expected = 8 if model == "build_direct" else 16
    assert len(layouts.files(model)) == expected


def test_curves_skip_on_every_column_where_linear_skips_on_the_first(layouts: DbtProject) -> None:
    linear = [skipped_share(layouts, "build_linear", c) for c in "abc"]
    hilbert = [skipped_share(layouts, "build_hilbert", c) for c in "abc"]
    zorder = [skipped_share(layouts, "build_zorder", c) for c in "abc"]
    plain = [skipped_share(layouts, "build_plain", c) for c in "abc"]
    assert linear[0] > 0.9
    assert linear[2] < 0.1
    assert min(hilbert) > 0.4, hilbert
    assert min(zorder) > 0.3, zorder
    assert max(plain) < 0.1, plain


def test_the_balanced_layout_writes_whole_groups_and_skips_on_every_column(
        layouts: DbtProject) -> None:
    """balanced_by: 16 files as groups of `a` then `b` ranges, each group's rows sorted
    by `c` and cut into files by rows. Files are sorted by `c` and hold equal rows,
    the columns together skip at least as much as on the Hilbert build; the log gives the
    fan-outs and the skip expected from the sample, then the measured one."""
    import pyarrow.parquet as pq

    balanced = [skipped_share(layouts, "build_balanced", c) for c in "abc"]
    hilbert = [skipped_share(layouts, "build_hilbert", c) for c in "abc"]
    # 16 files over three columns: at best 1 - 16 ** (-1 / 3) = 60% per column.
    assert min(balanced) > 0.45, balanced
    assert sum(balanced) >= sum(hilbert), (balanced, hilbert)
    sizes = []
    for path in layouts.files("build_balanced"):
        frame = pq.read_table(path.removeprefix("file:")).to_pandas()
        sizes.append(len(frame))
        assert frame["c"].is_monotonic_increasing, path
    assert max(sizes) / (sum(sizes) / len(sizes)) <= 1.3, sizes
    log = " ".join(layouts.log_text().split())
    assert re.search(r"build_balanced: balanced layout: \d groups, fan-out a 2, b 2(-3)?, c "
                     r"cut by rows \(expected files per point query: tree [\d.]+, hilbert "
                     r"[\d.]+\); expected skip from the sample: a \d+\.\d%, b \d+\.\d%, "
                     r"c \d+\.\d%", log), log[-3000:]
    assert "build_balanced: 16 files, 6000 rows" in log
    assert "0.0% of rows written since the last full clustering" in log


def test_on_correlated_columns_the_balanced_layout_keeps_the_curve_and_says_so(
        layouts: DbtProject) -> None:
    """Where the sample shows the Hilbert curve's files skipping more than the tree's
    groups on some column (rows near a line, with noise), balanced_by keys and writes
    along the curve: the very files of the hilbert_by model, as many point queries
    skipped as it expected."""
    log = " ".join(layouts.log_text().split())
    found = re.search(r"build_balanced_correlated: balanced layout: kept the hilbert curve, "
                      r"as no tree skips as many files on every column under both query "
                      r"models \(expected files per point query: tree ([\d.]+), "
                      r"hilbert ([\d.]+)\)", log)
    assert found is not None, log[-3000:]
    tree, curve = map(float, found.groups())
    assert curve < tree
    assert layouts.rows(f"select * from {layouts.table('build_balanced_correlated')}") == \
        layouts.rows(f"select * from {layouts.table('build_correlated')}")

    def boxes(model: str) -> list[tuple[object, ...]]:
        return layouts.rows(f"select a__min, a__max, b__min, b__max, c__min, c__max, "
                            f"row_count from {layouts.table(model + '__zindex')} "
                            f"where row_group is null")

    assert boxes("build_balanced_correlated") == boxes("build_hilbert_correlated")
    assert len(layouts.files("build_balanced_correlated")) == 16
    reads = sum(16 * (1 - skipped_share(layouts, "build_balanced_correlated", c))
                for c in "abc") / 3
    assert reads == pytest.approx(curve, abs=1.0)


def test_the_skip_expected_before_the_write_is_the_measured_one(layouts: DbtProject) -> None:
    """Every layout logs, before its write, the skip per column it expects from the
    sample; the sample holds every row here, so the files written skip what it said."""
    log = " ".join(layouts.log_text().split())
    for model in ("build_zorder", "build_hilbert", "build_linear", "build_balanced"):
        found = re.search(rf"{model}: [^;]*; expected skip from the sample: "
                          r"a ([\d.]+)%, b ([\d.]+)%, c ([\d.]+)%", log)
        assert found is not None, (model, log[-3000:])
        expected = [float(share) / 100 for share in found.groups()]
        measured = [skipped_share(layouts, model, c) for c in "abc"]
        # 0.01 apart here; half a file of the 16 is 0.031.
        assert expected == pytest.approx(measured, abs=1 / 32), (model, expected, measured)


def test_a_column_no_declared_query_filters_on_takes_no_range_of_its_own(
        layouts: DbtProject) -> None:
    """A workload on `a` (3 queries) and `b` (1): `c` weighs 0, so the tree takes it first
    with one range, splits `a`, and cuts each group into files along `b`; every file is
    sorted by `b` and the files skip more on `a` than the equal-weight build does."""
    import pyarrow.parquet as pq

    log = " ".join(layouts.log_text().split())
    assert re.search(r"build_balanced_workload: balanced layout: \d+ groups, fan-out c 1, "
                     r"a \d+, b cut by rows \(weights a 3, b 1, c 0[;)]", log), log[-3000:]
    assert layouts.rows(f"select * from {layouts.table('build_balanced_workload')}") == \
        layouts.rows(f"select * from {layouts.table('build_source')}")
    for path in layouts.files("build_balanced_workload"):
        frame = pq.read_table(path.removeprefix("file:")).to_pandas()
        assert frame["b"].is_monotonic_increasing, path
    weighted = skipped_share(layouts, "build_balanced_workload", "a")
    assert weighted > skipped_share(layouts, "build_balanced", "a") + 0.1


def test_files_are_sorted_by_the_key_so_row_groups_are_clustered(layouts: DbtProject) -> None:
    import pyarrow.parquet as pq

    from dbt.adapters.zspark.core import curves

    # Within a Hilbert file, rows follow the curve: consecutive rows are close in the grid.
    path = layouts.files("build_hilbert")[0].removeprefix("file:")
    frame = pq.read_table(path).to_pandas()
    jumps = frame["a"].diff().abs().fillna(0)
    assert jumps.mean() < frame["a"].std(), "rows inside a file are not in curve order"
    assert curves.MAX_KEY_BITS == 63


def test_build_logs_files_rows_and_layout_depth(project: DbtProject) -> None:
    project.write("models/logged/logged.sql", """
        {{ config(materialized='table', hilbert_by=['id', 'b'], file_count=4) }}
        select id, cast(id % 13 as string) as b from range(400)
    """)
    project.dbt("run", "--select", "logged")
    text = project.log_text()
    assert "logged: 4 files, 400 rows" in text
    found = re.search(r"layout: 4 files; id depth ([\d.]+) vs ([\d.]+) rebuilt \(([\d.]+)% "
                      r"skipped; ([\d.]+)% per distinct value\), overlaps ([\d.]+), "
                      r"overlap depth ([\d.]+); b depth ", text)
    assert found is not None, text
    depth, rebuilt, skipped, per_value, overlaps, overlap_depth = map(float, found.groups())
    assert per_value == pytest.approx(skipped, abs=1.5)  # ids are distinct: the models agree
    assert 1 <= depth <= 4
    assert 1 <= rebuilt <= 4
    assert skipped == pytest.approx(100 * (1 - depth / 4), abs=1.5)  # depth printed to 0.1
    assert 0 <= overlaps <= 3
    assert 1 <= overlap_depth <= 4
    assert "0.0% of rows written since the last full clustering" in text
    # The console: one short line of the model's files, rows and what a point query skips.
    said = [line for line in project.console if line.startswith("zspark adapter: logged:")]
    assert len(said) == 1, project.console
    found = re.fullmatch(r"zspark adapter: logged: 4 files, 400 rows; a point query skips "
                         r"(\d+)% of files on id, (\d+)% on b", said[0])
    assert found is not None, said
    assert int(found.group(1)) == pytest.approx(skipped, abs=1), (said, skipped)
    assert len(said[0]) < 120


def test_a_clustered_build_keeps_the_models_options_and_table_properties(
        project: DbtProject) -> None:
    project.write("models/props/props.sql", """
        {{ config(materialized='table', zorder_by=['id'], file_count=100,
                  tblproperties={'team': "analytics' own"}, options={'compression': 'gzip'},
                  post_hook="alter table {{ this }} set tblproperties ('hooked' = 'after')",
                  persist_docs={'relation': true}) }}
        select id from range(2000)
    """)
    project.write("models/props/props.yml", """
        version: 2
        models:
          - name: props
            description: ids, clustered
    """)
    project.dbt("run", "--select", "props")
    properties = {str(r[0]): str(r[1]) for r in project.spark.sql(
        f"show tblproperties {project.table('props')}").collect()}
    assert properties["team"] == "analytics' own"
    assert properties["hooked"] == "after"  # post-hooks run on the swapped-in table
    described = {str(r[0]): str(r[1]) for r in project.spark.sql(
        f"describe table extended {project.table('props')}").collect()}
    assert described["Comment"] == "ids, clustered"  # and its description kept
    assert properties["zspark.layout.summary"].startswith("zorder_by=[id]")
    files = project.files("props")  # cut by rows per file, a setting of the write alone
    assert 100 <= len(files) <= 101  # a cut may fall short inside a partition
    assert all(f.endswith(".gz.parquet") for f in files)
    log = project.log_text()
    assert "options ('compression' = 'gzip')" in log
    assert "set spark.sql.files.maxRecordsPerFile = 20" in log
    # ...and not a writer option of the table, which would override later writes' cuts.
    storage = [r[1] for r in project.spark.sql(f"describe table extended {project.table('props')}")
               .collect() if r[0] == "Storage Properties"]
    assert "maxRecordsPerFile" not in "".join(storage)
    assert project.spark.conf.get("spark.sql.files.maxRecordsPerFile") == "0"  # restored


def test_partitioned_build_clusters_within_each_partition(project: DbtProject) -> None:
    project.write("models/parts/parted.sql", """
        {{ config(materialized='table', partition_by=['p'], zorder_by=['x', 'y'],
                  file_count=6) }}
        select id, cast(id % 3 as int) as p, cast(id % 50 as int) as x,
               cast(pmod(hash(id), 70) as int) as y
        from range(3000)
    """)
    project.dbt("run", "--select", "parted")
    files = project.files("parted")
    assert all("/p=" in f for f in files)
    assert project.rows(f"select p, count(*) from {project.table('parted')} group by p") == [
        (0, 1000), (1, 1000), (2, 1000)
    ]
    index = project.spark.sql(
        f"select count(*) from {project.table('parted__zindex')} where row_group is null"
    ).first()[0]
    assert index == len(files)


def test_documented_curve_udfs_are_callable_from_model_sql(project: DbtProject) -> None:
    import numpy as np

    from dbt.adapters.zspark.core import curves

    project.write("models/udfs/curve_keys.sql", """
        {{ config(materialized='table') }}
        select id, zspark_zorder_key(id, 1000 - id) as z, zspark_hilbert_key(id, 1000 - id) as h
        from range(1000)
    """)
    project.dbt("run", "--select", "curve_keys")
    rows = project.rows(f"select id, z, h from {project.table('curve_keys')}")
    ids = np.array([r[0] for r in rows], dtype=np.uint64)
    other = np.uint64(1000) - ids
    bits = curves.MAX_KEY_BITS // 2
    assert [r[1] for r in rows] == curves.interleave_bits([ids, other], bits).tolist()
    assert [r[2] for r in rows] == curves.hilbert_index([ids, other], bits).tolist()


@pytest.fixture(scope="module")
def tally(project: DbtProject, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A function model SQL can call that counts, in files, every row it is evaluated on."""
    from pyspark.sql.functions import pandas_udf

    folder = tmp_path_factory.mktemp("tally")

    def count_rows(values: pd.Series) -> pd.Series:
        (folder / f"{uuid.uuid4().hex}.n").write_text(str(len(values)))
        return values

    project.spark.udf.register("zspark_test_tally", pandas_udf(count_rows, "bigint"))
    return folder


def evaluations(folder: Path) -> int:
    total = sum(int(f.read_text()) for f in folder.glob("*.n"))
    for f in folder.glob("*.n"):
        f.unlink()
    return total


# A table read by the model (size unknown to Spark's optimizer) and a range it knows.
INPUTS = {"table": "(select id from {{ ref('build_source') }} where id < 6000)",
          "range": "range(6000)"}


@pytest.mark.parametrize("source", sorted(INPUTS))
@pytest.mark.parametrize("key", ["zorder_by", "hilbert_by", "linear_by"])
def test_a_build_runs_the_model_sql_twice_and_cuts_files_of_equal_rows(
        layouts: DbtProject, tally: Path, key: str, source: str) -> None:
    project = layouts
    name = f"two_pass_{key.removesuffix('_by')}_{source}"
    rows, file_count = 6000, 75  # more than 64 files: partitions are cut into files
    project.write(f"models/passes/{name}.sql", f"""
        {{{{ config(materialized='table', {key}=['a', 'b'], file_count={file_count},
                    boundary_count=32) }}}}
        select zspark_test_tally(id) as a, cast(pmod(hash(id), 97) as int) as b
        from {INPUTS[source]} input
    """)
    evaluations(tally)
    project.dbt("run", "--select", name)
    # One pass samples and counts, one writes: each row of the model's SQL is made twice.
    assert evaluations(tally) == 2 * rows
    assert "8 sorted partitions cut every 80 rows" in project.log_text()
    assert "seconds: sample " in project.log_text()

    per_file = [r[1] for r in project.rows(
        f"select _metadata.file_path, count(*) from {project.table(name)} group by 1")]
    partitions = 8  # 4 per core on local[2]
    assert sum(per_file) == rows
    assert max(per_file) == rows // file_count
    # Each partition ends in one short file at most; a cut among equal keys moves a few
    # rows to the next partition.
    assert abs(len(per_file) - file_count) <= partitions
    assert sum(n == rows // file_count for n in per_file) >= file_count - 2 * partitions
    assert project.rows(f"select * from {project.table(name)}") == project.rows(
        f"select id as a, cast(pmod(hash(id), 97) as int) as b from range({rows})")


def test_a_rebuild_samples_knowing_the_tables_last_size_and_keeps_every_row(
        layouts: DbtProject, tally: Path) -> None:
    """A rebuild reads the replaced table's stored row count before it samples (it drops
    rows drawn far above the sample's share early); still two passes, every row once."""
    project = layouts
    rows = 6000
    project.write("models/passes/rebuilt.sql", f"""
        {{{{ config(materialized='table', hilbert_by=['a', 'b'], file_count=20,
                    boundary_count=32) }}}}
        select zspark_test_tally(id) as a, cast(pmod(hash(id), 97) as int) as b
        from range({rows}) input
    """)
    project.dbt("run", "--select", "rebuilt")
    assert "rows at its last build" not in project.log_text()
    evaluations(tally)
    project.dbt("run", "--select", "rebuilt")
    assert f"sampling input ({rows} rows at its last build)" in project.log_text()
    assert evaluations(tally) == 2 * rows
    assert project.rows(f"select * from {project.table('rebuilt')}") == project.rows(
        f"select id as a, cast(pmod(hash(id), 97) as int) as b from range({rows})")


def test_a_partitioned_build_runs_twice_and_cuts_each_partition_into_full_files(
        layouts: DbtProject, tally: Path) -> None:
    """partition_by: the same two passes; every table partition (NULL too) is clustered on
    its own and cut into files of the same row count."""
    project = layouts
    rows, file_count = 6000, 75
    project.write("models/passes/two_pass_parted.sql", f"""
        {{{{ config(materialized='table', partition_by=['p'], hilbert_by=['a', 'b'],
                    file_count={file_count}, boundary_count=32) }}}}
        select zspark_test_tally(id) as a, cast(pmod(hash(id), 97) as int) as b,
               case when id < 3000 then 'x' when id < 5000 then 'y'
                    when id < 5800 then 'z' end as p
        from (select id from {{{{ ref('build_source') }}}} where id < {rows}) input
    """)
    evaluations(tally)
    project.dbt("run", "--select", "two_pass_parted")
    assert evaluations(tally) == 2 * rows
    assert "8 sorted partitions cut every 80 rows" in project.log_text()

    table = project.table("two_pass_parted")
    assert dict(project.rows(f"select p, count(*) from {table} group by p")) == {
        None: 200, "x": 3000, "y": 2000, "z": 800}
    files = project.spark.sql(
        f"select _metadata.file_path, p, count(*) as n, min(a) as low, max(a) as high "
        f"from {table} group by 1, 2").toPandas()
    assert files.groupby("file_path")["p"].nunique(dropna=False).max() == 1
    assert files["n"].max() == rows // file_count
    partitions, table_partitions = 8, 4
    assert len(files) <= file_count + partitions + table_partitions
    assert (files["n"] == rows // file_count).sum() >= file_count - 2 * (
        partitions + table_partitions)
    # Files are clustered inside their partition: each spans a small part of its `a` range.
    by_partition = files.groupby("p", dropna=False)
    full = by_partition["high"].transform("max") - by_partition["low"].transform("min")
    assert ((files["high"] - files["low"]) / full).mean() < 0.5
    assert project.rows(f"select a, b from {table}") == project.rows(
        f"select id as a, cast(pmod(hash(id), 97) as int) as b from range({rows})")


def _staged_then_renamed(project: DbtProject, name: str,
                         location: Path | None = None) -> tuple[str, str, Any]:
    """A 300-row table of 3 files (in ``location``, else managed) named ``<name>_new``, its
    index rows read, then renamed to ``name``: the table, the staged location, the rows."""
    from dbt.adapters.zspark.reach.session.index_tables import read_index, table_location

    spark = project.spark
    staging, table = project.table(f"{name}_new"), project.table(name)
    spark.sql(f"create database if not exists {table.split('.')[0]}")
    spark.sql(f"drop table if exists {table}")
    placed = f"location '{location}' " if location else ""
    spark.sql(f"create table {staging} using parquet {placed}as "
              f"select /*+ REPARTITION(3) */ id, id % 7 as k from range(300)")
    staged_location = table_location(spark, staging)
    rows = read_index(spark, staging, clustering=["k"])
    spark.sql(f"alter table {staging} rename to {table}")
    return table, staged_location, rows


def _assert_index_read_anew_is(project: DbtProject, table: str, written: Any) -> None:
    """``<table>__zindex`` (``written``: its summary) holds what reading every footer of
    ``table`` again writes, row for row."""
    from dbt.adapters.zspark.reach.session.index_tables import build_index

    spark = project.spark
    assert written is not None
    assert (written.files, written.rows) == (3, 300)
    fresh = build_index(spark, table, f"{table}__fresh", clustering=["k"])
    columns = "file_path, file_size, file_mtime, row_group, row_count, k__min, k__max"
    ordered = "order by file_path, row_group nulls first"
    assert spark.sql(f"select {columns} from {table}__zindex {ordered}").collect() == \
        spark.sql(f"select {columns} from {table}__fresh {ordered}").collect()
    assert (fresh.files, fresh.rows) == (written.files, written.rows)


def test_staged_index_moves_with_the_table_or_is_refused(project: DbtProject) -> None:
    """Index rows read before a rename are written for the renamed table only when their
    moved paths are exactly its files; otherwise nothing is written."""
    from dbt.adapters.zspark.reach.session.index_tables import relocate_index

    spark = project.spark
    table, staged_location, rows = _staged_then_renamed(project, "relocate")

    assert relocate_index(spark, rows, f"{table}__bad", table, staged_location + "x") is None
    assert not spark.catalog.tableExists(f"{table}__bad")

    moved = relocate_index(spark, rows, f"{table}__zindex", table, staged_location)
    _assert_index_read_anew_is(project, table, moved)


def test_staged_index_of_a_table_that_kept_its_folder_is_written_without_listing_it(
        project: DbtProject, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A build's table keeps its version folder through the swap's rename: its staged
    index is written as read, with the counts of the files read at staging, and the
    table's files are not listed or looked up again. The index equals one read anew."""
    from dbt.adapters.zspark.reach.session import index_tables

    spark = project.spark
    table, staged_location, rows = _staged_then_renamed(project, "kept", tmp_path / "version")
    assert index_tables.table_location(spark, table) == staged_location
    files = index_tables.file_rows(rows)

    def not_listed(*args: object) -> None:
        raise AssertionError("the table's files were listed again")

    monkeypatch.setattr(index_tables, "input_files", not_listed)
    monkeypatch.setattr(index_tables.HadoopFiles, "identities", not_listed)
    written = index_tables.relocate_index(spark, rows, f"{table}__zindex", table,
                                          staged_location, files)
    monkeypatch.undo()
    _assert_index_read_anew_is(project, table, written)
