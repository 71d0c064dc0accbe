"""A seed's CSV read as dbt reads it, without agate's cell-by-cell casts.

dbt reads a seed into an agate table: Python's CSV reader, then for every column the
first of Integer, Number, Date, DateTime, ISODateTime, Boolean and Text that every value
casts to (``dbt_common.clients.agate_helper.build_type_tester``), each of the million
cells of a big seed tried against each type in Python: most of the 39 s a million-row
seed took (``python -m bench.seeds``). Here the same reader gives the columns, and the
types are decided column-wise on Arrow arrays (RE2): each value is surely of a type,
surely not, or unsure; only the distinct unsure values (rare: ``1,000``, ``$5``,
``NaN``, a date without its zeros, a time zone, unusual whitespace) are cast by agate's
own types. The outcome is dbt's: the same column types, and per cell the text Spark
casts to the value dbt's loader would insert. A CSV whose shape agate would mend or
refuse (a short or long row, a blank or repeated column name, no rows) is left to dbt's
own reader.
"""

from __future__ import annotations

import csv
import datetime
import decimal
import io
import itertools
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from dbt_common.clients.agate_helper import BOM, build_type_tester

#: dbt's inference order of the types (``build_type_tester``), Text last.
TYPE_NAMES = ("Integer", "Number", "Date", "DateTime", "ISODateTime", "Boolean", "Text")
#: Rows of a seed kept as the CSV has them, for ``dbt seed --show``.
PREVIEW_ROWS = 10
#: What every type but Boolean takes for null, after a strip: ``null`` or nothing.
NULL_TEXTS = ("null", "")
#: Values of printable ASCII (and tabs, line breaks) only: their strip is ASCII's.
_PLAIN = r"^[\x20-\x7e\t\n\r]*$"
_ASCII_SPACE = " \t\n\r"

_DAY = r"[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])"
_TIME = r"([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]"
#: Per type: a value surely of it (after an ASCII strip, on a plain value), and an ASCII
#: character whose presence anywhere surely refutes it (no strip or cast removes it).
_SURE: dict[str, str] = {
    "Number": r"^-?[0-9]+(\.[0-9]+)?$",
    "Date": rf"^{_DAY}$",
    "DateTime": rf"^{_DAY} {_TIME}$",
    "ISODateTime": rf"^{_DAY}T{_TIME}(\.[0-9]{{1,6}})?$",
}
_REFUTED: dict[str, str] = {
    # Decimal's letters (Infinity, NaN, sNaN, an exponent), signs, digit grouping and
    # separators, '%' and '$' (stripped by agate) aside, any printable ASCII refutes.
    "Number": r"[!-#&-*/:-@B-DG-HJ-MO-RU-XZ-^`b-dg-hj-mo-ru-xz-~]",
    "Date": r"[!-,./:-~]",
    "DateTime": r"[!-,./;-~]",
    # isodate: a date, 'T', a time; week dates (W), zones (Z, +hh:mm), fractions.
    "ISODateTime": r"[!-*/;-@A-SU-VX-Y\[-`a-su-vx-y{-~]",
}
#: The types whose sure form starts with a day, checked against the calendar.
_DAY_TYPES = ("Date", "DateTime", "ISODateTime")


@dataclass
class SeedFile:
    """A seed's CSV: its columns, dbt's type of each (:data:`TYPE_NAMES`), whether a
    Number column has a value with decimal places (dbt-spark: double, else bigint), and
    per column the text Spark casts to each value (null: null)."""

    names: list[str]
    types: list[str]
    fractional: list[bool]
    texts: list[pa.Array]
    rows: int
    #: The first rows' cells, as the CSV has them (what ``dbt seed --show`` shows).
    head: list[list[str]]


