"""The classes an embedded session's JVM loads, kept in a class-data archive (the JDK's
CDS) so that the next JVM of the same class path maps them instead of loading them.

A JVM with Spark, Hive's metastore client and Hadoop loads some 20,000 classes, and on
a small machine that is most of a short `dbt run`: a session that writes and reads a
small Parquet table and lists a Hive database took 30.0 s, and 16.7 s mapping the archive
of the run before (``python -m bench.jvm_start``, JDK 17, 2 cores; the run recording it
took 43.3 s). Spark does the same work; the JVM finds its classes loaded.

The first session of a class path records its classes (``-XX:ArchiveClassesAtExit``)
and writes them when its JVM exits in order (a killed JVM writes nothing); a later
session promotes a complete recording to the class path's archive and maps it
(``-XX:SharedArchiveFile``). One archive per class path, Java and jar files (their
sizes and times are in its name), in zspark's cache folder beside its JVM jar. The JDK
writes an archive's header last, so a recording cut short has none and is never
promoted; an archive the JVM will not map (another JDK build) is skipped by the JVM
itself, silently. A profile opts out with ``-Xshare:off`` in
``spark.driver.extraJavaOptions``.

An archive is about 200 MB, and every new venv, pyspark or jar makes a new class path, so
the folder keeps the ``KEPT_ARCHIVES`` archives used last (a session that maps one marks
it used) and deletes the rest when a new one is recorded. Recordings count among them:
one whose class path starts no session again (its venv deleted) is promoted or deleted
then too, not left behind (a cache grew to 34 such recordings, 8.6 GB). A JVM that maps
an archive being deleted keeps its mapping; one that starts after finds none and loads
its classes.
"""

from __future__ import annotations

import glob
import hashlib
import os
import shutil
import time
import uuid
from pathlib import Path

import pyspark

from dbt.adapters.zspark.reach.session.jvm_jar import cache_dir

#: The first bytes of a complete dynamic archive (JDK 17-21): its header's magic number.
ARCHIVE_MAGIC = bytes.fromhex("a8ab0bf0")
#: An archive the JVM cannot map is skipped without a warning on the console.
QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"
#: Options of a profile that already decide about class sharing.
OWN_SHARING = ("-Xshare", "SharedArchiveFile", "ArchiveClassesAtExit")
#: A recording left without its header this long was cut short (its JVM killed).
ABANDONED_SECONDS = 3600
#: Archives kept in the folder, the most recently used: a user's few profiles and the
#: test suite's six class paths (about 1.7 GB at most).
KEPT_ARCHIVES = 8


def archive_dir() -> Path:
    return cache_dir() / "class-archives"


def with_class_archive(java_options: str, class_path: str) -> str:
    """``java_options`` of a driver whose class path starts with ``class_path`` (the
    profile's and zspark's jars), plus the archive's options: map the archive of this
    class path, or record one."""
    if any(option in java_options for option in OWN_SHARING):
        return java_options
    key = archive_key(class_path)
    archive = archive_dir() / f"{key}.jsa"
    try:
        promote_recordings(key)
        if archive.is_file():
            os.utime(archive)  # used now: the last archive a pruning deletes
            chosen = f"-XX:SharedArchiveFile={archive}"
        else:
            archive.parent.mkdir(parents=True, exist_ok=True)
            # Recordings of other class paths too (a venv since deleted starts no session
            # to promote its own): each becomes an archive the pruning counts, or goes.
            promote_recordings()
            prune_archives(KEPT_ARCHIVES - 1)
            chosen = (f"-XX:ArchiveClassesAtExit="
                      f"{archive.parent / f'{key}.{uuid.uuid4().hex}.rec'}")
    except OSError:
        return java_options  # a cache folder it cannot write: the JVM starts as it would
    return " ".join(filter(None, [java_options, chosen, QUIET]))


def archive_key(class_path: str) -> str:
    """What the JVM checks an archive against: its Java, and every jar of the class path
    the launcher builds (the profile's, then pyspark's), each with its size and time."""
    digest = hashlib.sha256()
    java = _java()
    spark_jars = Path(pyspark.__file__).parent / "jars"
    entries = [*filter(None, class_path.split(os.pathsep)),
               os.environ.get("SPARK_CONF_DIR", ""), *sorted(glob.glob(str(spark_jars / "*")))]
    for entry in [java, *entries]:
        digest.update(entry.encode() + b"\0")
        if entry and os.path.isfile(entry):
            stat = os.stat(entry)
            digest.update(f"{stat.st_size}:{stat.st_mtime_ns}\0".encode())
    return digest.hexdigest()[:20]


def _java() -> str:
    """The java binary pyspark's launcher runs: JAVA_HOME's, else the first on PATH."""
    home = os.environ.get("JAVA_HOME")
    found = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    return os.path.realpath(found) if found else ""


def promote_recordings(key: str = "*") -> None:
    """Complete recordings of ``key`` (of every class path by default) become its archive
    (an atomic rename, so a JVM maps a whole file or none); recordings abandoned by a
    killed JVM are deleted."""
    for recording in archive_dir().glob(f"{key}.*.rec"):
        try:
            if is_complete(recording):
                recorded_key = recording.name.split(".", 1)[0]
                os.replace(recording, recording.with_name(f"{recorded_key}.jsa"))
            elif time.time() - recording.stat().st_mtime > ABANDONED_SECONDS:
                recording.unlink()
        except FileNotFoundError:
            continue  # promoted or deleted by another session meanwhile


def prune_archives(kept: int) -> None:
    """Delete all but the ``kept`` archives used last (by their modification time)."""
    def last_used(archive: Path) -> float:
        try:
            return archive.stat().st_mtime
        except FileNotFoundError:
            return 0.0

    archives = sorted(archive_dir().glob("*.jsa"), key=last_used, reverse=True)
    for archive in archives[kept:]:
        archive.unlink(missing_ok=True)


def is_complete(recording: Path) -> bool:
    """Whether the JVM wrote ``recording`` whole: its header, written last, in place."""
    with recording.open("rb") as file:
        return file.read(len(ARCHIVE_MAGIC)) == ARCHIVE_MAGIC
