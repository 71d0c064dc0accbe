"""dbt's cancel (Ctrl-C) reaching an embedded session's Spark jobs.

The driver JVM ignores SIGINT, and dbt-spark's session connection cannot cancel: an
interrupted ``dbt run`` used to wait for its models' Spark jobs to finish, and a build
then swapped its table in. Here every dbt connection's thread runs its Spark jobs in a
job group of its own (pyspark pins each Python thread to a JVM thread, whose local
properties carry the group). When dbt cancels a connection, its group's running jobs
are cancelled with their tasks interrupted, and every later job of the group is refused;
so is every statement the connection sends after that. The model fails where it stands,
before any swap or commit that follows its write, and the next run recovers what it
left as after a kill.
"""

from __future__ import annotations

import contextlib
import threading
import uuid
from collections.abc import Iterator
from typing import Any

from dbt_common.exceptions import DbtRuntimeError


class CancelledError(DbtRuntimeError):
    """A statement of a connection dbt cancelled."""


class _ThreadGroup(threading.local):
    """The connection name and job group of the current thread."""

    name: str | None = None
    group: str | None = None
    cleaning_up: bool = False


class JobGroups:
    """Job groups of dbt connections in one Spark driver."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._thread = _ThreadGroup()
        #: Connection name -> the group of the thread that last used it.
        self._by_name: dict[str, str] = {}
        self._cancelled: set[str] = set()

    def join(self, name: str | None) -> None:
        """Run this thread's Spark jobs in the group of connection ``name``: a new group
        when the thread takes a connection of another name; a cancelled group is kept
        (later jobs and statements stay refused)."""
        context = _active_context()
        if context is None or name is None:
            return
        local = self._thread
        if local.name != name or local.group is None:
            local.name, local.group = name, f"zspark-{uuid.uuid4().hex[:12]}"
        with self._lock:
            self._by_name[name] = local.group
        context.setJobGroup(local.group, f"dbt: {name}", interruptOnCancel=True)

    def cancel(self, name: str | None) -> bool:
        """Cancel the running and future Spark jobs of connection ``name``; True when it
        had a group to cancel."""
        context = _active_context()
        with self._lock:
            group = self._by_name.get(name or "")
            if context is None or group is None:
                return False
            self._cancelled.add(group)
        context._jsc.sc().cancelJobGroupAndFutureJobs(group, f"dbt cancelled {name}")
        return True

    @contextlib.contextmanager
    def cleaning_up(self) -> Iterator[None]:
        """Statements of a model's cleanup (its lock released), sent even once cancelled."""
        self._thread.cleaning_up = True
        try:
            yield
        finally:
            self._thread.cleaning_up = False

    def refuse_if_cancelled(self) -> None:
        """Raise for a statement of this thread's connection once dbt cancelled it."""
        group = self._thread.group
        if group is not None and group in self._cancelled and not self._thread.cleaning_up:
            raise CancelledError(f"zspark: {self._thread.name}: cancelled (dbt was "
                                 f"interrupted); nothing more of it runs")


def _active_context() -> Any:
    from pyspark import SparkContext

    return SparkContext._active_spark_context


#: The groups of this process's Spark driver (one per process, as its session).
JOB_GROUPS = JobGroups()
