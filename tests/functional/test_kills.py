"""Runs killed with SIGKILL (dbt and its Spark driver, the whole process group) at the
steps of each write protocol, each killed run repairing what the one before left.

A killed run must die at its stop point (exit -9), which it reaches only after repairing
the state the kill before it left and saying so; a plain `dbt build` at the end must
succeed, and its tests check what a user gets: the table's rows exactly those of the
source (count and checksum), the index listing exactly the table's files, `zspark_scan`
equal to the plain filter. The project and its checks live in bench/kills.py, whose
random-kill soak runs them round after round.
"""

from __future__ import annotations

import os
import random
import re
import signal
import subprocess
import time

import pytest

from tests.functional.format_commits import commits, committed_rows
from tests.harness.kills import MODEL, KilledProject, WriteGate

pytestmark = pytest.mark.spark

#: A line of Spark's log4j layout (``26/11/29 10:13:40 WARN NativeCodeLoader: ...``).
SPARK_LINE = re.compile(r"^\d\d/\d\d/\d\d \d\d:\d\d:\d\d (WARN|ERROR|INFO) ", re.M)
#: A line of dbt's console (``10:13:36  Running with dbt=1.11.16``, maybe after a colour).
DBT_LINE = re.compile(r"^(\x1b\[\d+m)?\d\d:\d\d:\d\d ")


@pytest.fixture(scope="module")
def killed_project(tmp_path_factory: pytest.TempPathFactory) -> KilledProject:
    return KilledProject(tmp_path_factory.mktemp("kills"))


def test_kills_inside_swaps_appends_and_rewrites_in_a_session(
        killed_project: KilledProject) -> None:
    """One chain of kills, one per state a kill leaves that only a session meets (a
    version's folder no name points to, an append's batch), each killed run repairing
    what the one before left; checked by a plain `dbt build` at its end. Test_thrift kills
    the other steps; tests/unit/test_swap.py covers every instruction of the swap."""
    project = killed_project
    built = project.build(2000)
    # Spark's own log goes to spark.log beside dbt's logs, not among dbt's lines; so
    # does the driver JVM's own output (its warnings), which no log configuration reaches.
    assert SPARK_LINE.search(built) is None, built[-3000:]
    foreign = [line for line in built.splitlines() if line.strip() and not DBT_LINE.match(line)]
    assert foreign == [], foreign[:10]
    spark_log = (project.root / "logs" / "spark.log").read_text()
    assert " WARN " in spark_log
    assert "WARNING: Using incubator modules" in spark_log
    versions = project.warehouse / f"{MODEL}__zspark_versions"
    full_refresh = ("run", "--full-refresh", "--vars", f"{{stop: {project.stop}}}")
    # Each version is written once into a folder of its own: the swap renames and drops
    # names only, and a kill between its steps leaves whole folders.
    project.killed("build:written", *full_refresh)
    assert len(list(versions.iterdir())) == 2  # the table's and the unswapped next one
    log = project.killed("swap:previous_renamed", *full_refresh)
    assert "a next version that was never swapped in is dropped" in log
    # The table's name is renamed away: dbt compiles the next incremental run finding no
    # table, yet its repair restores it, so the run must append only the new rows.
    built = project.build(project.stop + 300)
    assert "the swap had not committed" in built
    assert f"zspark adapter: {MODEL}: appended" in built, built[-3000:]
    log = project.killed("swap:next_renamed", *full_refresh)
    log = project.killed("swap:previous_dropped", *full_refresh)
    assert "the swap had committed" in log
    assert not (project.warehouse / MODEL).exists()  # never a managed folder that moves
    # Appends (no automatic re-clustering: each is a batch) killed before their batch is
    # journaled (dropped), then after one of its files moved in (the rest follow).
    for count, step in enumerate(("append:written", "append:publishing"), start=1):
        log = project.killed(step, "run", "--vars",
                             f"{{stop: {project.stop + 300 * count}, recluster: false}}")
        if count == 1:  # the version the last swap replaced, its name already dropped
            assert "files of a version no table names are deleted" in log
    assert len(list(versions.iterdir())) == 1
    # A merge of the pending runs, published in place of their files, killed once all
    # moved in and the first merged file is deleted (test_object_store kills one once its
    # first file moved in); the next run, a full re-clustering killed once its next
    # version's rows are checked, first deletes the rest of the merged files.
    result = project.dbt("run", "--vars", f"{{stop: {project.stop + 750}, recluster: false}}")
    assert result.returncode == 0, result.stdout[-4000:]
    project.check_repair(result.stdout)  # of the append killed before it
    project.killed("recluster:deleting", *project.recluster())
    log = project.killed("rewrite:checked", *project.recluster(full=True))
    assert "the rest moved in and the files it rewrote are deleted" in log
    # A kill at a random moment of an append.
    started = time.monotonic()
    result = project.dbt("run", "--vars", f"{{stop: {project.stop + 900}}}",
                         kill_after=random.Random(29).uniform(6, 20))
    print(f"run killed after {time.monotonic() - started:.1f} s")
    if f"zspark: {MODEL}: recovered" in result.stdout:
        # It got as far as repairing the re-clustering's leftovers before its kill; else
        # the checking build must.
        project.check_repair(result.stdout)
    project.build(project.stop + 1200)


