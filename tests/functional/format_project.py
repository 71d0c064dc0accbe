"""A dbt project of Delta Lake or Iceberg models whose every command runs in a dbt process
of its own (the format's jars load when a JVM starts)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SCHEMA = "zspark_formats"
QUERY_MACRO = """
{% macro zs_query(sql) %}
  {%- set rows = [] -%}
  {%- for row in run_query(sql).rows -%}{%- do rows.append(row.values() | list) -%}{%- endfor -%}
  {{ log('ZS_ROWS ' ~ tojson(rows), info=True) }}
{% endmacro %}
"""
#: 40 characters every value of `s` shares: longer than Delta's and Iceberg's own cuts of
#: string statistics (32 and 16 characters).
PREFIX = "customer-account-region-segment-tag-000-"

@dataclass
class FormatProject:
    """A dbt project whose every command runs in a new dbt process."""

    root: Path
    session_dir: Path

    def write(self, relative: str, text: str) -> None:
        path = self.root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())

    def dbt(self, *args: str, stop_at: str = "") -> subprocess.CompletedProcess[str]:
        """A dbt process leading its own process group (its Spark driver in it); with
        ``stop_at``, killed with the group (SIGKILL) at that step (``stop_points.py``)."""
        return subprocess.run(
            self._command(args), cwd=self.root, capture_output=True, text=True, timeout=600,
            start_new_session=True,
            env={**os.environ, "PYSPARK_PYTHON": sys.executable, "ZSPARK_STOP_AT": stop_at})

    def killed_while_writing(self, table: Path, *args: str) -> str:
        """A dbt process killed with its group (SIGKILL) as soon as a data file appears
        under ``table`` that was not there before: its write begun, its commit not come."""
        before = set(table.rglob("*.parquet"))
        process = self.start(*args)
        deadline = time.monotonic() + 600
        begun = False
        while not begun and process.poll() is None and time.monotonic() < deadline:
            begun = any(f not in before for f in table.rglob("*.parquet"))
            time.sleep(0.005)
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        assert begun, output[-5000:]
        assert process.returncode == -signal.SIGKILL, output[-5000:]
        return output

    def start(self, *args: str, **env: str) -> subprocess.Popen[str]:
        """A dbt process started, not waited for (``env``: more of its environment)."""
        return subprocess.Popen(
            self._command(args), cwd=self.root, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True, start_new_session=True,
            env={**os.environ, "PYSPARK_PYTHON": sys.executable, **env})

    def paused(self, step: str, gate: Path, *args: str) -> subprocess.Popen[str]:
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


def new_project(root: Path, session_dir: Path, profile: str) -> FormatProject:
    """An empty project whose session profile has ``profile`` (a line or block)."""
    project = FormatProject(root, session_dir)
    project.write("dbt_project.yml", """
        name: zspark_formats
        version: "1.0"
        config-version: 2
        profile: zspark_formats
        flags:
          send_anonymous_usage_stats: false
    """)
    project.write("profiles.yml", f"""
        zspark_formats:
          target: dev
          outputs:
            dev:
              type: zspark
              method: session
              schema: {SCHEMA}
              session_dir: {session_dir}
              {profile}
    """)
    return project


def format_scan(file_format: str, session_dir: Path, queries: list[str]) -> list[Any]:
    """What ``tests.functional.format_scan`` finds for ``queries`` in a Spark of its own."""
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
                    hilbert_by=['a', 's'], file_count=4, unique_key='id',
                    incremental_strategy=var('strategy', 'append')) }}}}
        select id, cast(id % 50 as int) as a,
               concat('{PREFIX}', lpad(cast((id * 7) % 40 as string), 3, '0')) as s,
               cast({{{{ var('v', 0) }}}} as int) as v
        from range({{{{ var('lo') }}}}, {{{{ var('hi') }}}})
    """)
    return project
