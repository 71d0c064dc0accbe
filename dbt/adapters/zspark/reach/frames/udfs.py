"""A model's key function registered on a DataFrame session as a pandas UDF: the
``direct`` curve method's keys, computed by Python in Spark's workers (the embedded
session's, a cluster's, a Connect server's)."""

from __future__ import annotations

from typing import Any

from dbt.adapters.zspark.layouts import KeyFunction
from dbt.adapters.zspark.reach.executor_code import ship_with_jobs
from dbt.adapters.zspark.reach.frames.api import api_of


def register_key_udf(session: Any, name: str, function: KeyFunction, key_type: str) -> None:
    """Register ``function`` on ``session`` as the SQL function ``name`` returning
    ``key_type`` (a curve key: bigint or binary), for that session's statements. The
    function is pickled by value (``executor_code.py``): the workers need numpy, pandas and
    pyarrow, not dbt or zspark."""
    ship_with_jobs()
    if api_of(session).remote:
        # Connect's own UDF class: pyspark's pandas_udf builds a classic UDF (one that
        # needs a JVM in this process) unless the whole process is a Connect client.
        from pyspark.sql.connect.udf import UserDefinedFunction
        from pyspark.sql.types import BinaryType, DataType, LongType
        from pyspark.util import PythonEvalType

        types: dict[str, DataType] = {"bigint": LongType(), "binary": BinaryType()}
        session.udf.register(name, UserDefinedFunction(
            function, returnType=types[key_type], name=name,
            evalType=PythonEvalType.SQL_SCALAR_PANDAS_UDF))
        return
    from pyspark.sql.functions import pandas_udf

    # Variadic key functions are beyond pandas_udf's typed overloads; Spark accepts them.
    make_udf: Any = pandas_udf
    session.udf.register(name, make_udf(function, key_type))
