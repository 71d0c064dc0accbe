"""The plan of a clustered write, pure: its sample, the key over the layout's columns,
where rows go and in what order, and the SELECT's SQL text parts every reach shares.

A build makes two passes over the model's SQL: one samples the key inputs and counts the
rows (:class:`InputSample`); the write then shuffles rows once into a few partitions
owning consecutive key ranges (cut points from the sample, see ``partitioning.py``),
sorts each by the key and cuts it into files of equal row count, so files and the row
groups inside them stay narrow on every clustering column. With ``partition_by`` the
ranges are of (table partition, key): each table partition is clustered on its own and
cut into files of the same row count. The session's and the server's reaches run the
passes (``reach/*/``); this module decides what they run.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from dbt.adapters.zspark.core import balanced, value_ranks
from dbt.adapters.zspark.core.partitioning import (
    FileSpread,
    piece_spread,
    shuffle_partitions,
    spread_files,
)
from dbt.adapters.zspark.core.sql_text import quote
from dbt.adapters.zspark.layouts import (
    ColumnSpec,
    boundary_ranks,
    group_shift,
    rank_grid_bits,
    zorder_schedule,
)
from dbt.adapters.zspark.layouts.layout_state import StoredLayout
from dbt.adapters.zspark.layouts.planning import ClusteringPlan, normalize_type
from dbt.adapters.zspark.layouts.ranks_sql import cuts_at_or_below_sql

KEY_COLUMN = "__zspark_key"
OWNER_COLUMN = "__zspark_owner"
DRAW_COLUMN = "__zspark_draw"
SAMPLE_SEED = 17
#: Rows sampled per boundary; the RangePartitioner in Spark samples about 20 per partition.
SAMPLE_ROWS_PER_BOUNDARY = 100
MIN_SAMPLE_ROWS = 100_000
#: How many times the wanted sample a rebuild's pre-filter keeps, of the rows its table
#: held last time: the input may shrink to a quarter before the sample comes out short.
SAMPLE_HEADROOM = 4


def draw_cutoff(wanted: int, expected_rows: int | None) -> float:
    """The random draw under which a sample's rows are taken from: all (1.0) unless the
    input's size is known: from its last build, or counted first (over a server always;
    in a session, a large scan's first build: :meth:`PlannedInput.counts_first`). Rows
    drawn above it are dropped before the top-k, which then keeps fewer rows per task;
    while at least ``wanted`` rows draw under it, the sample is the same as without it
    (the ``wanted`` smallest draws), and when fewer do it is all of them: still uniform,
    only smaller."""
    if not expected_rows:
        return 1.0
    return min(1.0, SAMPLE_HEADROOM * wanted / expected_rows)


#: Planned bytes above which a first build over a DataFrame session counts its input
#: before sampling it, when a count reads the input's scans alone: eight splits of 128 MiB.
COUNT_FIRST_BYTES = 8 * (128 << 20)
#: Nodes of an optimized logical plan a count reads no more than the input's files for:
#: scans (of a catalog table, a path, a range, rows at hand), projections and filters.
SCAN_NODES = frozenset({"Project", "Filter", "Relation", "RelationV2", "Range",
                        "LocalRelation", "LogicalRDD", "SubqueryAlias"})


@dataclass(frozen=True)
class PlannedInput:
    """What Spark's optimizer tells of a model's SQL before it runs."""

    #: Its size estimate of the output (a join's is the product of its sides').
    size_bytes: int
    #: It knows the output holds at most the rows a sample wants (a range, a literal).
    known_small: bool
    #: The plan is scans, projections and filters alone (:func:`scan_nodes_only`).
    scans_only: bool

    def counts_first(self) -> bool:
        """Whether a first build counts the input before sampling it: the sample's top-k
        then drops rows drawn above its share (:func:`draw_cutoff`). A one-job sample
        sends every task's own top-k to the one task that merges them (a 30 M-row Parquet
        table read by 16 tasks: 4.7 s, against 2.3 s counted first; ``bench.first_sample``);
        a count of scans alone reads little (a Parquet file's row counts are in its
        footer), while a join or an aggregation would run twice."""
        return self.scans_only and self.size_bytes > COUNT_FIRST_BYTES


def scan_nodes_only(optimized_plan: str) -> bool:
    r"""Whether an optimized logical plan's text (Spark's tree string, ``EXPLAIN``'s) holds
    only :data:`SCAN_NODES`.

    >>> scan_nodes_only("Project [a#1]\n+- Filter (a#1 > 3)\n   +- Relation db.t[a#1] parquet")
    True
    >>> scan_nodes_only("Aggregate [a#1], [a#1]\n+- Relation db.t[a#1] parquet")
    False
    >>> scan_nodes_only("Project [a#1]\n+- Join Inner, (a#1 = b#2)\n   :- Range (0, 9)\n"
    ...                 "   +- Range (0, 9)")
    False
    """
    names = [re.match(r"[\s:+|-]*(\w*)", line) for line in optimized_plan.splitlines()]
    found = {m.group(1) for m in names if m is not None and m.group(1)}
    return bool(found) and found <= SCAN_NODES


@dataclass
class PreparedBuild:
    """What the materialization needs: the SELECT to write, and facts for the log."""

    select_sql: str
    file_count: int
    input_rows: int
    sample: pd.DataFrame = field(repr=False)
    spread: FileSpread | None = None
    sample_seconds: float = 0.0
    #: Seconds the keyed rows' shuffle ran while they were prepared (the embedded
    #: session's, ``SessionReach.shuffled``): the write's time, not the sample's.
    shuffle_seconds: float = 0.0
    #: The layout the rows were keyed with, as stored with the table.
    layout: StoredLayout | None = None
    #: The sample rows' keys, and the sample's columns of the table partition values.
    sample_keys: list[Any] = field(default_factory=list, repr=False)
    sample_partitions: list[str] = field(default_factory=list)
    #: What the layout chose from the sample, for the log (balanced: fan-outs, skip).
    note: str = ""

    @property
    def file_rows(self) -> int | None:
        """Rows per file the write cuts its partitions into (None: a file per partition)."""
        return None if self.spread is None else self.spread.rows_per_file


def key_input_sql(column_sql: str, spark_type: str) -> str:
    """What a column contributes to the key, in SQL: the value itself, but timestamps as
    microseconds since the epoch (bigint), so values outside the years 1677-2262, which
    pandas' nanosecond timestamps cannot hold, cluster like any other."""
    family = normalize_type(spark_type)
    if family == "timestamp":
        return f"unix_micros({column_sql})"
    if family == "timestamp_ntz":
        return (f"timestampdiff(MICROSECOND, timestamp_ntz'1970-01-01 00:00:00', "
                f"{column_sql})")
    return column_sql


