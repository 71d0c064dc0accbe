"""The re-clustering policy, on runs described by numbers alone."""

from __future__ import annotations

import doctest
import math

from hypothesis import given, settings
from hypothesis import strategies as st

from dbt.adapters.zspark.layouts import layout_state
from dbt.adapters.zspark.layouts.layout_state import StoredLayout, clustered_writes_after, write_id
from dbt.adapters.zspark.versions import rewrite
from dbt.adapters.zspark.versions.recluster import (
    APPEND,
    FULL,
    MAX_FILES_FACTOR,
    MERGE,
    NOTHING,
    ReclusterPlan,
    Run,
    deferred,
    new_run,
    plan_increment,
    plan_on_demand,
    rebuild_files,
)
from dbt.adapters.zspark.versions.rewrite import (
    carried_properties,
    file_partition,
    in_partitions,
    table_runs,
)


def run(name: str, rows: int, files: int, at: int, clustered: bool = False) -> Run:
    return Run(name, tuple(f"{name}/{i}" for i in range(files)), rows, at, clustered)


BASE = run("base", 1_000_000, 500, 0, clustered=True)  # 2000 rows per file


def test_new_rows_become_pieces_an_eighth_of_a_file_at_most_a_quarter_of_the_files() -> None:
    plan = plan_increment([BASE], 10_000, 2000)
    assert (plan.action, plan.pieces, plan.rewritten_rows) == (APPEND, 40, 0)
    # 100,000 rows would be 400 pieces: a quarter of the 550 files of a rebuild instead.
    plan = plan_increment([BASE], 100_000, 2000)
    assert (plan.action, plan.pieces, plan.rewritten_rows) == (APPEND, 138, 0)


def test_the_fourth_run_of_a_tier_merges_the_three_before_it() -> None:
    three = [run(n, 10_000, 40, i + 1) for i, n in enumerate("abc")]
    assert plan_increment([BASE, *three[:2]], 10_000, 2000).action == APPEND
    plan = plan_increment([BASE, *three], 10_000, 2000)
    assert plan.action == MERGE
    assert set(plan.rewritten_paths) == {f"{r}/{i}" for r in "abc" for i in range(40)}
    assert (plan.rewritten_rows, plan.pieces) == (30_000, 130)
    # A larger, older run is of another tier: it stays.
    plan = plan_increment([BASE, run("big", 160_000, 138, 0), *three], 10_000, 2000)
    assert (plan.action, plan.rewritten_rows) == (MERGE, 30_000)


def test_pending_runs_merge_with_the_new_rows_when_the_pieces_do_not_fit() -> None:
    runs = [BASE, run("a", 100_000, 400, 1), run("b", 100_000, 400, 2)]
    plan = plan_increment(runs, 100_000, 2000)
    # 1300 files allowed at 1.3 M rows: 1300 + 163 do not fit; the base stays.
    assert plan.action == MERGE
    assert set(plan.rewritten_paths) == {f"{r}/{i}" for r in "ab" for i in range(400)}
    assert plan.rewritten_rows == 200_000
    assert plan.pieces == 163


def replay(rows: int, files: int, appends: list[int]) -> list[tuple[str, int]]:
    """The policy's action and rows written at each of ``appends``, on a table built of
    ``rows`` rows in ``files`` files."""
    per_file = rows // files
    runs = [run("base", rows, files, 0, clustered=True)]
    steps = []
    for at, new in enumerate(appends, start=1):
        plan = plan_increment(runs, new, per_file)
        written = new + plan.rewritten_rows
        if plan.action == FULL:
            runs = [run(f"full{at}", written, plan.pieces, at, clustered=True)]
        else:
            gone = set(plan.rewritten_paths)
            runs = [r for r in runs if not set(r.paths) <= gone]
            runs.append(run(f"r{at}", written, plan.pieces, at))
        steps.append((plan.action, written))
    return steps


def test_steady_appends_merge_every_fourth_run_not_every_run() -> None:
    """Appends of 5% to 100 M rows in 10,000 files: three appends write only their rows,
    the fourth merges the three before it, and so on until half the base is pending."""
    steps = replay(100_000_000, 10_000, [5_000_000] * 10)
    assert [action for action, _ in steps] == [APPEND] * 3 + [MERGE] + [APPEND] * 3 + [
        MERGE, APPEND, FULL]
    assert [rows for _, rows in steps[:8]] == [5_000_000] * 3 + [20_000_000] + [
        5_000_000] * 3 + [20_000_000]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(1_000, 60_000), min_size=1, max_size=40))
