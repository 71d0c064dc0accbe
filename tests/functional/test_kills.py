"""Runs killed with SIGKILL (dbt and its Spark driver, the whole process group) at every
step of each write protocol, then a plain `dbt build` of the next batch.

Each recovery run must succeed by itself, and its tests check what a user gets: the
table's rows exactly those of the source (count and checksum), the index listing exactly
the table's files, `zspark_scan` equal to the plain filter. A killed run is chained into
the next kill where that is cheaper: it must then die at its stop point (exit -9), which
it reaches only after repairing what the run before left.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark

BIN = Path(sys.executable).parent
SCHEMA = "zspark_kill"
MODEL = "killed"
#: What the run after a kill at each step repairs: the versions' names (and an append's
#: batch), or only the index (when it is read: incremental runs); nothing once the
#: index is written.
REPAIRED_NAMES = {"build:written", "swap:begin", "swap:previous_renamed",
                  "swap:next_renamed", "rewrite:written", "rewrite:linked",
                  "append:written", "append:publishing"}
ROWS = "select id, cast(id % 13 as int) as a, concat('s', cast(id % 37 as string)) as s"

FILES = {
    "dbt_project.yml": """
        name: zspark_kills
        version: "1.0"
        config-version: 2
        profile: zspark_kills
        flags:
          send_anonymous_usage_stats: false
    """,
    f"models/{MODEL}.sql": f"""
        {{{{ config(materialized='incremental', incremental_strategy='append',
                    hilbert_by=['a', 's'], file_count=6) }}}}
        {ROWS} from range(0, {{{{ var('stop') }}}})
        {{% if is_incremental() %}}
          where id > (select coalesce(max(id), -1) from {{{{ this }}}})
        {{% endif %}}
    """,
    "tests/rows_exact.sql": f"""
        select * from
          (select count(*) as c, coalesce(sum(hash(id, a, s)), 0) as h
           from {{{{ ref('{MODEL}') }}}}) t
          cross join
          (select count(*) as c, coalesce(sum(hash(id, a, s)), 0) as h
           from ({ROWS} from range(0, {{{{ var('stop') }}}}))) e
        where t.c != e.c or t.h != e.h
    """,
    "tests/index_lists_the_files.sql": f"""
        with i as (select file_path from {{{{ ref('{MODEL}') }}}}__zindex
                   where row_group is null),
             f as (select distinct _metadata.file_path as file_path
                   from {{{{ ref('{MODEL}') }}}})
        select * from i full outer join f on i.file_path = f.file_path
        where i.file_path is null or f.file_path is null
    """,
    "tests/scan_equals_filter.sql": f"""
        select * from
          (select count(*) as c, coalesce(sum(hash(id)), 0) as h
           from {{{{ zspark_scan(ref('{MODEL}'), "a = 3 and s >= 's2'") }}}} z) z
          cross join
          (select count(*) as c, coalesce(sum(hash(id)), 0) as h
           from {{{{ ref('{MODEL}') }}}} where a = 3 and s >= 's2') p
        where z.c != p.c or z.h != p.h
    """,
}


class Project:
    """The killed model's dbt project: an embedded session of its own (its own metastore:
    a session's Derby metastore admits one process at a time), or a Thrift server."""

    def __init__(self, root: Path, thrift_port: int | None = None) -> None:
        self.root = root
        self.stop = 0
        self.last_kill = ""
        self.warehouse = root / "session" / "warehouse" / f"{SCHEMA}.db"
        for relative, text in FILES.items():
            path = root / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(textwrap.dedent(text).lstrip())
        connection = (["method: thrift", "host: 127.0.0.1", f"port: {thrift_port}",
                       "user: dbt"] if thrift_port else
                      ["method: session", f"session_dir: {root / 'session'}",
                       "server_side_parameters:", '  spark.master: "local[2]"',
                       '  spark.sql.shuffle.partitions: "4"', "  spark.driver.memory: 1g"])
        profile = ["zspark_kills:", "  target: dev", "  outputs:", "    dev:",
                   "      type: zspark", f"      schema: {SCHEMA}",
                   *(f"      {line}" for line in connection)]
        (root / "profiles.yml").write_text("\n".join(profile) + "\n")

    def dbt(self, *args: str, stop_at: str = "", kill_after: float | None = None,
            ) -> subprocess.CompletedProcess[str]:
        """A dbt process leading its own process group (its Spark driver is in it)."""
        env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1",
               "ZSPARK_STOP_AT": stop_at}
        command = [str(BIN / "dbt"), *args, "--project-dir", str(self.root),
                   "--profiles-dir", str(self.root)]
        process = subprocess.Popen(command, cwd=self.root, env=env, text=True,
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   start_new_session=True)
        try:
            output, _ = process.communicate(timeout=kill_after or 600)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            output, _ = process.communicate()
        return subprocess.CompletedProcess(command, process.returncode, output, "")

    def build(self, stop: int) -> str:
        """A plain `dbt build` up to row ``stop``: recovery, the model, and its tests."""
        result = self.dbt("build", "--vars", f"{{stop: {stop}}}")
        assert result.returncode == 0, result.stdout[-6000:]
        assert "PASS=4" in result.stdout, result.stdout[-3000:]
        self.check_repair(result.stdout)
        self.stop = stop
        return result.stdout

    def killed(self, stop_at: str, *args: str) -> str:
        """A run killed at ``stop_at``: it must die there (SIGKILL), not fail before, and
        it must first have repaired what the kill before it left."""
        result = self.dbt(*(args or ("run", "--vars", f"{{stop: {self.stop + 300}}}")),
                          stop_at=stop_at)
        assert result.returncode == -signal.SIGKILL, (stop_at, result.stdout[-6000:])
        self.check_repair(result.stdout)
        self.last_kill = stop_at
        return result.stdout

    def check_repair(self, log: str) -> None:
        if self.last_kill in REPAIRED_NAMES:
            assert f"zspark: {MODEL}: recovered" in log, (self.last_kill, log[-4000:])
        self.last_kill = ""

    def recluster(self, full: bool = False) -> tuple[str, ...]:
        relation = f"{SCHEMA}.{MODEL}"
        return ("run-operation", "zspark_recluster", "--args",
                f"{{relation: {relation}, full: {str(full).lower()}}}")