def key_input_type(spark_type: str) -> str:
    """The Spark type of :func:`key_input_sql`'s value."""
    return "bigint" if normalize_type(spark_type) in ("timestamp", "timestamp_ntz") \
        else spark_type


def part_column(position: int) -> str:
    """Name of a table partition column's value in the build's sample."""
    return f"__zspark_part_{position}"


def python_value(value: Any) -> Any:
    """A sampled value (numpy / pandas scalar) as the plain Python value Spark takes."""
    if value is None or (not isinstance(value, str | bytes) and bool(pd.isna(value))):
        return None
    if isinstance(value, pd.Timestamp):
        return value.to_pydatetime()
    return value.item() if hasattr(value, "item") else value


def sort_position(value: Any) -> tuple[bool, Any]:
    """Where Spark's ascending sort puts a value: NULLs first."""
    value = python_value(value)
    return (value is not None, value)


def searched_owner_sql(keyed_rows: str, spread: FileSpread,
                       parts: Sequence[tuple[str, str]], key_type: str) -> str | None:
    """``keyed_rows`` with each row's shuffle partition as :data:`OWNER_COLUMN`, found by
    ``ranks_sql.cuts_at_or_below_sql`` where cuts fall on a bigint key alone (no table
    partitions, no shift of the key); None otherwise (the ``case`` tree finds it)."""
    if not spread.cuts or spread.key_shift is not None or parts or key_type != "bigint":
        return None
    return cuts_at_or_below_sql(quote(KEY_COLUMN), [cut[-1] for cut in spread.cuts],
                                keyed_rows, OWNER_COLUMN)


