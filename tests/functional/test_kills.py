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
                    hilbert_by=['a', 's'], file_count=6,
                    zspark_recluster=var('recluster', true)) }}}}
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
        """After a kill that left names to repair, the next run says it repaired them."""
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


def test_kills_inside_swaps_appends_and_rewrites_in_a_session(
        killed_project: Project) -> None:
    """One chain of kills, one per state a kill leaves that only a session meets (folders
    moved by half a rename, an append's batch), each killed run repairing what the one
    before left; checked by a plain `dbt build` at its end. Test_thrift kills the other
    steps; tests/unit/test_swap.py covers every instruction of the swap."""
    project = killed_project
    project.build(2000)
    table, backup, following = (project.warehouse / name for name in (
        MODEL, f"{MODEL}__zspark_old", f"{MODEL}__zspark_new"))
    full_refresh = ("run", "--full-refresh", "--vars", f"{{stop: {project.stop}}}")
    # Spark renames a managed table in two steps (its folder moves, then its metastore
    # entry): the states between them are made by moving the folder as the rename does.
    project.killed("swap:begin", *full_refresh)
    shutil.move(table, backup)  # the table's rename to its previous version, half done
    log = project.killed("swap:previous_renamed", *full_refresh)
    assert "a rename of killed__zspark_old stopped halfway" in log
    shutil.move(following, table)  # the next version's rename to the table, half done
    log = project.killed("swap:next_renamed", *full_refresh)
    assert "a rename of killed stopped halfway" in log
    # Appends (no automatic re-clustering: each is a batch) killed before their batch is
    # journaled (dropped), then after one of its files moved in (the rest follow).
    for count, step in enumerate(("append:written", "append:publishing"), start=1):
        project.killed(step, "run", "--vars",
                       f"{{stop: {project.stop + 300 * count}, recluster: false}}")
    # A full re-clustering killed once its next version holds every row (hard links).
    project.killed("rewrite:linked", *project.recluster(full=True))
    # A kill at a random moment of an append.
    started = time.monotonic()
    project.dbt("run", "--vars", f"{{stop: {project.stop + 900}}}",
                kill_after=random.Random(29).uniform(6, 20))
    print(f"run killed after {time.monotonic() - started:.1f} s")
    project.build(project.stop + 1200)
