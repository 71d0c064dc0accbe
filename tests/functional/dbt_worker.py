"""A dbt process that runs a format test's commands one after another, so that its Spark
(a JVM with the format's jars, warmed by the commands before) starts once rather than
once per command. Run as ``python -m tests.functional.dbt_worker``: reads a JSON list of
dbt arguments per line on stdin, and answers each with a line ``DBT_WORKER <JSON>`` on
stdout: the command's return code (0 success, 1 failure, 2 error, as the dbt CLI) and
what dbt logged to its console."""

from __future__ import annotations

import io
import json
import sys

from dbt.cli.main import dbtRunner
from dbt_common.events.functions import capture_stdout_logs, stop_capture_stdout_logs

#: Marks the answer among whatever else (Spark's JVM) writes to stdout.
ANSWER = "DBT_WORKER "


def run(args: list[str]) -> tuple[int, str]:
    console = io.StringIO()
    capture_stdout_logs(console)
    try:
        result = dbtRunner().invoke(args)
    finally:
        stop_capture_stdout_logs()
    code = 0 if result.success else 2 if result.exception is not None else 1
    return code, console.getvalue()


def main() -> None:
    for line in sys.stdin:
        code, output = run(json.loads(line))
        sys.stdout.write(ANSWER + json.dumps({"returncode": code, "stdout": output}) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
