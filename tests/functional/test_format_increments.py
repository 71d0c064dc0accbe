"""Clustered incremental Delta Lake and Iceberg models, each dbt command in a process of its
own: appends and merges committed as runs, re-clusterings as commits that change no
data, runs killed (SIGKILL) between and amid commits recovered by the next, and another
engine appending during a re-clustering kept; every version holds exactly its rows."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.functional.format_commits import committed_rows
from tests.functional.format_project import PREFIX, SCHEMA, FormatProject, format_scan, new_project
from tests.functional.format_scan import SNAPSHOTS

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
    project = new_project(root, session_dir, f"table_format: {file_format}")
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
