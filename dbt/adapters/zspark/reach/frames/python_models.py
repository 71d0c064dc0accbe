"""dbt Python models on a DataFrame session: the model's compiled code runs in the dbt
process, on the Spark session its SQL runs on (the embedded session, or the dbt
connection's Spark Connect session, whose DataFrames run on the server), and its result
is written as the table the materialization names (a Parquet table's next version into a
folder of its own, as a SQL model's: ``table_versions.py``). Everything here is the
DataFrame API, the same in both.

dbt-spark submits Python models to a Databricks cluster only; here ``submission_method:
session`` is the default, and a Thrift server, which runs no Python of dbt's and offers
no DataFrames, refuses them before anything is written.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from dbt.adapters.base.impl import PythonJobHelper
from dbt_common.exceptions import DbtRuntimeError

from dbt.adapters.zspark.formats import CLUSTERED_FORMATS, format_table

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

SUBMISSION_METHOD = "session"

#: The DataFrame session of the dbt connection submitting a Python model (None: a
#: connection that has none), set around dbt's submission by :func:`running_on`.
_RUNNING_ON: ContextVar[Any] = ContextVar("zspark_python_session", default=None)


@contextmanager
def running_on(spark: Any) -> Iterator[None]:
    """Python models submitted within run on ``spark`` (None: they are refused)."""
    token = _RUNNING_ON.set(spark)
    try:
        yield
    finally:
        _RUNNING_ON.reset(token)


class SessionPythonJob(PythonJobHelper):
    """Runs a Python model's compiled code in this process, with ``spark`` bound to the
    dbt connection's DataFrame session (the name dbt's compiled code reads)."""

    def __init__(self, parsed_model: dict[str, Any], credentials: Any) -> None:
        self.model = str(parsed_model.get("name", "?"))
        self.path = str(parsed_model.get("original_file_path", self.model))
        self.method = getattr(credentials, "method", None)

    def submit(self, compiled_code: str) -> None:
        spark = _RUNNING_ON.get()
        if spark is None:
            raise DbtRuntimeError(
                f"Python model {self.model} ({self.path}): the profile's method is "
                f"'{self.method}', whose server runs no Python of dbt's and offers no "
                f"DataFrames; Python models run with `method: session` (an embedded "
                f"session or a cluster's driver) or `method: connect` (a Spark Connect "
                f"server)")
        code = compile(compiled_code, self.path, "exec")
        exec(code, {"spark": spark, "__name__": f"dbt_model_{self.model}"})


def as_spark_frame(spark: SparkSession, result: Any) -> DataFrame:
    """A model's returned frame as a Spark DataFrame: Spark's own as is, pandas-on-Spark
    by its ``to_spark``, a pandas frame through ``createDataFrame``."""
    from pyspark.sql import DataFrame

    if isinstance(result, DataFrame):
        return result
    if hasattr(result, "to_spark"):
        return result.to_spark()  # type: ignore[no-any-return]
    try:
        import pandas
    except ImportError:
        pandas = None
    if pandas is not None and isinstance(result, pandas.DataFrame):
        return spark.createDataFrame(result)
    raise DbtRuntimeError(f"a Python model returned a {type(result).__name__}; it must "
                          f"return a Spark, pandas-on-Spark or pandas DataFrame")


def write_result(spark: SparkSession, result: Any, table: str, file_format: str | None,
                 location: str | None) -> None:
    """``result`` written as ``table``, replacing it: in ``file_format`` (None: the
    session's default source), its files in ``location`` when given (an external table
    there, whose name the swap can rename without moving a file)."""
    frame = as_spark_frame(spark, result)
    if file_format and file_format.lower() in CLUSTERED_FORMATS \
            and format_table(file_format).replaced_by_v2_writer:
        frame.writeTo(table).using(file_format).createOrReplace()
        return
    writer = frame.write.mode("overwrite")
    if file_format:
        writer = writer.format(file_format)
    if location:
        writer = writer.option("path", location)
    writer.saveAsTable(table)
