"""A dbt process that runs a format test's commands one after another, so that its Spark
(a JVM with the format's jars, warmed by the commands before) starts once rather than
once per command. Run as ``python -m tests.functional.dbt_worker``: reads a JSON object
per line on stdin, ``{"args": [dbt arguments], "stop_at": "<step>[,<step>...]"}``, runs
the command with ``ZSPARK_STOP_AT`` set to ``stop_at`` (``stop_points.py``: reaching
such a step kills this process and its Spark with SIGKILL), passes on what dbt logs to
its console as it is written (a line ``DBT_CONSOLE <JSON string>`` each, so a command
killed midway has said what it did) and answers with a line ``DBT_WORKER <JSON>``: the
command's return code (0 success, 1 failure, 2 error, as the dbt CLI)."""

from __future__ import annotations

import io
import json
import os
import sys
from typing import Any

from dbt.cli.main import dbtRunner
from dbt_common.events.functions import capture_stdout_logs, stop_capture_stdout_logs

from dbt.adapters.zspark.core.stop_points import ENVIRONMENT

#: Mark the answer, and dbt's console output, among whatever else (Spark's JVM) writes to
#: stdout.
ANSWER, CONSOLE = "DBT_WORKER ", "DBT_CONSOLE "


class _Console(io.TextIOBase):
    """dbt's console output, each piece passed on to stdout as soon as it is written."""

    def write(self, text: str) -> int:
        sys.stdout.write(CONSOLE + json.dumps(text) + "\n")
        sys.stdout.flush()
        return len(text)


def _adapter_detail(event: Any) -> None:
    """The adapter's detail lines (dbt's debug log) passed on too: tests read them."""
    if event.info.level == "debug" and event.info.msg.startswith("zspark"):
        sys.stdout.write(CONSOLE + json.dumps(f"[debug] {event.info.msg}\n") + "\n")
        sys.stdout.flush()


def run(args: list[str], stop_at: str) -> int:
    os.environ[ENVIRONMENT] = stop_at
    capture_stdout_logs(_Console())
    try:
        result = dbtRunner(callbacks=[_adapter_detail]).invoke(args)
    finally:
        stop_capture_stdout_logs()
        os.environ[ENVIRONMENT] = ""
    return 0 if result.success else 2 if result.exception is not None else 1


def main() -> None:
    for line in sys.stdin:
        command = json.loads(line)
        code = run(command["args"], command["stop_at"])
        sys.stdout.write(ANSWER + json.dumps({"returncode": code}) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
