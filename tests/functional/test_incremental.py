"""Clustered incremental models: new rows keyed with the stored layout, the index follows."""

from __future__ import annotations

import itertools
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from tests.functional.dbt_project import DbtProject, files_read
from tests.functional.test_executors import WITHOUT_PLUGIN

MODEL = """
{{{{ config(materialized='incremental', incremental_strategy='{strategy}',
            {layout}=['city', 'brand'], file_count=8{extra}) }}}}
select id,
       concat('CITY', lpad(cast(pmod(hash(id, 1), 50) as string), 3, '0')) as city,
       cast(pmod(hash(id, 2), 1000) as int) as brand,
       cast(id div 1000 as int) as part
from range({{{{ var('start', 0) }}}}, {{{{ var('stop', 4000) }}}})
"""


def source_rows(project: DbtProject, *ranges: tuple[int, int]) -> list[tuple[Any, ...]]:
    union = " union all ".join(
        f"select id, concat('CITY', lpad(cast(pmod(hash(id, 1), 50) as string), 3, '0')), "
        f"cast(pmod(hash(id, 2), 1000) as int), cast(id div 1000 as int) "
        f"from range({start}, {stop})" for start, stop in ranges)
    return project.rows(union)


def write_model(project: DbtProject, name: str, strategy: str = "append",
                layout: str = "hilbert_by", extra: str = "") -> str:
    project.write(f"models/incremental/{name}.sql",
                  MODEL.format(strategy=strategy, layout=layout, extra=extra))
    return project.table(name)


def run(project: DbtProject, name: str, start: int, stop: int, *flags: str,
        expect_pass: bool = True) -> None:
    project.dbt("run", "--select", name, "--vars", f"{{start: {start}, stop: {stop}}}", *flags,
                expect_pass=expect_pass)


def layout_properties(project: DbtProject, table: str, writes: bool = True) -> dict[str, str]:
    """The stored layout's table properties (``writes``: with the clustered writes)."""
    return {str(r[0]): str(r[1]) for r in project.spark.sql(f"show tblproperties {table}")
            .collect() if str(r[0]).startswith("zspark.layout")
            and (writes or not str(r[0]).endswith("clustered_writes"))}


def assert_index_equals_full_reindex(project: DbtProject, table: str,
                                     clustering: tuple[str, ...] = ("city", "brand")) -> None:
    from dbt.adapters.zspark.reach.session.index_tables import build_index

    spark = project.spark
    build_index(spark, table, f"{table}__fresh", clustering=list(clustering))
    columns = ", ".join(c for c in spark.table(f"{table}__fresh").columns)
    ordered = "order by file_path, row_group nulls first"
    spark.catalog.refreshTable(f"{table}__zindex")
    assert spark.sql(f"select {columns} from {table}__zindex {ordered}").collect() == \
        spark.sql(f"select {columns} from {table}__fresh {ordered}").collect()
    spark.sql(f"drop table {table}__fresh")


def stored_keys(table_properties: dict[str, str], path: str) -> list[int]:
    """Keys of a data file's rows, in file order, computed from the stored layout."""
    import pandas as pd

    from dbt.adapters.zspark.layouts.layout_state import StoredLayout

    stored = StoredLayout.from_properties(table_properties)
    assert stored is not None
    function = stored.key_function(stored.column_types)
    frame = pq.read_table(path.removeprefix("file:")).to_pandas()
    keys: pd.Series = function(*(frame[c] for c in stored.columns))
    return [int(k) for k in keys]


def dictionary_columns(path: str) -> list[str]:
    """The columns of a data file's first row group written with a dictionary page."""
    meta = pq.ParquetFile(path.removeprefix("file:")).metadata.row_group(0)
    return [meta.column(i).path_in_schema for i in range(meta.num_columns)
            if meta.column(i).has_dictionary_page]


