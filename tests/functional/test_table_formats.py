"""Delta Lake and Iceberg models through the adapter, each in a dbt process of its own
(the format's jars load when a JVM starts): a profile's ``table_format`` sets the session
up, or the formats' standard Spark settings alone do; unclustered models of both formats
build, rebuild (the format's own commit: history kept) and merge; what cannot work is
refused by name before anything is written."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from dbt.adapters.zspark.table_formats import ICEBERG
from tests.functional.dbt_project import DbtProject
from tests.functional.format_commits import committed_rows
from tests.functional.format_scan import BOUNDS, SNAPSHOTS

SCHEMA = "zspark_formats"
QUERY_MACRO = """
{% macro zs_query(sql) %}
  {%- set rows = [] -%}
  {%- for row in run_query(sql).rows -%}{%- do rows.append(row.values() | list) -%}{%- endfor -%}
  {{ log('ZS_ROWS ' ~ tojson(rows), info=True) }}
{% endmacro %}
"""


@dataclass
class FormatProject:
    """A dbt project whose every command runs in a new dbt process."""

    root: Path
    session_dir: Path

    def write(self, relative: str, text: str) -> None:
        path = self.root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())

    def dbt(self, *args: str, stop_at: str = "") -> subprocess.CompletedProcess[str]:
        """A dbt process leading its own process group (its Spark driver in it); with
        ``stop_at``, killed with the group (SIGKILL) at that step (``stop_points.py``)."""
        return subprocess.run(
            self._command(args), cwd=self.root, capture_output=True, text=True, timeout=600,
            start_new_session=True,
            env={**os.environ, "PYSPARK_PYTHON": sys.executable, "ZSPARK_STOP_AT": stop_at})

    def killed_while_writing(self, table: Path, *args: str) -> str:
        """A dbt process killed with its group (SIGKILL) as soon as a data file appears
        under ``table`` that was not there before: its write begun, its commit not come."""
        before = set(table.rglob("*.parquet"))
        process = self.start(*args)
        deadline = time.monotonic() + 600
        begun = False
        while not begun and process.poll() is None and time.monotonic() < deadline:
            begun = any(f not in before for f in table.rglob("*.parquet"))
            time.sleep(0.005)
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        assert begun, output[-5000:]
        assert process.returncode == -signal.SIGKILL, output[-5000:]
        return output

    def start(self, *args: str, **env: str) -> subprocess.Popen[str]:
        """A dbt process started, not waited for (``env``: more of its environment)."""
        return subprocess.Popen(
            self._command(args), cwd=self.root, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True, start_new_session=True,
            env={**os.environ, "PYSPARK_PYTHON": sys.executable, **env})

    def paused(self, step: str, gate: Path, *args: str) -> subprocess.Popen[str]:
        """A dbt process held at ``step`` (``stop_points.py``) until ``gate/resume``."""
        gate.mkdir(parents=True, exist_ok=True)
        process = self.start(*args, ZSPARK_PAUSE_AT=step, ZSPARK_PAUSE_DIR=str(gate))
        deadline = time.monotonic() + 600
        while not (gate / "reached").exists():
            if process.poll() is not None or time.monotonic() > deadline:
                output, _ = process.communicate()
                raise AssertionError(f"never reached {step}:\n{output[-5000:]}")
            time.sleep(0.2)
        return process

    def _command(self, args: tuple[str, ...]) -> list[str]:
        return [str(Path(sys.executable).parent / "dbt"), *args, "--project-dir",
                str(self.root), "--profiles-dir", str(self.root)]

    def statuses(self) -> dict[str, tuple[str, str]]:
        """Each model of the last run: its status and message."""
        results = json.loads((self.root / "target" / "run_results.json").read_text())
        return {r["unique_id"].split(".")[2]: (r["status"], r.get("message") or "")
                for r in results["results"]}

    def query(self, sql: str) -> list[list[Any]]:
        done = self.dbt("run-operation", "zs_query", "--args", json.dumps({"sql": sql}))
        assert done.returncode == 0, done.stdout[-3000:]
        line = next(line for line in done.stdout.splitlines() if "ZS_ROWS " in line)
        rows: list[list[Any]] = json.loads(line.split("ZS_ROWS ", 1)[1])
        return rows


#: 40 characters every value of `s` shares: longer than Delta's and Iceberg's own cuts of
#: string statistics (32 and 16 characters).
PREFIX = "customer-account-region-segment-tag-000-"
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


def _new_project(root: Path, session_dir: Path, profile: str) -> FormatProject:
    """An empty project whose session profile has ``profile`` (a line or block)."""
    project = FormatProject(root, session_dir)
    project.write("dbt_project.yml", """
        name: zspark_formats
        version: "1.0"
        config-version: 2
        profile: zspark_formats
        flags:
          send_anonymous_usage_stats: false
    """)
    project.write("profiles.yml", f"""
        zspark_formats:
          target: dev
          outputs:
            dev:
              type: zspark
              method: session
              schema: {SCHEMA}
              session_dir: {session_dir}
              {profile}
    """)
    return project


def _project(root: Path, session_dir: Path, profile: str, file_format: str) -> FormatProject:
    project = _new_project(root, session_dir, profile)
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
    project.write("models/f_clustered_increments.sql", f"""
        {{{{ config(materialized='incremental', file_format='{file_format}',
                    incremental_strategy='insert_overwrite',
                    hilbert_by=['id', 'b'], file_count=4) }}}}
        select id, id % 7 as b from range(100)
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
    on its statistics; a clustered incremental model overwriting partitions (not yet
    clustered on these formats) refused by name in the first, nothing of it written.
    Then a Spark of its own reads the tables: rows, and the files a plain `where` opens on
    a point query of each clustering column."""
    first = project.dbt("build", "--vars", "{n: 100, lo: 0, hi: 50, v: 0, rows: 4000}")
    statuses = project.statuses()
    for name in ("f_table", "f_merge", "c_points", "c_wide", *CLUSTERED):
        assert statuses[name][0] == "success", first.stdout[-5000:]
    assert [s for n, s in statuses.items() if n.startswith("skip_coverage")] == \
        [("pass", "")], first.stdout[-5000:]
    assert statuses["f_clustered_increments"][0] == "error"
    refused = (f"config 'incremental_strategy' is 'insert_overwrite' on a clustered "
               f"{file_format} incremental model. Allowed: 'append' or 'merge'.")
    assert f"Model 'f_clustered_increments': {refused}" in statuses["f_clustered_increments"][1]
    log = " ".join(first.stdout.split())
    assert f"c_hilbert: 16 files, 4000 rows, 4 columns indexed in its {file_format} " \
        "statistics; layout:" in log, first.stdout[-5000:]
    assert "zspark_layout_report zspark_formats.c_balanced: files' boxes over a and s" in log
    assert (project.root / "target" / "zspark_layout_c_balanced.png").stat().st_size > 0
    second = project.dbt("run", "--exclude", "f_clustered_increments", "--vars",
                         "{n: 60, lo: 25, hi: 75, v: 1, rows: 3000}")
    assert second.returncode == 0, second.stdout[-5000:]

    queries = [f"select count(*), sum(id) from {SCHEMA}.f_table",
               f"select count(*), sum(v), sum(id) from {SCHEMA}.f_merge",
               f"show tables in {SCHEMA} like 'f_clustered*'",
               f"select n from {SCHEMA}.c_points",
               f"select * from {SCHEMA}.c_wide", f"select * from {SCHEMA}.c_wide where w_last = 7",
               f"{BOUNDS}{SCHEMA}.c_wide", f"{BOUNDS}{SCHEMA}.c_zorder"]
    for name in CLUSTERED:
        queries += [f"select * from {SCHEMA}.{name}"]
        queries += [f"select * from {SCHEMA}.{name} where {point}" for point in POINTS]
    done = subprocess.run(
        [sys.executable, "-m", "tests.functional.format_scan", file_format,
         str(project.session_dir), json.dumps(queries)],
        capture_output=True, text=True, timeout=600, cwd=Path(__file__).parents[2],
        env={**os.environ, "PYSPARK_PYTHON": sys.executable})
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.split("FORMAT_SCAN ", 1)[1])
    assert found[0][2] == ["60", "1770"]
    assert found[1][2] == ["75", "50", str(sum(range(75)))]
    assert found[2][0] == 0
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
    for i, name in enumerate(CLUSTERED):
        (rows, files, _), *points = found[8 + 3 * i: 11 + 3 * i]
        assert rows == 3000, name
        # 3000 rows: `a` takes 50 values (60 rows each), `s` 40 (75 each); the engine
        # skips, by the format's statistics, at least half of the files of every point.
        assert [p[0] for p in points] == [60, 75], name
        assert all(0 < p[1] <= files // 2 for p in points), (name, files, points)


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
    for name, rows in (("f_table", (100, 60)), ("c_hilbert", (4000, 3000))):
        table = DeltaTable(str(session_dir / "warehouse" / f"{SCHEMA}.db" / name))
        assert table.version() >= 1
        assert table.to_pyarrow_table().num_rows == rows[1]
        table.load_as_version(0)
        assert table.to_pyarrow_table().num_rows == rows[0]


@pytest.mark.usefixtures("jars")
def test_iceberg_by_its_standard_spark_settings_alone_builds_rebuilds_and_merges(
        tmp_path: Path) -> None:
    """No ``table_format`` line: the jar and Iceberg's own settings in
    server_side_parameters. A rebuild is a new snapshot of the same table (it used to
    rename a staging table whose files the next build deleted)."""
    settings = {"spark.jars": ",".join(str(j) for j in ICEBERG.jar_files()),
                **ICEBERG.settings}
    lines = "\n".join(f"    {key}: \"{value}\"" for key, value in settings.items())
    profile = "server_side_parameters:\n" + textwrap.indent(lines, " " * 14)
    project = _project(tmp_path / "project", tmp_path / "session", profile, "iceberg")
    _builds_rebuilds_and_merges(project, "iceberg")
    # Every snapshot is kept, the first build's rows with it: time travel reaches them.
    for name, rows in (("f_table", [100, 60]), ("c_hilbert", [4000, 3000])):
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


@pytest.mark.usefixtures("jars")
@pytest.mark.parametrize("file_format", ["delta", "iceberg"])
def test_a_replacement_commit_keeps_a_concurrent_writer_and_the_history(
        tmp_path: Path, file_format: str) -> None:
    """``replace_files`` (a re-clustering's commit) in a Spark of its own: two of three
    files replaced by their rows sorted anew while another insert commits in between. One
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
        assert ended[-2:] == ["OPTIMIZE", "WRITE"]
    else:
        assert found["with_properties_and_a_writer"] == "committed"
        assert ended[-2:] == ["append", "replace"]


#: Runs of the clustered incremental model (rows lo..hi each) and what the policy does:
#: a base of 400 rows in 4 files; 60 rows as a run of 5 pieces; 60 more that no longer
#: fit twice a rebuild's files, merged with the pending run; 280 that bring pending rows
#: past half the base, the whole table re-clustered.
INCREMENT_RUNS = ((0, 400, "built"), (400, 460, "append"), (460, 520, "merge"),
                  (520, 800, "full"))
#: Then runs killed (SIGKILL, dbt and its Spark driver), each followed by what the table
#: holds: 400 rows, past half the base of 800, committed, the full re-clustering written
#: and killed before its commit; 10 rows killed while their insert writes; the same 10
#: rows, re-clustering the whole table with the 400; a full refresh killed before its
#: files are recorded as the base; 10 rows, re-clustering the whole table (no base).
KILLED_RUNS = (((800, 1200), "format:rewritten", 1200), ((1200, 1210), "writing", 1200),
               ((1200, 1210), "", 1210), ((0, 1210), "format:base", 1210),
               ((1210, 1220), "", 1220))
#: Then runs merging on `id` (rows lo..hi with v set): 120 rows updated across the table
#: and 20 added, the files the merge rewrote re-clustered with the rest (the policy after
#: the merge: full); 10 added, a run of their own.
MERGE_RUNS = ((1100, 1240, 1, "full"), (1240, 1250, 2, "append"))
#: The commits, each (what it did, its rows): the build, its base recorded (Delta: a
#: version; Iceberg: properties only), an append, an append then its merge, an append
#: then the full re-clustering; the killed runs' commits: the 400 rows, the 10 rows and
#: their full re-clustering, the full refresh, the 10 rows and their full re-clustering.
INCREMENT_COMMITS = [("build", 400), ("base", 400), ("write", 460), ("write", 520),
                     ("rewrite", 520), ("write", 800), ("rewrite", 800), ("write", 1200),
                     ("write", 1210), ("rewrite", 1210), ("build", 1210), ("write", 1220),
                     ("rewrite", 1220), ("merge", 1240), ("rewrite", 1240), ("merge", 1250)]
#: Iceberg commits a MERGE that only inserts as an append.
ICEBERG_COMMITS = [c for c in INCREMENT_COMMITS[:-1] if c[0] != "base"] + [("write", 1250)]
#: The formats' names of those commits.
DELTA_OPERATIONS = {"CREATE TABLE AS SELECT": "build",
                    "CREATE OR REPLACE TABLE AS SELECT": "build",
                    "SET TBLPROPERTIES": "base", "WRITE": "write", "OPTIMIZE": "rewrite",
                    "MERGE": "merge"}
ICEBERG_OPERATIONS = {"build": "build", "append": "write", "replace": "rewrite",
                      "overwrite": "merge"}


def _increments_project(root: Path, session_dir: Path, file_format: str) -> FormatProject:
    project = _new_project(root, session_dir, f"table_format: {file_format}")
    project.write("models/grows.sql", f"""
        {{{{ config(materialized='incremental', file_format='{file_format}',
                    hilbert_by=['a', 's'], file_count=4, unique_key='id',
                    incremental_strategy=var('strategy', 'append')) }}}}
        select id, cast(id % 50 as int) as a,
               concat('{PREFIX}', lpad(cast((id * 7) % 40 as string), 3, '0')) as s,
               cast({{{{ var('v', 0) }}}} as int) as v
        from range({{{{ var('lo') }}}}, {{{{ var('hi') }}}})
    """)
    return project


@pytest.mark.usefixtures("jars")
@pytest.mark.parametrize("file_format", ["delta", "iceberg"])
def test_a_clustered_incremental_model_appends_merges_and_reclusters_in_commits(
        tmp_path: Path, file_format: str) -> None:
    """A clustered incremental Delta or Iceberg model: each run's new rows keyed with the
    stored layout and committed as a run; a merge and a full re-clustering each one more
    commit that changes no data (Delta OPTIMIZE, Iceberg replace), the full one resetting
    the base. Runs killed (SIGKILL) amid each commit's writing and between commits: the
    next run recovers. Every version holds exactly its rows, each once (time travel by
    delta-rs, or by Spark to each Iceberg snapshot); in the end a plain `where` on either
    clustering column skips by the format's statistics."""
    session_dir = tmp_path / "session"
    project = _increments_project(tmp_path / "project", session_dir, file_format)
    for lo, hi, action in INCREMENT_RUNS:
        done = project.dbt("run", "--vars", f"{{lo: {lo}, hi: {hi}}}")
        assert done.returncode == 0, done.stdout[-5000:]
        log = " ".join(done.stdout.split())
        if action != "built":
            assert f"zspark: grows: {action} (" in log, log[-3000:]
        # The layout line counts the rows appended since the base: 60 of 460, then the
        # merged run of 120 of 520 (a merge keeps them pending), none after a full one.
        pending = {"append": "13.0%", "merge": "23.1%"}.get(action, "0.0%")
        assert f"{pending} of rows written since the last full clustering" in log, log[-3000:]
        if action in ("merge", "full"):
            assert f"zspark: grows: {action}: " in log, log[-3000:]
            assert "replaced in one commit" in log, log[-3000:]
    table = f"{SCHEMA}.grows"
    folder = session_dir / "warehouse" / f"{SCHEMA}.db" / "grows"
    for (lo, hi), stop_at, rows in KILLED_RUNS:
        run = ("run", "--vars", f"{{lo: {lo}, hi: {hi}}}",
               *(("--full-refresh",) if lo == 0 else ()))
        if stop_at == "writing":
            project.killed_while_writing(folder, *run)
        else:
            done = project.dbt(*run, stop_at=stop_at)
            assert done.returncode == (-9 if stop_at else 0), done.stdout[-5000:]
            if not stop_at:
                assert "zspark: grows: full (" in done.stdout, done.stdout[-3000:]
        assert committed_rows(folder, file_format) == rows, (lo, hi, stop_at)
    for lo, hi, v, action in MERGE_RUNS:
        done = project.dbt("run", "--vars", f"{{lo: {lo}, hi: {hi}, v: {v}, strategy: merge}}")
        assert done.returncode == 0, done.stdout[-5000:]
        assert f"zspark: grows: after the merge: {action} (" in done.stdout, done.stdout[-3000:]
    queries = [f"select count(*), count(distinct id), sum(v) from {table}",
               f"select * from {table} where a = 17",
               f"select * from {table} where s = '{PREFIX}017'",
               *([f"{SNAPSHOTS}{table}"] if file_format == "iceberg" else [])]
    done = subprocess.run(
        [sys.executable, "-m", "tests.functional.format_scan", file_format,
         str(session_dir), json.dumps(queries)],
        capture_output=True, text=True, timeout=600, cwd=Path(__file__).parents[2],
        env={**os.environ, "PYSPARK_PYTHON": sys.executable})
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.split("FORMAT_SCAN ", 1)[1])
    # Every row once, the merged ones updated: 140 with v = 1, 10 with v = 2.
    assert found[0][2] == ["1250", "1250", "160"], found[0]
    # 1250 rows in about 13 files: a point of `a` holds 25 rows, of `s` 31; fewer than
    # half the files read.
    for points, (count, files, _) in zip((25, 31), found[1:3], strict=True):
        assert count == points
        assert 0 < files <= 6, found[1:3]
    if file_format == "iceberg":
        commits = [(ICEBERG_OPERATIONS[operation], rows)
                   for operation, rows, distinct in found[3] if rows == distinct]
        assert len(commits) == len(found[3]), found[3]  # no row twice in any snapshot
        assert commits == ICEBERG_COMMITS, found[3]
        return
    from deltalake import DeltaTable

    delta = DeltaTable(str(folder))
    commits = []
    for version, entry in enumerate(reversed(delta.history())):
        delta.load_as_version(version)
        ids = delta.to_pyarrow_table(columns=["id"]).column("id").to_pylist()
        assert len(ids) == len(set(ids)), version  # no row twice in any version
        commits.append((DELTA_OPERATIONS.get(entry["operation"], entry["operation"]),
                        len(ids)))
    assert commits == INCREMENT_COMMITS