@pytest.fixture(scope="module")
def killed_project(tmp_path_factory: pytest.TempPathFactory) -> Project:
    return Project(tmp_path_factory.mktemp("kills"))


def test_kills_at_every_step_of_builds_appends_and_rewrites(killed_project: Project) -> None:
    project = killed_project
    project.build(2000)
    # A full refresh killed at each step of its build and swap; each kill follows the
    # repair of the one before.
    for step in ("build:written", "swap:begin", "swap:previous_renamed", "swap:next_renamed",
                 "swap:previous_dropped", "index:published"):
        project.killed(step, "run", "--full-refresh", "--vars", f"{{stop: {project.stop}}}")
    project.build(2300)
    # Appends killed after their batch, amid its files' moves and after their index;
    # re-clusterings killed at
    # each step of the next version and its swap (each after an append: rows to rewrite).
    project.killed("append:written")  # the batch written, not yet journaled: dropped
    project.killed("append:publishing")  # one file moved in: the rest follow
    project.killed("append:inserted")  # all moved in: the index is repaired
    project.killed("append:indexed")
    for step in ("rewrite:written", "rewrite:linked", "swap:begin", "swap:previous_renamed",
                 "swap:next_renamed", "swap:previous_dropped", "index:published"):
        project.build(project.stop + 300)
        project.killed(step, *project.recluster(full=True))
    # Two appends, a merge of them killed inside its swap, then one that finishes.
    project.build(project.stop + 300)
    project.build(project.stop + 300)
    project.killed("swap:previous_renamed", *project.recluster())
    result = project.dbt(*project.recluster())
    assert result.returncode == 0, result.stdout[-6000:]
    project.check_repair(result.stdout)
    assert "merge (" in result.stdout
    project.build(project.stop + 300)


def test_renames_stopped_between_their_folder_and_their_table(
        killed_project: Project) -> None:
    """Spark renames a managed table in two steps (the folder moves, then the metastore
    entry): the states between them, made by moving the folder as the rename does."""
    project = killed_project
    if not project.stop:
        project.build(2000)
    table, backup, following = (project.warehouse / name for name in (
        MODEL, f"{MODEL}__zspark_old", f"{MODEL}__zspark_new"))
    # The table's folder moved to the previous version's name, its entry not yet.
    project.killed("swap:begin", "run", "--full-refresh", "--vars",
                   f"{{stop: {project.stop}}}")
    shutil.move(table, backup)
    log = project.build(project.stop + 300)
    assert "a rename of killed__zspark_old stopped halfway" in log
    # The next version's folder moved to the table's name, its entry not yet.
    project.killed("swap:previous_renamed", "run", "--full-refresh", "--vars",
                   f"{{stop: {project.stop}}}")
    shutil.move(following, table)
    log = project.build(project.stop + 300)
    assert "a rename of killed stopped halfway" in log
    assert "the swap had not committed" in log


def test_random_kills(killed_project: Project) -> None:
    project = killed_project
    if not project.stop:
        project.build(2000)
    chance = random.Random(29)
    for round_ in range(3):
        args = [("run", "--vars", f"{{stop: {project.stop + 300}}}"),
                project.recluster(full=True),
                ("run", "--full-refresh", "--vars", f"{{stop: {project.stop}}}")][round_]
        started = time.monotonic()
        project.dbt(*args, kill_after=chance.uniform(8, 25))
        print(f"killed {args[0]} after {time.monotonic() - started:.1f} s")
        project.build(project.stop + 300)