def test_appended_rows_are_keyed_with_the_stored_layout_and_indexed(
        project: DbtProject) -> None:
    table = write_model(project, "inc_append", extra=", zspark_recluster=false")
    run(project, "inc_append", 0, 4000)
    first_files = set(project.files("inc_append"))
    stored = layout_properties(project, table)
    assert stored["zspark.layout.summary"].startswith("hilbert_by=[city, brand]")
    assert "0.0% of rows written since the last full clustering" in project.log_text()
    assert len(first_files) == 8

    run(project, "inc_append", 4000, 5000)
    assert "keyed with the table's stored layout" in project.log_text()
    assert "20.0% of rows written since the last full clustering" in project.log_text()
    assert project.rows(f"select * from {table}") == source_rows(project, (0, 5000))
    assert layout_properties(project, table) == stored
    new_files = sorted(set(project.files("inc_append")) - first_files)
    assert set(project.files("inc_append")) >= first_files
    # 1000 rows in files of the table's 500 rows: two files, a third if a cut falls short.
    assert 2 <= len(new_files) <= 3
    ranges = []
    for path in new_files:
        keys = stored_keys(stored, path)
        assert len(keys) <= 500
        assert keys == sorted(keys)  # written in the order of the stored layout's key
        ranges.append((keys[0], keys[-1]))
    ranges.sort()
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(ranges))
    # The clustered base carries Parquet dictionaries; a pending run's small files do not.
    assert all(dictionary_columns(path) for path in first_files)
    assert not any(dictionary_columns(path) for path in new_files)
    assert_index_equals_full_reindex(project, table)

    predicate = "city = 'CITY007'"
    relation = "ref('inc_append')"
    compiled = project.dbt("compile", "--inline",
                           f'select * from {{{{ zspark_scan({relation}, "{predicate}") }}}} t')
    scan = str(compiled.results[0].node.compiled_code)
    rows, opened = files_read(project.spark, scan)
    assert project.rows(scan) == project.rows(f"select * from {table} where {predicate}")
    assert rows > 0
    assert opened < len(first_files) + len(new_files)

    index_before = project.spark.table(f"{table}__zindex").collect()
    run(project, "inc_append", 5000, 5000)  # nothing new
    assert "no rows written; table, layout and index unchanged" in project.log_text()
    project.spark.catalog.refreshTable(f"{table}__zindex")
    assert project.spark.table(f"{table}__zindex").collect() == index_before


def test_insert_overwrite_replaces_partitions_and_their_index_rows(
        project: DbtProject) -> None:
    table = write_model(project, "inc_parts", strategy="insert_overwrite",
                        extra=", partition_by=['part']")
    run(project, "inc_parts", 0, 3000)
    before = set(project.files("inc_parts"))
    run(project, "inc_parts", 2500, 4000)  # replaces partition 2, adds partition 3
    assert project.rows(f"select * from {table}") == \
        source_rows(project, (0, 2000), (2500, 4000))
    after = set(project.files("inc_parts"))
    replaced = before - after
    assert replaced
    assert all("part=2" in path for path in replaced)
    assert all("part=0" in p or "part=1" in p for p in before & after)
    assert_index_equals_full_reindex(project, table)


def test_insert_overwrite_without_partitions_replaces_the_table(project: DbtProject) -> None:
    table = write_model(project, "inc_whole", strategy="insert_overwrite")
    run(project, "inc_whole", 0, 4000)
    stored = layout_properties(project, table, writes=False)
    run(project, "inc_whole", 1000, 2000)
    assert project.rows(f"select * from {table}") == source_rows(project, (1000, 2000))
    assert layout_properties(project, table, writes=False) == stored
    # The overwrite wrote the whole table sorted: nothing is pending.
    assert "0.0% of rows written since the last full clustering" in project.log_text()
    assert_index_equals_full_reindex(project, table)


def test_a_changed_layout_is_refused_until_a_full_refresh(project: DbtProject) -> None:
    table = write_model(project, "inc_drift")
    run(project, "inc_drift", 0, 2000)
    rows = project.rows(f"select * from {table}")

    write_model(project, "inc_drift", layout="zorder_by")
    run(project, "inc_drift", 2000, 3000, expect_pass=False)
    text = project.log_text()
    assert "Model 'inc_drift': the clustering config no longer matches the layout stored" in text
    assert "clustered with hilbert_by=[city, brand]" in text
    assert "dbt run --full-refresh --select inc_drift" in text
    assert project.rows(f"select * from {table}") == rows

    run(project, "inc_drift", 0, 3000, "--full-refresh")
    assert layout_properties(project, table)["zspark.layout.summary"].startswith(
        "zorder_by=[city, brand]")
    assert project.rows(f"select * from {table}") == source_rows(project, (0, 3000))
    assert_index_equals_full_reindex(project, table)


@pytest.mark.parametrize(("case", "extra", "message"), [
    ("inc_orc", ", file_format='orc'",
     "Model 'inc_orc': config 'file_format' is 'orc' on a clustered incremental model. "
     "Allowed: 'parquet', 'delta', 'iceberg'."),
])
def test_unsupported_incremental_settings_are_refused(project: DbtProject, case: str,
                                                      extra: str, message: str) -> None:
    write_model(project, case, extra=extra)
    run(project, case, 0, 100, expect_pass=False)
    assert message in project.log_text()
    assert not project.spark.catalog.tableExists(project.table(case))


