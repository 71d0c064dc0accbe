"""The DataFrame API of a session: the embedded session's (``pyspark.sql``) or a Spark
Connect client's (``pyspark.sql.connect``).

The two build columns and observations of their own classes, and
``pyspark.sql.functions`` builds the embedded session's columns unless the whole process
is a Connect client; so code that runs on either session asks it for its API.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType
from typing import Any


@dataclass(frozen=True)
class FrameApi:
    #: The session's ``functions`` module (``col``, ``expr``, aggregates).
    functions: ModuleType
    #: Its ``Observation`` class: metrics gathered by the job that runs a frame.
    observation: type
    #: Whether the session is a Spark Connect client's (no JVM in this process).
    remote: bool


def api_of(session: Any) -> FrameApi:
    """The DataFrame API ``session`` takes."""
    if type(session).__module__.startswith("pyspark.sql.connect"):
        from pyspark.sql.connect import functions as connect_functions
        from pyspark.sql.connect.observation import Observation as ConnectObservation

        return FrameApi(connect_functions, ConnectObservation, True)
    from pyspark.sql import Observation
    from pyspark.sql import functions as functions

    return FrameApi(functions, Observation, False)
