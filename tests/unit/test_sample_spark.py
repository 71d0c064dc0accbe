"""The build's sample pass against real Spark: a rebuild's pre-filter on the random draw
(``clustering.draw_cutoff``) takes the same rows as the full top-k whenever enough rows
draw under it, and all of those it has otherwise; the row count is of every row. A first
build's tasks keep a few of their smallest draws each (``clustering._task_bottoms``): the
same rows again while no task holds far more than its share, the smallest draws of them
(a uniform sample, smaller) when one does."""

from __future__ import annotations

import re
from typing import Any

import pytest

from dbt.adapters.zspark.layouts.keyed_plan import SAMPLE_HEADROOM, draw_cutoff, key_inputs
from dbt.adapters.zspark.layouts.planning import plan_clustering
from dbt.adapters.zspark.reach.base import session_settings
from dbt.adapters.zspark.reach.frames.clustering import (
    WINDOW_LIMIT_SETTING,
    _sample_and_count,
    _task_bottoms,
)

pyspark = pytest.importorskip("pyspark")

ROWS = 200_000
WANTED = 2_000


@pytest.fixture(scope="module")
def frame(spark: Any) -> Any:
    return spark.sql(f"select id as a, cast(pmod(hash(id), 97) as int) as b from range({ROWS})")


def drawn_order(frame: Any, cutoff: float = 1.0, per_task: int | None = None
                ) -> tuple[list[tuple[int, int]], int]:
    """The sample's rows as they come, smallest draw first, and the row count."""
    plan = plan_clustering("m", {"hilbert_by": ["a", "b"]}, {"a": "bigint", "b": "int"})
    assert plan is not None
    sample, rows, _ = _sample_and_count(frame, plan, key_inputs(plan), WANTED, cutoff,
                                        per_task=per_task)
    return list(zip(sample["a"].tolist(), sample["b"].tolist(), strict=True)), rows


def sampled(frame: Any, cutoff: float) -> tuple[list[tuple[int, int]], int]:
    rows, count = drawn_order(frame, cutoff)
    return sorted(rows), count


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


TASKS = 40


@pytest.fixture(scope="module")
def many_tasks(spark: Any) -> Any:
    """The same rows read by 40 tasks of 5,000 rows: a share of 50 sampled rows each."""
    return spark.sql(f"select id as a, cast(pmod(hash(id), 97) as int) as b "
                     f"from range(0, {ROWS}, 1, {TASKS})")


def test_tasks_keeping_a_few_smallest_draws_give_the_full_samples_rows(many_tasks: Any) -> None:
    full, rows = drawn_order(many_tasks)
    assert rows == ROWS
    assert len(full) == WANTED
    # Four times its share per task: the top-k's rows, in the same order.
    assert drawn_order(many_tasks, per_task=4 * WANTED // TASKS) == (full, ROWS)


def test_a_task_over_its_kept_rows_shrinks_the_sample_to_its_smallest_draws(
        many_tasks: Any) -> None:
    full, _ = drawn_order(many_tasks)
    per_task = WANTED // TASKS // 2  # half its share: every task's kept rows run out
    fewer, rows = drawn_order(many_tasks, per_task=per_task)
    assert rows == ROWS
    # Every row drawn under the least last kept draw: the full sample's first rows.
    assert fewer == full[:len(fewer)]
    assert TASKS * per_task // 2 < len(fewer) < TASKS * per_task


def test_each_task_ranks_its_own_rows_before_the_shuffle(spark: Any, many_tasks: Any) -> None:
    """Spark keeps each task's few rows in the task (a partial group limit below the
    exchange), not every row shuffled to be ranked."""
    drawn = many_tasks.selectExpr("a", "b", "rand(1) as __zspark_draw")
    kept = _task_bottoms(drawn, 5_000)
    with session_settings(spark, {WINDOW_LIMIT_SETTING: "5000"}):
        plan = str(kept._jdf.queryExecution().executedPlan().toString())
    below_shuffle = plan.split("Exchange hashpartitioning")[1]
    assert re.search(r"WindowGroupLimit .*, Partial", below_shuffle), plan
