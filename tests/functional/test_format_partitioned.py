"""A partitioned clustered incremental Delta model: a re-clustering rewrites the partitions
its run wrote in, never the others, whether the rows came by an append or by a merge."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest

from tests.functional.format_project import PREFIX, SCHEMA, FormatProject, new_project


def _partitioned_project(root: Path, session_dir: Path) -> FormatProject:
    project = new_project(root, session_dir, "table_format: delta")
    # Rows below 600 spread over p = 0, 1, 2; later ones land in p = 0, from 2000 in p = 3.
    project.write("models/parts.sql", f"""
        {{{{ config(materialized='incremental', file_format='delta',
                    hilbert_by=['a', 's'], partition_by=['p'], file_count=6,
                    unique_key='id', incremental_strategy=var('strategy', 'append'),
                    zspark_recluster=var('automatic', true)) }}}}
        select id, cast(id % 50 as int) as a,
               concat('{PREFIX}', lpad(cast((id * 7) % 40 as string), 3, '0')) as s,
               cast({{{{ var('v', 0) }}}} as int) as v,
               cast(case when id >= 2000 then 3 when id < 600 then id % 3 else 0 end as int) as p
        from range({{{{ var('lo') }}}}, {{{{ var('hi') }}}}, {{{{ var('step', 1) }}}})
    """)
    return project


def _files_by_partition(folder: Path) -> dict[str, set[str]]:
    """The live files of the Delta table (read by delta-rs), by partition directory."""
    from deltalake import DeltaTable

    found: dict[str, set[str]] = defaultdict(set)
    for path in DeltaTable(str(folder)).file_uris():
        found[path.rsplit("/", 2)[-2]].add(path)
    return dict(found)


def _rows(folder: Path) -> tuple[int, int, int]:
    """(rows, distinct ids, sum of v) of the Delta table's latest version, by delta-rs."""
    from deltalake import DeltaTable

    table = DeltaTable(str(folder)).to_pyarrow_table(columns=["id", "v"])
    ids = table.column("id").to_pylist()
    return len(ids), len(set(ids)), sum(table.column("v").to_pylist())


@pytest.mark.slow
@pytest.mark.usefixtures("jars")
def test_a_partitioned_delta_model_reclusters_only_the_partitions_its_rows_touch(
        tmp_path: Path) -> None:
    """Built over three partitions; 200 rows appended into p=0 alone, as many as it holds:
    p=0 re-clustered in full, the files of p=1 and p=2 kept as they were. Rows opening a
    partition of their own (p=3) are its clustered base, in a commit of their own: a run
    killed (SIGKILL) before it leaves them pending, and the next rows there re-cluster
    p=3 alone; ten more rows there are then a run of their own. Then every row of p=1
    updated by a merge: the policy judges p=1 alone (its files all rewritten by the
    merge, none clustered) and re-clusters it; p=0 and p=2 untouched. Then merges into
    p=2 killed (SIGKILL): amid the MERGE's write (nothing committed), and once it is
    committed, before the policy judges it (its files left pending); the next merge, of
    ten rows, finds the killed one's files pending and re-clusters p=2. Last, an
    insert_overwrite killed amid its write leaves every file as it was. Rows exact after
    every run, each once."""
    session_dir = tmp_path / "session"
    project = _partitioned_project(tmp_path / "project", session_dir)
    folder = session_dir / "warehouse" / f"{SCHEMA}.db" / "parts"
    built = project.dbt("run", "--vars", "{lo: 0, hi: 600}")
    assert built.returncode == 0, built.stdout[-5000:]
    files = _files_by_partition(folder)
    assert sorted(files) == ["p=0", "p=1", "p=2"], files

    appended = project.dbt("run", "--vars", "{lo: 600, hi: 800}")
    log = " ".join(appended.stdout.split())
    assert appended.returncode == 0, log[-5000:]
    assert "zspark: parts: full (" in log, log[-3000:]
    assert "replaced in one commit" in log, log[-3000:]
    after_append = _files_by_partition(folder)
    assert after_append["p=1"] == files["p=1"]
    assert after_append["p=2"] == files["p=2"]
    assert not after_append["p=0"] & files["p=0"]
    assert _rows(folder) == (800, 800, 0)

    # Rows opening p=3 are its clustered base, recorded in a commit of its own. Killed
    # just before that commit (SIGKILL), they are committed and stay pending: the next
    # rows there re-cluster p=3 alone, which records it; ten more are a run of their own.
    opened = project.dbt("run", "--vars", "{lo: 2000, hi: 2100}", stop_at="format:opened")
    log = " ".join(opened.stdout.split())
    assert opened.returncode == -9, log[-5000:]
    assert "no rows yet where the new rows land" in log, log[-3000:]
    assert _rows(folder) == (900, 900, 0)
    unrecorded = _files_by_partition(folder)["p=3"]
    recovered = project.dbt("run", "--vars", "{lo: 2100, hi: 2110}")
    log = " ".join(recovered.stdout.split())
    assert "zspark: parts: full (" in log, log[-3000:]
    reclustered = _files_by_partition(folder)
    assert {p: reclustered[p] for p in after_append} == after_append
    assert not reclustered["p=3"] & unrecorded
    added = project.dbt("run", "--vars", "{lo: 2110, hi: 2120}")
    log = " ".join(added.stdout.split())
    assert "zspark: parts: append (" in log, log[-3000:]
    assert _files_by_partition(folder)["p=3"] > reclustered["p=3"]
    assert _rows(folder) == (920, 920, 0)

    merged = project.dbt("run", "--vars", "{lo: 1, hi: 600, step: 3, v: 1, strategy: merge}")
    log = " ".join(merged.stdout.split())
    assert merged.returncode == 0, log[-5000:]
    assert "zspark: parts: after the merge: full (" in log, log[-3000:]
    after_merge = _files_by_partition(folder)
    assert after_merge["p=0"] == after_append["p=0"]
    assert after_merge["p=2"] == after_append["p=2"]
    assert not after_merge["p=1"] & after_append["p=1"]
    assert _rows(folder) == (920, 920, 200)

    into_p2 = ("run", "--vars", "{lo: 2, hi: 600, step: 3, v: 2, strategy: merge}")
    project.killed_while_writing(folder, *into_p2)
    assert _files_by_partition(folder) == after_merge
    assert _rows(folder) == (920, 920, 200)
    killed = project.dbt(*into_p2, stop_at="format:appended")
    assert killed.returncode == -9, killed.stdout[-5000:]
    after_kill = _files_by_partition(folder)
    assert after_kill["p=0"] == after_merge["p=0"]
    assert after_kill["p=1"] == after_merge["p=1"]
    assert _rows(folder) == (920, 920, 600)
    recovered = project.dbt("run", "--vars", "{lo: 2, hi: 30, step: 3, v: 3, strategy: merge}")
    log = " ".join(recovered.stdout.split())
    assert recovered.returncode == 0, log[-5000:]
    assert "zspark: parts: after the merge: full (" in log, log[-3000:]
    final = _files_by_partition(folder)
    assert final["p=0"] == after_merge["p=0"]
    assert final["p=1"] == after_merge["p=1"]
    assert not final["p=2"] & after_kill["p=2"]
    assert _rows(folder) == (920, 920, 610)

    # An insert_overwrite of p=0..2 killed amid its write: nothing of it committed.
    project.killed_while_writing(
        folder, "run", "--vars", "{lo: 0, hi: 30, v: 9, strategy: insert_overwrite}")
    assert _files_by_partition(folder) == final
    assert _rows(folder) == (920, 920, 610)


