"""The embedded Spark session dbt-spark's ``session`` method runs on.

dbt-spark builds it with ``SparkSession.builder...getOrCreate()``; the same call here
returns that very session, so UDFs registered on it are visible to every model's SQL.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from dbt.adapters.zspark.reach.session.udfs import register_session_udfs

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

_registered: set[int] = set()
_lock = threading.Lock()


def active_session() -> SparkSession:
    """The process's Spark session, with the documented zspark UDFs registered once."""
    from pyspark.sql import SparkSession

    spark = SparkSession.builder.getOrCreate()
    with _lock:
        if id(spark) not in _registered:

            register_session_udfs(spark)
            _registered.add(id(spark))
    return spark
