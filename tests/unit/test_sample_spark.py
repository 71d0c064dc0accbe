"""The build's sample pass against real Spark: a rebuild's pre-filter on the random draw
(``clustering.draw_cutoff``) takes the same rows as the full top-k whenever enough rows
draw under it, and all of those it has otherwise; the row count is of every row. A first
build counts its input first only where Spark's plan is scans alone
(``keyed_plan.scan_nodes_only``)."""

from __future__ import annotations

import doctest
from typing import Any

import pytest

from dbt.adapters.zspark.layouts import keyed_plan
from dbt.adapters.zspark.layouts.keyed_plan import (
    SAMPLE_HEADROOM,
    draw_cutoff,
    key_inputs,
    scan_nodes_only,
)
from dbt.adapters.zspark.layouts.planning import plan_clustering
from dbt.adapters.zspark.reach.frames.clustering import _sample_and_count

pyspark = pytest.importorskip("pyspark")

ROWS = 200_000
WANTED = 2_000


@pytest.fixture(scope="module")
def frame(spark: Any) -> Any:
    return spark.sql(f"select id as a, cast(pmod(hash(id), 97) as int) as b from range({ROWS})")


def sampled(frame: Any, cutoff: float) -> tuple[list[tuple[int, int]], int]:
    plan = plan_clustering("m", {"hilbert_by": ["a", "b"]}, {"a": "bigint", "b": "int"})
    assert plan is not None
    sample, rows, _ = _sample_and_count(frame, plan, key_inputs(plan), WANTED, cutoff)
    return sorted(zip(sample["a"].tolist(), sample["b"].tolist(), strict=True)), rows


def test_the_cutoff_is_kept_loose_and_only_where_the_last_build_tells_the_size() -> None:
    assert draw_cutoff(WANTED, None) == 1.0
    assert draw_cutoff(WANTED, 0) == 1.0
    assert draw_cutoff(WANTED, WANTED) == 1.0
    assert draw_cutoff(WANTED, ROWS) == SAMPLE_HEADROOM * WANTED / ROWS


def test_a_rebuilds_pre_filtered_sample_is_the_full_samples_rows(frame: Any) -> None:
    full, rows = sampled(frame, 1.0)
    assert rows == ROWS
    assert len(full) == WANTED
    # The input as big as at its last build, or shrunk to a third of it: same sample.
    for last_rows in (ROWS, 3 * ROWS):
        assert sampled(frame, draw_cutoff(WANTED, last_rows)) == (full, ROWS)


def test_an_input_shrunk_past_the_headroom_gets_a_smaller_uniform_sample(frame: Any) -> None:
    full, _ = sampled(frame, 1.0)
    cutoff = draw_cutoff(WANTED, 10 * ROWS)  # the input lost 90% of its rows since
    fewer, rows = sampled(frame, cutoff)
    assert rows == ROWS
    # Every row drawn under the cut-off: about cutoff * ROWS of them, the smallest draws,
    # so each is in the full sample too.
    assert 0.7 * cutoff * ROWS < len(fewer) < WANTED
    assert set(fewer) <= set(full)


def test_the_sample_query_a_server_runs_pre_filters_the_same_way(spark: Any) -> None:
    """Over thrift the sample is one SQL query: with a cut-off it takes the same rows."""
    from dbt.adapters.zspark.reach.server.sql_build import sample_sql

    plan = plan_clustering("m", {"hilbert_by": ["a", "b"]}, {"a": "bigint", "b": "int"})
    assert plan is not None
    source = f"select id as a, cast(pmod(hash(id), 97) as int) as b from range({ROWS})"

    def rows(cutoff: float) -> list[tuple[int, int]]:
        return sorted((r[0], r[1]) for r in spark.sql(
            sample_sql(source, plan, WANTED, cutoff)).collect())

    full = rows(1.0)
    assert len(full) == WANTED
    assert rows(draw_cutoff(WANTED, ROWS)) == full
    assert set(rows(draw_cutoff(WANTED, 10 * ROWS))) <= set(full)


def test_the_plans_doctests() -> None:
    assert doctest.testmod(keyed_plan).failed == 0


@pytest.mark.parametrize(("sql", "scans"), [
    ("select id from range(10) where id > 3", True),
    ("select a.id from range(10) a join range(5) b on a.id = b.id", False),
    ("select id % 3, count(1) from range(10) group by 1", False),
    ("select id, row_number() over (order by id) from range(10)", False),
    ("select id from range(10) where id in (select max(id) from range(4))", False),
])
def test_a_count_reads_scans_alone_only_where_the_plan_is_scans(
        spark: Any, sql: str, scans: bool) -> None:
    optimized = spark.sql(sql)._jdf.queryExecution().optimizedPlan()
    assert scan_nodes_only(str(optimized.treeString())) is scans


def test_a_parquet_tables_scan_is_scans_alone(spark: Any, tmp_path: Any) -> None:
    spark.range(10).selectExpr("id", "id % 3 as k").write.parquet(str(tmp_path / "t"))
    frame = spark.read.parquet(str(tmp_path / "t")).where("k = 1").select("id")
    assert scan_nodes_only(str(frame._jdf.queryExecution().optimizedPlan().treeString()))