@dataclass
class InputSample:
    """The first pass over a build's input: a uniform sample and the exact row count."""

    sample: pd.DataFrame = field(repr=False)
    rows: int
    input_bytes: int
    seconds: float
    #: The table partitions the rows fall in (values as strings); empty when unpartitioned.
    partitions: frozenset[tuple[Any, ...]] = frozenset()

    def union(self, other: InputSample) -> InputSample:
        """The sample of both inputs together: each side thinned to the same share of its
        rows, so the result is still uniform over all rows."""
        share = min(len(self.sample) / max(self.rows, 1), len(other.sample) / max(other.rows, 1))
        parts = [s.sample.sample(n=min(len(s.sample), round(share * s.rows)),
                                 random_state=SAMPLE_SEED) for s in (self, other)]
        return InputSample(pd.concat(parts, ignore_index=True), self.rows + other.rows,
                           self.input_bytes + other.input_bytes, self.seconds + other.seconds,
                           self.partitions | other.partitions)


def sample_size(plan: ClusteringPlan) -> int:
    """Rows a build samples for its boundaries."""
    return max(MIN_SAMPLE_ROWS, SAMPLE_ROWS_PER_BOUNDARY * plan.boundary_count)


def key_inputs(plan: ClusteringPlan) -> list[str]:
    return [key_input_sql(quote(c), t) for c, t in zip(plan.columns, plan.column_types,
                                                         strict=True)]


def type_of(schema: Mapping[str, str], column: str) -> str:
    """A column's Spark type in a model's schema, its name matched as Spark does (any case)."""
    found = {name.lower(): spark_type for name, spark_type in schema.items()}
    return found[column.lower()]


@dataclass
class KeyedPlan:
    """How a clustered write keys and spreads its rows: the part every write shares,
    whether its keys come from the registered UDF or from SQL."""

    #: Each clustering column with its boundaries, and the key function over them.
    specs: list[ColumnSpec]
    function: Any = field(repr=False)
    sample_keys: list[Any] = field(repr=False)
    #: Table partition columns and their Spark types.
    parts: list[tuple[str, str]]
    spread: FileSpread
    #: The sort order inside a shuffle partition (quoted SQL).
    order: list[str]
    layout: StoredLayout
    #: The balanced layout's partition (None for the curves), and what it chose.
    tree: balanced.Tree | None = None
    #: The column weights the key spends its resolution by (a stored layout's own).
    weights: tuple[float, ...] = ()
    note: str = ""

    def prepared(self, select_sql: str, sampled: InputSample, file_count: int,
                 started: float, shuffle_seconds: float = 0.0) -> PreparedBuild:
        return PreparedBuild(select_sql=select_sql, file_count=file_count,
                             input_rows=sampled.rows, sample=sampled.sample,
                             spread=self.spread,
                             sample_seconds=sampled.seconds + time.perf_counter() - started
                             - shuffle_seconds, shuffle_seconds=shuffle_seconds,
                             layout=self.layout, sample_keys=self.sample_keys,
                             note=self.note,
                             sample_partitions=[part_column(i) for i in range(len(self.parts))])