@pytest.mark.usefixtures("jars")
def test_another_engine_appending_during_a_delta_re_clustering_is_kept_or_defers_it(
        tmp_path: Path) -> None:
    """A clustered incremental Delta model whose re-clustering is held after writing its
    files, before its commit, while another engine (delta-rs) appends rows to the table:
    a merge commits and keeps them; a full re-clustering, which sets the table's
    properties, conflicts, commits nothing and says it is deferred (the run's own rows
    are committed); the next run re-clusters everything. Every version exact."""
    import pyarrow as pa
    from deltalake import DeltaTable, write_deltalake

    session_dir = tmp_path / "session"
    project = _increments_project(tmp_path / "project", session_dir, "delta")
    folder = session_dir / "warehouse" / f"{SCHEMA}.db" / "grows"
    for lo, hi, _ in INCREMENT_RUNS[:2]:
        assert project.dbt("run", "--vars", f"{{lo: {lo}, hi: {hi}}}").returncode == 0
    outside = 0
    for (lo, hi), action in (((460, 520), "merge"), ((520, 800), "full")):
        run = project.paused("format:rewritten", tmp_path / f"gate_{action}", "run",
                             "--vars", f"{{lo: {lo}, hi: {hi}}}")
        try:
            ids = list(range(10_000 + outside, 10_005 + outside))
            write_deltalake(str(folder), pa.table({
                "id": pa.array(ids, pa.int64()), "a": pa.array([7] * 5, pa.int32()),
                "s": pa.array([f"{PREFIX}007"] * 5, pa.string()),
                "v": pa.array([0] * 5, pa.int32())}), mode="append")
            outside += 5
        finally:
            (tmp_path / f"gate_{action}" / "resume").touch()
            output, _ = run.communicate(timeout=600)
        assert run.returncode == 0, output[-5000:]
        log = " ".join(output.split())
        if action == "merge":
            assert "zspark: grows: merge: " in log, log
            assert "replaced in one commit" in log, log
        else:
            assert "zspark: grows: full re-clustering deferred to the next run" in log, log
    done = project.dbt("run", "--vars", "{lo: 800, hi: 810}")
    assert "zspark: grows: full: " in " ".join(done.stdout.split()), done.stdout[-5000:]
    delta = DeltaTable(str(folder))
    operations, rows = [], []
    for version, entry in enumerate(reversed(delta.history())):
        delta.load_as_version(version)
        ids = delta.to_pyarrow_table(columns=["id"]).column("id").to_pylist()
        assert len(ids) == len(set(ids)), version
        operations.append(entry["operation"])
        rows.append(len(ids))
    # The outside appends land between each run's rows and its re-clustering.
    assert operations[2:] == ["WRITE", "WRITE", "WRITE", "OPTIMIZE", "WRITE", "WRITE",
                              "WRITE", "OPTIMIZE"], operations
    assert rows[2:] == [460, 520, 525, 525, 805, 810, 820, 820], rows
