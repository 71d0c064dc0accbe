"""A dbt project of Delta Lake or Iceberg models, its commands run in dbt processes of
their own (the format's jars load when a JVM starts): one kept for the commands run one
after another (``dbt_worker.py``: its Spark starts once, and again only after a command
killed it), and one per command that is paused or started beside others. A metastore
takes one JVM at a time, so the kept process stops before any other Spark opens the
project's session."""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import subprocess
import sys
import textwrap
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests.functional.dbt_worker import ANSWER, CONSOLE
from tests.harness.dbt_launcher import Launched, launcher
from tests.harness.kills import WriteGate

SCHEMA = "zspark_formats"
QUERY_MACRO = """
{% macro zs_query(sql) %}
  {%- set rows = [] -%}
  {%- for row in run_query(sql).rows -%}{%- do rows.append(row.values() | list) -%}{%- endfor -%}
  {{ log('ZS_ROWS ' ~ tojson(rows), info=True) }}
{% endmacro %}
"""
#: The kept dbt process of each session folder (``FormatProject.dbt``).
WORKERS: dict[Path, _Worker] = {}
#: Seconds a command may take.
COMMAND_TIMEOUT = 600
#: 40 characters every value of `s` shares: longer than Delta's and Iceberg's own cuts of
#: string statistics (32 and 16 characters).
PREFIX = "customer-account-region-segment-tag-000-"


@dataclass
class _Worker:
    """A kept dbt process (``dbt_worker.py``) and the lines of its stdout, read by a
    thread of their own (None once it ends), so a wait for them can time out."""

    process: Launched
    lines: queue.Queue[str | None]
    reader: threading.Thread

    @classmethod
    def started(cls, root: Path, gate: WriteGate) -> _Worker:
        # Its stderr (its Spark's log) goes to a file, handed to the forked process.
        with (root / "dbt_worker.err").open("a") as errors:
            process = launcher().start(
                [], root, {**os.environ, "PYSPARK_PYTHON": sys.executable, "ZSPARK_STOP_AT": "",
                           "DBT_SEND_ANONYMOUS_USAGE_STATS": "false", **gate.environment,
                           "PYTHONPATH": str(Path(__file__).parents[2])},
                module="tests.functional.dbt_worker", stdin=True, stderr=errors)
        lines: queue.Queue[str | None] = queue.Queue()
        reader = threading.Thread(target=_read_lines, args=(process, lines), daemon=True)
        reader.start()
        return cls(process, lines, reader)


def _read_lines(process: Launched, lines: queue.Queue[str | None]) -> None:
    assert process.stdout is not None
    for line in process.stdout:
        lines.put(line)
    lines.put(None)


@dataclass
class FormatProject:
    """A dbt project of format models and the dbt processes that run its commands."""

    root: Path
    session_dir: Path

    def write(self, relative: str, text: str) -> None:
        path = self.root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())

    def dbt(self, *args: str, stop_at: str = "") -> subprocess.CompletedProcess[str]:
        """A dbt command, run in the project's kept dbt process; with ``stop_at``, that
        process (it leads its own process group, its Spark driver in it) kills itself
        and its group (SIGKILL) on reaching that step (``stop_points.py``), and the next
        command starts another."""
        command = self._command(args)
        return self._answer(self._send(command, stop_at), command)

    def killed_while_writing(self, table: Path, *args: str) -> str:
        """A command run by the kept dbt process, killed with its group (SIGKILL) while its
        write is held at its first data file under ``table`` (``WriteGate``): its write
        begun, its commit not come."""
        gate = self._gate()
        gate.close()
        command = self._command(args)
        worker = self._send(command)
        begun = gate.kill_when_held(worker.process.pid, lambda: worker.process.poll() is None,
                                    COMMAND_TIMEOUT)
        killed = self._answer(worker, command)
        assert begun is not None, killed.stdout[-5000:]
        assert table in begun.parents, (begun, killed.stdout[-5000:])
        assert killed.returncode == -signal.SIGKILL, killed.stdout[-5000:]
        return killed.stdout

    def _send(self, command: list[str], stop_at: str = "") -> _Worker:
        """``command`` handed to the kept dbt process (started first if there is none)."""
        worker = WORKERS.get(self.session_dir)
        if worker is None or worker.process.poll() is not None:
            worker = WORKERS[self.session_dir] = _Worker.started(self.root, self._gate())
        assert worker.process.stdin is not None
        worker.process.stdin.write(json.dumps({"args": command[1:], "stop_at": stop_at}) + "\n")
        worker.process.stdin.flush()
        return worker

    def _answer(self, worker: _Worker, command: list[str]) -> subprocess.CompletedProcess[str]:
        """What the kept dbt process said of ``command``: its return code and console
        output; if it ended first (killed), its exit status and what it had said."""
        console: list[str] = []
        deadline = time.monotonic() + COMMAND_TIMEOUT
        while True:
            try:
                line = worker.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                release(self.session_dir)
                raise AssertionError(f"dbt {' '.join(command[1:3])} gave no answer in "
                                     f"{COMMAND_TIMEOUT} s: see {self.root / 'dbt_worker.err'}"
                                     ) from None
            if line is None:  # the process ended
                release(self.session_dir)
                return subprocess.CompletedProcess(command, worker.process.returncode,
                                                   "".join(console), "")
            if line.startswith(CONSOLE):
                console.append(json.loads(line.removeprefix(CONSOLE)))
            elif line.startswith(ANSWER):
                answer = json.loads(line.removeprefix(ANSWER))
                return subprocess.CompletedProcess(command, answer["returncode"],
                                                   "".join(console), "")

    def _gate(self) -> WriteGate:
        return WriteGate(self.root / "write_gate")

    def start(self, *args: str, **env: str) -> Launched:
        """A dbt process started, not waited for (``env``: more of its environment)."""
        release(self.session_dir)
        return launcher().start(self._command(args)[1:], self.root,
                                {**os.environ, "PYSPARK_PYTHON": sys.executable, **env})

    def paused(self, step: str, gate: Path, *args: str) -> Launched:
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


