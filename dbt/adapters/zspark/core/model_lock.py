"""One run at a time per table: a lock in the metastore, told stale when its owner died.

A run of a model (or a run-operation on its table) first creates the view
``<table>__zspark_lock``: the metastore creates a name once, so of two runs only one
succeeds, and the other fails at once with the owner's host and process id. The view's
properties name its owner; a lock whose owner was this machine's process and is gone
(killed, crashed) is stale and taken over. A lock held from another machine is never
broken here: the message says how to remove it once that run is known to be gone.

Pure Python: the owner record and the staleness test.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Mapping
from dataclasses import dataclass

LOCK_SUFFIX = "__zspark_lock"
_PREFIX = "zspark.lock."


def _process_start(pid: int) -> str:
    """When a process started, in clock ticks since boot ('' where /proc is absent): a pid
    reused by a later process differs in it."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return ""


@dataclass(frozen=True)
class LockOwner:
    host: str
    pid: int
    started: str
    since: float

    @classmethod
    def this_process(cls) -> LockOwner:
        pid = os.getpid()
        return cls(socket.gethostname(), pid, _process_start(pid), time.time())

    def to_properties(self) -> dict[str, str]:
        return {f"{_PREFIX}host": self.host, f"{_PREFIX}pid": str(self.pid),
                f"{_PREFIX}started": self.started, f"{_PREFIX}since": f"{self.since:.0f}"}

    @classmethod
    def from_properties(cls, properties: Mapping[str, str]) -> LockOwner | None:
        try:
            return cls(properties[f"{_PREFIX}host"], int(properties[f"{_PREFIX}pid"]),
                       properties.get(f"{_PREFIX}started", ""),
                       float(properties.get(f"{_PREFIX}since", "0")))
        except (KeyError, ValueError):
            return None

    def same_process(self, other: LockOwner) -> bool:
        return (self.host, self.pid, self.started) == (other.host, other.pid, other.started)

    def is_gone(self) -> bool:
        """Has the owning process ended? Only a process of this machine can be told gone."""
        if self.host != socket.gethostname():
            return False
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:  # alive, another user's
            return False
        return bool(self.started) and _process_start(self.pid) != self.started

    def describe(self) -> str:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.since))
        return f"process {self.pid} on host {self.host}, since {when}"
