"""A seed's CSV read without agate's cell-by-cell casts gives what dbt's own reader gives
(``dbt_common.clients.agate_helper.from_csv``): the same column types, decimal places and,
per cell, the same value (property-tested over cells of every kind dbt's type tester
tells apart, and the unusual ones it still takes)."""

from __future__ import annotations

import csv
import datetime
import decimal
from pathlib import Path

import agate
import pytest
from dbt_common.clients.agate_helper import from_csv
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dbt.adapters.zspark.core.seed_csv import TYPE_NAMES, as_cast_text, read_seed_csv

#: Cells of every kind: plain and unusual numbers, days and times (real or not, with or
#: without zeros, zones, fractions), flags, nulls, text with quotes, commas, line breaks
#: and whitespace Python strips but ASCII does not.
KINDS = {
    "int": st.integers(-10**12, 10**12).map(str),
    "decimal": st.decimals(-10**6, 10**6, places=3, allow_nan=False).map(str),
    "odd_number": st.sampled_from(["1,000", "$5", "5%", "-$3.5", "NaN", "inf", "-Infinity",
                                   "--5", "1e3", "1_000", "0.0", "2.50", " 7 ", "+4",
                                   "\u00a012", "12\u2003", "\u0661\u0662", "1.", ".5"]),
    "date": st.dates(datetime.date(1900, 1, 1), datetime.date(2100, 1, 1)).map(str),
    "odd_date": st.sampled_from(["2026-1-2", "2026-02-30", "2026-02-29", "2024-02-29",
                                 "2026-13-01", "0999-01-01", " 2026-01-02 ", "2026-01-2"]),
    "datetime": st.datetimes(datetime.datetime(1900, 1, 1), datetime.datetime(2100, 1, 1))
                  .map(lambda d: d.replace(microsecond=0).isoformat(sep=" ")),
    "iso": st.datetimes(datetime.datetime(1900, 1, 1), datetime.datetime(2100, 1, 1))
             .map(lambda d: d.isoformat()),
    "odd_time": st.sampled_from(["2026-01-02 24:00:00", "2026-01-02 03:04:60",
                                 "2026-01-02 3:04:05", "2026-01-02T03:04:05Z",
                                 "2026-01-02T03:04:05+02:00", "2026-01-02T03:04",
                                 "20260102T030405", "2026-01-02T03:04:05.1234567",
                                 "2026-01-02 03:04:05.5", "2026-W01-1T01:02:03"]),
    "flag": st.sampled_from(["true", "false", "True", "FALSE", " true", "t,rue", ",",
                             "yes", "\u00a0false"]),
    "null": st.sampled_from(["", "null", "NULL", " Null ", "\u00a0", " "]),
    "text": st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=12),
}


@st.composite
def seeds(draw: st.DrawFn) -> tuple[list[str], list[list[str]], list[str]]:
    width = draw(st.integers(1, 4))
    names = [f"c{i}" for i in range(width)]
    # Each column mostly of one or two kinds, as a seed's columns are.
    kinds = [draw(st.lists(st.sampled_from(sorted(KINDS)), min_size=1, max_size=2))
             for _ in names]
    rows = draw(st.integers(1, 12))
    body = [[draw(st.one_of(*(KINDS[k] for k in kinds[c]))) for c in range(width)]
            for _ in range(rows)]
    forced = draw(st.lists(st.sampled_from(names), unique=True, max_size=1))
    return names, body, forced


def _write(path: Path, names: list[str], body: list[list[str]]) -> None:
    with path.open("w", encoding="utf-8", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(names)
        writer.writerows(body)


def _type_name(agate_type: object) -> str:
    return TYPE_NAMES[[type(t).__name__ for t in _tester_types()].index(
        type(agate_type).__name__)]


def _tester_types() -> list[object]:
    from dbt_common.clients.agate_helper import build_type_tester

    return list(build_type_tester(())._possible_types)


def _value(text: str | None, type_name: str) -> object:
    """The value Spark's cast of ``text`` stands for, in agate's terms."""
    if text is None:
        return None
    if type_name == "Number":
        number = decimal.Decimal(text)
        return "NaN" if number.is_nan() else number  # NaN equals nothing
    if type_name == "Date":
        return datetime.date.fromisoformat(text)
    if type_name in ("DateTime", "ISODateTime"):
        return datetime.datetime.fromisoformat(text.replace(" ", "T"))
    if type_name == "Boolean":
        return text == "true"
    return text


def _agate_value(value: object, type_name: str) -> object:
    text = as_cast_text(value)
    return None if text is None else _value(text, type_name)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seeds())
def test_a_seed_reads_as_dbts_reader_reads_it(
        tmp_path_factory: pytest.TempPathFactory,
        seed: tuple[list[str], list[list[str]], list[str]]) -> None:
    names, body, forced = seed
    path = tmp_path_factory.mktemp("seed") / "seed.csv"
    _write(path, names, body)
    expected = from_csv(str(path), text_columns=forced)
    found = read_seed_csv(str(path), ",", forced)
    assert found is not None
    assert found.rows == len(expected.rows)
    assert found.names == list(expected.column_names)
    for i, column_type in enumerate(expected.column_types):
        type_name = _type_name(column_type)
        assert found.types[i] == type_name, (names[i], [row[i] for row in body])
        if type_name == "Number":
            assert found.fractional[i] == bool(expected.aggregate(agate.MaxPrecision(i)))
        got = [_value(t, type_name) for t in found.texts[i].to_pylist()]
        assert got == [_agate_value(row[i], type_name) for row in expected.rows]


def test_a_csv_dbt_would_mend_or_refuse_is_left_to_dbts_reader(tmp_path: Path) -> None:
    for text in ("a,b\n1\n", "a,b\n1,2,3\n", "a,a\n1,2\n", "a,\n1,2\n", "a,b\n",
                 "a,b\n1,2\n\n3,4\n"):
        path = tmp_path / "seed.csv"
        path.write_text(text)
        assert read_seed_csv(str(path)) is None, text


def test_a_bom_a_delimiter_and_quoted_line_breaks_read_as_dbt_reads_them(
        tmp_path: Path) -> None:
    path = tmp_path / "seed.csv"
    path.write_text('\ufeffid;note;day\n1;"two\nlines; ""quoted""";2026-01-02\n2;;\n',
                    encoding="utf-8")
    found = read_seed_csv(str(path), ";")
    assert found is not None
    assert found.names == ["id", "note", "day"]
    assert found.types == ["Number", "Text", "Date"]
    assert found.texts[1].to_pylist() == ['two\nlines; "quoted"', None]
    assert found.texts[2].to_pylist() == ["2026-01-02", None]
