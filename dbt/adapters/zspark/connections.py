"""Credentials (type ``zspark``) and the connection manager.

Every dbt-spark connection method is accepted unchanged. For ``method: session`` the
embedded Spark gets sensible defaults before it starts: warehouse, metastore and derby
files live under ``session_dir`` instead of the working directory, Python UDF workers run
the interpreter that runs dbt (or the profile's ``spark.pyspark.python``), and timestamps
are written with usable Parquet statistics.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dbt.adapters.contracts.connection import Connection
from dbt.adapters.spark.connections import (
    SparkConnectionManager,
    SparkConnectionMethod,
    SparkCredentials,
)

DEFAULT_SESSION_DIR = ".zspark"
#: The profile setting (in ``server_side_parameters``) naming the executors' Python.
EXECUTOR_PYTHON = "spark.pyspark.python"


#: HotSpot leaves methods of more than 8000 bytes of bytecode to its interpreter.
COMPILE_HUGE_METHODS = "-XX:-DontCompileHugeMethods"


def session_defaults(session_dir: str) -> dict[str, str]:
    """Spark settings an embedded session gets unless the profile sets them itself."""
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
        "spark.driver.extraJavaOptions": f"-Dderby.system.home={root} -XX:+UseParallelGC "
                                         f"{COMPILE_HUGE_METHODS}",
        "spark.executor.extraJavaOptions": COMPILE_HUGE_METHODS,
        # INT96 timestamps carry no min/max in Parquet footers; micros do.
        "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
        # Bigger Arrow batches make the curve-key UDFs 1.5-2x faster.
        "spark.sql.execution.arrow.maxRecordsPerBatch": "100000",
        # Local disk without checksum side files: Hadoop's default local file system writes a
        # `.crc` file beside every data file and, lacking its native library (pyspark ships
        # none), forks `chmod` for each one; that was a tenth of a 1000-file build.
        "spark.hadoop.fs.file.impl": "org.apache.hadoop.fs.RawLocalFileSystem",
        "spark.ui.showConsoleProgress": "false",
        "spark.ui.enabled": "false",
    }


@dataclass
class ZSparkCredentials(SparkCredentials):
    """dbt-spark credentials plus where an embedded session keeps its files."""

    session_dir: str = DEFAULT_SESSION_DIR

    @classmethod
    def __pre_deserialize__(cls, data: Any) -> Any:
        data = super().__pre_deserialize__(data)
        # An embedded session has no host; dbt-spark insists on one anyway.
        if data.get("method") == SparkConnectionMethod.SESSION.value:
            data.setdefault("host", "localhost")
        return data

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.method == SparkConnectionMethod.SESSION:
            for key, value in session_defaults(self.session_dir).items():
                self.server_side_parameters.setdefault(key, value)

    @property
    def type(self) -> str:
        return "zspark"

    def _connection_keys(self) -> tuple[str, ...]:
        return ("host", "port", "cluster", "endpoint", "schema", "organization", "method",
                "session_dir")


class ZSparkConnectionManager(SparkConnectionManager):
    TYPE = "zspark"

    @classmethod
    def open(cls, connection: Connection) -> Connection:
        creds = connection.credentials
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
        return super().open(connection)
