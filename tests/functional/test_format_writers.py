"""Another engine writing a clustered incremental Delta model's table while a run of it
re-clusters: its rows kept, or the re-clustering deferred; every version exact."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.functional.format_project import PREFIX, SCHEMA, increments_project


@pytest.mark.slow
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
    project = increments_project(tmp_path / "project", session_dir, "delta")
    folder = session_dir / "warehouse" / f"{SCHEMA}.db" / "grows"
    for lo, hi in ((0, 400), (400, 460)):
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
