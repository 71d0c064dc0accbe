"""Spark's event logs read by a server's own SQL (thrift, Spark Connect): the server reads
the log files (``binaryFile``: no codec of Hadoop's applied) and returns one row per
distinct plan shape of the queries that name a table asked for (the plan without its
run's ids; its queries, logs and first and last start); the plans are decoded here by
``advice/event_logs.py``, as a session's executors decode whole logs. What reaches this
process grows with the distinct queries (shapes and filters), not with the logs' lines
or the queries run.

Plain logs are read (``spark.eventLog.compress=false``); SQL has no decoder for the
codecs Spark compresses its logs with (zstd by default, lz4, ...), so those are counted
as unreadable here; a session reads zstd ones.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import pandas as pd

from dbt.adapters.zspark.advice.event_logs import (
    EXECUTION_START,
    UNREADABLE,
    matching_table,
    plan_scans,
)
from dbt.adapters.zspark.core.sql_text import sql_string

COLUMNS = ["table_name", "pushed_filters", "queries", "logs", "first_ms", "last_ms"]
#: File names of the logs Spark's codecs compressed (read by no SQL function).
COMPRESSED = sql_string(r"\.(zstd|zst|lz4|lzf|snappy|gz)(\.inprogress)?$")
VIEW = "zspark_event_log_files"
#: A query's plan without the ids each run gives it anew (expressions' ``#12``,
#: exchanges' ``plan_id=52``, metrics' accumulators), so that the queries of one shape
#: and filters group into one row.
PLAN_SHAPE = ("regexp_replace(regexp_replace(get_json_object(value, '$.sparkPlanInfo'), "
              "'(#|plan_id=)[0-9]+', '$1'), '\"accumulatorId\":[0-9]+', "
              "'\"accumulatorId\":0')")


def server_event_log_scans(fetch: Callable[[str], list[tuple[Any, ...]]],
                           execute: Callable[[str], Any], folders: Sequence[str],
                           tables: Sequence[str]) -> pd.DataFrame:
    """Scans of ``tables`` (lower-case names) in the logs under ``folders``, as
    ``reach/session/event_logs.py`` gives them, read by the server's SQL."""
    views = []
    for number, folder in enumerate(folders):
        view = f"{VIEW}_{number}"
        try:
            execute(f"create or replace temporary view {view} using binaryFile options "
                    f"(path {sql_string(folder)}, recursiveFileLookup 'true')")
        except Exception as error:  # a folder not made yet holds no history yet
            if "PATH_NOT_FOUND" in str(error) or "does not exist" in str(error):
                continue
            raise
        views.append(view)
    if not views:
        return pd.DataFrame(columns=COLUMNS)
    files = " union all ".join(f"select path, content from {view}" for view in views)
    named = " or ".join(f"lower(value) like {sql_string('%' + table + '%')}"
                        for table in tables)
    start = sql_string("%" + EXECUTION_START + "%")
    try:
        # The path alone: binaryFile reads no content for it.
        [(compressed,)] = fetch(f"select count(*) from ({files}) zspark_logs "
                                f"where path rlike {COMPRESSED}")
        rows = fetch(f"""
            select {PLAN_SHAPE} as plan, count(*) as queries,
                   count(distinct log_path) as logs, min(started) as first_ms,
                   max(started) as last_ms
            from (select log_path, value,
                         cast(get_json_object(value, '$.time') as bigint) as started
                  from (select path as log_path,
                               explode(split(cast(content as string), '\\n')) as value
                        from ({files}) zspark_logs
                        where not path rlike {COMPRESSED}) zspark_lines
                  where value like {start} and ({named})
                    and get_json_object(value, '$.Event') like {start}) zspark_starts
            group by 1""")
    finally:
        for view in views:
            execute(f"drop view if exists {view}")
    if compressed:
        rows = [*rows, (None, 0, int(compressed), None, None)]
    return plan_rows_scans(rows, frozenset(tables))


def plan_rows_scans(rows: Sequence[tuple[Any, ...]], tables: frozenset[str]) -> pd.DataFrame:
    """Rows of (plan JSON or None for unreadable logs, queries, logs, first, last) as scan
    rows per table and pushed filters (their counts summed over the plans)."""
    found: dict[tuple[str, str], list[Any]] = {}
    for plan, queries, logs, first, last in rows:
        if plan is None:
            # Compressed logs: their files counted, as a session's unreadable rows.
            found[(UNREADABLE, "")] = [0, int(logs), None, None]
            continue
        for table, filters in plan_scans({"sparkPlanInfo": json.loads(plan)}):
            match = matching_table(table, tables)
            if match is None:
                continue
            entry = found.setdefault((match, filters), [0, 0, first, last])
            entry[0] += int(queries)
            entry[1] += int(logs)
            entry[2] = first if entry[2] is None else min(entry[2], first)
            entry[3] = last if entry[3] is None else max(entry[3], last)
    return pd.DataFrame([[table, filters, *counts] for (table, filters), counts in found.items()],
                        columns=COLUMNS)
