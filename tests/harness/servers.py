"""Spark servers on loopback, started from this venv's pyspark and stopped by the process
ids they started (the benchmark's and the tests' alike): a Thrift Server, a Spark Connect
server, and a standalone cluster whose executors run a separate virtualenv holding pyspark,
pandas, numpy and pyarrow but neither dbt nor the plugin, as on a real cluster's machines."""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from dbt.adapters.zspark.connections import CLASS_PATH, with_class_archive
from dbt.adapters.zspark.reach.session.class_archive import (
    archive_dir,
    archive_key,
    promote_recordings,
)

BIN = Path(sys.executable).parent
REPO = Path(__file__).resolve().parents[2]
#: What an executor needs to run the keys and the footer reader, and what they import.
EXECUTOR_PACKAGES = ("pyspark", "py4j", "pandas", "numpy", "pyarrow", "dateutil",
                     "python_dateutil", "pytz", "tzdata", "six")
#: How long a server may take to come up: on 2 cores busy with a test suite's other JVMs,
#: a master and two workers once took over 120 s.
SERVER_START_SECONDS = 300


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def own_metastore(home: Path) -> dict[str, str]:
    """Settings giving a server a warehouse and a Derby metastore of its own in ``home``."""
    return {"spark.sql.warehouse.dir": str(home / "warehouse"),
            "spark.driver.extraJavaOptions": f"-Dderby.system.home={home}",
            "spark.hadoop.javax.jdo.option.ConnectionURL":
                f"jdbc:derby:;databaseName={home / 'metastore_db'};create=true"}


@contextmanager
def thrift_server(home: Path, conf: Mapping[str, str], env: Mapping[str, str],
                  master: str = "local[2]", driver_memory: str = "1g",
                  timeout: float = SERVER_START_SECONDS) -> Iterator[int]:
    """Start a Thrift server bound to 127.0.0.1 (its log in ``home/server.log``), yield its
    port once it accepts sessions, stop it on exit."""
    port = free_port()
    with _server(home, "org.apache.spark.sql.hive.thriftserver.HiveThriftServer2", conf,
                 env, master, driver_memory, timeout, "HiveThriftServer2 started",
                 ["--hiveconf", "hive.server2.thrift.bind.host=127.0.0.1",
                  "--hiveconf", f"hive.server2.thrift.port={port}", "spark-internal"]):
        yield port


@contextmanager
def connect_server(home: Path, conf: Mapping[str, str], env: Mapping[str, str],
                   master: str = "local[2]", driver_memory: str = "1g",
                   timeout: float = SERVER_START_SECONDS) -> Iterator[int]:
    """Start a Spark Connect server bound to 127.0.0.1 (pyspark ships its jar; its log in
    ``home/server.log``), yield its port once it listens, stop it on exit. Its catalog is
    Hive's (the metastore in ``conf``), as a Thrift server's is; Connect's own default is
    a catalog in the server's memory."""
    port = free_port()
    own = {"spark.sql.catalogImplementation": "hive", **conf,
           "spark.connect.grpc.binding.address": "127.0.0.1",
           "spark.connect.grpc.binding.port": str(port)}
    with _server(home, "org.apache.spark.sql.connect.service.SparkConnectServer", own, env,
                 master, driver_memory, timeout, "Spark Connect server started", []):
        yield port


@contextmanager
def connect_client(port: int) -> Iterator[Any]:
    """A Connect client session of this process's own on the server at ``port``, stopped
    on exit (``create``: in a process that may hold a classic session too)."""
    from pyspark.sql.connect.session import SparkSession

    client = SparkSession.builder.remote(f"sc://127.0.0.1:{port}").create()
    try:
        yield client
    finally:
        client.stop()


