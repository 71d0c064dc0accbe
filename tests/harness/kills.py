"""A clustered incremental model's project whose dbt runs are killed (SIGKILL) at named
steps or at random moments, and the checks after each next run: rows against the
source, the index against the table's files, `zspark_scan` against the plain filter
(``KilledProject``); a write held at its first data file (``WriteGate``). Used by
``tests/functional/test_kills.py`` and the soak of ``bench/kills.py``.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

from dbt.adapters.zspark.core.stop_points import WRITE_GATE
from dbt.adapters.zspark.reach.session import jvm_jar
from tests.harness.dbt_launcher import Launched, launcher

SCHEMA = "zspark_kill"
MODEL = "killed"
#: What the run after a kill at each step repairs: the versions' names (and an append's
#: batch), or only the index (when it is read: incremental runs); nothing once the
#: index is written.
REPAIRED_NAMES = {"build:written", "swap:begin", "swap:previous_renamed",
                  "swap:next_renamed", "rewrite:written", "rewrite:checked",
                  "append:written", "append:publishing", "overwrite:written",
                  "overwrite:set_aside", "overwrite:publishing", "recluster:publishing",
                  "recluster:deleting"}
ROWS = "select id, cast(id % 13 as int) as a, concat('s', cast(id % 37 as string)) as s"

MODELS = {
    "append": f"""
        {{{{ config(materialized='incremental', incremental_strategy='append',
                    file_format='FILE_FORMAT', hilbert_by=['a', 's'], file_count=6,
                    zspark_recluster=var('recluster', true),
                    zspark_recluster_runs=var('recluster_runs', 4)) }}}}
        {ROWS} from range(0, {{{{ var('stop') }}}})
        {{% if is_incremental() %}}
          where id > (select coalesce(max(id), -1) from {{{{ this }}}})
        {{% endif %}}
    """,
    # Each run rewrites the last partition it finds and adds the new ones.
    "insert_overwrite": f"""
        {{{{ config(materialized='incremental', incremental_strategy='insert_overwrite',
                    file_format='FILE_FORMAT', partition_by=['b'], hilbert_by=['a', 's'],
                    file_count=6) }}}}
        {ROWS}, cast(id div 1000 as int) as b from range(0, {{{{ var('stop') }}}})
        {{% if is_incremental() %}}
          where id >= (select coalesce(max(b), 0) * 1000 from {{{{ this }}}})
        {{% endif %}}
    """,
    # Each run rebuilds the table (of ``file_format``: Delta and Iceberg replace it in one
    # commit of the format); enough files that its write takes several waves of tasks.
    "table": f"""
        {{{{ config(materialized='table', file_format='FILE_FORMAT',
                    hilbert_by=['a', 's'], file_count=12) }}}}
        {ROWS} from range(0, {{{{ var('stop') }}}})
    """,
}

INDEX_TEST = "tests/index_lists_the_files.sql"
FILES = {
    "dbt_project.yml": """
        name: zspark_kills
        version: "1.0"
        config-version: 2
        profile: zspark_kills
        flags:
          send_anonymous_usage_stats: false
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
    # The files holding rows, as the index and as Spark's scan list them (a file of no
    # rows, such as the empty first task of an append landed as written, has no row
    # for `_metadata` to name).
    INDEX_TEST: f"""
        with i as (select file_path from {{{{ ref('{MODEL}') }}}}__zindex
                   where row_group is null and row_count > 0),
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


class WriteGate:
    """A folder through which a test holds a run's Spark write at its first data file
    (``stop_points.py``), to kill it there whatever the machine's load. A run's JVM reads
    :attr:`environment` when it starts; the gate is closed before a command and opened
    once it is killed."""

    def __init__(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.folder = folder
        self.environment = {WRITE_GATE: str(folder)}

    def close(self) -> None:
        """The next data file created is held, its path written to ``held``."""
        expect(jvm_jar.ensure_jar() is not None,
                f"holding a write needs zspark's file system: {jvm_jar.MISSING}")
        (self.folder / "held").unlink(missing_ok=True)
        (self.folder / "hold").touch()

    def kill_when_held(self, group: int, running: Callable[[], bool],
                       timeout: float = 600) -> Path | None:
        """Process group ``group`` killed (SIGKILL) once its write is held, or once it
        ended or ``timeout`` passed; the gate opened. The held data file (None if none)."""
        marker = self.folder / "held"
        try:
            self.wait_until_held(running, timeout)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(group, signal.SIGKILL)
            return Path(marker.read_text()) if marker.exists() else None
        finally:
            self.open()
            marker.unlink(missing_ok=True)

    def wait_until_held(self, running: Callable[[], bool],
                        timeout: float = 600) -> Path | None:
        """The data file a write is held at, once held (None: the run ended first, or
        ``timeout`` passed)."""
        marker = self.folder / "held"
        deadline = time.monotonic() + timeout
        while not marker.exists() and running() and time.monotonic() < deadline:
            time.sleep(0.02)
        return Path(marker.read_text()) if marker.exists() else None

    def open(self) -> None:
        """A held write goes on; later ones are not held."""
        (self.folder / "hold").unlink(missing_ok=True)


def expect(holds: bool, problem: str) -> None:
    if not holds:
        raise AssertionError(problem)


class KilledProject:
    """The killed model's dbt project: an embedded session of its own (its own metastore:
    a session's Derby metastore admits one process at a time), a Thrift server
    (``thrift_port``) or a Spark Connect server (``connect_port``).
    ``strategy``: the model appends (re-clustering as its policy says), or overwrites the
    partitions its rows fall in (in a schema of its own, so both share a server).
    ``schema``: another schema (other projects on the same server). ``file_format``:
    the table model's format (``strategy`` table), its session set up by ``table_format``
    (the format's own statistics are its index: no index test). ``settings``: more of
    the session's Spark settings (a warehouse on S3: :func:`s3_warehouse`).
    ``curve_method``: the model's (``direct``: keys only Python computes)."""

    def __init__(self, root: Path, thrift_port: int | None = None,
                 strategy: str = "append", schema: str | None = None,
                 file_format: str = "parquet",
                 settings: dict[str, str] | None = None,
                 connect_port: int | None = None, curve_method: str = "boundary") -> None:
        self.root = root
        self.stop = 0
        self.last_kill = ""
        self.file_format = file_format
        self.strategy = strategy
        self.schema = schema or (SCHEMA if strategy == "append" else f"{SCHEMA}_{strategy}")
        self.warehouse = root / "session" / "warehouse" / f"{self.schema}.db"
        model = MODELS[strategy].replace("FILE_FORMAT", file_format)
        if curve_method != "boundary":
            model = model.replace("hilbert_by=['a', 's']",
                                  f"hilbert_by=['a', 's'], curve_method='{curve_method}'")
        files = {**FILES, f"models/{MODEL}.sql": model}
        if file_format != "parquet":
            del files[INDEX_TEST]
        self.tests = len(files) - 2  # besides dbt_project.yml and the model
        for relative, text in files.items():
            path = root / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(textwrap.dedent(text).lstrip())
        table_format = [] if file_format == "parquet" else [f"table_format: {file_format}"]
        connection = (["method: thrift", "host: 127.0.0.1", f"port: {thrift_port}",
                       "user: dbt"] if thrift_port else
                      ["method: connect", f"host: sc://127.0.0.1:{connect_port}"]
                      if connect_port else
                      ["method: session", f"session_dir: {root / 'session'}", *table_format,
                       "server_side_parameters:", '  spark.master: "local[2]"',
                       '  spark.sql.shuffle.partitions: "4"', "  spark.driver.memory: 1g",
                       *(f"  {key}: {json.dumps(value)}"
                         for key, value in (settings or {}).items())])
        profile = ["zspark_kills:", "  target: dev", "  outputs:", "    dev:",
                   "      type: zspark", f"      schema: {self.schema}",
                   *(f"      {line}" for line in connection)]
        (root / "profiles.yml").write_text("\n".join(profile) + "\n")

    def start(self, *args: str, **environment: str) -> Launched:
        """A dbt process leading its own process group (its Spark driver is in it), with
        ``environment`` added to this one's; forked by the launcher (``dbt_launcher.py``),
        which imported dbt once."""
        env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1",
               **environment}
        return launcher().start([*args, "--project-dir", str(self.root),
                                 "--profiles-dir", str(self.root)], self.root, env)

    def dbt(self, *args: str, stop_at: str = "", kill_after: float | None = None,
            ) -> subprocess.CompletedProcess[str]:
        """A dbt process run to its end, or killed with its group after ``kill_after``
        seconds or at the step ``stop_at``."""
        process = self.start(*args, ZSPARK_STOP_AT=stop_at)
        try:
            output, _ = process.communicate(timeout=kill_after or 600)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            output, _ = process.communicate()
        return subprocess.CompletedProcess(process.args, process.wait(), output, "")

    def build(self, stop: int) -> str:
        """A plain `dbt build` up to row ``stop``: recovery, the model, and its tests."""
        result = self.dbt("build", "--vars", f"{{stop: {stop}}}")
        expect(result.returncode == 0 and f"PASS={self.tests + 1}" in result.stdout,
                f"`dbt build` up to {stop} did not pass:\n{result.stdout[-6000:]}")
        self.check_repair(result.stdout)
        self.stop = stop
        return result.stdout

    def killed_while_writing(self, *args: str) -> tuple[str, Path]:
        """A run killed (SIGKILL, its group) while its write is held at its first data file
        in the table's folder (:class:`WriteGate`): begun, its commit not come. Returns its
        output and that file."""
        gate = WriteGate(self.root / "write_gate")
        gate.close()
        process = self.start(*args, **gate.environment)
        begun = gate.kill_when_held(process.pid, lambda: process.poll() is None)
        output, _ = process.communicate()
        table = self.warehouse / MODEL
        if begun is None or table not in begun.parents or \
                process.returncode != -signal.SIGKILL:
            raise AssertionError(f"not killed while writing into {table} (held at {begun}):"
                                 f"\n{output[-6000:]}")
        self.last_kill = "writing"
        return output, begun

    def killed(self, stop_at: str, *args: str) -> str:
        """A run killed at ``stop_at``: it must die there (SIGKILL), not fail before, and
        it must first have repaired what the kill before it left."""
        result = self.dbt(*(args or ("run", "--vars", f"{{stop: {self.stop + 300}}}")),
                          stop_at=stop_at)
        expect(result.returncode == -signal.SIGKILL,
                f"not killed at {stop_at}:\n{result.stdout[-6000:]}")
        self.check_repair(result.stdout)
        self.last_kill = stop_at
        return result.stdout

    def check_repair(self, log: str) -> None:
        """After a kill that left names to repair, the next run says it repaired them."""
        if self.last_kill in REPAIRED_NAMES:
            expect(f"zspark: {MODEL}: recovered" in log,
                    f"nothing repaired after a kill at {self.last_kill}:\n{log[-4000:]}")
        self.last_kill = ""

    def recluster(self, full: bool = False) -> tuple[str, ...]:
        relation = f"{self.schema}.{MODEL}"
        return ("run-operation", "zspark_recluster", "--args",
                f"{{relation: {relation}, full: {str(full).lower()}}}")



#: The zspark log lines that say what a run repaired, and what a run was doing.