def test_a_tier_merge_killed_inside_an_append_is_finished_by_the_next_run(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    """An append whose new rows merge with the pending run of their size (two runs at a
    time: ``zspark_recluster_runs`` 2), killed once the merged run moved in and the first
    file it rewrote is deleted: the next run deletes the rest and says so before its own
    append, and `dbt build`'s tests find the rows exact and the index the table's files."""
    project = KilledProject(tmp_path_factory.mktemp("tier_kills"))
    project.build(2000)

    def append(stop: int) -> tuple[str, ...]:
        return ("run", "--vars", f"{{stop: {stop}, recluster_runs: 2}}")

    first = project.dbt(*append(2200))
    assert first.returncode == 0, first.stdout[-4000:]
    assert re.search(f"zspark adapter: {MODEL}: appended[ :]", first.stdout), first.stdout[-4000:]
    project.killed("recluster:deleting", *append(2400))
    # The policy's decision, in dbt's debug log (the run died before its console line).
    log = (project.root / "logs" / "dbt.log").read_text(errors="replace")
    assert f"{MODEL}: merge (the new rows make 2 pending runs" in log, log[-4000:]
    project.build(2600)  # checks the repair, the rows, the index and the scan


def test_an_interrupted_run_stops_its_spark_jobs_and_swaps_nothing_in(
        killed_project: KilledProject) -> None:
    """Ctrl-C (SIGINT to dbt's process group, as a terminal sends it; the driver JVM
    ignores it) while a full refresh's write is held at its first data file: dbt cancels
    the model's Spark job group, the held task is interrupted and the run ends with the
    write still held. Nothing is swapped in: the next build finds exactly the rows from
    before, and its tests pass."""
    project = killed_project
    if not project.stop:
        project.build(2000)
    gate = WriteGate(project.root / "interrupt_gate")
    gate.close()
    process = project.start("run", "--full-refresh", "--vars",
                            f"{{stop: {project.stop + 500}}}", **gate.environment)
    try:
        held = gate.wait_until_held(lambda: process.poll() is None, timeout=300)
        assert held is not None, "the run's write never reached its first data file"
        os.killpg(process.pid, signal.SIGINT)
        try:
            # Held, the write cannot finish: only a cancelled job lets the run end.
            output, _ = process.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            output, _ = process.communicate()
            raise AssertionError(f"the interrupted run went on:\n{output[-4000:]}") from None
    finally:
        gate.open()
    assert process.returncode != 0, output[-4000:]
    assert "CANCEL query" in output, output[-4000:]
    assert "ERROR creating sql incremental model" in output, output[-4000:]
    assert "could not release" not in output, output[-4000:]
    log = project.build(project.stop)
    # The version it began, which no table names, is deleted.
    assert f"zspark: {MODEL}: recovered" in log, log[-4000:]


def test_kills_inside_an_overwrite_in_a_session(tmp_path_factory: pytest.TempPathFactory,
                                                ) -> None:
    """insert_overwrite of a partitioned clustered model killed once the first of its
    files moved in (the rest follow), and once the first partition it replaces is set
    aside (the rest follow, then the batch); each killed run repairs the kill before it;
    the checking build finds the rows exact. (A batch killed before its journal is
    dropped, as an append's: the chain above. In this order no repair passes the next
    run's own stop point.)"""
    project = KilledProject(tmp_path_factory.mktemp("overwrite"), strategy="insert_overwrite")
    project.build(2600)
    for count, step in enumerate(("overwrite:publishing", "overwrite:set_aside"), start=1):
        log = project.killed(step, "run", "--vars", f"{{stop: {project.stop + 300 * count}}}")
        if count == 2:
            assert "what it replaces is set aside and the rest moved in" in log
    project.build(project.stop + 1200)
    assert not (project.warehouse / f"{MODEL}__zspark_replaced").exists()


@pytest.mark.usefixtures("jars")
# A format build's kills amid its commits are also in test_format_increments.
@pytest.mark.slow
@pytest.mark.parametrize("file_format", ["delta", "iceberg"])
def test_a_clustered_format_build_killed_while_writing_or_once_committed(
        tmp_path_factory: pytest.TempPathFactory, file_format: str) -> None:
    """A clustered Delta or Iceberg table rebuild killed (dbt and its Spark driver) while
    its tasks write files: no commit of the format, the table still its last build's
    rows exactly, the begun file invisible. Then one killed right after its commit,
    before it reads the statistics back: the next `dbt build` finds that commit's rows
    exact and rebuilds."""
    project = KilledProject(tmp_path_factory.mktemp(file_format), strategy="table",
                            file_format=file_format)
    table = project.warehouse / MODEL
    project.build(2000)
    before = commits(table, file_format)
    _, begun = project.killed_while_writing("run", "--vars", "{stop: 6000}")
    assert commits(table, file_format) == before, "the kill came after the commit"
    assert committed_rows(table, file_format) == 2000
    project.killed("format:committed", "run", "--vars", "{stop: 3100}")
    assert len(commits(table, file_format)) > len(before)
    assert committed_rows(table, file_format) == 3100
    project.build(3700)
    assert begun.exists()  # left to the format's own vacuum, never read
