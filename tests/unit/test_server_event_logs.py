"""A server's event-log rows (one per distinct plan, read by its SQL) decoded as a
session's executors decode whole logs: each table's pushed filters with their counts."""

from __future__ import annotations

import json

from dbt.adapters.zspark.advice.event_logs import UNREADABLE
from dbt.adapters.zspark.reach.server.event_logs import plan_rows_scans


def _plan(table: str, filters: str) -> str:
    scan = {"nodeName": f"Scan parquet spark_catalog.{table}",
            "metadata": {"PushedFilters": filters}, "children": []}
    return json.dumps({"nodeName": "HashAggregate", "metadata": {}, "children": [scan]})


def test_plans_of_the_same_filters_are_summed_and_other_tables_left_out() -> None:
    rows = [(_plan("db.events", "[EqualTo(brand,42)]"), 3, 1, 100, 300),
            # Another plan (another aggregate) with the same scan: counted together.
            (_plan("db.events", "[EqualTo(brand,42)]").replace("HashAggregate", "Project"),
             2, 2, 50, 400),
            (_plan("db.events", "[In(city, [a,b])]"), 1, 1, 200, 200),
            (_plan("db.other", "[EqualTo(brand,42)]"), 9, 1, 100, 100)]
    scans = plan_rows_scans(rows, frozenset({"db.events"}))
    found = {r["pushed_filters"]: r for r in scans.to_dict("records")}
    assert set(found) == {"[EqualTo(brand,42)]", "[In(city, [a,b])]"}
    brand = found["[EqualTo(brand,42)]"]
    assert (brand["table_name"], brand["queries"], brand["logs"]) == ("db.events", 5, 3)
    assert (brand["first_ms"], brand["last_ms"]) == (50, 400)


def test_compressed_logs_are_counted_as_unreadable() -> None:
    scans = plan_rows_scans([(None, 0, 2, None, None)], frozenset({"db.events"}))
    [row] = scans.to_dict("records")
    assert (row["table_name"], row["logs"]) == (UNREADABLE, 2)


def test_no_rows_give_the_session_readers_columns() -> None:
    assert list(plan_rows_scans([], frozenset({"db.events"})).columns) == [
        "table_name", "pushed_filters", "queries", "logs", "first_ms", "last_ms"]
