"""The benchmark's quick mode, end to end: generate, build every layout with dbt, query,
report. It checks the benchmark itself (its own invariants fail the run) and what a reader
of its report relies on: curve layouts skip files on every clustering column."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    root = tmp_path_factory.mktemp("bench_quick")
    out = root / "BENCHMARKS.md"
    env = {**os.environ, "ZSPARK_DRIVER_MEMORY": "2g", "PYSPARK_PYTHON": sys.executable}
    result = subprocess.run(
        [sys.executable, "-m", "bench.run", "--quick", "--session-dir", str(root / "session"),
         "--out", str(out)],
        cwd=REPO, env=env, capture_output=True, text=True, check=False, timeout=1800,
    )
    tail = "\n".join((result.stdout + result.stderr).splitlines()[-40:])
    assert result.returncode == 0, tail
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
    for picture in ("skip_ratios.png", "file_boxes.png", "build_times.png"):
        assert (out.parent / "img" / picture).stat().st_size > 10_000


def test_the_pipeline_scenario_keeps_rows_exact_under_every_policy(
        tmp_path: Path) -> None:
    """A small pipeline (a base and one append per policy): the scenario's own row check
    passes after every run and the OPTIMIZE reference rewrites the table."""
    out = tmp_path / "pipeline.json"
    env = {**os.environ, "ZSPARK_DRIVER_MEMORY": "2g", "PYSPARK_PYTHON": sys.executable}
    result = subprocess.run(
        [sys.executable, "-m", "bench.pipeline", "--rows", "20000", "--variants", "uniform",
         "--runs", "1", "--base-files", "20", "--session-dir", str(tmp_path / "session"),
         "--out", str(out)],
        cwd=REPO, env=env, capture_output=True, text=True, check=False, timeout=1800,
    )
    tail = "\n".join((result.stdout + result.stderr).splitlines()[-40:])
    assert result.returncode == 0, tail
    raw = json.loads(out.read_text())["variants"]["uniform"]
    for policy in ("default", "never", "optimize"):
        steps = raw["steps"][policy]
        assert [s["rows"] for s in steps] == [10_000, 11_000]
        assert all(0 < share < 1 for s in steps for share in s["skip"].values())
    assert [s["rewritten_rows"] for s in raw["steps"]["optimize"][1:]] == [11_000]
    assert raw["steps"]["never"][-1]["rewritten_rows"] == 0
    assert raw["steps"]["default"][1]["files"] > raw["steps"]["never"][1]["files"]
    assert raw["totals"]["optimize"]["worst_gap_points"] == 0


def test_the_keys_benchmark_times_both_paths_on_equal_keys(tmp_path: Path) -> None:
    out = tmp_path / "keys.json"
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    result = subprocess.run(
        [sys.executable, "-m", "bench.keys", "--rows", "5000", "--repeat", "1", "--out",
         str(out)], cwd=REPO, env=env, capture_output=True, text=True, check=False,
        timeout=900,
    )
    assert result.returncode == 0, "\n".join((result.stdout + result.stderr).splitlines()[-40:])
    raw = json.loads(out.read_text())
    assert set(raw["layouts"]) == {"linear", "zorder", "hilbert"}
    for figures in raw["layouts"].values():
        assert figures["mismatches"] == 0
        assert figures["udf_keys_per_core_second"] > 0
        assert figures["sql_keys_per_core_second"] > 0


def test_the_balanced_benchmark_reports_expected_and_measured_reads_per_declared_query(
        tmp_path: Path) -> None:
    """bench.balanced on a small uniform table: every layout's log gave the skip it
    expected, the expected files read per declared query match the measured ones, each
    weighted layout reads fewer files for its workload than its equal-weight twin, and
    the report draws the file boxes."""
    out = tmp_path / "balanced.json"
    env = {**os.environ, "ZSPARK_DRIVER_MEMORY": "2g", "PYSPARK_PYTHON": sys.executable}
    result = subprocess.run(
        [sys.executable, "-m", "bench.balanced", "--rows", "20000", "--files", "40",
         "--variants", "uniform", "--probes", "100", "--session-dir",
         str(tmp_path / "session"), "--out", str(out), "--img-dir", str(tmp_path / "img")],
        cwd=REPO, env=env, capture_output=True, text=True, check=False, timeout=1800,
    )
    assert result.returncode == 0, "\n".join((result.stdout + result.stderr).splitlines()[-40:])
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
    # Independent columns: both balanced builds keep their trees (the curves choose none).
    assert layouts["balanced"]["chosen"].endswith(" groups")
    assert layouts["balanced, weighted"]["chosen"].endswith(" groups")
    assert layouts["hilbert"]["chosen"] == "-"
    for twin in ("z", "balanced"):
        assert layouts[f"{twin}, weighted"]["workload_files_read"] < \
            layouts[twin]["workload_files_read"]

    assert (tmp_path / "img" / "balanced_boxes_uniform.png").stat().st_size > 10_000
    from bench.report import balanced_section

    lines = balanced_section(raw, tmp_path)
    assert "## Balanced layout and column weights" in lines
    assert "![file boxes, uniform data](img/balanced_boxes_uniform.png)" in lines

