"""The advice's pure parts: queries read from a project's code, the candidates, simulated
files and the choice rule."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dbt.adapters.zspark.advice.candidates import (
    UNCLUSTERED,
    Candidate,
    candidates,
    file_of_rows,
    file_stats,
    simulated_file_count,
)
from dbt.adapters.zspark.advice.event_logs import UNREADABLE, filters_predicate, scan_rows
from dbt.adapters.zspark.advice.graph_workload import (
    ProjectNode,
    project_queries,
    scan_predicates,
)
from dbt.adapters.zspark.advice.scoring import SIMPLER_WINS_WITHIN, Score, choose


def queries(code: str, model: str = "orders") -> list[str]:
    return [q.predicate for q in project_queries(
        model, [ProjectNode("model", "m", code)]).queries]


@pytest.mark.parametrize(("code", "expected"), [
    ("select * from {{ ref('orders') }} where city = 'x'", ["city = 'x'"]),
    # Only the table's own columns, by its alias, where it is joined.
    ("select o.* from {{ ref('orders') }} o join {{ ref('users') }} u on o.uid = u.id "
     "where o.day > date'2024-01-01' and u.age > 3 and o.uid = u.id",
     ["o_day"]),
    # Unqualified names of a join are not taken for the table's.
    ("select * from {{ ref('orders') }} o join {{ ref('users') }} u on o.uid = u.id "
     "where age > 3", []),
    # A CTE's filter counts; a filter over the CTE does not (it reads no table here).
    ("with a as (select * from {{ ref('orders') }} where city = 'x' or city = 'y') "
     "select * from a where day = 1", ["city = 'x' OR city = 'y'"]),
    # Jinja values stand in as literals; another model's ref is another table.
    ("{{ config(materialized='view') }} select * from {{ ref('orders') }} "
     "where day = '{{ var(\"day\") }}' and brand = {{ var('b') }}",
     ["day = '0' AND brand = 0"]),
    ("select * from {{ ref('users') }} where city = 'x'", []),
    ("select * from {{ ref('orders') }}", []),
    ("select * from {{ ref('orders') }} where id in (select id from {{ ref('users') }})",
     []),
])
def test_the_filters_a_projects_code_applies_to_the_table(code: str,
                                                          expected: list[str]) -> None:
    found = queries(code)
    if expected == ["o_day"]:
        assert found == ["day > CAST('2024-01-01' AS DATE)"]
    else:
        assert found == expected


def test_zspark_scan_calls_are_queries_and_unparsable_code_is_named() -> None:
    code = """select * from {{ zspark_scan(ref('orders'), "city = 'x' and day > 3") }}"""
    assert scan_predicates(code, "orders") == ["city = 'x' and day > 3"]
    assert scan_predicates(code, "users") == []
    found = project_queries("orders", [ProjectNode("model", "bad", "select from where (("
                                                   " {{ ref('orders') }}"),
                                       ProjectNode("analysis", "a", code)])
    assert found.unreadable == ["bad"]
    assert [(q.source, q.predicate) for q in found.queries] == \
        [("analysis a", "city = 'x' and day > 3")]


def test_candidates_are_the_pools_subsets_under_each_layout() -> None:
    counts = {"a": 5.0, "b": 3.0, "c": 2.0, "d": 1.0, "e": 1.0}
    found = candidates(counts, ["a", "b", "c", "d", "e", "f"])
    assert found[0] == Candidate(UNCLUSTERED)
    # Four columns alone, 6 + 4 + 1 subsets of 2-4 under three layouts; e is past the pool.
    assert len(found) == 1 + 4 + 11 * 3
    assert not any("e" in c.columns for c in found)
    balanced = next(c for c in found if c.config_key == "balanced_by" and
                    c.columns == ("a", "b"))
    assert balanced.weights == (5.0, 3.0)
    hilbert = next(c for c in found if c.config_key == "hilbert_by" and
                   c.columns == ("a", "b"))
    assert hilbert.weights == (1.0, 1.0)


def test_simulated_files_are_equal_runs_in_key_order() -> None:
    rng = np.random.default_rng(3)
    sample = pd.DataFrame({"a": rng.integers(0, 1000, 4000), "b": rng.random(4000)})
    types = {"a": "bigint", "b": "double"}
    assert simulated_file_count(len(sample), 1000) == 4000 // 32
    files = file_of_rows(sample, Candidate("linear_by", ("a",), (1.0,)), types, 16, 1000)
    assert np.bincount(files).tolist() == [250] * 16
    stats = file_stats(sample, files, ["a", "b"], types)
    assert stats["row_count"].sum() == 4000
    # Sorted by a: the files' ranges of a do not overlap.
    assert (stats["a__max"].to_numpy()[:-1] <= stats["a__min"].to_numpy()[1:]).all()
    assert (stats["b__nans"] == 0).all()
    unclustered = file_stats(sample, file_of_rows(sample, Candidate(UNCLUSTERED), types, 16,
                                                  1000), ["a"], types)
    assert (unclustered["a__max"] - unclustered["a__min"]).min() > 900


def score(name: str, columns: tuple[str, ...], expected: float) -> Score:
    return Score(Candidate(name, columns), 100, (expected,), expected)


def test_the_simplest_candidate_near_the_best_is_chosen() -> None:
    best = score("hilbert_by", ("a", "b", "c"), 0.10)
    near = score("hilbert_by", ("a", "b"), 0.10 * (1 + SIMPLER_WINS_WITHIN))
    far = score("linear_by", ("a",), 0.20)
    choice = choose([best, near, far])
    assert choice.chosen is near
    assert "fewer columns" in choice.reason
    assert choose([best, far]).chosen is best


TYPES = {"city": "string", "brand": "int", "day": "date", "ts": "timestamp",
         "price": "decimal(10,2)"}


@pytest.mark.parametrize(("pushed", "expected"), [
    ("[IsNotNull(city), EqualTo(city,c3), GreaterThanOrEqual(brand,10)]",
     "`city` = 'c3' AND `brand` >= 10"),
    ("[Or(In(city, [c1,c2]),EqualTo(brand,3))]",
     "(`city` IN ('c1', 'c2')) OR (`brand` = 3)"),
    ("[And(LessThan(day,2024-01-05),GreaterThan(ts,2024-01-01 10:00:00.0))]",
     "(`day` < date'2024-01-05') AND (`ts` > timestamp'2024-01-01 10:00:00.0')"),
    ("[StringStartsWith(city,CI), EqualTo(price,1.50)]", "`city` LIKE 'CI%' AND `price` = 1.50"),
    # What cannot be said is left out: other columns, odd values, Not, an Or half unread.
    ("[EqualTo(other,1), EqualTo(brand,x1), Not(EqualTo(brand,1))]", None),
    ("[Or(EqualTo(brand,1),EqualTo(other,2)), EqualTo(city,it's)]", "`city` = 'it\\'s'"),
    ("[]", None),
    ("not a list", None),
])
def test_pushed_filters_of_a_scan_read_as_a_predicate(pushed: str,
                                                      expected: str | None) -> None:
    assert filters_predicate(pushed, TYPES) == expected


def test_a_logs_scans_of_the_table_are_found_in_plain_and_zstd_logs() -> None:
    import json

    import pyarrow as pa

    event = {"Event": "org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionStart",
             "time": 1764892800000,
             "sparkPlanInfo": {"nodeName": "HashAggregate", "metadata": {}, "children": [
                 {"nodeName": "Scan parquet spark_catalog.s.orders",
                  "metadata": {"PushedFilters": "[EqualTo(city,c3)]"}, "children": []},
                 {"nodeName": "Scan parquet spark_catalog.s.other",
                  "metadata": {"PushedFilters": "[EqualTo(city,c4)]"}, "children": []}]}}
    text = ("{\"Event\": \"SparkListenerJobStart\"}\n" + json.dumps(event) + "\n{\"Ev").encode()
    sink = pa.BufferOutputStream()
    with pa.CompressedOutputStream(sink, "zstd") as stream:
        stream.write(text)
    for path, content in (("events_1_app", text),
                          ("events_1_app.zstd.inprogress", sink.getvalue().to_pybytes())):
        assert scan_rows(path, content, frozenset({"s.orders"})) == \
            [("s.orders", "[EqualTo(city,c3)]", path, "1764892800000")]
    assert scan_rows("app-1.lz4", b"\x00", frozenset({"s.orders"}))[0][0] == UNREADABLE


def test_a_balanced_candidates_files_are_cut_within_its_groups() -> None:
    from dbt.adapters.zspark.core import value_ranks
    from dbt.adapters.zspark.layouts import LAYOUTS, ColumnSpec, group_shift

    rng = np.random.default_rng(5)
    sample = pd.DataFrame({"a": rng.integers(0, 50, 6000), "b": rng.integers(0, 900, 6000)})
    types = {"a": "bigint", "b": "bigint"}
    files = file_of_rows(sample, Candidate("balanced_by", ("a", "b"), (1.0, 1.0)), types, 16,
                         1000)
    assert 8 <= files.max() + 1 <= 32
    # The layout's own groups, as the candidate keyed them: no file holds two.
    layout = LAYOUTS["balanced_by"]
    values = [sample["a"], sample["b"]]
    specs = [ColumnSpec(c, "bigint", value_ranks.sample_boundaries(v, 1000))
             for c, v in zip(("a", "b"), values, strict=True)]
    tree = layout.fit(specs, values, 1000, 16, (1.0, 1.0))
    assert tree is not None
    assert not tree.curve
    keys = layout.key_function(specs, "boundary", 1000, tree, (1.0, 1.0))(*values).to_numpy()
    groups = pd.Series(keys.astype(np.int64) >> group_shift(1000)).groupby(files).nunique()
    assert (groups == 1).all()


def test_a_new_layout_replaces_the_tables_own_only_when_it_pays() -> None:
    from dbt.adapters.zspark.advice.decision import KEEP_WITHIN, layout_change

    # A rebuilt table: no rewrite cost, but the margin holds against estimates' noise.
    assert layout_change(0.40, 0.20, 100, 10, 0).change
    assert not layout_change(0.40, 0.40 * (1 - KEEP_WITHIN) + 1e-9, 100, 10, 0).change
    assert layout_change(0.40, 0.40 * (1 - KEEP_WITHIN) - 1e-9, 100, 10, 0).change
    # The same workload scored the same: never a change, whatever the counts.
    assert not layout_change(0.3, 0.3, 10_000, 1e9, 0).change
    # A rewrite must be paid for by the files the queries do not open.
    paid = layout_change(0.5, 0.1, 100, 10, 100)  # saves 400, costs 200
    assert paid.change
    assert (paid.saving, paid.cost) == (400.0, 200.0)
    assert not layout_change(0.5, 0.1, 100, 5, 100).change  # saves 200, costs 200
    assert "less than the 200" in layout_change(0.5, 0.1, 100, 5, 100).reason
    assert not layout_change(0.0, 0.0, 100, 5, 0).change


def test_an_iceberg_scans_filters_read_as_a_predicate() -> None:
    from dbt.adapters.zspark.advice.event_logs import ICEBERG_FILTERS, plan_scans

    scan = ("BatchScan spark_catalog.s.orders[city#1, day#2] IcebergScan(table=spark_catalog"
            ".s.orders, schemaId=0, snapshotId=1, branch=null, filters=city IS NOT NULL, "
            "city = 'c3, c4', brand >= 10, day >= 19727, ts > 300000000, runtimeFilters=, "
            "groupedBy=) RuntimeFilters: []")
    event = {"sparkPlanInfo": {"nodeName": "BatchScan spark_catalog.s.orders",
                               "simpleString": scan, "metadata": {}, "children": []}}
    [(table, filters)] = list(plan_scans(event))
    assert table == "spark_catalog.s.orders"
    assert filters.startswith(ICEBERG_FILTERS)
    # Iceberg writes dates as days and timestamps as microseconds since the epoch.
    assert filters_predicate(filters, TYPES) == (
        "city = 'c3, c4' AND brand >= 10 AND day >= CAST('2024-01-05' AS DATE) AND "
        "ts > CAST('1970-01-01 00:05:00+00:00' AS TIMESTAMP)")
    assert filters_predicate(ICEBERG_FILTERS + "(city IN ('a') OR other = 1)", TYPES) is None
