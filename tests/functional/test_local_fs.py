"""Embedded Spark writes local files through zspark's file system: no process per file."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path
from typing import Any

import pytest

from dbt.adapters.zspark.connections import (
    CLASS_PATH,
    FILE_SYSTEM,
    LOCAL_FS_CLASS,
    with_session_defaults,
)
from dbt.adapters.zspark.formats.settings import ICEBERG, with_table_format
from dbt.adapters.zspark.reach.session import jvm_jar


def last_pid() -> int:
    """The process id the kernel handed out last (any process or thread on the machine)."""
    return int(Path("/proc/loadavg").read_text().split()[-1])


def test_a_local_session_gets_the_file_system_and_keeps_the_profile_class_path() -> None:
    jar = jvm_jar.ensure_jar()
    if jar is None:
        pytest.skip("no JDK compiled zspark's JVM classes")
    assert with_session_defaults({}, "s")[FILE_SYSTEM] == LOCAL_FS_CLASS
    settings = with_session_defaults({"spark.master": "local[4]", CLASS_PATH: "/opt/x.jar"}, "s")
    assert settings[CLASS_PATH] == f"/opt/x.jar{os.pathsep}{jar}"
    assert settings[FILE_SYSTEM] == LOCAL_FS_CLASS


def test_a_local_session_loads_its_local_jars_from_the_class_path() -> None:
    """Not copied into Spark's temporary folder at each start; a cluster's executors
    fetch theirs through spark.jars."""
    jars = {"spark.jars": "/opt/hadoop-aws.jar,/opt/bundle.jar"}
    local = with_session_defaults(with_table_format(jars, "iceberg"), "s")
    assert "spark.jars" not in local
    on_path = local[CLASS_PATH].split(os.pathsep)
    assert {"/opt/hadoop-aws.jar", "/opt/bundle.jar", *map(str, ICEBERG.jar_files())} <= set(
        on_path)
    cluster = with_session_defaults({**jars, "spark.master": "spark://127.0.0.1:7077"}, "s")
    assert cluster["spark.jars"] == jars["spark.jars"]


def test_a_cluster_or_a_profile_file_system_keeps_hadoop_classes() -> None:
    # A cluster's executors lack the jar: Hadoop's default, a LocalFileSystem S3A buffers
    # in. The driver, this process, still takes the jar for its SLF4J binding.
    jar = jvm_jar.ensure_jar()
    for table_format in (None, "iceberg", "delta"):
        cluster = with_session_defaults(
            with_table_format({"spark.master": "spark://127.0.0.1:7077"}, table_format), "s")
        assert FILE_SYSTEM not in cluster
        assert cluster.get(CLASS_PATH) == (None if jar is None else str(jar))
    own = with_session_defaults({FILE_SYSTEM: "org.example.Fs"}, "s")
    assert own[FILE_SYSTEM] == "org.example.Fs"


@pytest.mark.spark
def test_writes_set_permissions_without_a_process_per_file(spark: Any, tmp_path: Path) -> None:
    if jvm_jar.ensure_jar() is None:
        assert shutil.which("javac") is None, "a JDK is here but compiled no jar"
        pytest.skip("no JDK: Hadoop's LocalFileSystem, a chmod process per file")
    jvm = spark._jvm
    hadoop = spark.sparkContext._jsc.hadoopConfiguration()
    fs = jvm.org.apache.hadoop.fs.FileSystem.get(jvm.java.net.URI("file:///"), hadoop)
    assert fs.getClass().getName() == LOCAL_FS_CLASS
    # What object stores' clients ask for to buffer uploads: Hadoop's LocalFileSystem.
    local = jvm.org.apache.hadoop.fs.FileSystem.getLocal(hadoop)
    assert local.getClass().getName() == LOCAL_FS_CLASS

    # Every mode Hadoop asks for is the mode the file gets, sticky bit included.
    target = tmp_path / "f"
    target.touch()
    directory = tmp_path / "d"
    directory.mkdir()
    for path, mode in ((target, 0o640), (target, 0o604), (directory, 0o1750)):
        fs.setPermission(jvm.org.apache.hadoop.fs.Path(str(path)),
                         jvm.org.apache.hadoop.fs.permission.FsPermission(mode))
        assert stat.S_IMODE(path.stat().st_mode) == mode

    files = 300
    before = last_pid()
    (spark.range(files * 10).repartition(files).write
     .parquet(str(tmp_path / "written")))
    spawned = last_pid() - before
    written = list((tmp_path / "written").glob("*.parquet"))
    assert len(written) == files
    umask = os.umask(0)
    os.umask(umask)
    assert {stat.S_IMODE(p.stat().st_mode) for p in written} == {0o666 & ~umask}
    # Hadoop's own file system spawns a `chmod` process per file and directory (4 per file
    # written, 1200 here). The count also takes in every thread started on the machine
    # meanwhile, the other test worker's included: 53 to 206 seen in CI runs.
    assert spawned < 2 * files, f"{spawned} processes or threads started during the write"