def release(session_dir: Path) -> None:
    """The kept dbt process of ``session_dir`` stopped, its Spark with it: its input
    closed, its process group killed once it has ended (or right away if it does not)."""
    worker = WORKERS.pop(session_dir, None)
    if worker is None:
        return
    assert worker.process.stdin is not None
    with contextlib.suppress(BrokenPipeError):
        worker.process.stdin.close()
    with contextlib.suppress(subprocess.TimeoutExpired):
        worker.process.wait(timeout=60)
    _wait_for_group(worker.process.pid, timeout=60)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(worker.process.pid, signal.SIGKILL)
    worker.process.wait()
    worker.reader.join(timeout=60)
    assert worker.process.stdout is not None
    worker.process.stdout.close()


def _wait_for_group(group: int, timeout: float) -> None:
    """Until the process group has ended: its Spark exits after dbt does, and may be
    writing its class archive (``class_archive.py``) meanwhile."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.killpg(group, 0)
        except ProcessLookupError:
            return
        time.sleep(0.2)


def release_all() -> None:
    for session_dir in list(WORKERS):
        release(session_dir)


#: A test's tables are a few thousand rows: a few shuffle partitions (not 200) for the
#: formats' MERGE and OPTIMIZE, and Delta's snapshot of the log in 2 tasks (not 50).
SMALL_DATA = {"spark.sql.shuffle.partitions": "4", "spark.databricks.delta.snapshotPartitions": "2"}


def new_project(root: Path, session_dir: Path, profile: str,
                settings: dict[str, str] | None = None) -> FormatProject:
    """An empty project whose session profile has ``profile`` (YAML: a line, or none) and
    ``settings`` in its server_side_parameters, beside :data:`SMALL_DATA`."""
    project = FormatProject(root, session_dir)
    project.write("dbt_project.yml", """
        name: zspark_formats
        version: "1.0"
        config-version: 2
        profile: zspark_formats
        flags:
          send_anonymous_usage_stats: false
    """)
    target = {"type": "zspark", "method": "session", "schema": SCHEMA,
              "session_dir": str(session_dir), **(yaml.safe_load(profile) or {}),
              "server_side_parameters": {**SMALL_DATA, **(settings or {})}}
    project.write("profiles.yml", yaml.safe_dump(
        {"zspark_formats": {"target": "dev", "outputs": {"dev": target}}}))
    return project


def format_scan(file_format: str, session_dir: Path, queries: list[str]) -> list[Any]:
    """What ``tests.functional.format_scan`` finds for ``queries`` in a Spark of its own."""
    release(session_dir)
    done = subprocess.run(
        [sys.executable, "-m", "tests.functional.format_scan", file_format,
         str(session_dir), json.dumps(queries)],
        capture_output=True, text=True, timeout=600, cwd=Path(__file__).parents[2],
        env={**os.environ, "PYSPARK_PYTHON": sys.executable})
    assert done.returncode == 0, done.stderr[-3000:]
    found: list[Any] = json.loads(done.stdout.split("FORMAT_SCAN ", 1)[1])
    return found


def increments_project(root: Path, session_dir: Path, file_format: str) -> FormatProject:
    project = new_project(root, session_dir, f"table_format: {file_format}")
    project.write("models/grows.sql", f"""
        {{{{ config(materialized='incremental', file_format='{file_format}',
                    hilbert_by=['a', 's'], file_count=4, unique_key='id', zspark_recluster_runs=2,
                    incremental_strategy=var('strategy', 'append')) }}}}
        select id, cast(id % 50 as int) as a,
               concat('{PREFIX}', lpad(cast((id * 7) % 40 as string), 3, '0')) as s,
               cast({{{{ var('v', 0) }}}} as int) as v
        from range({{{{ var('lo') }}}}, {{{{ var('hi') }}}})
    """)
    return project