@contextmanager
def _server(home: Path, main_class: str, conf: Mapping[str, str], env: Mapping[str, str],
            master: str, driver_memory: str, timeout: float, started: str,
            arguments: list[str]) -> Iterator[None]:
    """A Spark server process of ``main_class``, up once its log says ``started``."""
    home.mkdir(parents=True, exist_ok=True)
    log_path = home / "server.log"
    own = _mapping_recorded_classes({"spark.ui.enabled": "false", **conf})
    settings = [part for key, value in own.items() for part in ("--conf", f"{key}={value}")]
    with log_path.open("w") as log:
        server = subprocess.Popen(
            [str(BIN / "spark-submit"), "--class", main_class, "--master", master,
             "--driver-memory", driver_memory, *settings, *arguments],
            stdout=log, stderr=subprocess.STDOUT, cwd=home, env=dict(env))
    try:
        deadline = time.monotonic() + timeout  # slow when another Spark job shares the cores
        while started not in log_path.read_text():
            if server.poll() is not None:
                raise RuntimeError(log_path.read_text()[-3000:])
            if time.monotonic() > deadline:
                raise TimeoutError(f"{main_class} did not start in {timeout:.0f} s")
            time.sleep(0.5)
        yield
    finally:
        _stop(server)


def _mapping_recorded_classes(conf: dict[str, str]) -> dict[str, str]:
    """A server's settings, its JVM mapping the class archive of its class path when one
    was recorded (a start in half the time), else recording none: a server of a format's
    jars starts once a suite run, and a JVM that records writes its 200 MB archive as it
    exits, which outlasted the 30 s a stop waits (the server killed amid it, its recording
    lost) and counted against the suite's limit of archives kept, deleting ones its
    sessions map."""
    key = archive_key(str(conf.get(CLASS_PATH, "")))
    promote_recordings(key)  # the suite's recording of it, finished, is its archive now
    return with_class_archive(conf) if (archive_dir() / f"{key}.jsa").is_file() else conf


def _stop(server: subprocess.Popen[bytes]) -> None:
    """A server started here, stopped: SIGTERM, then SIGKILL if it lingers."""
    server.send_signal(signal.SIGTERM)
    try:
        server.wait(timeout=30)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()


def executor_python(root: Path) -> Path:
    """A virtualenv for the executors: only :data:`EXECUTOR_PACKAGES`, linked from this
    venv's site-packages (no download). Checked to have no ``dbt``."""
    import pyspark

    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    site = next((root / "lib").glob("python3*/site-packages"))
    ours = Path(pyspark.__file__).resolve().parent.parent
    for entry in ours.iterdir():
        if entry.name.split("-")[0].split(".")[0] in EXECUTOR_PACKAGES:
            (site / entry.name).symlink_to(entry)
    python = root / "bin" / "python"
    # -I: the working directory must not lend the plugin's source to the check.
    has_dbt = subprocess.run([str(python), "-I", "-c", "import dbt"], capture_output=True,
                             check=False)
    assert has_dbt.returncode != 0, "the executors' venv can import dbt: the test proves nothing"
    ready = subprocess.run([str(python), "-I", "-c", "import pyspark, pandas, numpy, pyarrow"],
                           capture_output=True, text=True, check=False)
    assert ready.returncode == 0, ready.stderr
    return python


@contextmanager
def standalone_cluster(root: Path, workers: int = 2,
                       worker_memory: str = "1536m") -> Iterator[str]:
    """Start a master and ``workers`` one-core workers on 127.0.0.1; yield the master URL;
    stop every process started, by process group."""
    import pyspark

    home = Path(pyspark.__file__).resolve().parent
    env = {**os.environ, "SPARK_HOME": str(home), "SPARK_LOCAL_IP": "127.0.0.1",
           "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false",
           "SPARK_LOG_DIR": str(root / "logs"), "SPARK_PID_DIR": str(root)}
    port, web = free_port(), free_port()
    url = f"spark://127.0.0.1:{port}"
    spark_class = str(Path(sys.executable).parent / "spark-class")
    commands = [[spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                 "--port", str(port), "--webui-port", str(web)]]
    commands += [[spark_class, "org.apache.spark.deploy.worker.Worker", url, "--cores", "1",
                  "--memory", worker_memory, "--host", "127.0.0.1",
                  "--webui-port", str(free_port()),
                  "--work-dir", str(root / f"worker{i}")] for i in range(workers)]
    started: list[subprocess.Popen[bytes]] = []
    try:
        for i, command in enumerate(commands):
            with (root / f"process{i}.log").open("wb") as log:
                started.append(subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,
                                                cwd=root, env=env, start_new_session=True))
        deadline = time.monotonic() + SERVER_START_SECONDS
        while _alive_workers(web) < workers:
            assert all(p.poll() is None for p in started), _logs(root)
            assert time.monotonic() < deadline, (
                f"cluster not up in {SERVER_START_SECONDS} s\n" + _logs(root))
            time.sleep(1)
        yield url
    finally:
        for process in started:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in started:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


