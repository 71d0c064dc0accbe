"""Delta Lake and Iceberg table models through the adapter, each dbt command in a process of
its own: a profile's ``table_format`` sets the session up, or the formats' standard Spark
settings alone do; unclustered models of both formats build, rebuild (the format's own
commit: history kept) and merge; clustered ones are written through the format's writer
and skipped by its statistics; what cannot work is refused by name before anything is
written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from dbt.adapters.zspark.formats.settings import ICEBERG
from tests.functional.dbt_project import DbtProject
from tests.functional.format_project import (
    PREFIX,
    QUERY_MACRO,
    SCHEMA,
    FormatProject,
    format_scan,
    new_project,
)
from tests.functional.format_scan import BOUNDS, SAMPLE, SAMPLED_FILES

CLUSTERED_ROWS = f"""
    select id, cast(id % 50 as int) as a,
           concat('{PREFIX}', lpad(cast((id * 7) % 40 as string), 3, '0')) as s,
           cast(id % 3 as int) as p
    from range({{{{ var('rows') }}}})
"""
CLUSTERED = {
    "c_hilbert": "hilbert_by=['a', 's'], file_count=16",
    "c_zorder": "zorder_by=['a', 's'], partition_by=['p'], file_count=12",
    # The layout report after the build reads the format's statistics too.
    "c_balanced": "balanced_by=['a', 's'], file_count=16, "
                  "post_hook='{{ zspark_layout_report(this) }}'",
    # The layout chosen from the declared workload (cluster_by='auto'): a and s.
    "c_auto": "cluster_by='auto', file_count=16, "
              f"workload=['a = 17', \"s = '{PREFIX}017'\"]",
}
POINTS = ("a = 17", f"s = '{PREFIX}017'")
#: 40 columns, clustered on the last: past Delta's default of statistics on the first 32.
#: In front, a column of each type whose bounds a format keeps in a form of its own:
#: timestamps below the millisecond (Delta keeps milliseconds), long strings, decimals.
TYPED = ", ".join([
    "timestamp_micros(id * 3600000123) as ts",
    "cast(timestamp_micros(id * 7000000007) as timestamp_ntz) as tsn",
    "date_add(date'2020-01-01', cast(id % 400 as int)) as d",
    "cast(id / 7 as decimal(12, 3)) as dec",
    "cast(id as double) / 3 as dbl",
    f"concat('{PREFIX}{PREFIX}', cast(id * 13 % 997 as string)) as long_s"])
WIDE = ", ".join(f"cast(id % {i + 2} as int) as w{i}" for i in range(39))


def _project(root: Path, session_dir: Path, profile: str, file_format: str,
             settings: dict[str, str] | None = None) -> FormatProject:
    project = new_project(root, session_dir, profile, settings)
    project.write("macros/query.sql", QUERY_MACRO)
    project.write("models/f_table.sql", f"""
        {{{{ config(materialized='table', file_format='{file_format}') }}}}
        select id, id % 7 as b from range({{{{ var('n') }}}})
    """)
    project.write("models/f_merge.sql", f"""
        {{{{ config(materialized='incremental', file_format='{file_format}',
                    incremental_strategy='merge', unique_key='id') }}}}
        select id, {{{{ var('v') }}}} as v from range({{{{ var('lo') }}}}, {{{{ var('hi') }}}})
    """)
    project.write("models/f_overwrites.sql", f"""
        {{{{ config(materialized='incremental', file_format='{file_format}',
                    incremental_strategy='insert_overwrite', partition_by=['b'],
                    hilbert_by=['id'], file_count=4) }}}}
        select id, id % 7 as b, {{{{ var('v') }}}} as v from range(35)
        where id % 7 between {{{{ var('from_b', 0) }}}} and {{{{ var('to_b', 6) }}}}
    """)
    # Python models of the format: a table replaced in one commit, a merge by id.
    project.write("models/f_py_table.py", f"""
def model(dbt, session):
    dbt.config(materialized="table", file_format="{file_format}")
    return dbt.ref("f_table").selectExpr("id", "b * 10 as c")
""")
    project.write("models/f_py_merge.py", f"""
def model(dbt, session):
    dbt.config(materialized="incremental", file_format="{file_format}",
               incremental_strategy="merge", unique_key="id")
    return dbt.ref("f_merge")
