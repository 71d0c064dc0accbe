"""Protocols a server reach keeps, run by the tests of each server (a Thrift server, a
Spark Connect server) on a :class:`KilledProject` of theirs."""

from __future__ import annotations

import time
from pathlib import Path

from tests.harness.kills import MODEL, KilledProject


def killed_overwrite_is_finished_by_the_server(killed: KilledProject) -> None:
    """insert_overwrite over a server is one statement the server runs: a client killed
    once it has run (before the index) leaves the partitions replaced whole, and the next
    run's index repair and the checking build find rows, index and scan exact."""
    assert killed.strategy == "insert_overwrite"
    killed.build(1500)
    killed.killed("append:inserted", "run", "--vars", f"{{stop: {killed.stop + 700}}}")
    log = killed.build(killed.stop + 1400)
    assert "does not list exactly the files" in log


def second_run_fails_fast_while_another_writes(project: KilledProject, gate: Path) -> None:
    """Two schedulers against one server: while one `dbt run` is inside its write (held
    there at a pause point), a second run of the same model fails at once, before writing,
    naming the process that holds the table; the first then finishes, and the rows are
    exactly the first run's (the checking build)."""
    project.build(1000)
    gate.mkdir()
    first = project.start("run", "--vars", "{stop: 1300, recluster: false}",
                          ZSPARK_PAUSE_AT="append:inserted", ZSPARK_PAUSE_DIR=str(gate))
    try:
        deadline = time.monotonic() + 300
        while not (gate / "reached").exists():
            assert first.poll() is None, f"the first run ended early:\n{first.stdout}"
            assert time.monotonic() < deadline, "the first run never reached its write"
            time.sleep(0.5)
        second = project.dbt("run", "--vars", "{stop: 1600, recluster: false}")
        assert second.returncode == 1, second.stdout[-4000:]
        assert f"another run is writing {project.schema}.{MODEL}" in second.stdout
        assert f"process {first.pid} on host" in second.stdout
    finally:
        (gate / "resume").touch()
        output, _ = first.communicate(timeout=600)
    assert first.returncode == 0, output[-4000:]
    project.build(1300)  # rows exactly the first run's: the second wrote nothing
