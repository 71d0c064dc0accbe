"""Named stop points between the steps of every write protocol, for tests that kill dbt.

With ``ZSPARK_STOP_AT=<step>[,<step>...]`` in its environment, a dbt process reaching one
of those steps kills itself with SIGKILL, with its Spark driver when it leads its own
process group (as a test starts it): nothing runs after, exactly as when a scheduler or
the kernel kills a run. Without the variable a stop point does nothing.
"""

from __future__ import annotations

import os
import signal

ENVIRONMENT = "ZSPARK_STOP_AT"


def stop_point(step: str) -> None:
    wanted = os.environ.get(ENVIRONMENT)
    if not wanted or step not in wanted.split(","):
        return
    if os.getpgrp() == os.getpid():  # the group is this run's own: the driver goes too
        os.killpg(os.getpgrp(), signal.SIGKILL)
    os.kill(os.getpid(), signal.SIGKILL)
