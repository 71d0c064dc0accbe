"""zspark's JVM classes, compiled once on the machine the adapter runs on.

The wheel ships their sources (``dbt/include/zspark/jvm/*.java``):

- ``dbt.zspark.NioLocalFileSystem``: Hadoop's local file system without a ``.crc`` file
  and a ``chmod`` process per file written (an embedded session's writes);
- ``dbt.zspark.TableFiles``: the Parquet footers of a table's files, read by the
  executors through the session's Hadoop file systems (a Parquet table's index);
- ``org.slf4j.impl.StaticLoggerBinder``: sends the AWS SDK's log (S3A) to Spark's, where
  it would print three lines to stderr at every start and log nothing.

The first session compiles them with the JDK's ``javac`` and ``jar`` against the installed
pyspark's jars, into zspark's cache folder (``$XDG_CACHE_HOME/zspark``, else
``~/.cache/zspark``): one jar per version of the sources and of pyspark, so an upgrade
compiles anew and a second project reuses it. ``make setup`` compiles it ahead with

    python -m dbt.adapters.zspark.reach.session.jvm_jar

Without a JDK a session keeps Hadoop's own local file system (the same files, slower)
and says so.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from dbt.include import zspark as include

JVM_DIR = Path(include.PACKAGE_PATH) / "jvm"
SOURCES = tuple(sorted(JVM_DIR.glob("*.java")))
#: What a session says when no JDK compiled the jar (``connections.py``).
MISSING = ("zspark: zspark's JVM classes could not be compiled (no JDK's javac and jar on "
           "PATH, or a cache folder it cannot write: $XDG_CACHE_HOME or ~/.cache), so "
           "this embedded session writes through Hadoop's own local file system (a .crc "
           "file and a chmod process per data file: slower builds, the same tables). "
           "Install a JDK 17 or later, or put its bin folder on PATH.")


class JarBuildError(RuntimeError):
    pass


def _pyspark_jars() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent / "jars"


def compile_class_path() -> str:
    """The installed pyspark's jars, which the sources compile against (Hadoop's client
    API, Spark's, SLF4J's)."""
    jars = _pyspark_jars()
    if not any(jars.glob("spark-core_*.jar")):
        raise JarBuildError(f"pyspark's jars not found in {jars}")
    return str(jars / "*")


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "zspark"


@functools.cache
def jar_path() -> Path:
    """Where the jar of these sources, compiled for this pyspark, is kept."""
    import pyspark

    digest = hashlib.sha256(pyspark.__version__.encode())
    for source in SOURCES:
        digest.update(source.name.encode() + b"\0" + source.read_bytes())
    return cache_dir() / f"zspark-jvm-{digest.hexdigest()[:16]}.jar"


def build_jar(target: Path) -> Path:
    """Compile :data:`SOURCES` into ``target`` (Java 17 bytecode, the JVM pyspark 4 needs).
    The jar appears whole or not at all: a concurrent or killed build leaves no half."""
    javac, jar = shutil.which("javac"), shutil.which("jar")
    if javac is None or jar is None:
        raise JarBuildError("no javac or jar on PATH: install a JDK (17 or later)")
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".build-") as work:
        classes, built = Path(work) / "classes", Path(work) / target.name
        for command in ([javac, "--release", "17", "-nowarn", "-d", str(classes),
                         "-cp", compile_class_path(), *map(str, SOURCES)],
                        [jar, "cf", str(built), "-C", str(classes), "."]):
            done = subprocess.run(command, capture_output=True, text=True)
            if done.returncode != 0:
                raise JarBuildError(f"{Path(command[0]).name} failed:\n{done.stderr}")
        os.replace(built, target)
    return target


def ensure_jar() -> Path | None:
    """The jar, compiled now if this machine has not compiled it yet; None without a JDK
    or a cache folder it can write (a read-only home: Hadoop's file system then)."""
    target = jar_path()
    if target.is_file():
        return target
    try:
        return build_jar(target)
    except (JarBuildError, OSError):
        return None


def main() -> int:
    target = jar_path()
    if target.is_file():
        print(f"found {target}")
        return 0
    try:
        print(f"built {build_jar(target)}")
    except JarBuildError as error:
        print(f"zspark's JVM classes not compiled: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
