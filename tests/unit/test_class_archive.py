"""The class archive a session's JVM records and the next one maps, with a real JVM: a
recording promoted only once the JDK wrote it whole, one archive per class path and jar
files, and a profile that decides about class sharing itself left alone."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from dbt.adapters.zspark.connections import (
    CLASS_PATH,
    DRIVER_OPTIONS,
    with_session_defaults,
)
from dbt.adapters.zspark.reach.session import class_archive

pytestmark = pytest.mark.skipif(shutil.which("javac") is None, reason="needs a JDK")


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return class_archive.archive_dir()


def _program(folder: Path) -> Path:
    """A jar whose main class loads a few of the JDK's classes beyond its base archive."""
    source = folder / "src" / "Hello.java"
    source.parent.mkdir(parents=True)
    source.write_text("public class Hello { public static void main(String[] a) throws "
                      "Exception { System.out.println(java.sql.Date.valueOf(\"2026-12-02\") "
                      "+ new java.util.concurrent.ConcurrentSkipListMap<String, String>()"
                      ".toString()); } }")
    subprocess.run(["javac", "-d", str(folder / "classes"), str(source)], check=True)
    jar = folder / "hello.jar"
    subprocess.run(["jar", "cf", str(jar), "-C", str(folder / "classes"), "."], check=True)
    return jar


def _java(options: str, jar: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["java", *options.split(), "-cp", str(jar), "Hello"],
                          capture_output=True, text=True, check=False,
                          env={**os.environ, "JAVA_TOOL_OPTIONS": ""})


def test_the_first_jvm_records_the_archive_and_the_next_maps_it(
        tmp_path: Path, cache: Path) -> None:
    jar = _program(tmp_path)
    recording = class_archive.with_class_archive("-Xmx64m", str(jar))
    assert "-XX:ArchiveClassesAtExit=" in recording
    assert recording.startswith("-Xmx64m ")
    first = _java(recording, jar)
    assert first.returncode == 0, first.stderr
    assert "2026-12-02{}" in first.stdout
    # Nothing on the console beside the program's own line: no JVM warning.
    assert first.stderr.replace("Picked up JAVA_TOOL_OPTIONS:", "").strip() == ""

    mapping = class_archive.with_class_archive("-Xmx64m", str(jar))
    key = class_archive.archive_key(str(jar))
    archive = cache / f"{key}.jsa"
    assert mapping.split()[1] == f"-XX:SharedArchiveFile={archive}"
    assert [p.name for p in cache.iterdir()] == [archive.name]  # promoted, not copied
    # -Xshare:on refuses to start unless the JVM really maps the archive.
    forced = _java(mapping.replace(class_archive.QUIET, "") + " -Xshare:on", jar)
    assert forced.returncode == 0, forced.stderr
    assert "2026-12-02{}" in forced.stdout

    # Another class path, or the same jar rebuilt, has an archive of its own.
    assert class_archive.archive_key(f"{jar}{os.pathsep}/opt/more.jar") != key
    os.utime(jar, ns=(time.time_ns(), time.time_ns() + 10**9))
    assert class_archive.archive_key(str(jar)) != key


def test_a_recording_cut_short_is_never_mapped_and_an_abandoned_one_is_deleted(
        tmp_path: Path, cache: Path) -> None:
    key = class_archive.archive_key("/opt/app.jar")
    cache.mkdir(parents=True)
    # The JDK writes the header last: a JVM killed while writing leaves zeros there.
    writing, killed = (cache / f"{key}.{name}.rec" for name in ("writing", "killed"))
    for recording in (writing, killed):
        recording.write_bytes(bytes(4096))
    hours_ago = time.time() - 2 * class_archive.ABANDONED_SECONDS
    os.utime(killed, (hours_ago, hours_ago))
    options = class_archive.with_class_archive("", "/opt/app.jar")
    assert "-XX:ArchiveClassesAtExit=" in options
    assert sorted(p.name for p in cache.iterdir()) == [writing.name]


def test_a_profile_that_decides_about_class_sharing_keeps_its_options(cache: Path) -> None:
    for own in ("-Xshare:off", "-XX:SharedArchiveFile=/opt/spark.jsa"):
        settings = with_session_defaults({DRIVER_OPTIONS: own}, "s")
        assert settings[DRIVER_OPTIONS] == own
    # A session's own driver options gain the archive of the class path it ends with.
    settings = with_session_defaults({CLASS_PATH: "/opt/x.jar"}, "s")
    key = class_archive.archive_key(settings[CLASS_PATH])
    assert f"{key}." in settings[DRIVER_OPTIONS]
    assert "-XX:+UseParallelGC" in settings[DRIVER_OPTIONS]


def test_the_folder_keeps_the_archives_used_last(
        cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Every new venv or jar is a new class path: without a bound the folder grew by
    # some 200 MB a class path until the disk was full.
    archives = _finished(cache, [f"{index:020d}.jsa"
                                 for index in range(class_archive.KEPT_ARCHIVES + 3)])
    oldest = archives[-1]
    # Mapping the oldest marks it used; recording a new class path then prunes.
    mapped = f"-XX:SharedArchiveFile={oldest}"
    with monkeypatch.context() as patched:
        patched.setattr(class_archive, "archive_key", lambda class_path: oldest.stem)
        assert mapped in class_archive.with_class_archive("", "/opt/old.jar")
    options = class_archive.with_class_archive("", "/opt/new.jar")
    assert "-XX:ArchiveClassesAtExit=" in options
    kept = sorted(p.name for p in cache.glob("*.jsa"))
    assert len(kept) == class_archive.KEPT_ARCHIVES - 1
    assert oldest.name in kept
    newest = [archive.name for archive in archives[:class_archive.KEPT_ARCHIVES - 2]]
    assert kept == sorted([oldest.name, *newest])


def test_recordings_of_class_paths_that_start_no_session_again_count_among_the_kept(
        cache: Path) -> None:
    # A venv's last recording is promoted by that venv's next session; once the venv is
    # gone none comes, and each such recording (some 250 MB) stayed for good.
    _finished(cache, [f"{index:020d}.{index}.rec"
                      for index in range(class_archive.KEPT_ARCHIVES + 2)])
    cut_short = cache / f"{'9' * 20}.killed.rec"
    cut_short.write_bytes(bytes(4096))
    hours_ago = time.time() - 2 * class_archive.ABANDONED_SECONDS
    os.utime(cut_short, (hours_ago, hours_ago))
    options = class_archive.with_class_archive("", "/opt/new.jar")
    assert "-XX:ArchiveClassesAtExit=" in options
    assert list(cache.glob("*.rec")) == []  # the new one is the JVM's to write
    kept = sorted(p.name for p in cache.glob("*.jsa"))
    newest = [f"{index:020d}.jsa" for index in range(class_archive.KEPT_ARCHIVES - 1)]
    assert kept == newest


def _finished(cache: Path, names: list[str]) -> list[Path]:
    """Archives or recordings the JDK wrote whole, the first written last (a minute
    apart)."""
    cache.mkdir(parents=True, exist_ok=True)
    now = time.time()
    paths = [cache / name for name in names]
    for age, path in enumerate(paths):
        path.write_bytes(class_archive.ARCHIVE_MAGIC)
        os.utime(path, (now - 60 * (age + 1),) * 2)
    return paths
