"""The class archives of the suite's JVMs, recorded before its tests start.

A session's JVM records its class path's archive (``class_archive.py``) when it exits in
order; many of the suite's JVMs are killed on purpose or kept until their test ends, so
without this the first of each class path would record for nothing, slower than a JVM
that records none. One short session per class path the suite's profiles give (an
embedded session, Delta's and Iceberg's, with S3A's jars or not, and a Thrift
server's), two at a time, each exiting in order; a class path that has its archive
already is skipped. Run as ``python -m tests.class_archives <settings JSON> <format>`` it
is one of those sessions."""

from __future__ import annotations

import contextlib
import fcntl
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

#: Seconds a recording session may take (2 cores shared with the suite's other worker);
#: one killed records nothing, and its class path's first JVM in the suite records.
SESSION_SECONDS = 300
#: The profiles whose class paths the suite's sessions run on (Delta on S3 runs in
#: `make test-slow` alone, whose first such JVM records its own).
PROFILES: tuple[tuple[str, bool], ...] = (("parquet", False), ("delta", False),
                                          ("iceberg", False), ("parquet", True),
                                          ("iceberg", True))


def session_settings(file_format: str, s3a: bool, session_dir: Path) -> dict[str, Any]:
    """A profile's session settings, composed by the adapter as for a dbt run."""
    from dbt.adapters.zspark.connections import ZSparkCredentials
    from dbt.adapters.zspark.reach.session.object_stores import s3a_jars, s3a_settings, with_jars
    from tests.harness.servers import BUCKET, S3_KEYS

    parameters: dict[str, Any] = {}
    if s3a and s3a_jars():
        parameters = with_jars(s3a_settings("http://127.0.0.1:9", *S3_KEYS), s3a_jars())
        parameters["spark.sql.warehouse.dir"] = f"s3a://{BUCKET}/warm"
    profile = {"type": "zspark", "method": "session", "schema": "warm",
               "session_dir": str(session_dir), "server_side_parameters": parameters,
               **({} if file_format == "parquet" else {"table_format": file_format})}
    settings = dict(ZSparkCredentials.from_dict(profile).server_side_parameters)
    # The warm-up's own tables stay on local disk: no store is running yet.
    settings["spark.sql.warehouse.dir"] = str(session_dir / "warehouse")
    return settings


def thrift_settings(home: Path) -> dict[str, Any]:
    from dbt.adapters.zspark.connections import with_class_archive
    from tests.harness.servers import own_metastore

    return with_class_archive({"spark.ui.enabled": "false", **own_metastore(home)})


def record_all() -> None:
    """Record the archives the suite's class paths lack, two sessions at a time, holding
    a lock on the archives' folder: a second worker waits, then finds them recorded."""
    from dbt.adapters.zspark.reach.session.class_archive import archive_dir

    archive_dir().mkdir(parents=True, exist_ok=True)
    with (archive_dir() / ".suite.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        _record_missing()


def _record_missing() -> None:
    from dbt.adapters.zspark.connections import DRIVER_OPTIONS

    with tempfile.TemporaryDirectory(prefix="zspark-class-archives-") as work:
        root = Path(work)
        runs = [(session_settings(fmt, s3a, root / f"{fmt}-{s3a}"), fmt)
                for fmt, s3a in PROFILES]
        runs.append((thrift_settings(root / "thrift"), "parquet"))
        pending = [run for run in runs if "ArchiveClassesAtExit" in run[0][DRIVER_OPTIONS]]
        keys: set[str] = set()
        started: list[tuple[subprocess.Popen[bytes], Path]] = []
        for settings, fmt in pending:
            recording = settings[DRIVER_OPTIONS].split("ArchiveClassesAtExit=")[1].split()[0]
            key = Path(recording).name.split(".")[0]
            if key in keys:
                continue  # two profiles of one class path: one recording
            keys.add(key)
            if len(started) == 2:
                _wait(*started.pop(0))
            started.append((subprocess.Popen(
                [sys.executable, "-m", "tests.class_archives", json.dumps(settings), fmt],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                cwd=Path(__file__).parents[1]), Path(recording)))
        for process, recording in started:
            _wait(process, recording)


def _wait(process: subprocess.Popen[bytes], recording: Path) -> None:
    """Until the session has ended and its JVM, which exits after it, wrote the archive
    whole (its header, written last, in place)."""
    from dbt.adapters.zspark.reach.session.class_archive import is_complete

    deadline = time.monotonic() + SESSION_SECONDS
    try:
        process.wait(timeout=SESSION_SECONDS)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        return
    while process.returncode == 0 and time.monotonic() < deadline:
        with contextlib.suppress(FileNotFoundError):
            if is_complete(recording):
                return
        time.sleep(0.5)


def _session(settings: dict[str, Any], file_format: str) -> None:
    """What most of the suite's runs do: a table written, read back and dropped."""
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.enableHiveSupport()
    for key, value in {"spark.master": "local[2]", **settings}.items():
        builder = builder.config(key, str(value))
    spark = builder.getOrCreate()
    spark.sql("create database if not exists warm")
    spark.sql(f"create table warm.t using {file_format} as "
              f"select id, cast(id % 7 as int) as a from range(100)")
    assert spark.sql("select count(*) from warm.t where a = 3").collect()[0][0] == 14
    spark.sql("drop table warm.t")
    spark.stop()


if __name__ == "__main__":
    _session(json.loads(sys.argv[1]), sys.argv[2])
