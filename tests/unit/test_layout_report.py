"""The layout report's picture and table, from files' bounds alone (no Spark)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dbt.adapters.zspark.skipping.health import ColumnHealth, LayoutHealth, point_depth
from dbt.adapters.zspark.skipping.layout_report import (
    ReportAxis,
    _scale,
    depth_map,
    draw_layout,
    health_table,
    opened_files,
    probe_value,
)


def _bounds(pairs: list[tuple[object, object]]) -> pd.DataFrame:
    return pd.DataFrame({"min": [p[0] for p in pairs], "max": [p[1] for p in pairs]},
                        dtype=object)


ranges = st.tuples(st.integers(0, 50), st.integers(0, 20)).map(lambda t: (t[0], t[0] + t[1]))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(ranges, st.just((None, None))), min_size=1, max_size=30),
       st.integers(-5, 75))
def test_the_files_a_probe_opens_are_those_the_health_figures_count(
        pairs: list[tuple[object, object]], value: int) -> None:
    bounds = _bounds(pairs)
    opened = opened_files(bounds, value)
    assert int(opened.sum()) == point_depth(bounds, pd.Series([value]))
    for (low, high), is_open in zip(pairs, opened, strict=True):
        assert is_open == (low is None or low <= value <= high)  # type: ignore[operator]


def test_the_depth_map_counts_the_boxes_holding_each_point() -> None:
    # Four files, one per quadrant of [0, 10] x [0, 10], and one spanning the middle.
    x = ReportAxis("x", "int", _bounds([(0, 4), (6, 10), (0, 4), (6, 10), (3, 7)]))
    y = ReportAxis("y", "int", _bounds([(0, 4), (0, 4), (6, 10), (6, 10), (3, 7)]))
    counts, extent = depth_map(_scale(x), _scale(y), grid=11)
    assert extent == (-0.5, 10.5, -0.5, 10.5)  # each point the centre of its cell
    assert counts[0, 0] == 1  # (0, 0): the first quadrant only
    assert counts[5, 5] == 1  # (5, 5): the middle file only
    assert counts[3, 3] == 2  # (3, 3): the first quadrant and the middle file
    assert counts[5, 0] == 0  # (0, 5): between the quadrants, outside the middle file
    assert counts[10, 10] == 1


def test_strings_are_drawn_in_the_order_of_their_values_and_labelled_with_them() -> None:
    axis = ReportAxis("city", "string", _bounds([("Berlin", "Lima"), ("Lima", "Rome"),
                                                 (None, None)]), probe="Oslo")
    scale = _scale(axis)
    # Berlin < Lima < Oslo < Rome: four positions; the file without bounds spans them.
    assert list(scale.lows) == [0.0, 1.0, 0.0]
    assert list(scale.highs) == [1.0, 3.0, 3.0]
    assert scale.probe == 2.0
    assert [scale.label(p) for p in (0, 1, 2, 3, 1.5)] == ["Berlin", "Lima", "Oslo", "Rome",
                                                          ""]


def test_a_discrete_axis_is_probed_at_each_of_its_values() -> None:
    """No point of the depth map falls between two neighbouring values (strings in their
    order, integers), where no bound lies."""
    x = ReportAxis("city", "string", _bounds([("a", "c"), ("d", "e")]), probe="c")
    y = ReportAxis("n", "int", _bounds([(0, 9), (0, 9)]))
    counts, extent = depth_map(_scale(x), _scale(y), grid=50)
    assert counts.shape == (10, 4)  # n = 0 .. 9; a, c, d, e
    assert list(counts[0]) == [1, 1, 1, 1]
    assert extent[:2] == (-0.5, 3.5)


def test_dates_and_timestamps_are_drawn_on_their_values() -> None:
    days = ReportAxis("day", "date", _bounds([(dt.date(2024, 1, 1), dt.date(2024, 1, 31))]))
    scale = _scale(days)
    assert scale.highs[0] - scale.lows[0] == 30
    assert scale.label(scale.lows[0]) == "2024-01-01"
    micros = int(pd.Timestamp("2024-03-01 12:30").value // 1000)
    at = ReportAxis("at", "timestamp", _bounds([(micros, micros + 60_000_000)]))
    assert _scale(at).label(float(micros)) == "2024-03-01 12:30"


def test_the_middle_sampled_value_is_the_probe() -> None:
    assert probe_value(pd.Series([5, None, 1, 9, 3], dtype=object)) == 5
    assert probe_value(pd.Series([None], dtype=object)) is None


@pytest.mark.parametrize("files", [6, 1000])
def test_the_picture_is_written_with_what_each_sample_query_opens(
        tmp_path: Path, files: int) -> None:
    rng = np.random.default_rng(files)
    starts = np.sort(rng.integers(0, 10_000, files))
    x = _bounds([(int(s), int(s) + int(rng.integers(0, 300))) for s in starts])
    y = _bounds([(f"c{int(v):04d}", f"c{int(v) + 40:04d}")
                 for v in rng.integers(0, 900, files)])
    x.iloc[0] = [None, None]  # a file without statistics: opened by every query
    picture = tmp_path / "layout.png"
    results = draw_layout(picture, ReportAxis("id", "bigint", x, probe=5000),
                          ReportAxis("city", "string", y, probe="c0450"),
                          [i % 5 == 0 for i in range(files)], f"t: {files} files",
                          "id: 90.0% of files skipped per point query")
    assert picture.read_bytes().startswith(b"\x89PNG")
    assert [r.column for r in results] == ["id", "city"]
    assert results[0].opened == point_depth(x, pd.Series([5000]))
    assert results[1].opened == point_depth(y, pd.Series(["c0450"]))
    assert results[0].describe().startswith(f"id = 5000 opens {results[0].opened} of "
                                            f"{files} files (")
    assert results[1].describe().startswith("city = 'c0450' opens ")


def test_the_table_gives_shares_as_the_build_log_does() -> None:
    column = ColumnHealth("a", files=64, depth=27.4, rebuild_depth=20.0,
                          average_overlaps=30.1, average_depth=28.0, value_depth=20.5)
    health = LayoutHealth((column,), files=64, rows=1000, pending_rows=130)
    table = health_table(health)
    assert "57.2%" in table
    assert "57.2% skipped" in health.describe()
    assert table.splitlines()[-1] == ("64 files, 1000 rows; 13.0% of rows written since the "
                                      "last full clustering")
