"""Data files read through the session's Hadoop file systems: the one way zspark reaches
storage. Local disk, ``s3a://``, ``gs://``, ``abfss://`` and ``hdfs://`` are read by the
same calls, with the credentials and settings the session has: no client of zspark's own.

Costs are counted in requests, as an object store bills them:

- a file's identity (size, modification time) comes from listing its folder, one request
  per folder (a page of up to 1000 files on S3), not one per file; up to
  :data:`STATUS_EACH_UP_TO` files of a folder are asked for one by one, since a table's
  folder may hold 10,000 files whose listing costs ten requests and, through py4j,
  seconds;
- its Parquet footer from one ranged read of its last :data:`TAIL_BYTES` (a second read
  only when the footer is longer), opened with the listed status so that no request asks
  for it again.

A table's index reads its footers on the executors (:func:`executor_footers`, zspark's
JVM class ``dbt.zspark.TableFiles``): the session's storage settings travel with the job,
each task keeps a few reads in flight. Up to :data:`DRIVER_PARSES_UP_TO` footers come back
to the driver as Arrow to be parsed, more are parsed where they were read. Without that
class (no JDK compiled it) the driver reads them with a few threads
(:meth:`HadoopFiles.footers`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dbt.adapters.zspark.reach.session import jvm_jar
from dbt.adapters.zspark.reach.session.jvm import SessionJvm
from dbt.adapters.zspark.skipping.stats import spark_path

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

#: The bytes read from a file's end at first: most footers fit (a 40-column file with
#: one row group has a footer of a few KB).
TAIL_BYTES = 64 * 1024
#: Footer reads in flight at once: a request to an object store waits tens of
#: milliseconds, and py4j serves every Python thread with a JVM thread of its own.
READERS = 16
#: Up to this many footers the driver reads them itself, a py4j call or two each. None:
#: where zspark's JVM class is, its one job reads even 20 footers sooner (0.58 s against
#: 0.83 s in a fresh session; 1,000 files: 0.97 s against 6.0 s). Tests raise it.
DRIVER_READS_UP_TO = 0
#: Up to this many footers the executors read are parsed by the driver, handed over as
#: Arrow: Python workers started on the executors only to parse them cost more (1,000
#: files in a fresh session: 0.97 s against 3.58 s; warm, 0.62 s against 1.00 s).
DRIVER_PARSES_UP_TO = 2_000
#: Footer-reading tasks per core of the session (each with :data:`READERS` reads in flight).
TASKS_PER_CORE = 2
#: Up to this many files of one folder are asked for by name, not found in its listing
#: (an append's 3 new files in a folder of 15,000: 6 s to list through py4j, and 15
#: requests on S3 against 3). ``TableFiles.java`` keeps the same rule.
STATUS_EACH_UP_TO = 8
TABLE_FILES = "dbt.zspark.TableFiles"
#: The last 8 bytes of a Parquet file: the footer's length (little-endian) and the magic.
PARQUET_MAGIC = b"PAR1"


@dataclass(frozen=True)
class FileIdentity:
    """A data file as Spark lists it: path (``_metadata.file_path``'s form), size, and
    modification time in milliseconds."""

    path: str
    size: int
    mtime: int


@dataclass(frozen=True)
class FileTail:
    """A file's identity and its Parquet footer (with the length and magic after it)."""

    identity: FileIdentity
    footer: bytes


class HadoopFiles:
    """Files through the session's Hadoop file systems (py4j, in the driver)."""

    def __init__(self, spark: Any) -> None:
        self._spark = spark
        self._jvm = spark.sparkContext._jvm
        self._conf = spark.sparkContext._jsc.hadoopConfiguration()

    def _path(self, path: str) -> Any:
        # A URI as Spark lists it is escaped already: parsed as a URI, not a string.
        return self._jvm.org.apache.hadoop.fs.Path(self._jvm.java.net.URI(path))

    def statuses(self, paths: Sequence[str]) -> dict[str, Any]:
        """The Hadoop ``FileStatus`` of each of ``paths`` that exists, by its Spark path:
        a few files of a folder asked for by name, more from one listing of the folder."""
        wanted = {spark_path(p) for p in paths}
        by_folder: dict[str, list[str]] = {}
        for path in sorted(wanted):
            by_folder.setdefault(path.rsplit("/", 1)[0], []).append(path)
        found: dict[str, Any] = {}
        for folder, named in by_folder.items():
            located = self._path(folder)
            files = located.getFileSystem(self._conf)
            if len(named) <= STATUS_EACH_UP_TO:
                for path in named:
                    status = file_status(files, self._path(path))
                    if status is not None:
                        found[path] = status
                continue
            for status in list_status(files, located):
                path = spark_path(str(status.getPath().toUri().toString()))
                if path in wanted:
                    found[path] = status
        return found

    def identities(self, paths: Sequence[str]) -> dict[str, FileIdentity]:
        """Size and modification time of each of ``paths`` that exists (listed by zspark's
        JVM class where the session has it: no py4j call per file)."""
        jvm = SessionJvm(self._spark)
        if not has_table_files(jvm):
            return {path: _identity(path, status)
                    for path, status in self.statuses(paths).items()}
        listed = jvm.dataframe(jvm.call_static(
            TABLE_FILES, "identities", jvm.session, "\n".join(spark_path(p) for p in paths)
        )).toArrow()
        return {path: FileIdentity(path, size, mtime) for path, size, mtime in zip(
            *(listed.column(i).to_pylist() for i in range(3)), strict=True)}

    def footers(self, paths: Sequence[str]) -> Iterator[FileTail]:
        """Each file's identity and Parquet footer, in the order of ``paths``. Raises
        ``FileNotFoundError`` naming a file that is not there."""
        statuses = self.statuses(paths)
        missing = [p for p in paths if spark_path(p) not in statuses]
        if missing:
            raise FileNotFoundError(f"zspark: {len(missing)} data files are gone, "
                                    f"e.g. {missing[0]}")
        chosen = [(spark_path(p), statuses[spark_path(p)]) for p in paths]
        if len(chosen) <= 1:
            yield from (self._tail(path, status) for path, status in chosen)
            return
        with ThreadPoolExecutor(min(READERS, len(chosen))) as pool:
            yield from pool.map(lambda item: self._tail(*item), chosen)

    def _tail(self, path: str, status: Any) -> FileTail:
        identity = _identity(path, status)
        located = status.getPath()
        files = located.getFileSystem(self._conf)
        try:
            stream = (files.openFile(located).withFileStatus(status)
                      .opt("fs.option.openfile.read.policy", "random").build().get())
            try:
                footer = _read_tail(stream, identity.size, min(identity.size, TAIL_BYTES))
                length = footer_length(footer)
                if length + 8 > len(footer):
                    footer = _read_tail(stream, identity.size, length + 8)
            finally:
                stream.close()
        except Exception as error:  # a py4j error carries the JVM's message
            raise RuntimeError(f"zspark: cannot read the Parquet footer of {path}: "
                               f"{error}") from error
        return FileTail(identity, footer[-(length + 8):])


def list_status(files: Any, located: Any) -> list[Any]:
    """The ``FileStatus`` of each entry of the folder ``located`` on the Hadoop file system
    ``files``, none when it does not exist: one listing, no request first to ask whether
    it exists."""
    try:
        return list(files.listStatus(located))
    except Exception as error:  # py4j's error names the Java exception
        if "FileNotFoundException" in str(error):
            return []
        raise


def file_status(files: Any, located: Any) -> Any:
    """The ``FileStatus`` of the file ``located``, None when it does not exist."""
    try:
        return files.getFileStatus(located)
    except Exception as error:  # py4j's error names the Java exception
        if "FileNotFoundException" in str(error):
            return None
        raise


def _identity(path: str, status: Any) -> FileIdentity:
    return FileIdentity(path, int(status.getLen()), int(status.getModificationTime()))


def _read_tail(stream: Any, size: int, length: int) -> bytes:
    """The last ``length`` bytes of a file of ``size`` bytes."""
    if length > size:
        raise ValueError(f"a footer of {length} bytes in a file of {size}")
    stream.seek(size - length)
    return bytes(stream.readNBytes(length))


def footer_length(tail: bytes) -> int:
    """The length of the footer a Parquet file's ``tail`` ends with.

    >>> footer_length(b"...." + (1234).to_bytes(4, "little") + b"PAR1")
    1234
    """
    if len(tail) < 8 or tail[-4:] != PARQUET_MAGIC:
        raise ValueError("not a Parquet file (no magic at its end)")
    return int.from_bytes(tail[-8:-4], "little")


def executor_footers(spark: SparkSession, paths: Sequence[str]) -> DataFrame | None:
    """The tails of ``paths`` (``file_path``, ``file_size``, ``file_mtime``, ``footer``: the
    footer, its length and the magic), read by the executors when the job runs; None when
    zspark's JVM classes are not on this session's class path (or the driver is to read
    them: at most :data:`DRIVER_READS_UP_TO` files). The folders are listed first, on the
    driver: a missing file raises ``FileNotFoundError`` naming it."""
    jvm = SessionJvm(spark)
    if len(paths) <= DRIVER_READS_UP_TO or not has_table_files(jvm):
        return None
    context = spark.sparkContext
    if not str(context.master).startswith("local"):
        _ship_jar(spark)
    listed = "\n".join(spark_path(p) for p in paths)
    try:
        tails = jvm.call_static(TABLE_FILES, "read", jvm.session, listed,
                                TASKS_PER_CORE * context.defaultParallelism, READERS,
                                TAIL_BYTES)
    except Exception as error:  # py4j's error carries the JVM's message
        gone = str(error).partition("FileNotFoundException: ")[2]
        if gone:
            raise FileNotFoundError(gone.splitlines()[0]) from error
        raise
    return jvm.dataframe(tails)


def input_files(frame: DataFrame) -> list[str]:
    """A frame's (a table's) files, as ``inputFiles`` lists them, handed over in one py4j
    call where the session has zspark's JVM classes (10,000 files: 0.9 s one by one)."""
    jvm = SessionJvm(frame.sparkSession)
    if not has_table_files(jvm):
        return list(frame.inputFiles())
    listed = str(jvm.call_static(TABLE_FILES, "inputFiles", jvm.dataset(frame)))
    return listed.split("\n") if listed else []


def has_table_files(jvm: SessionJvm) -> bool:
    """Whether the session's driver has zspark's JVM classes (a JDK compiled them)."""
    try:
        jvm.jvm_class(TABLE_FILES)
    except Exception:  # py4j's ClassNotFoundException
        return False
    return True


def _ship_jar(spark: SparkSession) -> None:
    """zspark's jar to a cluster's executors (the driver has it on its class path)."""
    jar, context = jvm_jar.jar_path(), spark.sparkContext._jsc.sc()  # type: ignore[union-attr]
    if not any(str(added).endswith(jar.name) for added in SessionJvm(spark).python_list(
            context.listJars())):
        context.addJar(str(jar))
