"""Seeds loaded in one Spark write, not as SQL text.

dbt-spark inserts a seed's rows as ``insert into ... values (cast(%s as type), ...)``
statements, each value formatted into the SQL by Jinja: a 50,000-row seed took more than
10 minutes. In a session the seed's cells go to Spark as one Arrow table of the texts
Spark casts to dbt's values (``core/seed_csv.py``: read as dbt reads the CSV; or the
rows of dbt's own agate table), each column cast to the type of the seed's table (which
dbt created from the inferred types and ``column_types``) and inserted by one write. The
casts are the ones dbt-spark's statements make, so the rows are the same; the table,
its ``--full-refresh`` and its configs stay dbt's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa


def load_seed(spark: Any, table: str, names: Sequence[str], texts: Sequence[pa.Array]) -> int:
    """Insert the cells ``texts`` (per column, in the CSV's order as dbt created the
    table ``table``) into it; the number of rows."""
    # Positional names: a CSV header may hold names Spark would not take as they are.
    arrow = pa.table({f"c{i}": column for i, column in enumerate(texts)})
    fields = spark.table(table).schema.fields
    if len(fields) != len(names):
        raise ValueError(f"seed table {table} has {len(fields)} columns; the CSV has "
                         f"{len(names)}")
    texts_frame = spark.createDataFrame(arrow)
    # The frame's own columns, not pyspark.sql.functions': those are the embedded
    # session's unless the whole process is a Connect client.
    frame = texts_frame.select(
        *(texts_frame[f"c{i}"].cast(field.dataType).alias(field.name)
          for i, field in enumerate(fields)))
    frame.write.insertInto(table)
    return arrow.num_rows
