"""The adapter's one choice of how to reach Spark, by the profile's method."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dbt.adapters.zspark.reach.base import Execute, Query, SparkReach
from dbt.adapters.zspark.reach.frames.reach import FrameReach
from dbt.adapters.zspark.reach.server import connect
from dbt.adapters.zspark.reach.server.reach import ServerReach
from dbt.adapters.zspark.reach.session.embedded import active_session
from dbt.adapters.zspark.reach.session.reach import SessionReach


def reach_of(method: str, query: Query, execute: Execute, cores: Callable[[], int],
             frames: Callable[[], Any]) -> SparkReach:
    """How a profile's ``method`` reaches Spark: ``session`` is Spark in this process;
    ``connect`` a server's DataFrame session (``frames``: the connection's); every other
    method (thrift, http, odbc) a server reached by SQL alone."""
    from dbt.adapters.spark.connections import SparkConnectionMethod

    if method == SparkConnectionMethod.SESSION:
        return SessionReach(active_session(), query, execute)
    if method == connect.METHOD:
        return FrameReach(frames, query, execute, cores)
    return ServerReach(query, execute, cores)
