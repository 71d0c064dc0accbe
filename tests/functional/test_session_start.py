"""An embedded session's JVM: the first dumps its classes at exit, the next maps them."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dbt.adapters.zspark.jvm_class_archive import is_whole

pytestmark = pytest.mark.spark

#: Starts the session as a dbt run does, answers a query, and says which archive files
#: its JVM has mapped (from /proc: what the kernel says, not what the JVM was told).
SESSION = """
import sys
from pathlib import Path
from dbt.adapters.zspark.connections import _start_session, with_session_defaults
from pyspark.sql import SparkSession
_start_session(with_session_defaults({"spark.master": "local[1]"}, sys.argv[1]))
spark = SparkSession.builder.getOrCreate()
assert spark.sql("select count(*) from range(10)").collect()[0][0] == 10
pid = spark._jvm.java.lang.ProcessHandle.current().pid()
maps = Path(f"/proc/{pid}/maps").read_text()
print("MAPPED", sorted({line.split()[-1] for line in maps.splitlines()
                        if line.rstrip().endswith(".jsa")}))
"""


def _session(tmp_path: Path, cache: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-c", SESSION, str(tmp_path / "session")], capture_output=True,
        text=True, timeout=300,
        env={**os.environ, "XDG_CACHE_HOME": str(cache), "PYSPARK_PYTHON": sys.executable,
             "SPARK_LOCAL_IP": "127.0.0.1"})
    assert done.returncode == 0, done.stderr[-3000:]
    assert "cds" not in done.stdout.lower(), done.stdout[-3000:]  # the JVM said nothing
    return next(line for line in done.stdout.splitlines() if line.startswith("MAPPED"))


def test_the_second_session_maps_the_classes_the_first_dumped(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    folder = cache / "zspark"
    first = _session(tmp_path, cache)
    assert str(folder) not in first
    # Its JVM dumps once its Python has gone.
    deadline = time.monotonic() + 120
    while not any(is_whole(dump) for dump in folder.glob("*.dump")):
        assert time.monotonic() < deadline, sorted(folder.iterdir())
        time.sleep(0.5)
    second = _session(tmp_path, cache)
    archives = sorted(folder.glob("*.jsa"))
    assert len(archives) == 1, sorted(folder.iterdir())
    assert str(archives[0]) in second
