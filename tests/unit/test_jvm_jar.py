"""zspark's JVM classes as a pip user's first session compiles them, and what a session
says on a machine without a JDK."""

from __future__ import annotations

import shutil
import zipfile
from pathlib import Path

import pytest

from dbt.adapters.zspark.connections import (
    CLASS_PATH,
    DRIVER_OPTIONS,
    FILE_SYSTEM,
    LOCAL_FS_CLASS,
    with_session_defaults,
    without_local_fs_jar,
)
from dbt.adapters.zspark.reach.session import jvm_jar

needs_jdk = pytest.mark.skipif(shutil.which("javac") is None, reason="needs a JDK's javac")


@needs_jdk
def test_the_jar_compiles_from_the_shipped_sources_against_pysparks_jars(
        tmp_path: Path) -> None:
    jar = jvm_jar.build_jar(tmp_path / "cache" / "zspark-jvm.jar")
    with zipfile.ZipFile(jar) as built:
        names = built.namelist()
    assert "dbt/zspark/NioLocalFileSystem.class" in names
    assert "dbt/zspark/TableFiles$ReadTails.class" in names
    assert "org/slf4j/impl/StaticLoggerBinder.class" in names
    # Compiled in a folder of its own beside the jar, which it leaves behind.
    assert [p.name for p in (tmp_path / "cache").iterdir()] == ["zspark-jvm.jar"]


@needs_jdk
def test_the_first_session_compiles_the_jar_into_the_cache_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    jvm_jar.jar_path.cache_clear()
    try:
        target = jvm_jar.jar_path()
        assert target.parent == tmp_path / "zspark"
        assert not target.exists()
        settings = with_session_defaults({}, str(tmp_path / "s"))
        assert settings[CLASS_PATH] == str(target)
        assert settings[FILE_SYSTEM] == LOCAL_FS_CLASS
        built = target.stat().st_mtime_ns
        assert jvm_jar.ensure_jar() == target
        assert target.stat().st_mtime_ns == built  # reused, not compiled again
    finally:
        jvm_jar.jar_path.cache_clear()


def test_a_session_without_a_jdk_keeps_hadoops_file_system_and_says_so(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jvm_jar, "ensure_jar", lambda: None)
    assert without_local_fs_jar({})
    assert without_local_fs_jar({"spark.master": "local[2]"})
    # A cluster's executors never take it; a profile's own file system is its choice.
    assert not without_local_fs_jar({"spark.master": "spark://127.0.0.1:7077"})
    assert not without_local_fs_jar({FILE_SYSTEM: "org.apache.hadoop.fs.LocalFileSystem"})
    settings = with_session_defaults({}, "s")
    assert FILE_SYSTEM not in settings
    assert CLASS_PATH not in settings
    assert "Install a JDK 17 or later" in jvm_jar.MISSING


def test_a_cache_folder_that_cannot_be_written_leaves_the_session_as_it_would_start(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A home whose cache cannot be written (here a file where the folder would be: root
    writes through permissions) costs the jar and the class archive, not the session."""
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    jvm_jar.jar_path.cache_clear()
    try:
        assert jvm_jar.ensure_jar() is None
        settings = with_session_defaults({}, str(tmp_path / "s"))
        assert FILE_SYSTEM not in settings
        assert CLASS_PATH not in settings
        assert "ArchiveClassesAtExit" not in settings.get(DRIVER_OPTIONS, "")
        assert "SharedArchiveFile" not in settings.get(DRIVER_OPTIONS, "")
    finally:
        jvm_jar.jar_path.cache_clear()
