"""The clustered table build in Spark SQL alone, for servers that run no Python (thrift).

The plan is the one of ``layouts/keyed_plan.py``: sample the key inputs, take the boundaries and
the sample's keys in the dbt process, then write the rows keyed in SQL (the layout's ``keyed_sql``,
equal to the UDF keys bit for bit), each sent to the shuffle partition that owns its key
range and sorted there, cut into files by row count (a session setting around the write).

What SQL changes: the row count is a query of its own, so the model's SQL runs three times
(count, sample, write) rather than two; and SQL cannot send a row to a partition by number,
so each owner is sent as a small int whose hash lands in that very partition (found by one
query over ``range``).
"""

from __future__ import annotations

import datetime as dt
import json
import re
import time
from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal
from typing import Any

import pandas as pd

from dbt.adapters.zspark.core.partitioning import FileSpread, owner_search
from dbt.adapters.zspark.core.sql_text import quote, sql_string
from dbt.adapters.zspark.layouts.keyed_plan import (
    DRAW_COLUMN,
    KEY_COLUMN,
    OWNER_COLUMN,
    SAMPLE_SEED,
    InputSample,
    PreparedBuild,
    draw_cutoff,
    key_input_type,
    key_inputs,
    part_column,
    plan_keys,
    python_value,
    sample_size,
    searched_owner_sql,
    type_of,
)
from dbt.adapters.zspark.layouts.layout_state import StoredLayout
from dbt.adapters.zspark.layouts.planning import ClusteringPlan, normalize_type

#: Runs one query on the server and returns its rows as Python values.
Fetch = Callable[[str], list[tuple[Any, ...]]]

#: Column name of the int whose hash sends a row to its shuffle partition.
BUCKET_COLUMN = "__zspark_bucket"
_SIZE_UNITS = {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40, "PiB": 2**50,
               "EiB": 2**60}


def thrift_value(value: Any, spark_type: str) -> Any:
    """A value as the server sends it (dates and decimals as text) in the form a Spark
    session's ``toPandas`` gives it, which the key functions expect."""
    if value is None:
        return None
    family = normalize_type(spark_type)
    if family == "date" and isinstance(value, str):
        return dt.date.fromisoformat(value)
    if family == "decimal" and not isinstance(value, Decimal):
        return Decimal(str(value))
    if family in ("timestamp", "timestamp_ntz") and isinstance(value, str):
        return pd.Timestamp(value)
    return value


def input_bytes(fetch: Fetch, sql: str) -> int:
    """Spark's size estimate of a query's output, from ``EXPLAIN COST``."""
    return planned_bytes(explain_cost(fetch, sql))


def explain_cost(fetch: Fetch, sql: str) -> str:
    """``EXPLAIN COST`` of a query: its optimized logical plan, each node's statistics."""
    return "\n".join(str(row[0]) for row in fetch(f"explain cost {sql}"))


def planned_bytes(explained: str) -> int:
    """The size estimate of the plan's root in ``EXPLAIN COST``'s text."""
    found = re.search(r"sizeInBytes=([\d.]+)\s*(B|KiB|MiB|GiB|TiB|PiB|EiB)", explained)
    return 0 if found is None else int(float(found.group(1)) * _SIZE_UNITS[found.group(2)])


def optimized_plan(explained: str) -> str:
    """The optimized logical plan's tree in ``EXPLAIN``'s text (the whole text if it is
    not marked)."""
    plan = explained.split("== Optimized Logical Plan ==", 1)[-1]
    return plan.split("== Physical Plan ==", 1)[0].strip()


def facts_sql(sql: str, partition_by: Sequence[str]) -> str:
    """The row count of ``sql`` and the table partitions its rows fall in (as strings)."""
    measures = ["count(1)"]
    if partition_by:
        values = ", ".join(f"cast({quote(p)} as string)" for p in partition_by)
        measures.append(f"collect_set(array({values}))")
    return f"select {', '.join(measures)} from (\n{sql}\n) zspark_source"