""")
    # Four days of hourly events, and a microbatch model of them, a batch per day.
    project.write("models/f_events.sql", f"""
        {{{{ config(materialized='table', file_format='{file_format}', event_time='ts') }}}}
        select id, timestamp_seconds(1767225600 + id * 3600) as ts from range(96)
    """)
    project.write("models/f_batches.sql", f"""
        {{{{ config(materialized='incremental', file_format='{file_format}',
                    incremental_strategy='microbatch', event_time='ts', batch_size='day',
                    begin='2026-01-01', partition_by=['day'], hilbert_by=['id'],
                    file_count=2) }}}}
        select id, ts, to_date(ts) as day, {{{{ var('v') }}}} as v from {{{{ ref('f_events') }}}}
    """)
    for name, clustering in CLUSTERED.items():
        project.write(f"models/{name}.sql", f"""
            {{{{ config(materialized='table', file_format='{file_format}', {clustering}) }}}}
            {CLUSTERED_ROWS}
        """)
    project.write("models/c_wide.sql", f"""
        {{{{ config(materialized='table', file_format='{file_format}', hilbert_by=['w_last'],
                    file_count=8) }}}}
        select {TYPED}, {WIDE}, cast(id % 40 as int) as w_last
        from range({{{{ var('rows') }}}})
    """)
    # zspark_scan on a format table is a plain filter: the engine skips by the stats.
    project.write("models/c_points.sql", f"""
        select count(*) as n from {{{{ zspark_scan(ref('c_hilbert'), "{POINTS[1]}") }}}} t
    """)
    project.write("models/schema.yml", f"""
        version: 2
        models:
          - name: c_hilbert
            data_tests:
              - skip_coverage:
                  arguments:
                    predicates: {json.dumps(list(POINTS))}
                    min_skip_ratio: 0.5
    """)
    return project


def _builds_rebuilds_and_merges(project: FormatProject, file_format: str) -> None:
    """Two runs: the tables rebuilt with other rows, the merge updating and adding, the
    clustered tables built through the format's own writer and tested for skip coverage
    on its statistics; a clustered incremental model overwriting partitions: built, then
    two of its seven partitions replaced in one commit, their files its clustered base; a
    clustered microbatch model: four daily batches (the first builds the table, each next
    one replaces its day), then one day processed again, then two more days, killed
    (SIGKILL) after the first one's commit and run again. Then a Spark of its own reads
    the tables: rows, and the files a plain `where` opens on a point query of each
    clustering column."""
    first = project.dbt("build", "--vars", "{n: 100, lo: 0, hi: 50, v: 0, rows: 4000}",
                        "--event-time-start", "2026-01-01", "--event-time-end", "2026-01-05")
    statuses = project.statuses()
    for name in ("f_table", "f_merge", "f_overwrites", "f_events", "f_batches", "c_points",
                 "c_wide", "f_py_table", "f_py_merge", *CLUSTERED):
        assert statuses[name][0] == "success", first.stdout[-5000:]
    assert [s for n, s in statuses.items() if n.startswith("skip_coverage")] == \
        [("pass", "")], first.stdout[-5000:]
    log = " ".join(first.stdout.split())
    assert f"c_hilbert: 16 files, 4000 rows, 4 columns indexed in its {file_format} " \
        "statistics; layout:" in log, first.stdout[-5000:]
    assert "zspark_layout_report zspark_formats.c_balanced: files' boxes over a and s" in log
    assert (project.root / "target" / "zspark_layout_c_balanced.png").stat().st_size > 0
    assert "Batch 4 of 4" in log, log[-3000:]
    second = project.dbt("run", "--vars",
                         "{n: 60, lo: 25, hi: 75, v: 1, rows: 3000, from_b: 1, to_b: 2}",
                         "--event-time-start", "2026-01-02", "--event-time-end", "2026-01-03")
    assert second.returncode == 0, second.stdout[-5000:]
    log = " ".join(second.stdout.split())
    assert "files of whole partitions recorded as their clustered base" in log, log[-3000:]
    # The third and fourth days again, killed (SIGKILL) once the first batch's rows are
    # committed, before they are recorded as their day's base: run again, both batches
    # replace their day once more, every hour still once.
    third_and_fourth = ("run", "--select", "f_batches", "--vars", "{v: 2}",
                        "--event-time-start", "2026-01-03", "--event-time-end", "2026-01-05")
    killed = project.dbt(*third_and_fourth, stop_at="format:opened")
    assert killed.returncode == -9, killed.stdout[-5000:]
    again = project.dbt(*third_and_fourth)
    assert again.returncode == 0, again.stdout[-5000:]
    assert "Batch 2 of 2" in " ".join(again.stdout.split()), again.stdout[-3000:]

    queries = [f"select count(*), sum(id) from {SCHEMA}.f_table",
               f"select count(*), sum(v), sum(id) from {SCHEMA}.f_merge",
               f"select count(*), sum(v), count(distinct b) from {SCHEMA}.f_overwrites",
               f"select count(*), count(distinct id), min(id), max(id), sum(v), "
               f"min(if(v = 1, day, null)), max(if(v = 1, day, null)), "
               f"min(if(v = 2, day, null)), max(if(v = 2, day, null)), count(distinct day) "
               f"from {SCHEMA}.f_batches",
               f"select n from {SCHEMA}.c_points",
               f"select * from {SCHEMA}.c_wide", f"select * from {SCHEMA}.c_wide where w_last = 7",
               f"{BOUNDS}{SCHEMA}.c_wide", f"{BOUNDS}{SCHEMA}.c_zorder",
               f"{SAMPLE}{SCHEMA}.c_hilbert"]
    for name in CLUSTERED:
        queries += [f"select * from {SCHEMA}.{name}"]
        queries += [f"select * from {SCHEMA}.{name} where {point}" for point in POINTS]
    queries += [f"select count(*), sum(c) from {SCHEMA}.f_py_table",
                f"select count(*), sum(v), sum(id) from {SCHEMA}.f_py_merge"]
    found = format_scan(file_format, project.session_dir, queries)
    # The Python models: the table rebuilt from f_table's 60 rows, the merge equal to
    # f_merge (ids 0..74, 50 of them updated to v = 1).
    assert found[-2][2] == ["60", str(10 * sum(i % 7 for i in range(60)))]
    assert found[-1][2] == ["75", "50", str(sum(range(75)))]
    assert found[0][2] == ["60", "1770"]
    assert found[1][2] == ["75", "50", str(sum(range(75)))]
    # Partitions 1 and 2 replaced (their 10 rows with v = 1), the other five kept.
    assert found[2][2] == ["35", "10", "7"]
    # Every hour once; the second day's 24 rows replaced by its batch run again (v = 1),
    # the third and fourth days' by theirs (v = 2).
    assert found.pop(3)[2] == ["96", "96", "0", "95", str(24 + 48 * 2), "2026-01-02",
                               "2026-01-02", "2026-01-03", "2026-01-04", "4"]
    assert found[3][2] == ["75"]
    # The 40th column's statistics are kept: a point on it opens one file of eight.
    assert found[4][0] == 3000
    assert found[5][:2] == [75, 1], found[4:6]
    # Every bound read from the format's statistics holds the file's rows (a partitioned
    # table's partition values included), on all 46 columns of the wide table.
    assert found[6][0] == 8
    assert found[6][1:] == [0, found[6][2]]
    assert len(found[6][2]) == 46
    assert found[7][0] > 0
    assert found[7][1] == 0, found[7]
    # An advice's sample of a table of more files than its bound opens only the files
    # it chose (the format's data files read as Parquet), and counts their rows exactly.
    live, opened, sampled, through_table = found.pop(8)
    assert live > SAMPLED_FILES, live
    assert opened == SAMPLED_FILES, opened
    assert 0 < sampled == through_table < 3000, (sampled, through_table)
    for i, name in enumerate(CLUSTERED):
        (rows, files, _), *points = found[8 + 3 * i: 11 + 3 * i]
        assert rows == 3000, name
        # 3000 rows: `a` takes 50 values (60 rows each), `s` 40 (75 each); the engine
        # skips, by the format's statistics, at least half of the files of every point.
        assert [p[0] for p in points] == [60, 75], name
        assert all(0 < p[1] <= files // 2 for p in points), (name, files, points)


@pytest.mark.slow
@pytest.mark.usefixtures("jars")
def test_a_delta_profile_builds_rebuilds_and_merges_keeping_the_tables_history(
        tmp_path: Path) -> None:
    """``table_format: delta``: the rebuilt table is a new version of the same Delta
    table (read back here by delta-rs, another engine): time travel to the first build
    gives its 100 rows."""
    from deltalake import DeltaTable

    session_dir = tmp_path / "session"
    project = _project(tmp_path / "project", session_dir, "table_format: delta", "delta")
    _builds_rebuilds_and_merges(project, "delta")
    for name, rows in (("f_table", (100, 60)), ("f_py_table", (100, 60)),
                       ("c_hilbert", (4000, 3000))):
        table = DeltaTable(str(session_dir / "warehouse" / f"{SCHEMA}.db" / name))
        assert table.version() >= 1
        assert table.to_pyarrow_table().num_rows == rows[1]
        table.load_as_version(0)
        assert table.to_pyarrow_table().num_rows == rows[0]


@pytest.mark.slow
@pytest.mark.usefixtures("jars")
def test_iceberg_by_its_standard_spark_settings_alone_builds_rebuilds_and_merges(
        tmp_path: Path) -> None:
    """No ``table_format`` line: the jar and Iceberg's own settings in
    server_side_parameters. A rebuild is a new snapshot of the same table (it used to
    rename a staging table whose files the next build deleted)."""
    settings = {"spark.jars": ",".join(str(j) for j in ICEBERG.jar_files()),
                **ICEBERG.settings}
    project = _project(tmp_path / "project", tmp_path / "session", "", "iceberg", settings)
    _builds_rebuilds_and_merges(project, "iceberg")
    # Every snapshot is kept, the first build's rows with it: time travel reaches them.
    for name, rows in (("f_table", [100, 60]), ("f_py_table", [100, 60]),
                       ("c_hilbert", [4000, 3000])):
        records = project.query(f"select summary['total-records'] from {SCHEMA}.{name}"
                                f".snapshots order by committed_at")
        assert [int(r[0]) for r in records] == rows


def test_a_model_whose_format_the_session_cannot_write_is_refused_before_writing(
        project: DbtProject) -> None:
    """The shared session has no Delta: the model fails naming its format and the
    profile line that enables it, and no table of that name appears."""
    project.write("models/formats/needs_delta.sql", """
        {{ config(materialized='table', file_format='delta') }}
        select 1 as id
    """)
    project.dbt("run", "--select", "needs_delta", expect_pass=False)
    text = " ".join(project.log_text().split())
    assert ("Model 'needs_delta': config 'file_format' is 'delta', which this session "
            "cannot write") in text
    assert "`table_format: delta`" in text
    assert not project.spark.catalog.tableExists(project.table("needs_delta"))


@pytest.mark.slow
@pytest.mark.usefixtures("jars")
@pytest.mark.parametrize("file_format", ["delta", "iceberg"])
def test_a_replacement_commit_keeps_a_concurrent_writer_and_the_history(
        tmp_path: Path, file_format: str) -> None:
    """``replace_files`` (a re-clustering's commit) in a Spark of its own: two of three
    files replaced by their rows (read from those files alone) sorted anew while another
    insert commits in between. One
    commit that changes no data (Delta: OPTIMIZE; Iceberg: replace); every row once, the
    other writer's rows kept; time travel to the version before gives its rows; a second
    replacement of the same, now gone, files is refused and commits nothing. Then table
    properties made of the new files, set by the replacing commit itself."""
    done = subprocess.run(
        [sys.executable, "-m", "tests.functional.format_replace", file_format,
         str(tmp_path / "session")],
        capture_output=True, text=True, timeout=600, cwd=Path(__file__).parents[2],
        env={**os.environ, "PYSPARK_PYTHON": sys.executable})
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.split("FORMAT_REPLACE ", 1)[1])
    assert found["files_rewritten"] == 2
    # The rewrite reads those two files alone: the formats' scans prune no file by a
    # filter on a row's file, so the rows come from a scan of exactly those files.
    assert found["files_read"] == 2
    assert found["rows"] == [[310, 310, sum(range(310))]]
    assert found["files_after"] == 3  # the rewritten one, the untouched, the other writer's
    assert found["history"][-1] == ("OPTIMIZE" if file_format == "delta" else "replace")
    assert found["history"][-2] == ("WRITE" if file_format == "delta" else "append")
    assert found["before_rows"] == 300
    assert "no longer live" in found["stale"]
    assert found["history_after_stale"] == len(found["history"])
    assert found["property"] == "1"  # set by the same commit, from the new file
    # With properties set, Delta's commit conflicts with a concurrent append (nothing of
    # it committed: a clear message, the other writer's rows there); Iceberg's does not.
    ended = found["history_at_end"]
    assert found["rows_at_end"] == [[320, 320, sum(range(310)) + sum(range(400, 410))]]
    if file_format == "delta":
        assert "ConcurrentAppendException" in found["with_properties_and_a_writer"]
        check_delta_replaced_by_sql(found["by_sql"], found["rows_at_end"][0])
        assert ended[-2:] == ["OPTIMIZE", "WRITE"]
    else:
        assert found["with_properties_and_a_writer"] == "committed"
        assert ended[-2:] == ["append", "replace"]


def check_delta_replaced_by_sql(found: dict[str, Any], rows: list[int]) -> None:
    """A Delta table replaced by SQL alone (``DeltaTable.replace_by_sql``): another
    engine's append while its statement runs fails it (a conflict the run defers on),
    the append kept; then it replaces every file in one overwrite, every row once, the
    new files handed over are the live ones and their property set after."""
    count, _, total = rows
    assert "ConcurrentAppendException" in found["held"], found
    appended = [count + 5, count + 5, total + sum(range(500, 505))]
    assert found["rows_after_held"] == [appended]
    assert found["rows"] == [appended]
    assert found["handed_are_live"]
    assert found["property"] == str(found["handed"])
    # The overwrite's version (returned), then the property's commit of its own.
    (_, latest), (version, overwrite) = found["last"]
    assert (latest, overwrite, version) == ("SET TBLPROPERTIES", "WRITE", found["version"])
