"""Clustered incremental Delta Lake and Iceberg models, each dbt command in a process of its
own: appends and merges committed as runs, re-clusterings as commits that change no
data, runs killed (SIGKILL) between and amid commits recovered by the next; every version
holds exactly its rows."""

from __future__ import annotations

import re
import signal
from pathlib import Path

import pytest

from tests.functional.format_commits import committed_rows
from tests.functional.format_project import (
    PREFIX,
    QUERY_MACRO,
    SCHEMA,
    FormatProject,
    format_scan,
    increments_project,
)
from tests.functional.format_scan import REPLAY, SNAPSHOTS

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


@pytest.mark.usefixtures("jars")
# Delta's run is the suite's longest test (14 commands, 4 of them killed): make test-slow.
@pytest.mark.parametrize("file_format", [pytest.param("delta", marks=pytest.mark.slow),
                                         "iceberg"])
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
    project = increments_project(tmp_path / "project", session_dir, file_format)
    for lo, hi, action in INCREMENT_RUNS:
        done = project.dbt("run", "-s", "grows", "--vars", f"{{lo: {lo}, hi: {hi}}}")
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
        run = ("run", "-s", "grows", "--vars", f"{{lo: {lo}, hi: {hi}}}",
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
        done = project.dbt("run", "-s", "grows", "--vars",
                           f"{{lo: {lo}, hi: {hi}, v: {v}, strategy: merge}}")
        assert done.returncode == 0, done.stdout[-5000:]
        assert f"zspark: grows: after the merge: {action} (" in done.stdout, done.stdout[-3000:]
    _auto_relayout(project, file_format)
    queries = [f"select count(*), count(distinct id), sum(v) from {table}",
               f"select * from {table} where a = 17",
               f"select * from {table} where s = '{PREFIX}017'",
               f"{SNAPSHOTS}{table}" if file_format == "iceberg" else f"{REPLAY}{table}"]
    found = format_scan(file_format, session_dir, queries)
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
    # Its log replayed by SQL (as a reach without the JVM reads it) equals Delta's own
    # snapshot, for the model and after each kind of commit; with deletion vectors the
    # rows are read instead, the same files.
    assert [step[2:] for step in found[3]] == [["log", True]] * 5 + [["rows", True]], \
        found[3]
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


def _auto_relayout(project: FormatProject, file_format: str, schema: str = SCHEMA,
                   before_commit: str = "format:rewritten") -> None:
    """``cluster_by='auto'`` on a Delta or Iceberg incremental model (in ``schema``, the
    project's): built for a workload on `a`; once the workload moves to `s` and the saving
    pays for the rewrite, an append commits its rows by the table's layout, then
    re-clusters the whole table by the new one in a commit of its own, once; every row
    kept. ``before_commit``: the stop point before that commit (Delta's by SQL:
    ``format:keyed``, its statement writes and commits)."""
    project.write("macros/query.sql", QUERY_MACRO)
    project.write("models/auto_grows.sql", f"""
        {{{{ config(materialized='incremental', file_format='{file_format}',
                    incremental_strategy='append', cluster_by='auto', file_count=4,
                    workload=var('auto_workload')) }}}}
        select id, cast(id % 50 as int) as a,
               concat('{PREFIX}', lpad(cast((id * 7) % 40 as string), 3, '0')) as s
        from range({{{{ var('lo') }}}}, {{{{ var('hi') }}}})
    """)
    on_a = "auto_workload: ['a = 7', 'a = 9']"
    on_s = (f"auto_workload: [{{predicate: \"s = '{PREFIX}001'\", count: 20}}, "
            f"{{predicate: \"s = '{PREFIX}002'\", count: 20}}]")

    def run(workload: str, lo: int, hi: int) -> str:
        done = project.dbt("run", "-s", "auto_grows", "--vars",
                           f"{{{workload}, lo: {lo}, hi: {hi}}}")
        assert done.returncode == 0, done.stdout[-5000:]
        return " ".join(done.stdout.split())

    def layout() -> str:
        from dbt.adapters.zspark.layouts.layout_state import StoredLayout

        stored = StoredLayout.from_properties({str(k): str(v) for k, v in project.query(
            f"show tblproperties {schema}.auto_grows")})
        assert stored is not None
        return f"{stored.config_key}={list(stored.columns)}"

    def count() -> list[list[int]]:
        return project.query(f"select count(*), count(distinct id) from {schema}.auto_grows")

    run(on_a, 0, 400)
    assert layout().endswith("=['a']"), layout()
    # The change of layout killed once its files are written, before their commit: the
    # append's rows are committed by the old layout, which the table keeps.
    killed = project.dbt("run", "-s", "auto_grows", "--vars",
                         f"{{{on_s}, lo: 400, hi: 460}}", stop_at=before_commit)
    assert killed.returncode == -signal.SIGKILL, killed.stdout[-5000:]
    assert "re-clustering the table by it" in " ".join(killed.stdout.split())
    assert count() == [[460, 460]]
    assert layout().endswith("=['a']"), layout()
    # The next append finds the workload still moved and makes the change.
    moved = run(on_s, 460, 520)
    assert re.search(r"auto_grows: cluster_by='auto': \w+=\['s'\] \(", moved), moved[-3000:]
    assert "re-clustering the table by it" in moved, moved[-3000:]
    assert "replaced in one commit" in moved, moved[-3000:]
    assert layout().endswith("=['s']"), layout()
    steady = run(on_s, 520, 540)
    assert "re-clustering the table by it" not in steady, steady[-3000:]
    assert count() == [[540, 540]]