def test_unclustered_incremental_models_are_dbt_sparks(project: DbtProject) -> None:
    project.write("models/incremental/inc_plain.sql", """
        {{ config(materialized='incremental') }}
        select id from range({{ var('start', 0) }}, {{ var('stop', 10) }})
    """)
    run(project, "inc_plain", 0, 10)
    run(project, "inc_plain", 10, 15)
    assert project.rows(f"select * from {project.table('inc_plain')}") == \
        project.rows("select id from range(15)")
    assert not project.spark.catalog.tableExists(project.table("inc_plain__zindex"))


NEW_PROCESS_RUN = textwrap.dedent("""
    import json, sys
    from dbt.cli.main import dbtRunner
    from dbt.adapters.zspark.reach.session.embedded import active_session

    project, start, stop = sys.argv[1], sys.argv[2], sys.argv[3]
    def detail(event):  # the adapter's lines, its debug log's included
        if event.info.msg.startswith("zspark"):
            print(f"[{event.info.level}] {event.info.msg}")
    result = dbtRunner(callbacks=[detail]).invoke([
        "run", "--project-dir", project, "--profiles-dir", project,
        "--vars", f"{{start: {start}, stop: {stop}}}"])
    assert result.success, result.exception
    spark = active_session()
    properties = {r[0]: r[1] for r in spark.sql("show tblproperties zspark_test.inc").collect()}
    spark.catalog.refreshTable("zspark_test.inc")
    print("RESULT " + json.dumps({"properties": properties,
                                  "files": spark.table("zspark_test.inc").inputFiles()}))
""")


def test_a_new_process_finds_the_stored_layout(tmp_path: Path) -> None:
    """Each run is its own process with its own Spark, and the executors' Python cannot
    import the plugin: the second run's keys come from the metastore alone."""
    project = tmp_path / "project"
    (project / "models").mkdir(parents=True)
    (project / "dbt_project.yml").write_text(
        "name: inc_new_process\nversion: '1.0'\nconfig-version: 2\nprofile: inc\n")
    (project / "profiles.yml").write_text(textwrap.dedent(f"""
        inc:
          target: dev
          outputs:
            dev: {{type: zspark, method: session, schema: zspark_test,
                  session_dir: {tmp_path / 'session'}}}
    """))
    (project / "models" / "inc.sql").write_text(
        MODEL.format(strategy="append", layout="hilbert_by",
                     extra=", zspark_sort_appends=true"))
    python = tmp_path / "python-without-plugin"
    python.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{WITHOUT_PLUGIN}" "$@"\n')
    python.chmod(0o755)
    env = {**os.environ, "PYSPARK_PYTHON": str(python), "SPARK_LOCAL_IP": "127.0.0.1"}

    runs = []
    for start, stop in ((0, 4000), (4000, 5000)):
        result = subprocess.run([sys.executable, "-c", NEW_PROCESS_RUN, str(project),
                                 str(start), str(stop)], cwd=tmp_path, env=env,
                                capture_output=True, text=True, timeout=600, check=False)
        assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]
        line = next(x for x in result.stdout.splitlines() if x.startswith("RESULT "))
        runs.append(json.loads(line.removeprefix("RESULT ")))
    assert "keyed with the table's stored layout" in result.stdout
    # Each process says on the console that Spark starts, and the seconds it took.
    assert "[info] zspark adapter: zspark: starting Spark (local" in result.stdout, \
        result.stdout
    assert re.search(r"^\[info\] zspark adapter: zspark: Spark 4[\d.]+ started in [\d.]+ s$",
                     result.stdout, re.MULTILINE), result.stdout

    first, second = runs
    assert first["properties"] == second["properties"]
    new_files = sorted(set(second["files"]) - set(first["files"]))
    assert set(second["files"]) >= set(first["files"])
    # The default policy writes the new rows as pieces: narrow, disjoint key ranges.
    assert len(new_files) >= 2
    ranges = []
    for path in new_files:
        keys = stored_keys(second["properties"], path)
        assert keys == sorted(keys)
        ranges.append((keys[0], keys[-1]))
    ranges.sort()
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(ranges))
    ids = sorted(i for path in second["files"]
                 for i in pq.read_table(path.removeprefix("file:"), columns=["id"])["id"]
                 .to_pylist())
    assert ids == list(range(5000))


def assert_scan_equals_plain_filter(project: DbtProject, model: str) -> None:
    """``zspark_scan`` returns the plain filter's rows, for a predicate on each clustering
    column (one compile: each predicate's rows tagged with its number)."""
    predicates = ("city = 'CITY007'", "brand = 42")
    scans, plain = [], []
    for number, predicate in enumerate(predicates):
        escaped = predicate.replace("'", "\\'")
        scans.append(f"select {number} as zspark_predicate, * from "
                     f"{{{{ zspark_scan(ref('{model}'), '{escaped}') }}}} t{number}")
        plain.append(f"select {number} as zspark_predicate, * from {project.table(model)} "
                     f"where {predicate}")
    compiled = project.dbt("compile", "--inline", " union all ".join(scans))
    scan = str(compiled.results[0].node.compiled_code)
    assert project.rows(scan) == project.rows(" union all ".join(plain))


