"""The dbt launcher: forked dbt processes behave as started ones (output, exit status,
their own process group, a SIGKILL of it reported as Popen reports it)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.functional.dbt_worker import ANSWER
from tests.harness import dbt_launcher


@pytest.fixture(scope="module")
def launcher() -> Iterator[dbt_launcher.Launcher]:
    yield dbt_launcher.launcher()
    dbt_launcher.stop()


def test_a_command_gives_its_output_and_exit_status(launcher: dbt_launcher.Launcher,
                                                     tmp_path: Path) -> None:
    helped = launcher.start(["--help"], tmp_path, dict(os.environ))
    output, _ = helped.communicate(timeout=120)
    assert helped.returncode == 0, output
    assert "Usage: dbt [OPTIONS] [COMMAND]" in output
    refused = launcher.start(["run", "--no-such-flag"], tmp_path, dict(os.environ))
    output, _ = refused.communicate(timeout=120)
    assert refused.returncode == 2, output
    assert "No such option" in output


def test_a_forked_process_leads_its_group_and_its_kill_is_reported(
        launcher: dbt_launcher.Launcher, tmp_path: Path) -> None:
    worker = launcher.start([], tmp_path, {**os.environ, "ZSPARK_STOP_AT": ""},
                            module="tests.functional.dbt_worker", stdin=True)
    assert worker.stdin is not None
    assert worker.stdout is not None
    worker.stdin.write(json.dumps({"args": ["--help"], "stop_at": ""}) + "\n")
    worker.stdin.flush()
    answers = (line for line in worker.stdout if line.startswith(ANSWER))
    assert json.loads(next(answers).removeprefix(ANSWER)) == {"returncode": 0}
    assert os.getpgid(worker.pid) == worker.pid
    assert worker.poll() is None
    with pytest.raises(subprocess.TimeoutExpired):
        worker.wait(timeout=0.5)
    os.killpg(worker.pid, signal.SIGKILL)
    assert worker.wait(timeout=30) == -signal.SIGKILL
    assert worker.wait() == worker.poll() == -signal.SIGKILL
