"""Named stop points between the steps of every write protocol, for tests that kill dbt.

With ``ZSPARK_STOP_AT=<step>[,<step>...]`` in its environment, a dbt process reaching one
of those steps kills itself with SIGKILL, with its Spark driver when it leads its own
process group (as a test starts it): nothing runs after, exactly as when a scheduler or
the kernel kills a run. With ``ZSPARK_PAUSE_AT=<step>`` and ``ZSPARK_PAUSE_DIR=<folder>``
it writes ``<folder>/reached`` at that step and waits until ``<folder>/resume`` exists
(a test runs a second process meanwhile). Without the variables a stop point does nothing.

Within one Spark write there is no step of zspark's to stop at: with ``ZSPARK_WRITE_GATE``
naming a folder, zspark's local file system (``NioLocalFileSystem.java``) holds a task at
the first data file it creates while ``<folder>/hold`` exists, and writes that file's path
to ``<folder>/held``; a test then kills the run between its first data file and its commit.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

ENVIRONMENT = "ZSPARK_STOP_AT"
PAUSE_AT, PAUSE_DIR = "ZSPARK_PAUSE_AT", "ZSPARK_PAUSE_DIR"
WRITE_GATE = "ZSPARK_WRITE_GATE"
#: How long a paused run waits for its test before going on regardless.
PAUSE_LIMIT_SECONDS = 600


def stop_point(step: str) -> None:
    wanted = os.environ.get(ENVIRONMENT)
    if wanted and step in wanted.split(","):
        if os.getpgrp() == os.getpid():  # the group is this run's own: the driver goes too
            os.killpg(os.getpgrp(), signal.SIGKILL)
        os.kill(os.getpid(), signal.SIGKILL)
    if os.environ.get(PAUSE_AT) == step and os.environ.get(PAUSE_DIR):
        gate = Path(os.environ[PAUSE_DIR])
        (gate / "reached").touch()
        deadline = time.monotonic() + PAUSE_LIMIT_SECONDS
        while not (gate / "resume").exists() and time.monotonic() < deadline:
            time.sleep(0.2)
