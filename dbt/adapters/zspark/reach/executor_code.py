"""Code that runs on executors travels with the job.

The key functions and the footer reader run in Spark's Python workers. Pickled by value,
they need only pyspark, numpy, pandas and pyarrow there: a cluster's executors do not have
dbt or this plugin installed, and a worker that imports them (dbt-core and all) starts
about a second later even where they are.
"""

from __future__ import annotations

import importlib

#: Modules whose functions run in Python workers; they import nothing else of dbt's.
EXECUTOR_MODULES = (
    "dbt.adapters.zspark.advice.event_logs",
    "dbt.adapters.zspark.core.balanced",
    "dbt.adapters.zspark.core.curves",
    "dbt.adapters.zspark.layouts",  # and its modules
    "dbt.adapters.zspark.layouts.planning",
    "dbt.adapters.zspark.core.sql_text",
    "dbt.adapters.zspark.core.value_ranks",
    "dbt.adapters.zspark.skipping.stats",
    "dbt.adapters.zspark.reach.session.udfs",
)


def ship_with_jobs() -> None:
    """Pickle the executor modules' functions and classes by value from now on."""
    from pyspark import cloudpickle

    for name in EXECUTOR_MODULES:
        cloudpickle.register_pickle_by_value(importlib.import_module(name))
