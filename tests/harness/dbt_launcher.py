"""dbt processes forked from one that imported dbt, zspark and pyspark once.

A dbt process spends seconds importing dbt, dbt-spark, zspark and pyspark before it
does anything; the kill tests and soaks (``kills.py``, the format tests' kept processes)
start dozens of them. The launcher is a process that imports them once and forks a child
per command: the child is a new dbt process in every way that counts, leading a process
group of its own (its Spark driver joins it, and a kill of the group kills both), with
its own working folder, environment, stdin, stdout and stderr, and its exit status
(``-9`` when killed, as ``subprocess.Popen`` reports it) passed back to the caller.

The launcher is single-threaded (a fork copies only the forking thread; a lock held by
another would stay held in the child) and ends when the process that started it does.
Run as ``python -m tests.harness.dbt_launcher <socket>`` it is the launcher.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO, Any

#: What a dbt run of the suite imports, loaded before the first fork.
PRELOADED = ("dbt.cli.main", "dbt.task.run", "dbt.task.build", "dbt.task.run_operation",
             "dbt.task.test", "dbt.task.compile", "dbt.task.seed", "dbt.parser.manifest",
             "dbt.adapters.spark.impl", "dbt.adapters.zspark.impl", "pyspark.sql")
START_SECONDS = 120


class Launched:
    """A forked dbt process, as much of ``subprocess.Popen`` as its callers use."""

    def __init__(self, args: list[str], pid: int, status: socket.socket,
                 stdin: IO[str] | None, stdout: IO[str] | None) -> None:
        self.args, self.pid = args, pid
        self.returncode: int | None = None
        self.stdin, self.stdout = stdin, stdout
        self._status = status
        self._output = bytearray()

    def poll(self) -> int | None:
        if self.returncode is None and select.select([self._status], [], [], 0)[0]:
            self._read_status()
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            if not select.select([self._status], [], [], timeout)[0]:
                raise subprocess.TimeoutExpired(self.args, timeout or 0)
            self._read_status()
        assert self.returncode is not None
        return self.returncode

    def _read_status(self) -> None:
        line = _line(self._status)
        self._status.close()
        if not line:  # the launcher ended first: the status is unknown, never taken as a kill
            raise RuntimeError(f"the dbt launcher ended before process {self.pid} did")
        self.returncode = int(json.loads(line)["status"])

    def communicate(self, timeout: float | None = None) -> tuple[str, None]:
        """Its output until it ends (as Popen's, kept across a call that timed out)."""
        assert self.stdout is not None
        deadline = None if timeout is None else time.monotonic() + timeout
        descriptor = self.stdout.fileno()
        while not self.stdout.closed:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not select.select([descriptor], [], [], left)[0]:
                raise subprocess.TimeoutExpired(self.args, timeout or 0)
            chunk = os.read(descriptor, 65536)
            if not chunk:
                self.stdout.close()
            self._output += chunk
        left = None if deadline is None else max(0.0, deadline - time.monotonic())
        self.wait(left)
        # Decoded whole: a character split between two reads stays one character.
        return self._output.decode(errors="replace"), None


class Launcher:
    """The launcher process of this process, started on first use."""

    def __init__(self) -> None:
        self._folder = tempfile.mkdtemp(prefix="zspark-dbt-launcher-")
        self.address = str(Path(self._folder) / "socket")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.harness.dbt_launcher", self.address],
            stdin=subprocess.DEVNULL, cwd=Path(__file__).parents[2],
            env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])})
        deadline = time.monotonic() + START_SECONDS
        while not Path(self.address).exists():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the dbt launcher did not start")
            time.sleep(0.1)

    def start(self, args: list[str], cwd: Path, env: dict[str, str], *,
              module: str | None = None, stdin: bool = False,
              stderr: IO[Any] | None = None) -> Launched:
        """``dbt <args>`` (or ``<module>.main()``, ``args`` its argv) forked in ``cwd`` with
        exactly ``env``; its stdout a pipe (its stderr too, unless ``stderr`` is a file), its stdin
        a pipe if asked for, else empty."""
        out_read, out_write = os.pipe()
        in_read, in_write = os.pipe() if stdin else (os.open(os.devnull, os.O_RDONLY), -1)
        err = stderr.fileno() if stderr is not None else out_write
        connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            connection.connect(self.address)
            request = {"args": args, "cwd": str(cwd), "env": env, "module": module}
            socket.send_fds(connection, [json.dumps(request).encode() + b"\n"],
                            [in_read, out_write, err])
            answer = _line(connection)
        finally:
            os.close(in_read)
            os.close(out_write)
        if not answer:
            raise RuntimeError("the dbt launcher gave no process")
        pid = int(json.loads(answer)["pid"])
        return Launched(args, pid, connection,
                        os.fdopen(in_write, "w") if stdin else None,
                        os.fdopen(out_read, "r", errors="replace"))

    def stop(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            self.process.kill()
        self.process.wait()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.address)
            os.rmdir(self._folder)