def test_the_default_policy_appends_pieces_merges_runs_and_reclusters_in_full(
        project: DbtProject) -> None:
    """Base of 4000 rows in 8 files (500 rows each), then appends of 400 rows: pieces (at
    most a quarter of a rebuild's files), the fourth run of that size merging the three
    before it, a full re-clustering once pending rows reach half the base."""
    table = write_model(project, "inc_policy")
    run(project, "inc_policy", 0, 4000)
    expected = ["append", "append", "append", "merge", "full"]
    for step, action in enumerate(expected):
        start = 4000 + 400 * step
        before = file_names(project, "inc_policy")
        run(project, "inc_policy", start, start + 400)
        text = project.log_text()
        assert f"inc_policy: {action} (" in text
        # The console: one short line saying what the run did, files, rows and skips.
        said = [line.removeprefix("zspark adapter: ") for line in project.console
                if line.startswith("zspark adapter: inc_policy:")]
        words = {"append": r"appended unsorted, for a later merge to cluster: ",
                 "merge": r"appended; \d+ pending files re-clustered with the new rows: ",
                 "full": r"appended; the whole table re-clustered: "}[action]
        assert len(said) == 1, said
        assert re.match(f"inc_policy: {words}", said[0]), said
        assert re.search(r"files, \d[\d,]* rows; a point query skips \d+% of files on ", said[0])
        if action == "full":
            assert "0.0% of rows written since the last full clustering" in text
        assert project.rows(f"select * from {table}") == source_rows(project, (0, start + 400))
        after = file_names(project, "inc_policy")
        assert len(after) <= 2 * -(-(start + 400) // 500)
        if action != "full":  # the base's files are carried into each version unchanged
            assert len(before & after) >= 8
        assert_index_equals_full_reindex(project, table)
        assert_scan_equals_plain_filter(project, "inc_policy")
        assert not project.spark.catalog.tableExists(project.table("inc_policy__zspark_new"))


def test_appends_land_as_written_and_their_tier_merge_clusters_them(
        project: DbtProject) -> None:
    """``zspark_sort_appends: false``: appends of 400 rows onto a base of 4000 land as
    the model gives them (a file or two, unsorted, no key computed for their rows), each a
    pending run; the fourth run of that size merges the three before it into narrow
    pieces sorted by the key, and the landed files are gone. Rows, index and
    ``zspark_scan`` exact throughout."""
    table = write_model(project, "inc_landed", extra=", zspark_sort_appends=false")
    run(project, "inc_landed", 0, 4000)
    base = file_names(project, "inc_landed")
    landed: set[str] = set()
    for step, action in enumerate(["append", "append", "append", "merge"]):
        start = 4000 + 400 * step
        before = file_names(project, "inc_landed")
        run(project, "inc_landed", start, start + 400)
        text = project.log_text()
        assert f"inc_landed: {action} (" in text
        added = file_names(project, "inc_landed") - before
        properties = layout_properties(project, table)
        paths = [p for p in project.files("inc_landed") if p.rsplit("/", 1)[1] in added]
        if action == "append":
            assert "landed as written, a pending run its tier merge clusters" in text
            assert "writing 400 rows as the model gives them, unsorted" in text
            assert 1 <= len(added) <= 2  # Spark's own files, not 400 rows' worth of pieces
            # A pending run, rewritten at its merge: no dictionaries, as pieces.
            assert not any(dictionary_columns(path) for path in paths)
            keys = [k for path in paths for k in stored_keys(properties, path)]
            assert len(keys) == 400
            assert keys != sorted(keys)
            landed |= added
        else:
            assert not landed & file_names(project, "inc_landed")  # merged, rewritten
            for path in paths:
                keys = stored_keys(properties, path)
                assert keys == sorted(keys)
        assert base <= file_names(project, "inc_landed")
        assert project.rows(f"select * from {table}") == source_rows(project, (0, start + 400))
        assert_index_equals_full_reindex(project, table)
        assert_scan_equals_plain_filter(project, "inc_landed")


def names(paths: set[str]) -> set[str]:
    """The names of data files: a file carried into the table's next version keeps its
    name, in the next version's folder."""
    return {path.rsplit("/", 1)[1] for path in paths}


def file_names(project: DbtProject, name: str) -> set[str]:
    return names(set(project.files(name)))


def partition_files(project: DbtProject, name: str) -> dict[int, set[str]]:
    files: dict[int, set[str]] = {}
    for path in project.files(name):
        part = int(re.search(r"/part=(\d+)/", path).group(1))  # type: ignore[union-attr]
        files.setdefault(part, set()).add(path)
    return files


def test_a_partitioned_table_reclusters_only_the_partitions_that_received_rows(
        project: DbtProject) -> None:
    """Table partitions of 1000 ids, 500 rows per file. The first rows of partition 4 are
    its clustered base; later appends to it land as written, then merge, then partition 4 alone
    is re-clustered; partitions 0-3 keep their files throughout. (Runs merge two at a
    time: ``zspark_recluster_runs=2``.)"""
    table = write_model(project, "inc_policy_parts",
                        extra=", partition_by=['part'], zspark_recluster_runs=2")
    run(project, "inc_policy_parts", 0, 4000)
    base = partition_files(project, "inc_policy_parts")
    assert sorted(base) == [0, 1, 2, 3]
    steps = [(4000, 4500, "append (no rows yet where the new rows land", "0.0%"),
             (4500, 4600, "append (landed as written", "2.2%"),
             (4600, 4700, "merge (", "4.3%"),
             (4700, 4800, "full (pending rows (300) reach 50%", "0.0%"),
             (4800, 5100, "append (", None)]  # rows for partitions 4 and 5 (new)
    for start, stop, action, pending in steps:
        run(project, "inc_policy_parts", start, stop)
        text = project.log_text()
        assert f"inc_policy_parts: {action}" in text
        if pending is not None:
            assert f"{pending} of rows written since the last full clustering" in text
        assert project.rows(f"select * from {table}") == source_rows(project, (0, stop))
        files = partition_files(project, "inc_policy_parts")
        # partitions 0-3 never rewritten: their files carried as they are
        assert {k: names(files[k]) for k in base} == {k: names(v) for k, v in base.items()}
        assert sum(map(len, files.values())) <= 2 * -(-stop // 500)
        assert_index_equals_full_reindex(project, table)
        assert_scan_equals_plain_filter(project, "inc_policy_parts")


@pytest.mark.parametrize("earlier_build", [False, True])
def test_many_pieces_are_written_by_few_sorted_partitions_within_their_file_budget(
        project: DbtProject, earlier_build: bool) -> None:
    """A base of 320 files of 125 rows, then 5000 new rows: 90 pieces (a quarter of a
    rebuild's files; pieces of an eighth of a file would be 334), written by a few
    key-range partitions each cut into files by row count (not a task per file), never
    more files than planned; each piece sorted by the key, the pieces'
    ranges disjoint. A table that still carries rows per file as its own writer option
    (earlier builds of the plugin set one) gets a partition per piece instead."""
    name = f"inc_many_{int(earlier_build)}"
    project.write(f"models/incremental/{name}.sql", MODEL.format(
        strategy="append", layout="hilbert_by", extra=", zspark_sort_appends=true"
    ).replace("file_count=8", "file_count=320"))
    table = project.table(name)
    run(project, name, 0, 40_000)
    if earlier_build:
        project.spark.sql(f"alter table {table} set serdeproperties ('maxRecordsPerFile'='125')")
    before = set(project.files(name))
    run(project, name, 40_000, 45_000)
    text = project.log_text()
    assert f"{name}: append (90 pieces fit" in text
    how = "one file per partition" if earlier_build else "8 sorted partitions cut every 61 rows"
    assert f"writing 5000 rows into 90 files ({how}, keyed with" in text
    added = sorted(set(project.files(name)) - before)
    assert len(added) == 90 if earlier_build else 80 <= len(added) <= 90
    properties = layout_properties(project, table)
    ranges = []
    for path in added:
        keys = stored_keys(properties, path)
        assert keys == sorted(keys)
        ranges.append((keys[0], keys[-1]))
    ranges.sort()
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(ranges))
    assert project.rows(f"select * from {table}") == source_rows(project, (0, 45_000))
    assert_index_equals_full_reindex(project, table)


def test_recluster_on_demand_merges_pending_runs_and_is_a_no_op_after(
        project: DbtProject) -> None:
    table = write_model(project, "inc_demand")
    run(project, "inc_demand", 0, 4000)
    run(project, "inc_demand", 4000, 4300)
    run(project, "inc_demand", 4300, 4600)
    assert "inc_demand: append (" in project.log_text()
    before = project.rows(f"select * from {table}")
    files_before = file_names(project, "inc_demand")

    picture = project.root / "target" / "demand.png"
    project.dbt("run-operation", "zspark_layout_report", "--args",
                f"{{relation: {table}, path: '{picture}'}}")
    text = project.log_text()
    assert "column  files  depth  rebuild_depth  skip_share" in text
    assert re.search(r"\ncity\s+\d+\s+[\d.]+", text)
    assert re.search(r"\nbrand\s+\d+\s+[\d.]+", text)
    assert "4600 rows; 13.0% of rows written since the last full clustering" in text
    assert picture.read_bytes().startswith(b"\x89PNG")
    # The picture's sample query opens exactly the files whose bounds in the index hold it.
    probe = re.search(r"city = '(CITY\d+)' opens (\d+) of (\d+) files", text)
    assert probe is not None
    project.spark.catalog.refreshTable(f"{table}__zindex")
    assert [int(probe[2]), int(probe[3])] == list(project.spark.sql(
        f"select count_if(city__min <= '{probe[1]}' and '{probe[1]}' <= city__max), count(1) "
        f"from {table}__zindex where row_group is null").collect()[0])

    project.dbt("run-operation", "zspark_recluster", "--args", f"{{relation: {table}}}")
    assert "inc_demand: merge (2 pending runs merged into one)" in project.log_text()
    assert project.rows(f"select * from {table}") == before
    after = set(project.files("inc_demand"))
    base = files_before & file_names(project, "inc_demand")
    assert len(base) == 8  # the base's files are carried, untouched
    assert_index_equals_full_reindex(project, table)

    project.dbt("run-operation", "zspark_recluster", "--args", f"{{relation: {table}}}")
    assert "inc_demand: none (" in project.log_text()
    assert set(project.files("inc_demand")) == after

    project.dbt("run-operation", "zspark_recluster", "--args",
                f"{{relation: {table}, full: true}}")
    assert "inc_demand: full (" in project.log_text()
    assert project.rows(f"select * from {table}") == before
    assert not set(project.files("inc_demand")) & after
    assert_index_equals_full_reindex(project, table)
    assert_scan_equals_plain_filter(project, "inc_demand")


def snapshot(project: DbtProject, table: str) -> tuple[Any, ...]:
    """Rows, files and index rows of a table, to compare before and after a failure."""
    project.spark.catalog.refreshTable(f"{table}__zindex")
    index = project.spark.sql(f"select * from {table}__zindex "
                              f"order by file_path, row_group nulls first").collect()
    name = table.split(".")[-1]
    return (project.rows(f"select * from {table}"), sorted(project.files(name)), index)


@pytest.mark.parametrize("where", ["writing", "checking"])
def test_a_failed_rewrite_leaves_the_table_and_its_index_as_they_were(
        project: DbtProject, monkeypatch: pytest.MonkeyPatch, where: str) -> None:
    from dbt.adapters.zspark.reach.session.next_version import SessionVersion

    name = f"inc_broken_{where}"
    table = project.table(name)
    breakable = MODEL.replace("select id,", "select case when {{{{ var('break_it', false) }}}} "
                                            "and id = 4450 then raise_error('injected') "
                                            "else id end as id,")
    project.write(f"models/incremental/{name}.sql",
                  breakable.format(strategy="append", layout="hilbert_by",
                                   extra=", zspark_recluster_runs=2"))
    run(project, name, 0, 4000)
    run(project, name, 4000, 4400)  # pieces; the next run merges with them
    before = snapshot(project, table)

    if where == "checking":
        carry = SessionVersion.carry

        def carry_then_fail(*args: Any) -> Any:
            carry(*args)
            raise RuntimeError("injected failure after the rows were checked")

        monkeypatch.setattr(SessionVersion, "carry", carry_then_fail)
        run(project, name, 4400, 4800, expect_pass=False)
        monkeypatch.undo()
    else:
        project.dbt("run", "--select", name, "--vars",
                    "{start: 4400, stop: 4800, break_it: true}", expect_pass=False)
    assert "merge (" in project.log_text()
    assert snapshot(project, table) == before

    run(project, name, 4400, 4800)  # the next run drops the leftovers and merges
    assert "merge (" in project.log_text()
    assert project.rows(f"select * from {table}") == source_rows(project, (0, 4800))
    for leftover in ("__zspark_new", "__zspark_batch"):
        assert not project.spark.catalog.tableExists(f"{table}{leftover}")
    assert_index_equals_full_reindex(project, table)


def assert_files_follow_the_stored_key(project: DbtProject, name: str, paths: set[str]) -> None:
    """Every file's rows sorted by the key of the layout stored with the table."""
    properties = layout_properties(project, project.table(name))
    for path in paths:
        keys = stored_keys(properties, path)
        assert keys == sorted(keys), path


def test_a_balanced_incremental_model_keys_new_rows_with_its_stored_tree(
        project: DbtProject) -> None:
    """balanced_by on an incremental model: the first build fits the tree and stores it;
    appends are keyed with that tree (pieces sorted by its key), merges keep it, and a
    full re-clustering on demand fits a new tree with the stored weights."""
    table = write_model(project, "inc_balanced", layout="balanced_by",
                        extra=", cluster_weights={'city': 3, 'brand': 1}, "
                              "zspark_recluster_runs=2, zspark_sort_appends=true")
    run(project, "inc_balanced", 0, 4000)
    assert re.search(r"inc_balanced: balanced layout: \d+ groups, fan-out city \d+",
                     project.log_text())
    stored = layout_properties(project, table, writes=False)
    assert stored["zspark.layout.summary"].startswith("balanced_by=[city, brand]")
    base = set(project.files("inc_balanced"))
    assert_files_follow_the_stored_key(project, "inc_balanced", base)

    for step, action in enumerate(["append", "merge"]):
        start = 4000 + 400 * step
        before = set(project.files("inc_balanced"))
        run(project, "inc_balanced", start, start + 400)
        text = project.log_text()
        assert f"inc_balanced: {action} (" in text
        assert "balanced layout:" not in text  # the stored tree keys new rows: no new fit
        assert layout_properties(project, table, writes=False) == stored
        assert project.rows(f"select * from {table}") == source_rows(project, (0, start + 400))
        after = set(project.files("inc_balanced"))
        assert names(base) <= names(after)
        assert_files_follow_the_stored_key(project, "inc_balanced", {
            p for p in after if p.rsplit("/", 1)[1] not in names(before)})
        assert_index_equals_full_reindex(project, table)
        assert_scan_equals_plain_filter(project, "inc_balanced")

    kept = project.rows(f"select * from {table}")
    project.dbt("run-operation", "zspark_recluster", "--args",
                f"{{relation: {table}, full: true}}")
    text = project.log_text()
    assert "inc_balanced: full (" in text
    assert re.search(r"balanced layout: \d+ groups, .*\(weights city 3, brand 1[;)]", text)
    assert project.rows(f"select * from {table}") == kept
    assert not set(project.files("inc_balanced")) & base
    assert_files_follow_the_stored_key(project, "inc_balanced", set(project.files("inc_balanced")))
    assert_index_equals_full_reindex(project, table)
    assert_scan_equals_plain_filter(project, "inc_balanced")


# Rows near a line through city, brand and store; a fifth of brand's and of store's values
# drawn at random.
CORRELATED_SELECT = """
select id, concat('CITY', lpad(cast(line div 20 as string), 3, '0')) as city,
       case when pmod(hash(id, 4), 5) = 0 then pmod(hash(id, 2), 1000)
            else line + pmod(hash(id, 5), 5) end as brand,
       case when pmod(hash(id, 6), 5) = 0 then pmod(hash(id, 3), 1000)
            else line + pmod(hash(id, 7), 5) end as store
from (select id, pmod(hash(id, 1), 1000) as line from range({start}, {stop}))
"""


def test_a_balanced_model_that_kept_the_curve_keys_appends_along_it(
        project: DbtProject) -> None:
    """The first build of correlated rows keeps the Hilbert curve over the tree and stores
    that choice; an append is keyed along the same curve with the stored boundaries (no
    new fit); rows, index and scans stay right."""
    from dbt.adapters.zspark.layouts import LAYOUTS, ColumnSpec
    from dbt.adapters.zspark.layouts.layout_state import StoredLayout

    project.write("models/incremental/inc_balanced_curve.sql", """
        {{ config(materialized='incremental', incremental_strategy='append',
                  balanced_by=['city', 'brand', 'store'], file_count=16,
                  zspark_sort_appends=true) }}
        """ + CORRELATED_SELECT.format(start="{{ var('start', 0) }}",
                                       stop="{{ var('stop', 6000) }}"))
    table = project.table("inc_balanced_curve")
    run(project, "inc_balanced_curve", 0, 6000)
    assert "inc_balanced_curve: balanced layout: kept the hilbert curve" in project.log_text()
    properties = layout_properties(project, table, writes=False)
    stored = StoredLayout.from_properties(properties)
    assert stored is not None
    assert stored.config_key == "balanced_by"
    tree = stored.partition_tree()
    assert tree is not None
    assert tree.curve == "hilbert"

    base = set(project.files("inc_balanced_curve"))
    run(project, "inc_balanced_curve", 6000, 6600)
    text = project.log_text()
    assert "inc_balanced_curve: append (" in text
    assert "balanced layout:" not in text
    assert layout_properties(project, table, writes=False) == properties
    after = set(project.files("inc_balanced_curve"))
    assert base < after
    assert_files_follow_the_stored_key(project, "inc_balanced_curve", after - base)
    # The stored key is the Hilbert curve's over the stored boundaries.
    specs = [ColumnSpec(c, t, b) for c, t, b in
             zip(stored.columns, stored.column_types, stored.boundaries, strict=True)]
    hilbert = LAYOUTS["hilbert_by"].key_function(specs, "boundary", stored.boundary_count)
    for path in sorted(after - base):
        frame = pq.read_table(path.removeprefix("file:")).to_pandas()
        assert stored_keys(properties, path) == \
            [int(k) for k in hilbert(*(frame[c] for c in stored.columns))]
    assert project.rows(f"select * from {table}") == \
        project.rows(CORRELATED_SELECT.format(start=0, stop=6600))
    assert_index_equals_full_reindex(project, table, ("city", "brand", "store"))
    assert_scan_equals_plain_filter(project, "inc_balanced_curve")


def test_a_partitioned_balanced_model_splits_each_partitions_share_of_files(
        project: DbtProject) -> None:
    """balanced_by with partition_by: 4 table partitions of 1000 rows and 8 files, so a
    tree of 2 files per partition; each partition's files sorted by the key, never two
    partitions in a file; an append to a new partition is keyed with the stored tree."""
    table = write_model(project, "inc_balanced_parts", layout="balanced_by",
                        extra=", partition_by=['part']")
    run(project, "inc_balanced_parts", 0, 4000)
    assert re.search(r"inc_balanced_parts: balanced layout: \d+ groups per table partition",
                     project.log_text())
    files = partition_files(project, "inc_balanced_parts")
    assert sorted(files) == [0, 1, 2, 3]
    assert all(1 <= len(paths) <= 3 for paths in files.values()), files
    everything = {p for paths in files.values() for p in paths}
    assert_files_follow_the_stored_key(project, "inc_balanced_parts", everything)
    assert_index_equals_full_reindex(project, table)

    run(project, "inc_balanced_parts", 4000, 5000)
    assert project.rows(f"select * from {table}") == source_rows(project, (0, 5000))
    after = partition_files(project, "inc_balanced_parts")
    assert {k: names(after[k]) for k in files} == {k: names(v) for k, v in files.items()}
    assert_files_follow_the_stored_key(project, "inc_balanced_parts", after[4])
    assert_index_equals_full_reindex(project, table)
    assert_scan_equals_plain_filter(project, "inc_balanced_parts")


def test_a_z_order_model_spends_its_bits_by_the_declared_workload(
        project: DbtProject) -> None:
    """cluster_weights: workload on an incremental Z-order: the skip_coverage test's
    predicate and the workload config weigh city 7 (1 + 6) and brand 1, so the three bits
    that cut the 8 files all go to city (plain Z-order gives it two); appends are keyed
    with the stored weights, and the skip_coverage test holds."""
    project.write("models/incremental/inc_zworkload.yml", """
        version: 2
        models:
          - name: inc_zworkload
            data_tests:
              - skip_coverage:
                  arguments:
                    predicates:
                      - city = '{{ var("city", "CITY007") }}'  # rendered when the test runs
                    min_skip_ratio: 0.7
    """)
    table = write_model(project, "inc_zworkload", layout="zorder_by",
                        extra=", cluster_weights='workload', workload=[{'predicate': "
                              "\"city = 'CITY002'\", 'count': 6}, 'brand = 42'], "
                              "zspark_sort_appends=true")
    run(project, "inc_zworkload", 0, 4000)
    assert ("inc_zworkload: z-order bits by weight (city 7, brand 1): of the leading 3 bits, "
            "which cut files, city 3, brand 0") in project.log_text()
    properties = layout_properties(project, table, writes=False)
    from dbt.adapters.zspark.layouts.layout_state import StoredLayout

    stored = StoredLayout.from_properties(properties)
    assert stored is not None
    assert stored.weights == (7.0, 1.0)
    assert_files_follow_the_stored_key(project, "inc_zworkload",
                                       set(project.files("inc_zworkload")))
    # Eight city ranges of about 6 cities: a city's rows sit in one file, or two where a
    # file boundary falls inside it (plain Z-order, two ranges: 2.8 files measured).
    per_city = project.spark.sql(
        f"select avg(files) from (select c.city, count(*) as files from "
        f"(select distinct city from {table}) c join {table}__zindex i on i.row_group is "
        f"null and c.city between i.city__min and i.city__max group by c.city)").first()[0]
    assert per_city < 1.6

    before = set(project.files("inc_zworkload"))
    run(project, "inc_zworkload", 4000, 4400)
    assert "inc_zworkload: append (" in project.log_text()
    assert layout_properties(project, table, writes=False) == properties
    assert project.rows(f"select * from {table}") == source_rows(project, (0, 4400))
    assert_files_follow_the_stored_key(project, "inc_zworkload",
                                       set(project.files("inc_zworkload")) - before)
    assert_index_equals_full_reindex(project, table)
    project.dbt("test", "--select", "inc_zworkload")