def test_each_pending_row_is_rewritten_about_once_per_fourfold_growth(
        appends: list[int]) -> None:
    """Between full re-clusterings, the rows merges rewrite stay within the new rows times
    the tiers they climb: no cascade rewriting every pending row on every run."""
    steps = replay(1_000_000, 500, appends)
    since_full = 0
    rewritten = 0
    for (action, written), new in zip(steps, appends, strict=True):
        if action == FULL:
            since_full = rewritten = 0
            continue
        since_full += new
        rewritten += written - new
        tiers = max(1, math.ceil(math.log(max(since_full / 1_000, 1), 4)) + 1)
        assert rewritten <= since_full * tiers


def test_half_the_base_pending_means_a_full_reclustering() -> None:
    runs = [BASE, run("a", 450_000, 900, 1)]
    plan = plan_increment(runs, 50_000, 2000)
    assert (plan.action, plan.pieces, plan.rewritten_rows) == (FULL, 750, 1_450_000)
    assert len(plan.rewritten_paths) == 1400


def test_turned_off_new_rows_go_into_files_of_the_tables_size() -> None:
    plan = plan_increment([BASE, run("a", 450_000, 900, 1)], 100_000, 2000, automatic=False)
    assert (plan.action, plan.pieces, plan.rewritten_rows) == (APPEND, 50, 0)


def test_on_demand_nothing_to_do_rewrites_nothing() -> None:
    assert plan_on_demand([BASE], 2000, full=False).action == NOTHING
    assert plan_on_demand([BASE], 2000, full=True).action == NOTHING
    assert plan_on_demand([BASE, run("a", 10, 1, 1)], 2000, full=False).action == NOTHING
    merged = plan_on_demand([BASE, run("a", 10, 1, 1), run("b", 10, 1, 2)], 2000, full=False)
    assert (merged.action, merged.rewritten_rows) == (MERGE, 20)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 200_000), st.integers(1, 400)), max_size=8),
       st.integers(1, 300_000), st.integers(100, 5000))
