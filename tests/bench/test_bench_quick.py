"""The benchmark's quick mode, end to end: generate, build every layout with dbt, query,
report. It checks the benchmark itself (its own invariants fail the run) and what a reader
of its report relies on: curve layouts skip files on every clustering column."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.bench.runs import BENCH_ROOT, BenchRun
from tests.bench.runs import bench_runs as bench_runs_in

#: Checks of the benchmarks, not of the adapter: `make test-bench` runs them (the suite
#: leaves them out, `-m "not bench"`, as its time goes to the adapter's own tests).
# A test waits up to 40 minutes for its benchmark (runs.BenchRun.wait).
pytestmark = [pytest.mark.bench, pytest.mark.timeout(2700)]


@pytest.fixture(scope="module")
def bench_runs(request: pytest.FixtureRequest) -> dict[str, BenchRun]:
    """The benchmarks tests/conftest.py started once the suite was collected."""
    return bench_runs_in(request.config.stash[BENCH_ROOT])


@pytest.fixture(scope="module")
def quick_run(bench_runs: dict[str, BenchRun]) -> tuple[Path, dict]:
    out = bench_runs["run"].wait()
    return out, json.loads(out.with_suffix(".json").read_text())


def test_every_layout_keeps_every_row_in_the_asked_file_count(quick_run: tuple[Path, dict]) -> None:
    _, raw = quick_run
    assert raw["problems"] == []
    for layout in ("random", "linear", "z_direct", "z", "hilbert"):
        assert raw["layouts"][layout]["rows"] == raw["config"]["rows"] == 50_000
        assert raw["layouts"][layout]["files"] == raw["config"]["files"] == 50


def test_curve_layouts_open_fewer_files_on_every_column(quick_run: tuple[Path, dict]) -> None:
    _, raw = quick_run
    for layout in ("z", "hilbert"):
        for column, query in raw["layouts"][layout]["queries"].items():
            assert query["same_result"], (layout, column)
            # Spark's own "number of files read" metric, plain scan vs zspark_scan.
            assert query["plain"]["files_read"] == 50
            # 3 columns over 50 files: a perfect layout opens ~50 ** (2/3) = 14 files.
            assert query["scan"]["files_read"] <= 30, (layout, column, query["scan"])
    # A linear sort cannot skip on its second column: the contrast the report exists for.
    assert raw["layouts"]["linear"]["queries"]["c_city"]["scan"]["files_read"] > 40


def test_report_has_tables_pictures_and_the_outside_reference(
        quick_run: tuple[Path, dict]) -> None:
    out, raw = quick_run
    text = out.read_text()
    for heading in ("## Files skipped (%)", "## Queries: plain scan vs `zspark_scan`",
                    "## Builds", "## What is not comparable"):
        assert heading in text
    assert raw["layouts"]["delta"]["files"] > 0
    # Spark's floor: the same rows, round-robin, cut into exactly the asked files.
    assert raw["floor"]["rows"] == 50_000
    assert raw["floor"]["write"]["files"] == 50
    assert "Spark's floor" in text
    # ... and keyed by Spark's own hash and by the Hilbert key in SQL, every round timed.
    for keyed in ("hash_sort", "curve_sort"):
        assert raw["floor"][keyed]["files"] > 0
        assert len(raw["floor"][keyed]["rounds"]) == 2
    assert "The same with the Hilbert key in SQL" in text
    # Every layout built twice, the second time in the JVM of the first, with its split.
    for layout in ("random", "linear", "z_direct", "z", "hilbert"):
        warm = raw["layouts"][layout]["build"]["warm"]
        assert warm["seconds"] > 0, layout
    assert set(raw["layouts"]["hilbert"]["build"]["warm"]["steps"]) == {
        "sample", "write", "index", "log"}
    assert "seconds, warm JVM" in text
    assert "rebuilt in a warm one" in text
    for picture in ("skip_ratios.png", "file_boxes.png", "build_times.png"):
        assert (out.parent / "img" / picture).stat().st_size > 10_000


def test_the_pipeline_scenario_keeps_rows_exact_under_every_policy(
        bench_runs: dict[str, BenchRun]) -> None:
    """A small pipeline (a base and one append per policy): the scenario's own row check
    passes after every run and the OPTIMIZE reference rewrites the table."""
    out = bench_runs["pipeline"].wait()
    raw = json.loads(out.read_text())["variants"]["uniform"]
    for policy in ("default", "never", "optimize"):
        steps = raw["steps"][policy]
        assert [s["rows"] for s in steps] == [10_000, 11_000]
        assert all(0 < share < 1 for s in steps for share in s["skip"].values())
    assert [s["rewritten_rows"] for s in raw["steps"]["optimize"][1:]] == [11_000]
    assert raw["steps"]["never"][-1]["rewritten_rows"] == 0
    assert raw["steps"]["default"][1]["files"] > raw["steps"]["never"][1]["files"]
    assert raw["totals"]["optimize"]["worst_gap_points"] == 0


def test_the_keys_benchmark_times_both_paths_on_equal_keys(
        bench_runs: dict[str, BenchRun]) -> None:
    raw = json.loads(bench_runs["keys"].wait().read_text())
    assert set(raw["layouts"]) == {"linear", "zorder", "hilbert"}
    for figures in raw["layouts"].values():
        assert figures["mismatches"] == 0
        assert figures["udf_keys_per_core_second"] > 0
        assert figures["sql_keys_per_core_second"] > 0


def test_the_balanced_benchmark_reports_expected_and_measured_reads_per_declared_query(
        bench_runs: dict[str, BenchRun]) -> None:
    """bench.balanced on a small uniform table: every layout's log gave the skip it
    expected, the expected files read per declared query match the measured ones, each
    weighted layout reads fewer files for its workload than its equal-weight twin, and
    the report draws the file boxes."""
    out = bench_runs["balanced"].wait()
    raw = json.loads(out.read_text())
    layouts = raw["variants"]["uniform"]
    assert set(layouts) == {"hilbert", "z", "z, weighted", "balanced", "balanced, weighted"}
    for name, figures in layouts.items():
        # Balanced groups take whole files: up to 40, a few fewer where groups round down.
        assert 34 <= figures["files"] <= 40, name
        for query, read in figures["files_read"].items():
            # The sample holds every row: the estimate is within a file or two.
            assert figures["expected_files_read"][query] == pytest.approx(read, abs=2.5), \
                (name, query)
    # Both query models, measured on the footers and expected by the balanced builds' logs.
    for name, figures in layouts.items():
        assert set(figures["skip_value_uniform"]) == set(figures["skip"]), name
    for name in ("balanced", "balanced, weighted"):
        expected = layouts[name]["expected_skip_value_uniform"]
        for column, skip in layouts[name]["skip_value_uniform"].items():
            assert expected[column] == pytest.approx(skip, abs=0.08), (name, column)
    # Independent columns: both balanced builds keep their trees (the curves choose none).
    assert layouts["balanced"]["chosen"].endswith(" groups")
    assert layouts["balanced, weighted"]["chosen"].endswith(" groups")
    assert layouts["hilbert"]["chosen"] == "-"
    for twin in ("z", "balanced"):
        assert layouts[f"{twin}, weighted"]["workload_files_read"] < \
            layouts[twin]["workload_files_read"]

    assert (out.parent / "img" / "balanced_boxes_uniform.png").stat().st_size > 10_000
    from bench.balanced import balanced_section

    lines = balanced_section(raw, out.parent)
    assert "## Balanced layout and column weights" in lines
    assert "![file boxes, uniform data](img/balanced_boxes_uniform.png)" in lines



def test_the_sort_series_builds_every_model_beside_spark_s_own_writes(
        bench_runs: dict[str, BenchRun]) -> None:
    """bench.sort_series on a small table: every model built with dbt, each in a process
    of its own (Parquet) or all in one run after the source (Delta, ``--one-process``),
    the clustered ones with their step split and their ratio to Spark's sorted write, and
    the report's section drawn from it."""
    from bench.sort_series import MODELS, series_section

    for name, table_format in (("sort_series", "parquet"),
                               ("sort_series_one_process", "delta")):
        raw = json.loads(bench_runs[name].wait().read_text())
        assert [(p["rows"], p["format"]) for p in raw["points"]] == [(20000, table_format)]
        assert raw["one_process"] == (name == "sort_series_one_process")
        for point in raw["points"]:
            assert set(point["builds"]) == set(MODELS)
            for model in ("bar_hilbert", "bar_zorder", "bar_balanced"):
                build = point["builds"][model]
                assert set(build["steps"]) == {"sample", "write", "index", "log"}, model
                assert build["over_sorted"] == pytest.approx(
                    build["seconds"] / point["builds"]["bar_sorted"]["seconds"])
        section = "\n".join(series_section(raw))
        assert "## Clustering at the cost of a sort" in section
        assert ("in a run that has started Spark" in section) == raw["one_process"]
        assert section.count(f"| {table_format} | 20,000 |") == len(MODELS)
