"""Candidates' simulated files -> files each query would read -> the choice.

The simulated stats go to Spark as one small SELECT (each stat column one constant array,
zipped into rows), and each workload predicate is judged by the same condition
``zspark_scan`` prunes with (``pruning.may_match_sql``), so a candidate scores what the
index would really skip, in Spark's own comparison semantics. Pure Python: the SQL and
the choice; services/advice.py runs it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import numpy as np
import pandas as pd

from dbt.adapters.zspark.advice.candidates import (
    CANDIDATE_POOL,
    UNCLUSTERED,
    Candidate,
    candidates,
    file_of_rows,
    file_stats,
    ranked_columns,
    simulated_file_count,
    simulation_rows,
)
from dbt.adapters.zspark.core.sql_text import quote, sql_string
from dbt.adapters.zspark.core.value_ranks import normalize_type
from dbt.adapters.zspark.skipping.pruning import may_match_sql
from dbt.adapters.zspark.skipping.workload import DeclaredQuery

CANDIDATE_COLUMN = "candidate"
#: A simpler layout wins unless a more complex one reads this much fewer files (relative).
SIMPLER_WINS_WITHIN = 0.02
#: Layouts from simplest, for ties.
_SIMPLICITY = {UNCLUSTERED: 0, "linear_by": 1, "hilbert_by": 2, "zorder_by": 3,
               "balanced_by": 4}
_MARKS = "\x1f\x1e\x1d\x1c" + "".join(map(chr, range(0xE000, 0xE100)))


def _text(value: Any, family: str) -> str | None:
    """A stat as the text Spark casts back to exactly it (None: NULL)."""
    if value is None or (not isinstance(value, str | bytes | Decimal)
                         and bool(pd.isna(value))):
        return None
    if family in ("float", "double"):
        return repr(float(value))
    if family == "decimal":
        return str(value)
    if family == "boolean":
        return "true" if bool(value) else "false"
    if family == "date":
        return str(np.datetime_as_string(np.asarray(value, dtype="datetime64[D]")))
    if family == "string":
        return str(value)
    return str(int(value))


def _typed(element: str, spark_type: str) -> str:
    """SQL of one element (a string ``element``) as the stat's Spark type; timestamps
    arrive as the microseconds the build's sample holds them in."""
    family = normalize_type(spark_type)
    if family == "string":
        return element
    if family == "timestamp":
        return f"timestamp_micros(cast({element} as bigint))"
    if family == "timestamp_ntz":
        return (f"timestampadd(MICROSECOND, cast({element} as bigint), "
                "timestamp_ntz'1970-01-01 00:00:00')")
    return f"cast({element} as {spark_type})"


def constant_column(values: Sequence[Any], spark_type: str) -> str:
    """``values`` (NULLs too) as one SQL array of ``spark_type``: their text joined on a
    character none holds, split and cast back element by element."""
    family = normalize_type(spark_type)
    texts = [_text(v, family) for v in values]
    present = [t for t in texts if t is not None]
    marks = [c for c in _MARKS if not any(c in t for t in present)]
    if len(marks) < 2:
        raise ValueError("no separator and null mark free of the values")
    separator, null = marks[0], marks[1]
    joined = separator.join(null if t is None else t for t in texts)
    element = _typed(f"nullif(x, {sql_string(null)})", spark_type)
    return (f"transform(split({sql_string(joined)}, {sql_string(separator)}, -1), "
            f"x -> {element})")


def stats_sql(stats: Mapping[str, pd.DataFrame], types: Mapping[str, str]) -> str:
    """One row per simulated file of every candidate (by name): ``candidate``,
    ``row_count`` and the stat columns of the ``types`` columns."""
    names = [name for name, frame in stats.items() for _ in range(len(frame))]
    frames = pd.concat(list(stats.values()), ignore_index=True)
    columns: list[tuple[str, str]] = [(CANDIDATE_COLUMN, "string"), ("row_count", "bigint")]
    for column, spark_type in types.items():
        columns += [(f"{column}__min", spark_type), (f"{column}__max", spark_type),
                    (f"{column}__nulls", "bigint")]
        if f"{column}__nans" in frames:
            columns.append((f"{column}__nans", "bigint"))
    arrays = [constant_column(names if name == CANDIDATE_COLUMN else frames[name].tolist(),
                              spark_type) for name, spark_type in columns]
    aliases = ", ".join(quote(name) for name, _ in columns)
    return f"select inline(arrays_zip({', '.join(arrays)})) as ({aliases})"


