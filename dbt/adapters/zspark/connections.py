"""Credentials (type ``zspark``) and the connection manager.

Every dbt-spark connection method is accepted unchanged, and ``method: connect`` reaches a
Spark Connect server (``reach/server/connect.py``). For ``method: session`` the
embedded Spark gets sensible defaults before it starts: warehouse, metastore and derby
files live under ``session_dir`` instead of the working directory, Python UDF workers run
the interpreter that runs dbt (or the profile's ``spark.pyspark.python``), and timestamps
are written with usable Parquet statistics. ``table_format: delta`` (or ``iceberg``) adds
what the session needs to write that format (``formats/settings.py``).
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dbt.adapters.contracts.connection import Connection, ConnectionState
from dbt.adapters.events.logging import AdapterLogger
from dbt.adapters.spark.connections import (
    SparkConnectionManager,
    SparkConnectionMethod,
    SparkCredentials,
)
from dbt_common.exceptions import DbtRuntimeError

from dbt.adapters.zspark.core.generated_code import COMPILE_HUGE_METHODS
from dbt.adapters.zspark.formats.settings import (
    DELTA_SNAPSHOT_PARTITIONS,
    JARS,
    PACKAGES,
    TableFormatError,
    with_embedded_metastore,
    with_table_format,
)
from dbt.adapters.zspark.reach.server import connect
from dbt.adapters.zspark.reach.session import class_archive, embedded, jvm_jar, spark_log
from dbt.adapters.zspark.reach.session.job_groups import JOB_GROUPS
from dbt.adapters.zspark.reach.session.object_stores import unreachable_warehouse_error

logger = AdapterLogger("zspark")

DEFAULT_SESSION_DIR = ".zspark"
#: The profile setting (in ``server_side_parameters``) naming the executors' Python.
EXECUTOR_PYTHON = "spark.pyspark.python"


#: Hadoop's local file system, minus checksum files and the `chmod` process per file
#: (``dbt/include/zspark/jvm``; ``jvm_jar.py`` compiles it with a JDK).
LOCAL_FS_CLASS = "dbt.zspark.NioLocalFileSystem"
CLASS_PATH = "spark.driver.extraClassPath"
DRIVER_OPTIONS = "spark.driver.extraJavaOptions"
FILE_SYSTEM = "spark.hadoop.fs.file.impl"
#: Where Spark keeps the jars it fetches by Maven coordinates (Ivy's user folder).
IVY_DIR = "spark.jars.ivy"


def session_defaults(session_dir: str, master: str | None = None) -> dict[str, str]:
    """Spark settings an embedded session gets unless the profile sets them itself;
    ``master`` is the profile's ``spark.master`` (none: Spark in this process). Its JVM
    maps the class archive of its class path (``class_archive.py``)."""
    return with_class_archive(_own_defaults(session_dir, master))


def with_class_archive(settings: dict[str, Any]) -> dict[str, Any]:
    """``settings`` whose driver maps (or records) the class archive of its class path."""
    options = class_archive.with_class_archive(str(settings.get(DRIVER_OPTIONS, "")),
                                               str(settings.get(CLASS_PATH, "")))
    return {**settings, DRIVER_OPTIONS: options}


def _own_defaults(session_dir: str, master: str | None) -> dict[str, str]:
    root = Path(session_dir).resolve()
    return {
        "spark.sql.warehouse.dir": str(root / "warehouse"),
        "spark.hadoop.javax.jdo.option.ConnectionURL": (
            f"jdbc:derby:;databaseName={root / 'metastore_db'};create=true"
        ),
        # derby.log goes to derby.system.home. A build is a short batch on few cores: the
        # throughput collector leaves them to the tasks (G1's concurrent threads took 3-6 s
        # of a 2 M-row build on 2 cores). The JIT compiles generated methods past 8000
        # bytes too: a wide model's keyed rows make one, and the JVM's interpreter ran it
        # at a third of the speed (a 2 M-row write stage: 11 s against 3.5 s).
        DRIVER_OPTIONS: f"-Dderby.system.home={root} -XX:+UseParallelGC "
                                         f"{COMPILE_HUGE_METHODS}",
        "spark.executor.extraJavaOptions": COMPILE_HUGE_METHODS,
        # INT96 timestamps carry no min/max in Parquet footers; micros do.
        "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
        # Bigger Arrow batches make the curve-key UDFs 1.5-2x faster.
        "spark.sql.execution.arrow.maxRecordsPerBatch": "100000",
        **zspark_jvm_classes(master),
        **local_delta_log_settings(master),
        "spark.ui.showConsoleProgress": "false",
        "spark.ui.enabled": "false",
    }


def local_delta_log_settings(master: str | None) -> dict[str, str]:
    """A local session reads a Delta table's log with one task per core. Delta's default
    of 50 tasks is sized for a cluster's table states: on 2 cores, reading the 20 files of a
    200,000-row table after its commit took 2.6-3.6 s in 50 tasks against 0.5-0.6 s in one
    (every write, scan and statistics read of a Delta table rebuilds that state).

    >>> local_delta_log_settings("local[4]")
    {'spark.databricks.delta.snapshotPartitions': '4'}
    >>> local_delta_log_settings("spark://h:7077")
    {}
    """
    if not is_local(master):
        return {}
    cores = re.fullmatch(r"local\[(\d+)(,\d+)?\]", str(master or ""))
    return {DELTA_SNAPSHOT_PARTITIONS: cores.group(1) if cores else str(os.cpu_count() or 1)}


def zspark_jvm_classes(master: str | None) -> dict[str, str]:
    """zspark's JVM classes (``jvm_jar.py``) on the driver's class path, and its file
    system for local disk where every executor is this JVM.

    Hadoop's default local file system writes a `.crc` file beside every data file and,
    lacking its native library (pyspark ships none), forks `chmod` for each one. zspark's
    writes no `.crc` files and sets permissions by a system call; like Hadoop's it is a
    ``LocalFileSystem``, which the object stores' clients (S3A, ABFS, GCS) buffer their
    uploads through. A cluster's executors would not find the class, and keep Hadoop's.
    The driver, this process, always takes the jar: it also carries the SLF4J binding
    that sends the AWS SDK's log to Spark's."""
    jar = jvm_jar.ensure_jar()
    if jar is None:
        return {}
    return {CLASS_PATH: str(jar), **({FILE_SYSTEM: LOCAL_FS_CLASS} if is_local(master) else {})}


def with_session_defaults(settings: dict[str, Any], session_dir: str) -> dict[str, Any]:
    """A profile's ``server_side_parameters`` with :func:`session_defaults` filled in.
    A class path of the profile keeps its entries and gains zspark's jar; a file system of
    the profile is kept. Jars Spark fetches by their Maven coordinates go to zspark's cache
    folder (``ivy`` beside its JVM jar) unless the profile sets ``spark.jars.ivy``.
    Iceberg over the embedded metastore gets what it needs of it
    (``table_formats.with_embedded_metastore``). A local session takes its local jars on
    the class path (:func:`local_jars_on_class_path`)."""
    master = settings.get("spark.master")
    defaults = _own_defaults(session_dir, master)
    jar = defaults.pop(CLASS_PATH, None)
    merged = with_embedded_metastore({**defaults, **settings})
    if merged.get(PACKAGES) and IVY_DIR not in merged:
        # Jars Spark fetches (a pip-only install's formats) land in zspark's cache folder
        # beside its JVM jar, shared by every project, rather than in ~/.ivy2.
        merged[IVY_DIR] = str(jvm_jar.cache_dir() / "ivy")
    if jar is not None:
        merged[CLASS_PATH] = os.pathsep.join(filter(None, [settings.get(CLASS_PATH), jar]))
    return with_class_archive(local_jars_on_class_path(merged) if is_local(master) else merged)


def is_local(master: str | None) -> bool:
    """Whether a session's executors are its own JVM (no ``spark.master``: local)."""
    return str(master or "local").startswith("local")


