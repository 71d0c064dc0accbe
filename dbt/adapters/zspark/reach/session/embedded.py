"""The embedded Spark session dbt-spark's ``session`` method runs on.

dbt-spark builds it with ``SparkSession.builder...getOrCreate()``; the same call here
returns that very session, so UDFs registered on it are visible to every model's SQL.
zspark starts it first (``start``), so that the driver JVM's own output, which no log
configuration reaches (Ivy resolving ``spark.jars.packages``, the JVM's warnings), can
go to Spark's log file instead of among dbt's lines.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from dbt.adapters.zspark.reach.frames.udfs import register_key_udf
from dbt.adapters.zspark.reach.session.udfs import ranks_key

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

_registered: set[int] = set()
_lock = threading.Lock()
#: How many of the JVM's last lines (stack frames and blank lines left out) a failed
#: start quotes.
QUOTED_LINES = 8


class SessionStartError(RuntimeError):
    """The driver JVM exited before the session started."""


def driver_missing() -> str | None:
    """Why no Spark driver can run in this process, or None when pyspark's can: Connect's
    client alone (``pyspark-client``) has neither Spark's jars nor the JVM gateway."""
    try:
        from pyspark.util import is_remote_only
    except ImportError:
        return "pyspark is not installed"
    if is_remote_only():
        return "pyspark is Spark Connect's client alone (pyspark-client: no jars, no JVM)"
    return None


def start(settings: Mapping[str, object], jvm_output: Path | None) -> SparkSession:
    """The process's session with ``settings`` and Hive's catalog, as dbt-spark opens it.

    When no JVM runs yet and ``jvm_output`` is given, the driver JVM is launched with its
    stdout and stderr appended to that file (Spark's log lines, once log4j2 starts, go
    where its configuration says).
    """
    from pyspark import SparkConf, SparkContext
    from pyspark.errors import PySparkRuntimeError
    from pyspark.java_gateway import launch_gateway
    from pyspark.sql import SparkSession

    options = {str(key): str(value) for key, value in settings.items()}
    options["spark.sql.catalogImplementation"] = "hive"
    if jvm_output is not None and SparkContext._gateway is None:
        conf = SparkConf().setAll(list(options.items()))
        jvm_output.parent.mkdir(parents=True, exist_ok=True)
        with jvm_output.open("ab") as out:
            begun = out.tell()  # the file holds earlier runs' lines: quote this start's
            try:
                gateway = launch_gateway(conf, popen_kwargs={"stdout": out, "stderr": out})
            except PySparkRuntimeError as error:
                raise SessionStartError(_start_failure(jvm_output, begun, error)) from error
        SparkContext(conf=conf, gateway=gateway)
    builder = SparkSession.builder
    for key, value in options.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


def _start_failure(jvm_output: Path, begun: int, error: Exception) -> str:
    with jvm_output.open("rb") as written:
        written.seek(begun)
        output = written.read().decode(errors="replace")
    lines = [line for line in output.splitlines()
             if line.strip() and not line.lstrip().startswith("at ")]
    quoted = "\n".join(f"  {line.strip()}" for line in lines[-QUOTED_LINES:])
    return (f"The embedded Spark session (method: session) did not start "
            f"({str(error).strip().rstrip('.')}). The driver JVM's output is in "
            f"{jvm_output}; it ends:\n{quoted}")


def active_session() -> SparkSession:
    """The process's Spark session, with the documented zspark UDFs registered once."""
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.getOrCreate()
    with _lock:
        if id(spark) not in _registered:

            for curve in ("zorder", "hilbert"):
                register_key_udf(spark, f"zspark_{curve}_key", ranks_key(curve), "bigint")
            _registered.add(id(spark))
    return spark