def plan_keys(plan: ClusteringPlan, sampled: InputSample, stored: StoredLayout | None,
              file_count: int, cores: int, schema: Mapping[str, str], pieces: bool = False,
              file_per_partition: bool = False) -> KeyedPlan:
    """Key and spread a sampled input into ``file_count`` files.

    A balanced build of an unpartitioned table writes each group by a shuffle partition
    of its own; pieces and table partitions are cut along the key, as the curves are (a
    file then spans neighbouring groups: the tree's order keeps them close).

    With ``stored`` rows are keyed with the table's stored boundaries, else with
    boundaries from the sample. Rows go to few shuffle partitions owning consecutive ranges
    of (table partition, key), cut where the sample puts file boundaries; each is sorted
    and cut into files of equal rows. With ``pieces`` at most ``file_count`` files come out
    (they count against the table's file budget); with ``file_per_partition`` every piece
    is its own shuffle partition (for tables whose own writer option fixes rows per file,
    as earlier builds of this plugin made them).
    """
    sample, rows = sampled.sample, sampled.rows
    if stored is not None:
        boundaries = list(stored.boundaries)
    elif plan.curve_method == "boundary":
        boundaries = [value_ranks.sample_boundaries(sample[name], plan.boundary_count)
                      for name in plan.columns]
    else:
        boundaries = [None] * len(plan.columns)
    specs = [ColumnSpec(name, key_input_type(spark_type), column_boundaries)
             for name, spark_type, column_boundaries
             in zip(plan.columns, plan.column_types, boundaries, strict=True)]
    # A partitioned table's tree splits each table partition's share of the files.
    tree = stored.partition_tree() if stored is not None else plan.layout.fit(
        specs, [sample[c] for c in plan.columns], plan.boundary_count,
        max(1, round(file_count / max(1, len(sampled.partitions)))), plan.weights)
    # A stored layout keys new rows with the weights it was built with.
    weights = stored.weights if stored is not None else plan.weights
    function = plan.layout.key_function(specs, plan.curve_method, plan.boundary_count, tree,
                                        weights)
    sample_keys = function(*(sample[c] for c in plan.columns)).tolist() if len(sample) else []
    parts = [(p, type_of(schema, p)) for p in plan.partition_by]
    positions = [(*(sort_position(v) for v in values), k) for values, k in zip(
        zip(*(sample[part_column(i)] for i in range(len(parts))), strict=True),
        sample_keys, strict=True)] if parts else [(k,) for k in sample_keys]
    if tree is not None and not tree.curve and not pieces and not parts:
        spread = _group_spread(tree, np.asarray(sample_keys, dtype=np.int64), rows,
                               file_count, group_shift(plan.boundary_count),
                               file_per_partition)
    elif pieces:
        spread = piece_spread(positions, rows, file_count, cores, sampled.input_bytes,
                              len(sampled.partitions), file_per_partition)
    else:
        spread = spread_files(positions, rows, file_count, file_count if file_per_partition
                              else shuffle_partitions(file_count, cores, sampled.input_bytes))
    order = [*(quote(p) for p in plan.partition_by), quote(KEY_COLUMN),
             *(quote(c) for c in plan.layout.tie_break(plan.columns, tree))]
    layout = stored or StoredLayout.of_build(
        plan, boundaries, rows=rows, files=file_count,
        rows_per_file=spread.rows_per_file or math.ceil(rows / file_count), tree=tree)
    keyed = KeyedPlan(specs, function, sample_keys, parts, spread, order, layout, tree,
                      tuple(weights))
    if stored is None:
        keyed.note = describe_layout(keyed, plan, sample, weights, file_count)
    return keyed