def read_seed_csv(path: str, delimiter: str = ",",
                  text_columns: Collection[str] = ()) -> SeedFile | None:
    """The seed at ``path`` as dbt's ``load_agate_table`` would read it (``text_columns``:
    the seed's ``column_types``, read as text), or None when dbt's reader should."""
    with open(path, encoding="utf-8") as file:
        content = file.read()
    if content.startswith(BOM):
        content = content[len(BOM):]
    rows = list(csv.reader(io.StringIO(content), delimiter=delimiter))
    if len(rows) < 2:
        return None
    names, body = rows[0], rows[1:]
    width = len(names)
    if not all(names) or len(set(names)) != width or set(map(len, body)) != {width}:
        return None
    flat = pa.array(list(itertools.chain.from_iterable(body)), pa.string())
    forced = set(text_columns)
    types, fractional, texts = [], [], []
    for i, name in enumerate(names):
        cells = _Cells(flat.take(pa.array(np.arange(i, len(flat), width))))
        chosen = "Text" if name in forced else infer_type(cells)
        types.append(chosen)
        fractional.append(chosen == "Number" and _has_decimals(cells))
        texts.append(cast_texts(cells, chosen))
    return SeedFile(names, types, fractional, texts, len(body), body[:PREVIEW_ROWS])


class _Cells:
    """A column's cells and what the checks of every type share, each made once: which
    are plain (printable ASCII: their strip is ASCII's), stripped, surely null."""

    def __init__(self, column: pa.Array) -> None:
        self.column = column
        self.plain = pc.match_substring_regex(column, _PLAIN)
        self.stripped = pc.utf8_trim(column, _ASCII_SPACE)
        self.null = pc.and_(self.plain,
                            pc.is_in(pc.utf8_lower(self.stripped), pa.array(NULL_TEXTS)))
        # Null, or maybe null once Python strips whitespace ASCII's strip keeps: no
        # printable ASCII but 'null' (a cell no type's check refutes).
        spaced_null = pc.match_substring_regex(column, r"^[^!-~]*([nN][uU][lL][lL])?[^!-~]*$")
        self.maybe_null = pc.or_(self.null, pc.and_(pc.invert(self.plain), spaced_null))
        self._sure: dict[str, pa.Array] = {}
        self._flag: pa.Array | None = None

    @property
    def flag(self) -> pa.Array:
        """As agate's Boolean reads a cell: commas dropped, stripped, lower case."""
        if self._flag is None:
            self._flag = pc.utf8_lower(pc.utf8_trim(pc.replace_substring(self.column, ",", ""),
                                                    _ASCII_SPACE))
        return self._flag

    def sure(self, type_name: str) -> pa.Array:
        """Cells surely of ``type_name`` (Number, Date, DateTime, ISODateTime): plain, of
        its simplest form and, for a day or a time, a real one."""
        if type_name not in self._sure:
            sure = pc.and_(self.plain,
                           pc.match_substring_regex(self.stripped, _SURE[type_name]))
            if type_name in _DAY_TYPES and pc.any(sure).as_py():
                found = np.asarray(sure).copy()
                at = np.flatnonzero(found)
                found[at[~_real_days(self.stripped.filter(sure))]] = False
                sure = pa.array(found)
            self._sure[type_name] = sure
        return self._sure[type_name]

    def unsure_values(self, sure: pa.Array) -> list[str]:
        """The distinct cells not in ``sure``, for agate's own types to decide."""
        return pc.unique(self.column.filter(pc.invert(sure))).to_pylist()


def infer_type(cells: _Cells) -> str:
    """dbt's type of a column of CSV cells: the first of :data:`TYPE_NAMES` (Integer
    takes no text) that casts every one."""
    for name in TYPE_NAMES[1:-1]:
        if _every_value_is(name, cells):
            return name
    return "Text"


def _every_value_is(name: str, cells: _Cells) -> bool:
    if name == "Boolean":
        # Nothing to be unsure of on plain cells.
        sure = pc.and_(cells.plain, pc.is_in(cells.flag, pa.array(("true", "false",
                                                                   *NULL_TEXTS))))
        refuted = pc.and_(cells.plain, pc.invert(sure))
    else:
        refuted = pc.match_substring_regex(cells.column, _REFUTED[name])
        if name == "ISODateTime":
            # isodate splits a date and a time at the one 'T'.
            refuted = pc.or_(refuted, pc.not_equal(pc.count_substring(cells.column, "T"), 1))
        refuted = pc.and_(refuted, pc.invert(cells.maybe_null))
    if pc.any(refuted).as_py():
        return False
    if name != "Boolean":
        sure = pc.or_(cells.null, cells.sure(name))
    test = agate_type(name).test
    return all(test(value) for value in cells.unsure_values(sure))