def local_jars_on_class_path(settings: dict[str, Any]) -> dict[str, Any]:
    """``settings`` whose ``spark.jars`` entries that are files on this machine join the
    driver's class path. A local session's executor is the driver: from the class path a
    jar loads where it is, while ``spark.jars`` copies each one into Spark's temporary
    folder at every start (613 MB and 3.6 s for the AWS SDK bundle S3A needs, left
    behind by a run that is killed). Remote entries (``hdfs://``, ``https://``) stay.

    >>> moved = local_jars_on_class_path({"spark.jars": "/j/a.jar,hdfs:///j/b.jar",
    ...                                   CLASS_PATH: "/j/c.jar"})
    >>> moved == {"spark.jars": "hdfs:///j/b.jar", CLASS_PATH: f"/j/c.jar{os.pathsep}/j/a.jar"}
    True
    """
    listed = [entry.strip() for entry in str(settings.get(JARS, "")).split(",") if entry.strip()]
    local = [entry.removeprefix("file://") for entry in listed
             if "://" not in entry or entry.startswith("file://")]
    if not local:
        return settings
    result = {**settings, CLASS_PATH: os.pathsep.join(
        filter(None, [settings.get(CLASS_PATH), *local]))}
    remote = [entry for entry in listed if entry.removeprefix("file://") not in local]
    if remote:
        result[JARS] = ",".join(remote)
    else:
        del result[JARS]
    return result


