"""zspark's local file system jar as a pip user builds it, and what a session says when
it runs without it."""

from __future__ import annotations

import shutil
import zipfile
from pathlib import Path

import pytest

from dbt.adapters.zspark import connections
from dbt.adapters.zspark.connections import FILE_SYSTEM, without_local_fs_jar
from dbt.adapters.zspark.local_fs_jar import build_jar


@pytest.mark.skipif(shutil.which("javac") is None, reason="needs a JDK's javac")
def test_the_jar_builds_from_the_shipped_source_against_pysparks_hadoop(tmp_path: Path) -> None:
    jar = build_jar(tmp_path / "zspark-localfs.jar")
    with zipfile.ZipFile(jar) as built:
        assert "dbt/zspark/NioLocalFileSystem.class" in built.namelist()


def test_a_local_session_without_the_jar_is_told_how_to_build_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(connections, "LOCAL_FS_JAR", tmp_path / "absent.jar")
    assert without_local_fs_jar({})
    assert without_local_fs_jar({"spark.master": "local[2]"})
    # A cluster's executors never take it; a profile's own file system is its choice.
    assert not without_local_fs_jar({"spark.master": "spark://127.0.0.1:7077"})
    assert not without_local_fs_jar({FILE_SYSTEM: "org.apache.hadoop.fs.LocalFileSystem"})
    built = tmp_path / "zspark-localfs.jar"
    built.write_bytes(b"")
    monkeypatch.setattr(connections, "LOCAL_FS_JAR", built)
    assert not without_local_fs_jar({})