def cast_texts(cells: _Cells, type_name: str) -> pa.Array:
    """Per cell, the text Spark casts to the value dbt reads it as (null: null): the
    cell itself where the cast cannot differ, else agate's value as text."""
    null = cells.null
    if type_name == "Boolean":
        # Commas dropped before the strip and the null check.
        out, sure = cells.flag, cells.plain
        null = pc.and_(cells.plain, pc.is_in(out, pa.array(NULL_TEXTS)))
    elif type_name == "Text":
        out, sure = cells.column, cells.plain
    else:
        out, sure = cells.stripped, cells.sure(type_name)
    texts = pc.if_else(null, pa.scalar(None, pa.string()), out)
    unsure = pc.invert(pc.or_(sure, null))
    if not pc.any(unsure).as_py():
        return texts
    cast = agate_type(type_name).cast
    found = {value: as_cast_text(cast(value)) for value in cells.unsure_values(
        pc.or_(sure, null))}
    replacements = [found[value] for value in cells.column.filter(unsure).to_pylist()]
    return pc.replace_with_mask(texts, unsure, pa.array(replacements, pa.string()))


def _real_days(days: pa.Array) -> np.ndarray:
    """Whether each ``YYYY-MM-DD...`` (month and day in range) is a day of the calendar
    (year 1 on, February 29th in leap years only), as Python's strptime holds."""
    year, month, day = (np.asarray(pc.cast(pc.utf8_slice_codeunits(days, start, stop),
                                           pa.int64()))
                        for start, stop in ((0, 4), (5, 7), (8, 10)))
    leap = ((year % 4 == 0) & (year % 100 != 0)) | (year % 400 == 0)
    longest = np.array([0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31])[month] \
        + (leap & (month == 2))
    return (year >= 1) & (day <= longest)


def _has_decimals(cells: _Cells) -> bool:
    """Whether any value has decimal places once normalized (agate's MaxPrecision, which
    dbt-spark reads: ``2.50`` has one, ``2.0`` none)."""
    sure = cells.sure("Number")
    fraction = pc.match_substring_regex(cells.stripped, r"\.[0-9]*[1-9]")
    if pc.any(pc.and_(sure, fraction)).as_py():
        return True
    number = agate_type("Number")
    for text in cells.unsure_values(sure):
        value = number.cast(text)
        if (isinstance(value, decimal.Decimal) and value.is_finite()
                and int(value.normalize().as_tuple().exponent) < 0):
            return True
    return False


def as_cast_text(value: Any) -> str | None:
    """A value of dbt's agate table as the text Spark casts to the column's type.

    >>> [as_cast_text(v) for v in (None, True, decimal.Decimal("1.50"), "x",
    ...                            datetime.date(2026, 1, 2),
    ...                            datetime.datetime(2026, 1, 2, 3, 4, 5, 6))]
    [None, 'true', '1.50', 'x', '2026-01-02', '2026-01-02 03:04:05.000006']
    """
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime.datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, datetime.date):
        return value.isoformat()
    if isinstance(value, datetime.timedelta):
        return str(value.total_seconds())
    return str(value)


def agate_type(name: str) -> Any:
    """dbt's own agate type of that name (:data:`TYPE_NAMES`), as its seeds' type tester
    holds it."""
    return _TYPES[TYPE_NAMES.index(name)]


#: The seeds' type tester's types, in its order (:data:`TYPE_NAMES`).
_TYPES: Sequence[Any] = build_type_tester(())._possible_types


def agate_texts(agate_table: Any) -> list[pa.Array]:
    """The rows of dbt's agate table as one array of cast texts per column."""
    columns: list[list[str | None]] = [[] for _ in agate_table.column_names]
    for row in agate_table.rows:
        for values, value in zip(columns, row, strict=True):
            values.append(as_cast_text(value))
    return [pa.array(values, pa.string()) for values in columns]
