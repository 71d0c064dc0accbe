"""A class archive for the embedded session's JVM, so that every dbt run after the first
starts Spark in about half the time.

A fresh JVM spends most of Spark's start loading and verifying some 20,000 classes (11 s
of a 23 s start and first query on 2 cores). Java's class data sharing keeps them, parsed
and verified, in an archive the next JVM maps: the first session started with a class
path dumps its archive at exit (``-XX:ArchiveClassesAtExit``), the later ones map it
(``-XX:SharedArchiveFile``). The JVM checks the archive against its own build and class
path and ignores one that does not match; the name of the archive holds what changes it
(the ``java`` binary, pyspark and the driver's class path), so a change gets a new one.

The JVM writes an archive's header last, so a dump cut short (a killed run) has none: it
is dumped under a name of its own and adopted once it is whole. Archives live in the
user's cache folder (``$XDG_CACHE_HOME/zspark``, else ``~/.cache/zspark``), shared by
every project; one unused for two weeks is deleted. A profile whose
``spark.driver.extraJavaOptions`` speak of class sharing themselves is left alone.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import time
import uuid
from pathlib import Path

#: The first bytes of a whole dynamic archive (HotSpot's magic, little-endian).
ARCHIVE_MAGIC = bytes.fromhex("a8ab0bf0")
#: A dump younger than this may still be written by a live JVM.
DUMP_GRACE_SECONDS = 600
#: An archive no session mapped for this long is deleted.
UNUSED_SECONDS = 14 * 24 * 3600
#: JVM options that mean the profile manages class sharing itself.
OWN_SHARING = ("-Xshare", "SharedArchiveFile", "ArchiveClassesAtExit")
#: The JVM's notes on archives it skips or cannot map are not the user's concern.
QUIET = "-Xlog:cds*=off"


def cache_folder() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "zspark"


def archive_key(class_path: str) -> str:
    """What the JVM checks an archive against: its build (the ``java`` it runs, as
    pyspark finds it) and its class path (pyspark's jars and the driver's own)."""
    import pyspark

    home = os.environ.get("JAVA_HOME")
    java = shutil.which("java", path=str(Path(home) / "bin") if home else None) or "java"
    real = Path(java).resolve()
    stamp = real.stat().st_mtime_ns if real.exists() else 0
    # What else the launcher puts on a driver's class path.
    launcher = [os.environ.get(name, "") for name in
                ("SPARK_CONF_DIR", "HADOOP_CONF_DIR", "YARN_CONF_DIR", "SPARK_DIST_CLASSPATH")]
    text = "|".join([str(real), str(stamp), pyspark.__version__,
                     str(Path(pyspark.__file__).parent), class_path, *launcher])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def is_whole(archive: Path) -> bool:
    """Whether ``archive``'s header is written (the JVM writes it after every region)."""
    try:
        with archive.open("rb") as handle:
            return handle.read(len(ARCHIVE_MAGIC)) == ARCHIVE_MAGIC
    except OSError:
        return False


def sharing_options(class_path: str, folder: Path | None = None) -> str:
    """The driver JVM options that map the archive of ``class_path``, or dump it at exit
    when there is none yet ('' when the cache folder cannot be written, or a dump by
    another JVM is under way)."""
    folder = folder or cache_folder()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        key = archive_key(class_path)
        archive = folder / f"spark-driver-{key}.jsa"
        if not is_whole(archive):
            _adopt_dump(folder, key, archive)
        if is_whole(archive):
            os.utime(archive)  # its last use, for the pruning of unused ones
            return f"-XX:SharedArchiveFile={archive} {QUIET}"
        if _dump_under_way(folder, key):
            return ""
        _prune(folder)
        dump = folder / f"spark-driver-{key}.{uuid.uuid4().hex[:8]}.dump"
        dump.touch()  # a dump under way, for the runs that start meanwhile
        return f"-XX:ArchiveClassesAtExit={dump} {QUIET}"
    except OSError:
        return ""


def with_sharing(java_options: str, class_path: str, folder: Path | None = None) -> str:
    """``java_options`` with :func:`sharing_options` added, unless they set class sharing
    themselves."""
    if any(option in java_options for option in OWN_SHARING):
        return java_options
    return " ".join(filter(None, [java_options, sharing_options(class_path, folder)]))


def _dumps(folder: Path, key: str) -> list[Path]:
    return sorted(folder.glob(f"spark-driver-{key}.*.dump"),
                  key=lambda path: path.stat().st_mtime, reverse=True)


def _adopt_dump(folder: Path, key: str, archive: Path) -> None:
    """The newest whole dump of ``key`` renamed into place (atomic on a local disk)."""
    for dump in _dumps(folder, key):
        if is_whole(dump):
            with contextlib.suppress(FileNotFoundError):  # another run adopted it
                os.replace(dump, archive)
            return


def _dump_under_way(folder: Path, key: str) -> bool:
    """Whether a JVM started in the last :data:`DUMP_GRACE_SECONDS` is to dump ``key``."""
    now = time.time()
    return any(now - dump.stat().st_mtime < DUMP_GRACE_SECONDS for dump in _dumps(folder, key))


def _prune(folder: Path) -> None:
    """Archives unused for :data:`UNUSED_SECONDS` and dumps never finished, deleted."""
    now = time.time()
    for path in folder.glob("spark-driver-*"):
        with contextlib.suppress(FileNotFoundError):
            age = now - path.stat().st_mtime
            if age > UNUSED_SECONDS or (path.suffix == ".dump" and age > DUMP_GRACE_SECONDS):
                path.unlink()
