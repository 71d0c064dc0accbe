"""Which class archive a session's JVM maps or dumps (files only; test_session_start.py
starts real JVMs on it)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from dbt.adapters.zspark.jvm_class_archive import (
    ARCHIVE_MAGIC,
    DUMP_GRACE_SECONDS,
    UNUSED_SECONDS,
    archive_key,
    sharing_options,
    with_sharing,
)


def _option(options: str, name: str) -> Path | None:
    for option in options.split():
        if option.startswith(f"-XX:{name}="):
            return Path(option.split("=", 1)[1])
    return None


def _age(path: Path, seconds: float) -> None:
    past = time.time() - seconds
    os.utime(path, (past, past))


def test_the_first_session_dumps_and_the_next_maps_what_it_dumped(tmp_path: Path) -> None:
    first = sharing_options("/j/a.jar", tmp_path)
    dump = _option(first, "ArchiveClassesAtExit")
    assert dump is not None
    assert dump.parent == tmp_path
    assert "-Xlog:cds*=off" in first  # the JVM's notes on skipped classes stay quiet
    # Its JVM has not exited yet: a session starting meanwhile neither maps nor dumps.
    assert sharing_options("/j/a.jar", tmp_path) == ""
    dump.write_bytes(ARCHIVE_MAGIC + b"\0" * 64)  # the JVM wrote it whole at its exit
    archive = _option(sharing_options("/j/a.jar", tmp_path), "SharedArchiveFile")
    assert archive is not None
    assert archive.is_file()
    assert not dump.exists()
    assert _option(sharing_options("/j/a.jar", tmp_path), "SharedArchiveFile") == archive


def test_a_dump_cut_short_is_never_mapped_and_is_dumped_again(tmp_path: Path) -> None:
    dump = _option(sharing_options("/j/a.jar", tmp_path), "ArchiveClassesAtExit")
    assert dump is not None
    dump.write_bytes(b"\0" * 64)  # killed amid its dump: regions written, no header yet
    _age(dump, DUMP_GRACE_SECONDS + 1)
    again = sharing_options("/j/a.jar", tmp_path)
    assert _option(again, "SharedArchiveFile") is None
    assert _option(again, "ArchiveClassesAtExit") not in (None, dump)
    assert not dump.exists()  # pruned


def test_another_class_path_gets_an_archive_of_its_own(tmp_path: Path) -> None:
    assert archive_key("/j/a.jar") != archive_key("/j/a.jar:/j/delta.jar")
    for class_path in ("/j/a.jar", "/j/a.jar:/j/delta.jar"):
        dump = _option(sharing_options(class_path, tmp_path), "ArchiveClassesAtExit")
        assert dump is not None
        dump.write_bytes(ARCHIVE_MAGIC)
    mapped = {_option(sharing_options(c, tmp_path), "SharedArchiveFile")
              for c in ("/j/a.jar", "/j/a.jar:/j/delta.jar")}
    assert len(mapped) == 2
    assert None not in mapped


def test_an_archive_unused_for_two_weeks_is_deleted(tmp_path: Path) -> None:
    dump = _option(sharing_options("/j/old.jar", tmp_path), "ArchiveClassesAtExit")
    assert dump is not None
    dump.write_bytes(ARCHIVE_MAGIC)
    old = _option(sharing_options("/j/old.jar", tmp_path), "SharedArchiveFile")
    assert old is not None
    _age(old, UNUSED_SECONDS + 1)
    sharing_options("/j/new.jar", tmp_path)  # a dump of another class path prunes
    assert not old.exists()


def test_a_profile_that_sets_class_sharing_itself_is_left_alone(tmp_path: Path) -> None:
    for own in ("-Xshare:off", "-XX:SharedArchiveFile=/x.jsa"):
        assert with_sharing(own, "/j/a.jar", tmp_path) == own
    assert with_sharing("-Dx=1", "/j/a.jar", tmp_path).startswith("-Dx=1 -XX:ArchiveClassesAtExit=")


def test_a_cache_folder_that_cannot_be_written_means_no_archive(tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("")
    assert sharing_options("/j/a.jar", blocked / "zspark") == ""
    assert with_sharing("-Dx=1", "/j/a.jar", blocked / "zspark") == "-Dx=1"