def score_sql(stats: str, queries: Sequence[DeclaredQuery], types: Mapping[str, str],
              table_columns: Sequence[str]) -> str:
    """Per candidate: its files and, per query, the files the index would let it read."""
    reads = [f"sum(case when {may_match_sql(q.predicate, types, table_columns=table_columns)}"
             f" then 1 else 0 end) as q{i}" for i, q in enumerate(queries)]
    return (f"select {CANDIDATE_COLUMN}, count(*) as files, {', '.join(reads)}\n"
            f"from ({stats}) zspark_simulated group by {CANDIDATE_COLUMN}")


@dataclass(frozen=True)
class Score:
    """A candidate's expected share of files per query, over the workload's counts."""

    candidate: Candidate
    files: int
    #: Per query, the share of files it reads.
    reads: tuple[float, ...]
    expected: float

    def files_per_query(self, table_files: int) -> float:
        return self.expected * table_files


def scores(rows: pd.DataFrame, by_name: Mapping[str, Candidate],
           queries: Sequence[DeclaredQuery]) -> list[Score]:
    """The score query's rows, each candidate's reads weighted by the queries' counts."""
    total = sum(q.count for q in queries) or 1.0
    found = []
    for row in rows.to_dict("records"):
        files = int(row["files"])
        reads = tuple(float(row[f"q{i}"]) / max(files, 1) for i in range(len(queries)))
        expected = sum(q.count * r for q, r in zip(queries, reads, strict=True)) / total
        found.append(Score(by_name[row[CANDIDATE_COLUMN]], files, reads, expected))
    return sorted(found, key=lambda s: (s.expected, _complexity(s.candidate)))


def _complexity(candidate: Candidate) -> tuple[int, int]:
    return (len(candidate.columns), _SIMPLICITY[candidate.config_key])


@dataclass(frozen=True)
class Choice:
    """The chosen candidate, the best score, and why."""

    chosen: Score
    best: Score
    reason: str
    ranked: list[Score] = field(default_factory=list)


def choose(ranked: Sequence[Score]) -> Choice:
    """The simplest candidate reading at most :data:`SIMPLER_WINS_WITHIN` more files than
    the best: fewer columns keep more resolution for the ones that matter."""
    best = ranked[0]
    near = [s for s in ranked if s.expected <= best.expected * (1 + SIMPLER_WINS_WITHIN)]
    chosen = min(near, key=lambda s: (_complexity(s.candidate), s.expected))
    if chosen is best:
        reason = "it reads the fewest files"
    else:
        reason = (f"it reads within {100 * SIMPLER_WINS_WITHIN:g}% of the files the best "
                  f"({best.candidate.name}) reads, with "
                  + ("fewer columns" if len(chosen.candidate.columns)
                     < len(best.candidate.columns) else "a simpler layout"))
    return Choice(chosen, best, reason, list(ranked))


def candidate_types(schema: Mapping[str, str], counts: Mapping[str, float],
                    clusterable: Sequence[str]) -> dict[str, str]:
    """The pool's columns (those any candidate clusters) and their Spark types, in the
    table's order."""
    pool = set(ranked_columns(counts, clusterable)[:CANDIDATE_POOL])
    return {c: t for c, t in schema.items() if c in pool}


def score_layouts(sample: pd.DataFrame, schema: Mapping[str, str],
                  counts: Mapping[str, float], clusterable: Sequence[str],
                  queries: Sequence[DeclaredQuery], table_files: int,
                  frame: Callable[[str], pd.DataFrame],
                  current: Candidate | None = None) -> Choice:
    """Every candidate's files simulated on one ``sample`` (the pool's columns as key
    inputs: timestamps in microseconds), each query judged against them by the Spark that
    ``frame`` runs a query on; the choice. ``current``: the table's own layout, scored too
    (its columns must be in ``sample``)."""
    from dbt.adapters.zspark.core.value_ranks import normalize_type
    from dbt.adapters.zspark.layouts.planning import DEFAULT_BOUNDARY_COUNT

    tried = candidates(counts, clusterable)
    types = candidate_types(schema, counts, clusterable)
    if current is not None and not any(c.same_layout(current) for c in tried):
        tried.append(current)
        types = {c: t for c, t in schema.items() if c in types or c in current.columns}
    files = simulated_file_count(len(sample), table_files)
    sample = simulation_rows(sample, files)
    boundaries: dict[str, Any] = {}
    key_types = {c: "bigint" if normalize_type(t) in ("timestamp", "timestamp_ntz") else t
                 for c, t in types.items()}
    stats = {candidate.name: file_stats(
        sample, file_of_rows(sample, candidate, key_types, files, DEFAULT_BOUNDARY_COUNT,
                             boundaries), list(types), key_types) for candidate in tried}
    rows = frame(score_sql(stats_sql(stats, types), queries, types, list(schema)))
    return choose(scores(rows, {c.name: c for c in tried}, queries))


def share_text(share: float) -> str:
    return f"{100 * share:.1f}%" if not math.isnan(share) else "-"