def _group_spread(tree: balanced.Tree, sample_keys: np.ndarray, rows: int, file_count: int,
                  shift: int, file_per_partition: bool = False) -> FileSpread:
    """A balanced layout's shuffle: a partition per group (cut points at each group's
    first key), each cut every ``rows_per_file`` rows, so no file holds two groups.

    With ``file_per_partition`` (a table writer that cuts no files by rows) each group's
    files are shuffle partitions of their own instead, cut at the group's sample quantiles.
    """
    groups = sample_keys >> shift
    counts = np.bincount(groups, minlength=tree.groups)
    share = rows / max(sample_keys.size, 1)
    rows_per_file = balanced.file_rows((counts * share).tolist(), file_count, counts.tolist())
    if not file_per_partition:
        return FileSpread(partitions=tree.groups,
                          cuts=tuple((g << shift,) for g in range(1, tree.groups)),
                          rows_per_file=rows_per_file, key_shift=shift)
    cuts: list[tuple[int]] = []
    for group in range(tree.groups):
        if group:
            cuts.append((group << shift,))
        keys = np.sort(sample_keys[groups == group])
        files = max(1, math.ceil(keys.size * share / rows_per_file))
        for j in range(1, files):
            cut = int(keys[j * keys.size // files])
            if cut > (cuts[-1][0] if cuts else 0):
                cuts.append((cut,))
    return FileSpread(partitions=len(cuts) + 1, cuts=tuple(cuts), rows_per_file=None)


def describe_layout(keyed: KeyedPlan, plan: ClusteringPlan, sample: pd.DataFrame,
                    weights: Sequence[float], file_count: int) -> str:
    """For the log before a fresh build's write: how the layout spends its resolution (a
    balanced tree's fan-outs, a weighted Z-order's bits) and the skip per column a point
    query gets were the sample written as the build writes all rows."""
    if not len(sample) or plan.curve_method != "boundary":
        return ""
    ranks = boundary_ranks(keyed.specs, [sample[s.name] for s in keyed.specs])
    keys = np.asarray(keyed.sample_keys, dtype=np.int64)
    files_rows = keyed.layout.rows_per_file * len(sample) / max(keyed.layout.rows, 1)
    # Files are cut along the key: within each table partition, and for an unpartitioned
    # balanced build within each group (a shuffle partition of its own).
    if keyed.parts:
        group = pd.Series(list(zip(*(sample[part_column(i)] for i in range(len(keyed.parts))),
                                   strict=True))).factorize()[0]
    elif keyed.tree is not None and not keyed.tree.curve:
        group = keys >> group_shift(plan.boundary_count)
    else:
        group = np.zeros(keys.size, dtype=np.int64)
    # A balanced build also tells both query models apart (balanced.py): value-uniform
    # probes are the values themselves, which a rank may merge.
    value_ids = None if keyed.tree is None else [
        pd.factorize(sample[s.name], use_na_sentinel=False)[0] for s in keyed.specs]
    skips = balanced.expected_skips(ranks, group, files_rows, order=keys, value_ids=value_ids)
    how = (_describe_tree(keyed.tree, plan, weights, per_part=bool(keyed.parts))
           if keyed.tree is not None else _describe_bits(plan, weights, file_count))
    # On a line of its own: bench/balanced.py reads the figures before it to the line's end.
    by_model = ("" if keyed.tree is None else
                f"\n  expected skip per column: {skips.describe(plan.columns)}")
    return (f"{how}; expected skip from the sample: "
            + ", ".join(f"{c} {100 * e:.1f}%" for c, e in
                        zip(plan.columns, skips.rows, strict=True)) + by_model)


def _describe_tree(tree: balanced.Tree, plan: ClusteringPlan, weights: Sequence[float],
                   per_part: bool) -> str:
    # Each candidate's reads under the worse query model (the choice weighs its regret).
    compared = ", ".join(f"{name} {judged.worse:g}" for name, judged in tree.compared.items())
    if tree.curve:
        why = ("which the sample shows reading fewer files" if len(set(weights)) > 1 else
               "as no tree skips as many files on every column under both query models")
        return (f"balanced layout: kept the {tree.curve} curve, {why} (expected files per "
                f"point query: {compared})")
    levels = [plan.columns[i] for i in tree.order]
    fans = [f"{c} {min(f)}-{max(f)}" if min(f) != max(f) else f"{c} {f[0]}"
            for c, f in zip(levels, tree.fan_outs, strict=False) if f]
    notes = [*([] if len(set(weights)) == 1 else ["weights " + ", ".join(
        f"{c} {w:g}" for c, w in zip(plan.columns, weights, strict=True))]),
             *([f"expected files per point query: {compared}"] if compared else [])]
    return (f"balanced layout: {tree.groups} groups{' per table partition' if per_part else ''}"
            f", fan-out {', '.join(fans)}, {levels[-1]} cut by rows"
            + (f" ({'; '.join(notes)})" if notes else ""))


def _describe_bits(plan: ClusteringPlan, weights: Sequence[float], file_count: int) -> str:
    bits = rank_grid_bits(plan.boundary_count, len(plan.columns))
    schedule = zorder_schedule(weights, bits) if plan.layout.name == "zorder" else None
    if schedule is None:
        return f"{plan.layout.name} key"
    leading = schedule[:max(1, math.ceil(math.log2(max(file_count, 2))))]
    named = ", ".join(f"{c} {w:g}" for c, w in zip(plan.columns, weights, strict=True))
    return (f"z-order bits by weight ({named}): of the leading {len(leading)} bits, which "
            "cut files, " + ", ".join(f"{c} {leading.count(j)}"
                                      for j, c in enumerate(plan.columns)))


def spread_sql(sql: str, file_count: int) -> str:
    """An unclustered build cut into ``file_count`` files by round-robin."""
    return f"select /*+ REPARTITION({file_count}) */ * from (\n{sql}\n) zspark_source"


def config_values(config: Mapping[str, Any]) -> dict[str, Any]:
    """Plain dict of a Jinja config mapping (dbt hands over special mapping types)."""
    return {str(k): v for k, v in dict(config).items()}


def udf_keyed_sql(plan: ClusteringPlan, sql: str) -> str:
    """The model's rows with their key by the model's registered key function
    (:func:`udf_name`): keys only Python computes (``curve_method='direct'``)."""
    key_call = f"{udf_name(plan.model)}({', '.join(key_inputs(plan))})"
    return f"select *, {key_call} as {quote(KEY_COLUMN)} from (\n{sql}\n) zspark_source"


def udf_name(model: str) -> str:
    """The name of a model's key UDF (``zspark_key_<model>``), and of its build's view."""
    safe = "".join(ch if ch.isalnum() else "_" for ch in model.lower())
    return f"zspark_key_{safe}"