@dataclass
class ZSparkCredentials(SparkCredentials):
    """dbt-spark credentials plus where an embedded session keeps its files and the
    table format it writes besides Parquet; ``method`` may also be ``connect``."""

    #: dbt-spark's methods (thrift, http, odbc, session) or ``connect``.
    method: str = None  # type: ignore[assignment]
    #: Headers a Connect client sends with every request (``method: connect``).
    connect_headers: dict[str, str] | None = None
    session_dir: str = DEFAULT_SESSION_DIR
    table_format: str | None = None
    #: Spark's own log lines shown on the console from this level up (``spark_log.py``).
    spark_log_level: str = spark_log.DEFAULT_CONSOLE_LEVEL

    @classmethod
    def __pre_deserialize__(cls, data: Any) -> Any:
        data = super().__pre_deserialize__(data)
        # An embedded session has no host; dbt-spark insists on one anyway.
        if data.get("method") == SparkConnectionMethod.SESSION.value:
            data.setdefault("host", "localhost")
        if data.get("method") == connect.METHOD:
            data.setdefault("port", connect.DEFAULT_PORT)
        return data

    def __post_init__(self) -> None:
        allowed = [*(method.value for method in SparkConnectionMethod), connect.METHOD]
        if self.method is not None and self.method not in allowed:
            raise DbtRuntimeError(f"profile: method '{self.method}' is not one zspark "
                                  f"knows; allowed: {', '.join(allowed)}")
        super().__post_init__()
        if self.connect_headers and self.method != connect.METHOD:
            raise DbtRuntimeError("profile: 'connect_headers' are for method: connect; "
                                  f"this target uses method: {self.method}")
        if self.table_format is not None and self.method != SparkConnectionMethod.SESSION:
            raise DbtRuntimeError(
                f"profile: 'table_format' sets up an embedded session (method: session); "
                f"this target uses method: {self.method}, whose Spark is configured where "
                f"it runs. Leave 'table_format' out.")
        if self.method == SparkConnectionMethod.SESSION:
            missing = embedded.driver_missing()
            if missing is not None:
                raise DbtRuntimeError(
                    f"profile: method: session runs Spark's driver in the dbt process, and "
                    f"here {missing}. Install pyspark with its jars (`pip install "
                    f"dbt-zspark`), or reach a Spark Connect server with method: connect.")
            problem = spark_log.level_error(self.spark_log_level)
            if problem is not None:
                raise DbtRuntimeError(problem)
            try:
                parameters = with_table_format(self.server_side_parameters, self.table_format)
            except TableFormatError as error:
                raise DbtRuntimeError(str(error)) from error
            settings = with_session_defaults(parameters, self.session_dir)
            settings[DRIVER_OPTIONS] = spark_log.with_log_option(
                str(settings.get(DRIVER_OPTIONS, "")), self.log_config)
            self.server_side_parameters = settings

    @property
    def log_config(self) -> Path:
        """The log4j2 configuration a session's driver JVM reads (``spark_log.py``)."""
        return Path(self.session_dir).resolve() / spark_log.CONFIG_FILE

    @property
    def type(self) -> str:
        return "zspark"

    def _connection_keys(self) -> tuple[str, ...]:
        if self.method == SparkConnectionMethod.SESSION:
            return ("method", "schema", "session_dir", "table_format", "spark_log_level")
        if self.method == connect.METHOD:
            return ("method", "host", "schema")
        return ("host", "port", "cluster", "endpoint", "schema", "organization", "method")

    def connection_info(self, *, with_aliases: bool = False) -> Iterator[tuple[str, Any]]:
        """What ``dbt debug`` shows: for an embedded session, where its Spark runs and
        keeps its tables (no host or port: it has none)."""
        yield from super().connection_info(with_aliases=with_aliases)
        if self.method == SparkConnectionMethod.SESSION:
            settings = self.server_side_parameters
            yield "master", settings.get("spark.master", "local[*]")
            yield "warehouse", settings.get("spark.sql.warehouse.dir")
        if self.method == connect.METHOD:  # the server, without the token and headers
            yield "server", connect.connect_url(self.host or "", self.port).split("/;")[0]