def test_the_table_never_exceeds_twice_a_rebuilds_files(pending: list[tuple[int, int]],
                                                         new_rows: int,
                                                         rows_per_file: int) -> None:
    base = run("base", 1_000_000, rebuild_files(1_000_000, rows_per_file), 0, clustered=True)
    runs = [base, *(run(f"r{i}", rows, files, i + 1) for i, (rows, files) in
                    enumerate(pending))]
    total = sum(r.rows for r in runs) + new_rows
    plan = plan_increment(runs, new_rows, rows_per_file)
    rewritten = set(plan.rewritten_paths)
    kept_files = sum(1 for r in runs for p in r.paths if p not in rewritten)
    assert plan.rewritten_rows == sum(r.rows for r in runs if set(r.paths) <= rewritten)
    if plan.action == FULL:
        assert kept_files == 0
        assert plan.pieces == rebuild_files(total, rows_per_file)
    else:
        budget = MAX_FILES_FACTOR * rebuild_files(total, rows_per_file)
        assert kept_files + plan.pieces <= max(budget, base.files + 1)
        assert plan.pieces <= -(-(new_rows + plan.rewritten_rows) // max(1, rows_per_file // 8))


def test_runs_are_told_apart_by_the_write_that_made_them() -> None:
    job = "0a4c1cae-75fa-4216-a18f-9f8860cd2e4d"
    paths = [f"file:/t/part-0000{i}-{job}-c000.snappy.parquet" for i in range(3)]
    assert write_id(paths[0]) == job
    assert write_id("file:/t/k=1/part-00001-" + job + ".c000.snappy.parquet") == job
    assert write_id("file:/t/data.parquet") is None
    runs = table_runs([(p, 10, 5 + i) for i, p in enumerate(paths)]
                      + [("file:/t/data.parquet", 7, 1)], {job})
    by_write = {r.write: r for r in runs}
    assert (by_write[job].rows, by_write[job].files, by_write[job].clustered) == (30, 3, True)
    assert by_write["file:/t/data.parquet"].clustered is False


def test_a_full_reclustering_carries_user_properties_and_replaces_the_layout() -> None:
    old = {"zspark.layout.parts": "2", "zspark.layout.0": "a", "zspark.layout.1": "b",
           "zspark.layout.clustered_writes": "w1", "owner": "team", "option.x": "1",
           "transient_lastDdlTime": "1"}
    new = {"zspark.layout.parts": "1", "zspark.layout.0": "c"}
    carried = carried_properties(old, new, {"zspark.layout.clustered_writes": "w2"})
    assert carried == {"owner": "team", "zspark.layout.parts": "1", "zspark.layout.0": "c",
                       "zspark.layout.clustered_writes": "w2"}
    assert StoredLayout.from_properties({}) is None


def test_the_stored_layout_survives_the_round_trip_and_never_spells_a_secret() -> None:
    import numpy as np

    from dbt.adapters.zspark.layouts import LAYOUTS
    from dbt.adapters.zspark.layouts.planning import plan_clustering

    plan = plan_clustering("m", {"hilbert_by": ["s", "d", "x"]},
                           {"s": "string", "d": "date", "x": "double"})
    assert plan is not None
    rng = np.random.default_rng(3)
    words = np.array(sorted({"".join(rng.choice(list("tokensecrTOKEN"), 8)) for _ in range(900)}))
    boundaries = (words, np.arange(0, 900, dtype=np.int64).view("M8[D]"),
                  np.sort(rng.normal(size=900)))
    layout = StoredLayout.of_build(plan, boundaries, rows=10, files=2, rows_per_file=5)
    properties = layout.to_properties()
    assert len(properties) > 3  # several parts
    secret = ("token", "secret", "password", "access")
    assert not any(w in v.lower() for k, v in properties.items() if k != "zspark.layout.summary"
                   for w in secret)
    again = StoredLayout.from_properties(properties)
    assert again is not None
    assert again.describe() == layout.describe()
    for a, b in zip(again.boundaries, layout.boundaries, strict=True):
        assert a is not None
        assert b is not None
        assert a.dtype == b.dtype
        assert a.tolist() == b.tolist()
    assert LAYOUTS[again.config_key].name == "hilbert"


def test_rows_where_the_table_has_none_are_written_as_their_clustered_base() -> None:
    for automatic in (True, False):
        plan = plan_increment([], 30_000, 2000, automatic)
        assert (plan.action, plan.pieces, plan.clustered_write) == (APPEND, 15, True)
    assert not plan_increment([BASE], 30_000, 2000).clustered_write


def test_a_file_partition_is_read_from_its_doubly_escaped_directories() -> None:
    # As Spark lists it: Spark's escaping of 'a:b%41 c=é/x' inside the URI's escaping.
    path = ("file:/w/t/p=a%253Ab%252541%20c%253D\u00e9%252Fx/d=2020-01-01%2010%253A11%253A12/"
            "part-00000-3860d856-58e6-413f-910a-b65589e80601.c000.snappy.parquet")
    assert file_partition(path, ["p", "d"]) == ("a:b%41 c=\u00e9/x", "2020-01-01 10:11:12")
    null = "file:/w/t/p=__HIVE_DEFAULT_PARTITION__/d=7/part-0.parquet"
    assert file_partition(null, ["p", "d"]) == (None, "7")
    rows = [(path, 5, 1), (null, 6, 2)]
    assert in_partitions(rows, ["p", "d"], {(None, "7")}) == [(null, 6, 2)]


def test_clustered_writes_keep_those_with_files_left_and_add_the_new_ones() -> None:
    def named(job: int) -> str:
        return f"file:/t/part-00000-{job:08d}-0000-0000-0000-000000000000.c000.parquet"

    def ids(*jobs: int) -> str:
        return ",".join(write_id(named(j)) or "" for j in jobs)

    properties = {"zspark.layout.clustered_writes": ids(1, 2)}
    # Write 1 has no file left; write 3 is pending; write 4 was just clustered.
    after = clustered_writes_after(properties, [named(2), named(3)], [named(4)])
    assert after == {"zspark.layout.clustered_writes": ids(2, 4)}


def test_a_deferred_recluster_rewrites_nothing_and_says_why() -> None:
    """Over a server without Python a Delta or Iceberg re-clustering waits: the policy's
    merge or full rewrite becomes the new rows' own run, nothing rewritten."""
    full = ReclusterPlan(FULL, ("a", "b"), 900, 4, "table mostly pending")
    waits = deferred(full, "needs a session")
    assert (waits.action, waits.rewritten_paths, waits.rewritten_rows, waits.pieces) == \
        (APPEND, (), 0, 4)
    assert not waits.rewrites
    assert waits.reason == "full of 900 rows deferred: needs a session"
    own_run = new_run(100, 50, "own run")
    assert deferred(own_run, "needs a session") is own_run


def test_the_examples_in_the_docstrings_hold() -> None:
    assert doctest.testmod(rewrite).failed == 0
    assert doctest.testmod(layout_state).failed == 0


def test_a_new_layout_set_over_an_old_one_names_the_parts_it_leaves() -> None:
    before = {"zspark.layout.parts": "3", "zspark.layout.0": "a", "zspark.layout.1": "b",
              "zspark.layout.2": "c", "zspark.layout.summary": "z-order",
              "zspark.layout.clustered_writes": "w", "owner": "me"}
    new = {"zspark.layout.parts": "1", "zspark.layout.0": "n", "zspark.layout.summary": "h"}
    assert rewrite.stale_layout_keys(before, new) == ["zspark.layout.1", "zspark.layout.2"]
    assert rewrite.stale_layout_keys(before, None) == []


def test_a_bad_recluster_runs_config_is_refused_by_name() -> None:
    import pytest
    from dbt_common.exceptions import DbtRuntimeError

    from dbt.adapters.zspark.services.increments import recluster_runs

    assert recluster_runs("m", {}) == 4
    assert recluster_runs("m", {"zspark_recluster_runs": 2}) == 2
    for bad in (1, 0, "4", 2.5, True):
        with pytest.raises(DbtRuntimeError, match=r"zspark: m: zspark_recluster_runs must be "
                                                  r"a whole number of runs, 2 or more"):
            recluster_runs("m", {"zspark_recluster_runs": bad})


def test_an_append_expects_as_many_rows_as_the_last_run() -> None:
    """The sample of an append drops rows early by the newest pending run's size (the
    base's rows say nothing of an append's); with no pending run it samples all rows."""
    from dbt.adapters.zspark.services import increments
    from dbt.adapters.zspark.services.increments import last_run_rows

    assert doctest.testmod(increments).failed == 0
    runs = [Run("base", ("a", "b"), 100, 1, True), Run("w2", ("c",), 5, 3, False),
            Run("w1", ("d",), 9, 2, False)]
    assert last_run_rows(runs) == 5
    assert last_run_rows(runs[:1]) is None
    assert last_run_rows(None) is None


def test_only_an_append_of_its_own_run_lands_as_written() -> None:
    """``zspark_sort_appends: false`` (the default) lands a run of pieces unsorted; merges, full
    re-clusterings and a partition's clustered base stay sorted; a value that is not
    true or false is refused naming the model, the config and what is allowed."""
    import pytest
    from dbt_common.exceptions import DbtRuntimeError

    from dbt.adapters.zspark.services.increments import landed_as_written, sort_appends

    runs = [Run("base", ("a", "b"), 8000, 1, True), Run("w1", ("c",), 400, 2, False)]
    append = plan_increment(runs, 400, 1000)
    assert append.action == "append"
    assert landed_as_written(append).as_written
    for kept in (plan_increment(runs, 4000, 1000),  # full
                 plan_increment([], 400, 1000)):  # the first rows where they land
        assert not landed_as_written(kept).as_written
    merge = plan_increment([*runs, Run("w2", ("d",), 400, 3, False),
                            Run("w3", ("e",), 400, 4, False)], 400, 1000)
    assert merge.action == "merge"
    assert not landed_as_written(merge).as_written
    assert not sort_appends("m", {})  # the default: appends land as written
    assert sort_appends("m", {"zspark_sort_appends": True})
    with pytest.raises(DbtRuntimeError, match=r"Model 'm': config 'zspark_sort_appends' is "
                                              r"'no'. Allowed: false .* or true"):
        sort_appends("m", {"zspark_sort_appends": "no"})