@pytest.mark.usefixtures("jars")
def test_a_delta_model_reclusters_on_demand_in_commits_that_change_no_data(
        tmp_path: Path) -> None:
    """``zspark_recluster`` on a clustered Delta model whose automatic re-clustering is
    off: two appends stay two pending runs (each of the commit that added its files, Delta
    naming every file by an id of its own); on demand they are merged into one run (the
    clustered files kept), then, with ``full``, the whole table re-clustered:
    each one OPTIMIZE commit, rows exact at every version; once clustered, nothing to do.
    A first try killed (SIGKILL) between its write and its commit changes nothing."""
    from deltalake import DeltaTable

    session_dir = tmp_path / "session"
    project = _partitioned_project(tmp_path / "project", session_dir)
    folder = session_dir / "warehouse" / f"{SCHEMA}.db" / "parts"
    for lo, hi in ((0, 600), (600, 750), (750, 900)):
        done = project.dbt("run", "--vars", f"{{lo: {lo}, hi: {hi}, automatic: false}}")
        assert done.returncode == 0, done.stdout[-5000:]
    assert "automatic re-clustering is off" in " ".join(done.stdout.split())
    before = merged = _files_by_partition(folder)
    relation = f"{{relation: {SCHEMA}.parts}}"
    # Killed (SIGKILL) with its files written, before its commit: nothing changed.
    killed = project.dbt("run-operation", "zspark_recluster", "--args", relation,
                         stop_at="format:rewritten")
    assert killed.returncode == -9, killed.stdout[-5000:]
    assert _files_by_partition(folder) == before
    assert _rows(folder) == (900, 900, 0)
    for args, action in ((relation, "merge"), (relation[:-1] + ", full: true}", "full"),
                         (relation[:-1] + ", full: true}", "none")):
        done = project.dbt("run-operation", "zspark_recluster", "--args", args)
        log = " ".join(done.stdout.split())
        assert done.returncode == 0, log[-5000:]
        assert f"zspark: parts: {action} (" in log, log[-3000:]
        if action == "merge":
            merged = _files_by_partition(folder)
            # Only p=0 received rows: the other partitions' clustered files are kept.
            assert merged["p=1"] == before["p=1"]
            assert merged["p=2"] == before["p=2"]
            assert merged["p=0"] != before["p=0"]
        assert _rows(folder) == (900, 900, 0)
    after = _files_by_partition(folder)
    assert all(not after[p] & merged[p] for p in after)
    history = [entry["operation"] for entry in reversed(DeltaTable(str(folder)).history())]
    assert history[-3:] == ["WRITE", "OPTIMIZE", "OPTIMIZE"], history

