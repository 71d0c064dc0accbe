"""A Spark Thrift Server on loopback, started from this venv's pyspark and stopped by the
process id it started (the benchmark's and the tests' server alike)."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def thrift_server(home: Path, conf: Mapping[str, str], env: Mapping[str, str],
                  master: str = "local[2]", driver_memory: str = "1g",
                  timeout: float = 180) -> Iterator[int]:
    """Start a Thrift server bound to 127.0.0.1 (its log in ``home/server.log``), yield its
    port once it accepts sessions, stop it on exit."""
    home.mkdir(parents=True, exist_ok=True)
    port = free_port()
    log_path = home / "server.log"
    settings = [part for key, value in {"spark.ui.enabled": "false", **conf}.items()
                for part in ("--conf", f"{key}={value}")]
    with log_path.open("w") as log:
        server = subprocess.Popen(
            [str(BIN / "spark-submit"), "--class",
             "org.apache.spark.sql.hive.thriftserver.HiveThriftServer2",
             "--master", master, "--driver-memory", driver_memory, *settings,
             "--hiveconf", "hive.server2.thrift.bind.host=127.0.0.1",
             "--hiveconf", f"hive.server2.thrift.port={port}", "spark-internal"],
            stdout=log, stderr=subprocess.STDOUT, cwd=home, env=dict(env))
    try:
        deadline = time.monotonic() + timeout  # slow when another Spark job shares the cores
        while "HiveThriftServer2 started" not in log_path.read_text():
            if server.poll() is not None:
                raise RuntimeError(log_path.read_text()[-3000:])
            if time.monotonic() > deadline:
                raise TimeoutError(f"Thrift server did not start in {timeout:.0f} s")
            time.sleep(0.5)
        yield port
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
