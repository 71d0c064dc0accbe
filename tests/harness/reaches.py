"""A reach made outside dbt, for tests and benchmarks that drive one step directly: its
statements run on the DataFrame session itself rather than through dbt's connection."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dbt.adapters.zspark.reach.session.reach import SessionReach


def frames_query(session: Any) -> Callable[[str], tuple[list[str], list[tuple[Any, ...]]]]:
    """A query run on a DataFrame session (embedded or Connect): its names and rows."""

    def query(sql: str) -> tuple[list[str], list[tuple[Any, ...]]]:
        frame = session.sql(sql)
        return list(frame.columns), [tuple(row) for row in frame.collect()]

    return query


def session_reach(spark: Any) -> SessionReach:
    """The embedded session's reach, its statements run on ``spark``."""
    return SessionReach(spark, frames_query(spark), spark.sql)