def _line(connection: socket.socket) -> str:
    """One line of the launcher's, read byte by byte: what follows it (a status) stays in
    the socket for ``select`` to see."""
    read = b""
    while not read.endswith(b"\n"):
        byte = connection.recv(1)
        if not byte:
            break
        read += byte
    return read.decode()


_LAUNCHER: Launcher | None = None


def launcher() -> Launcher:
    global _LAUNCHER
    if _LAUNCHER is None or _LAUNCHER.process.poll() is not None:
        _LAUNCHER = Launcher()
    return _LAUNCHER


def stop() -> None:
    """The launcher stopped, if this process started one (its children run on)."""
    global _LAUNCHER
    if _LAUNCHER is not None:
        _LAUNCHER.stop()
        _LAUNCHER = None


def _serve(address: str) -> None:
    import importlib
    import threading
    from multiprocessing import resource_tracker

    for name in PRELOADED:
        importlib.import_module(name)
    # dbt's locks are semaphores that a resource tracker follows. One tracker of the
    # launcher's serves every child: a child that started its own (its stderr the
    # child's) would print a leak warning among the child's output, as a child ends
    # with os._exit and leaves its semaphores to the tracker. The tracker removes them
    # and has nothing else to say: its stderr is /dev/null.
    console = os.dup(2)
    quiet = os.open(os.devnull, os.O_WRONLY)
    os.dup2(quiet, 2)
    try:
        resource_tracker.ensure_running()
    finally:
        os.dup2(console, 2)
        os.close(console)
        os.close(quiet)
    assert threading.active_count() == 1, "a preloaded module started a thread: no fork"
    parent = os.getppid()
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(address + ".new")
    server.listen(16)
    os.rename(address + ".new", address)  # the caller connects once it is listening
    children: dict[int, socket.socket] = {}
    while os.getppid() == parent:
        if select.select([server], [], [], 0.1)[0]:
            connection, _ = server.accept()
            message, descriptors, _, _ = socket.recv_fds(connection, 1 << 20, 3)
            request = json.loads(message)
            pid = os.fork()
            if pid == 0:
                for held in (server, connection, *children.values()):
                    held.close()
                _child(request, descriptors)
            for descriptor in descriptors:
                os.close(descriptor)
            connection.sendall(json.dumps({"pid": pid}).encode() + b"\n")
            children[pid] = connection
        while children:
            pid, status = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                break
            code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
            with contextlib.suppress(OSError):
                children[pid].sendall(json.dumps({"status": code}).encode() + b"\n")
            children.pop(pid).close()


def _child(request: dict[str, Any], descriptors: list[int]) -> None:
    """The forked dbt process: never returns."""
    code = 1
    try:
        os.setsid()  # its own process group, as start_new_session gives
        # Ctrl-C interrupts dbt as in a terminal, though the launcher may have been started
        # ignoring SIGINT (a suite run in the background by a non-interactive shell is),
        # which a fork would keep.
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for target, descriptor in enumerate(descriptors):
            os.dup2(descriptor, target)
        for descriptor in set(descriptors):
            if descriptor > 2:
                os.close(descriptor)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        code = _run(request["args"], request["module"])
    except BaseException:  # a child must end here, whatever it raised
        import traceback

        traceback.print_exc()
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


def _run(args: list[str], module: str | None) -> int:
    """The dbt CLI as its script runs it, or the ``main()`` of ``module``."""
    import importlib

    from dbt.cli.main import cli

    sys.argv = [module or str(Path(sys.executable).parent / "dbt"), *args]
    try:
        if module:
            importlib.import_module(module).main()
        else:
            cli(prog_name="dbt")
    except SystemExit as exit_:
        return exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
    return 0


if __name__ == "__main__":
    _serve(sys.argv[1])
