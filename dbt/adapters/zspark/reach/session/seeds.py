"""Seeds loaded in one Spark write, not as SQL text.

dbt-spark inserts a seed's rows as ``insert into ... values (cast(%s as type), ...)``
statements, each value formatted into the SQL by Jinja: a 50,000-row seed took more than
10 minutes. In a session the rows dbt has already read (its agate table: dbt's own
parsing of the CSV, its quoting, nulls and inferred types) go to Spark as one Arrow
table of strings, each column cast to the type of the seed's table (which dbt created
from the inferred types and ``column_types``) and inserted by one write. The casts are
the ones dbt-spark's statements make, so the rows are the same; the table, its
``--full-refresh`` and its configs stay dbt's.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable
from typing import Any


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


def text_columns(names: list[str], rows: Iterable[Iterable[Any]]) -> dict[str, list[str | None]]:
    """The rows as one list of cast texts per column."""
    columns: dict[str, list[str | None]] = {name: [] for name in names}
    lists = list(columns.values())
    for row in rows:
        for values, value in zip(lists, row, strict=True):
            values.append(as_cast_text(value))
    return columns


def load_seed(spark: Any, table: str, agate_table: Any) -> int:
    """Insert the rows of ``agate_table`` into the seed's table ``table`` (its columns in
    the CSV's order, as dbt created it); the number of rows."""
    import pyarrow as pa
    from pyspark.sql.functions import col

    names = [str(name) for name in agate_table.column_names]
    texts = text_columns(names, agate_table.rows)
    # Positional names: a CSV header may hold names Spark would not take as they are.
    arrow = pa.table({f"c{i}": pa.array(texts[name], type=pa.string())
                      for i, name in enumerate(names)})
    fields = spark.table(table).schema.fields
    if len(fields) != len(names):
        raise ValueError(f"seed table {table} has {len(fields)} columns; the CSV has "
                         f"{len(names)}")
    frame = spark.createDataFrame(arrow).select(
        *(col(f"c{i}").cast(field.dataType).alias(field.name)
          for i, field in enumerate(fields)))
    frame.write.insertInto(table)
    return len(agate_table.rows)