def sample_sql(sql: str, plan: ClusteringPlan, wanted: int, cutoff: float = 1.0) -> str:
    """A uniform sample of ``wanted`` rows: the key inputs and table partition values of
    the rows with the smallest random draw (Spark keeps a top-k per task, no full sort),
    of the rows drawn under ``cutoff`` (``keyed_plan.draw_cutoff``)."""
    picked = [f"{value} as {quote(c)}"
              for c, value in zip(plan.columns, key_inputs(plan), strict=True)]
    picked += [f"{quote(p)} as {quote(part_column(i))}" for i, p in enumerate(plan.partition_by)]
    names = [quote(c) for c in plan.columns] + [
        quote(part_column(i)) for i in range(len(plan.partition_by))]
    under = "" if cutoff >= 1.0 else f"where {DRAW_COLUMN} < {cutoff!r} "
    return (f"select {', '.join(names)} from (select {', '.join(picked)}, "
            f"rand({SAMPLE_SEED}) as {DRAW_COLUMN} from (\n{sql}\n) zspark_source) "
            f"{under}order by {DRAW_COLUMN} limit {wanted}")


def sample_frame(plan: ClusteringPlan, part_types: Sequence[str],
                 rows: list[tuple[Any, ...]]) -> pd.DataFrame:
    """The sample rows as the frame a session's ``toPandas`` makes of them (table partition
    values typed too: their order places the cut points)."""
    names = [*plan.columns, *(part_column(i) for i in range(len(plan.partition_by)))]
    types = [*(key_input_type(t) for t in plan.column_types), *part_types]
    return pd.DataFrame({name: pd.Series([thrift_value(row[i], types[i]) for row in rows],
                                         dtype=None if rows else object)
                         for i, name in enumerate(names)})


def bucket_probe_sql(partitions: int) -> str:
    """For each shuffle partition ``j`` of ``partitions``, a small int Spark hashes into it
    (hash partitioning is ``pmod(hash(value), partitions)``)."""
    return (f"select pmod(hash(v), {partitions}) as j, min(v) from "
            f"(select cast(id as int) as v from range({64 * partitions})) "
            f"group by pmod(hash(v), {partitions})")


def bucket_values(rows: list[tuple[Any, ...]], partitions: int) -> list[int]:
    found = {int(j): int(v) for j, v in rows}
    missing = [j for j in range(partitions) if j not in found]
    if missing:
        raise RuntimeError(f"no int hashes into shuffle partitions {missing[:5]}")
    return [found[j] for j in range(partitions)]


def _literal(value: Any, spark_type: str) -> str:
    """A sampled value as a SQL literal of ``spark_type`` (numbers, text, dates and times
    go through their text, which Spark casts back exactly; bytes, such as a direct
    Z-order key, as a hex literal).

    >>> _literal(b"\\x00a", "binary"), _literal(7, "bigint")
    ("X'0061'", 'cast(7 as bigint)')
    """
    value = python_value(value)
    if value is None:
        return f"cast(null as {spark_type})"
    if isinstance(value, bytes | bytearray):
        return f"X'{bytes(value).hex()}'"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return f"cast({value} as {spark_type})"
    return f"cast({sql_string(repr(value) if isinstance(value, float) else str(value))} " \
           f"as {spark_type})"


def owner_sql(spread: FileSpread, key_sql: str, key_type: str,
              parts: Sequence[tuple[str, str]]) -> str:
    """The shuffle partition of a row in SQL: how many cut points sit at or below its
    (table partition values, key) in Spark's order. Cuts only balance the partitions: any
    owner keeps every row."""
    if not spread.cuts:
        return "0"
    if spread.key_shift is not None:
        return f"cast(shiftright({key_sql}, {spread.key_shift}) as int)"

    def position(values: Sequence[str], key: str) -> str:
        if not parts:
            return key
        fields = [*(f"'p{i}', {v}" for i, v in enumerate(values)), f"'k', {key}"]
        return f"named_struct({', '.join(fields)})"

    row = position([quote(name) for name, _ in parts], key_sql)

    def cut_position(cut: tuple[Any, ...]) -> str:
        return position([_literal(v[1], t) for v, (_, t) in zip(cut[:-1], parts, strict=True)],
                        _literal(cut[-1], key_type))

    return owner_search(spread.cuts, lambda cut: f"{row} >= {cut_position(cut)}",
                        lambda test, then, otherwise:
                        f"case when {test} then {then} else {otherwise} end",
                        str)


