"""zspark's local file system for embedded Spark, compiled where the adapter is installed.

The jar is built from ``dbt/include/zspark/jvm/NioLocalFileSystem.java`` (shipped in the
wheel) against the Hadoop classes pyspark ships, with a JDK's ``javac`` and ``jar``. A
clone gets it from ``make setup``; an installation by pip builds it with

    python -m dbt.adapters.zspark.local_fs_jar

Without it an embedded session writes through Hadoop's own local file system: the same
files, a ``.crc`` file beside each and a ``chmod`` process per file written (slower).
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

JVM_DIR = Path(__file__).resolve().parents[2] / "include" / "zspark" / "jvm"
SOURCE = JVM_DIR / "NioLocalFileSystem.java"
JAR = JVM_DIR / "zspark-localfs.jar"
#: What a session says when it runs without the jar (``connections.py``).
MISSING = (f"zspark: {JAR.name} is not built, so this embedded session writes through "
           f"Hadoop's own local file system (a .crc file and a chmod process per data file: "
           f"slower builds, the same tables). Build it once with a JDK: "
           f"`python -m dbt.adapters.zspark.local_fs_jar`.")


class JarBuildError(RuntimeError):
    pass


def hadoop_class_path() -> str:
    """The Hadoop client jars of the installed pyspark: the classes the source extends."""
    import pyspark

    jars = glob.glob(str(Path(pyspark.__file__).parent / "jars" / "hadoop-client-api-*.jar"))
    if not jars:
        raise JarBuildError("pyspark's jars/hadoop-client-api-*.jar not found")
    return os.pathsep.join(jars)


def build_jar(target: Path = JAR) -> Path:
    """Compile :data:`SOURCE` into ``target`` (Java 17 bytecode, the JVM pyspark 4 needs)."""
    javac, jar = shutil.which("javac"), shutil.which("jar")
    if javac is None or jar is None:
        raise JarBuildError("no javac or jar on PATH: install a JDK (17 or later)")
    with tempfile.TemporaryDirectory() as classes:
        for command in ([javac, "--release", "17", "-d", classes,
                         "-cp", hadoop_class_path(), str(SOURCE)],
                        [jar, "cf", str(target), "-C", classes, "."]):
            done = subprocess.run(command, capture_output=True, text=True)
            if done.returncode != 0:
                raise JarBuildError(f"{Path(command[0]).name} failed:\n{done.stderr}")
    return target


def main() -> int:
    try:
        print(f"built {build_jar()}")
    except JarBuildError as error:
        print(f"zspark-localfs.jar not built: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