class ZSparkConnectionManager(SparkConnectionManager):
    TYPE = "zspark"

    @classmethod
    def open(cls, connection: Connection) -> Connection:
        creds = connection.credentials
        if creds.method == connect.METHOD and connection.state != ConnectionState.OPEN:
            url = connect.connect_url(creds.host, creds.port, creds.token,
                                      creds.connect_headers, creds.use_ssl)
            connection.handle = connect.open_handle(url, creds.connect_timeout)
            connection.state = ConnectionState.OPEN
            return connection
        if creds.method == SparkConnectionMethod.SESSION:
            Path(creds.session_dir).mkdir(parents=True, exist_ok=True)
            # pyspark starts executors' Python workers with the driver's PYSPARK_PYTHON
            # only: the profile's `spark.pyspark.python` (the executors' interpreter on a
            # cluster) goes there; else the interpreter running dbt, not `python3` on PATH.
            executors = creds.server_side_parameters.get(EXECUTOR_PYTHON)
            if executors:
                os.environ["PYSPARK_PYTHON"] = str(executors)
            else:
                os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
            os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
            jvm_output = None
            if spark_log.CONFIG_OPTION + str(creds.log_config) in str(
                    creds.server_side_parameters.get(DRIVER_OPTIONS, "")):
                log_file = spark_log.write_config(creds.log_config, creds.spark_log_level)
                jvm_output = spark_log.jvm_output(log_file, creds.spark_log_level)
            _start_session(creds.server_side_parameters, jvm_output)
            JOB_GROUPS.join(connection.name)
        return super().open(connection)

    def set_connection_name(self, name: str | None = None) -> Connection:
        # A session's Spark jobs run in the job group of the connection's thread, which
        # dbt's cancel stops (``job_groups.py``).
        connection = super().set_connection_name(name)
        if _in_session(connection):
            JOB_GROUPS.join(connection.name)
        return connection

    def cancel(self, connection: Connection) -> None:
        if not _in_session(connection):
            super().cancel(connection)
        elif JOB_GROUPS.cancel(connection.name):
            logger.debug(f"zspark: cancelled the Spark jobs of {connection.name}")

    def cleaning_up(self) -> contextlib.AbstractContextManager[None]:
        """Statements that release what a model holds, sent even once it is cancelled."""
        return JOB_GROUPS.cleaning_up()

    def add_query(self, sql: str, *args: Any, **kwargs: Any) -> tuple[Connection, Any]:
        JOB_GROUPS.refuse_if_cancelled()
        return super().add_query(sql, *args, **kwargs)

    def dataframe_session(self) -> Any:
        """The Spark session whose DataFrames this thread's connection reaches: the
        embedded session, the connection's own Connect session; None over Thrift (SQL
        alone)."""
        connection = self.get_thread_connection()
        if _in_session(connection):
            return embedded.active_session()
        return connect.dataframe_session(self.open(connection).handle)


def _in_session(connection: Connection) -> bool:
    return getattr(connection.credentials, "method", None) == SparkConnectionMethod.SESSION


def without_local_fs_jar(settings: dict[str, Any]) -> bool:
    """Whether a session with these (completed) settings would have taken zspark's local
    file system, but no JDK compiled it. Hadoop's then writes the same files, slower."""
    local = is_local(settings.get("spark.master"))
    return local and FILE_SYSTEM not in settings and jvm_jar.ensure_jar() is None


def _start_session(settings: dict[str, Any], jvm_output: Path | None) -> None:
    """Start the session as dbt-spark will (the same settings: its first statement gets
    this very session) and refuse, before any statement, a warehouse it cannot reach.
    Said on the console: that Spark starts, and the seconds it took (the JVM's start is
    most of a short run); once, at the start: a local session that lacks zspark's file
    system jar."""
    from pyspark import SparkContext

    if SparkContext._active_spark_context is not None:
        return  # started, and checked, by an earlier connection
    started = time.monotonic()
    logger.info(f"zspark: starting Spark ({settings.get('spark.master', 'local[*]')}, "
                f"method: session)")
    try:
        spark = embedded.start(settings, jvm_output)
    except embedded.SessionStartError as failed:
        raise DbtRuntimeError(str(failed)) from failed
    logger.info(f"zspark: Spark {spark.version} started in {time.monotonic() - started:.1f} s")
    error = unreachable_warehouse_error(spark)
    if error is not None:
        raise DbtRuntimeError(error)
    if without_local_fs_jar(settings):
        logger.warning(jvm_jar.MISSING)