def partition_values(value: Any) -> frozenset[tuple[Any, ...]]:
    """The table partitions of :func:`facts_sql` (a set of arrays of strings, which the
    server sends as JSON text)."""
    if isinstance(value, str):
        value = json.loads(value)
    return frozenset(tuple(values) for values in value or [])


def sample_input_sql(fetch: Fetch, plan: ClusteringPlan, sql: str,
                     schema: Mapping[str, str]) -> InputSample:
    """The build's first look at its input, by queries: the row count and table
    partitions, a uniform sample of the key inputs, and Spark's size estimate."""
    started = time.perf_counter()
    facts = fetch(facts_sql(sql, plan.partition_by))[0]
    rows = int(facts[0])
    wanted = sample_size(plan)
    # Cut off by the exact count: each task keeps about its share of the sample for the
    # top-k's one merging task, not ``wanted`` rows of its own.
    cutoff = draw_cutoff(wanted, rows)
    sample = sample_frame(plan, [type_of(schema, p) for p in plan.partition_by],
                          fetch(sample_sql(sql, plan, wanted, cutoff)))
    return InputSample(sample, rows, input_bytes(fetch, sql),
                       time.perf_counter() - started,
                       partition_values(facts[1]) if plan.partition_by else frozenset())


def keyed_sql_build(fetch: Fetch, plan: ClusteringPlan, sql: str, sampled: InputSample,
                    stored: StoredLayout | None, file_count: int, cores: int,
                    schema: Mapping[str, str], pieces: bool = False,
                    file_per_partition: bool = False, select: bool = True) -> PreparedBuild:
    """The clustered SELECT of ``sql`` (already sampled) into ``file_count`` files, keyed
    in SQL (see ``keyed_plan.plan_keys``; a key Python's alone, ``curve_method='direct'``,
    was refused before anything ran: ``refuse_keys_in_python``); ``schema`` are the
    model's columns in order and their Spark types, ``cores`` the parallelism the shuffle
    partitions are sized to. Without ``select`` only the sample's keys (``Reach.keyed``)."""
    started = time.perf_counter()
    keyed = plan_keys(plan, sampled, stored, file_count, cores, schema, pieces,
                      file_per_partition)
    if not select:
        return keyed.prepared("", sampled, file_count, started)
    spread = keyed.spread
    key_type = plan.layout.key_type(plan.curve_method)
    buckets = bucket_values(fetch(bucket_probe_sql(spread.partitions)), spread.partitions)
    assert plan.curve_method == "boundary", plan.curve_method
    keyed_rows = plan.layout.keyed_sql(keyed.specs, key_inputs(plan), plan.boundary_count,
                                       sql, KEY_COLUMN, keyed.tree, keyed.weights)
    owned = searched_owner_sql(keyed_rows, spread, keyed.parts, key_type)
    if owned is not None:
        keyed_rows, owner = owned, OWNER_COLUMN
    else:
        owner = owner_sql(spread, quote(KEY_COLUMN), key_type, keyed.parts)
    select_sql = (
        f"select {', '.join(quote(c) for c in schema)} from (\n"
        f"select /*+ REPARTITION({spread.partitions}, {quote(BUCKET_COLUMN)}) */ *, "
        f"element_at(array({', '.join(map(str, buckets))}), {owner} + 1) "
        f"as {quote(BUCKET_COLUMN)} from (\n{keyed_rows}\n) zspark_keyed\n"
        f") zspark_bucketed sort by {', '.join(keyed.order)}")
    return keyed.prepared(select_sql, sampled, file_count, started)