def _alive_workers(web_port: int) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{web_port}/json/", timeout=2) as reply:
            return int(json.load(reply).get("aliveworkers", 0))
    except (OSError, ValueError, http.client.HTTPException):
        # A web UI still starting may refuse, cut the reply short or answer with no JSON.
        return 0


def _logs(root: Path) -> str:
    return "\n".join(p.read_text(errors="replace")[-2000:] for p in sorted(root.glob("*.log")))


#: The bucket the local S3 server holds, and the keys every client gives it.
BUCKET, S3_KEYS = "lake", ("zspark", "zspark-secret")


@contextmanager
def s3_server(home: Path, timeout: float = SERVER_START_SECONDS,
              latency_ms: float = 0) -> Iterator[str]:
    """Start an S3-compatible server (moto's) on 127.0.0.1 holding the bucket
    :data:`BUCKET`; yield its endpoint (``http://127.0.0.1:PORT``); stop it on exit.
    It logs one line per request to ``home/s3.log``: the requests a run made.
    ``latency_ms``: a delay before each request is served (``bench.slow_s3``)."""
    home.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + timeout
    for _attempt in range(S3_START_ATTEMPTS):
        port = free_port()
        command = ([str(BIN / "moto_server"), "-H", "127.0.0.1", "-p", str(port)]
                   if not latency_ms
                   else [sys.executable, "-m", "bench.slow_s3", "--port", str(port),
                         "--latency-ms", str(latency_ms)])
        with (home / "s3.log").open("w") as log:
            server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=home,
                                      env={**os.environ, "PYTHONPATH": str(REPO)})
        endpoint = f"http://127.0.0.1:{port}"
        try:
            if _bucket_made(server, endpoint, deadline):
                yield endpoint
                return
        finally:
            _stop(server)
        # The port was free when chosen but taken before the server bound it (another
        # process's ephemeral port): the server exited; try again on another port.
    raise RuntimeError(f"S3 server did not start in {S3_START_ATTEMPTS} attempts:\n"
                       + (home / "s3.log").read_text()[-3000:])


#: Starts of the S3 server tried before giving up (each on a newly chosen port).
S3_START_ATTEMPTS = 3


def _bucket_made(server: subprocess.Popen[bytes], endpoint: str, deadline: float) -> bool:
    """Create :data:`BUCKET` on the server just started; True once it answered, False if
    the server exited first. A port that accepts connections is not proof of the server:
    whatever else listens there would too, so readiness is the bucket made."""
    import boto3
    import botocore.config
    import botocore.exceptions

    client = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=S3_KEYS[0],
                          aws_secret_access_key=S3_KEYS[1], region_name="us-east-1",
                          config=botocore.config.Config(retries={"max_attempts": 1},
                                                        connect_timeout=2, read_timeout=30))
    while server.poll() is None:
        try:
            client.create_bucket(Bucket=BUCKET)
        except (botocore.exceptions.EndpointConnectionError,
                botocore.exceptions.ConnectionClosedError,
                botocore.exceptions.ReadTimeoutError):
            if time.monotonic() > deadline:
                raise TimeoutError("S3 server did not answer in time") from None
            time.sleep(0.2)
            continue
        except botocore.exceptions.ClientError as error:
            # Made by an earlier try whose answer was lost.
            if error.response.get("Error", {}).get("Code") != "BucketAlreadyOwnedByYou":
                raise
        return server.poll() is None
    return False


def s3_requests(log: Path, since: int = 0) -> list[tuple[str, str]]:
    """(method, path) of each request the S3 server logged after its first ``since``
    lines (``s3_server``'s log: one line per request)."""
    found = []
    for line in log.read_text().splitlines()[since:]:
        parts = line.split('"')
        if len(parts) > 1 and " " in parts[1]:
            method, path = parts[1].split(" ")[:2]
            found.append((method, path))
    return found


def is_data_file_of(table: str, path: str) -> bool:
    """Is the object ``path`` a Parquet data file of ``table``: in its own folder, or in a
    folder of one of its versions (``<table>__zspark_versions/<version>/``)?"""
    return path.endswith(".parquet") and (f"/{table}/" in path
                                           or f"/{table}__zspark_versions/" in path)
