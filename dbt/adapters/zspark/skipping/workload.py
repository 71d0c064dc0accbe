"""A model's declared workload -> a weight per clustering column (pure Python, sqlglot).

A dbt project declares the queries a table serves in two places: the predicates of the
model's ``skip_coverage`` tests (each a query the layout must serve), and the optional
``workload`` config, predicates with how often they run. With ``cluster_weights:
workload`` (or a ``workload`` config), each clustering column weighs the count of the
declared queries that filter on it, and the layout spends its resolution by those weights
(``balanced.fan_outs``, ``curves.bit_schedule``): the files the declared workload reads
are minimised, not the depth on every column made equal.

A query that filters on several clustering columns counts for each of them: every one of
its columns cuts the files it reads.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dbt.adapters.zspark.skipping.pruning import PredicateError, parse_predicate

# sqlglot (through pruning) loads only when a model declares a workload.

#: The ``cluster_weights`` value that asks for weights from the declared workload.
FROM_WORKLOAD = "workload"
_JINJA = re.compile(r"\{\{.*?\}\}", re.DOTALL)
WORKLOAD_ALLOWED = ("a list of predicates (Spark SQL strings) or of {predicate: <SQL>, "
                    "count: <number > 0>} entries")


class WorkloadError(ValueError):
    """A declared workload cannot be used: which config, what is wrong, what is allowed."""

    def __init__(self, config: str, problem: str, allowed: str) -> None:
        super().__init__(problem)
        self.config = config
        self.problem = problem
        self.allowed = allowed


@dataclass(frozen=True)
class DeclaredQuery:
    predicate: str
    count: float
    #: Where it was declared: ``workload`` or ``skip_coverage``.
    source: str


def declared_queries(workload: Any, test_predicates: Sequence[Any] = ()) -> list[DeclaredQuery]:
    """The ``workload`` config's entries and the ``skip_coverage`` predicates (count 1
    each), checked."""
    entries = [] if workload is None else workload
    if isinstance(entries, str | Mapping) or not isinstance(entries, Sequence):
        raise WorkloadError("workload", f"is {workload!r}", WORKLOAD_ALLOWED)
    queries = []
    for entry in entries:
        if isinstance(entry, str):
            predicate, count = entry, 1.0
        elif isinstance(entry, Mapping) and set(entry) <= {"predicate", "count"} \
                and isinstance(entry.get("predicate"), str):
            predicate, count = entry["predicate"], entry.get("count", 1)
        else:
            raise WorkloadError("workload", f"has the entry {entry!r}", WORKLOAD_ALLOWED)
        if isinstance(count, bool) or not isinstance(count, int | float) or count <= 0:
            raise WorkloadError("workload", f"gives {predicate!r} the count {count!r}",
                                WORKLOAD_ALLOWED)
        queries.append(DeclaredQuery(predicate, float(count), "workload"))
    queries += [DeclaredQuery(p, 1.0, "skip_coverage") for p in test_predicates
                if isinstance(p, str)]
    return queries


def filtered_columns(predicate: str, columns: Sequence[str]) -> list[str]:
    """The clustering ``columns`` that ``predicate`` names (case-insensitive), in order."""
    # A test's predicates reach the graph unrendered ("s_city = '{{ var('city') }}'"):
    # only the columns matter here, so each Jinja expression stands for a value.
    from sqlglot import exp


    plain = _JINJA.sub("0", predicate)
    named = {c.name.lower() for c in parse_predicate(plain).find_all(exp.Column)}
    return [c for c in columns if c.lower() in named]


def workload_weights(columns: Sequence[str], queries: Sequence[DeclaredQuery]) -> tuple[float, ...]:
    """Per clustering column, the count of the declared queries that filter on it."""
    if not queries:
        raise WorkloadError(
            "cluster_weights", "is 'workload', but the model declares no workload (no "
            "'workload' config and no skip_coverage test)",
            "'workload' with a workload config or skip_coverage tests on the model, or a "
            "mapping of clustering columns to weights")

    weights = dict.fromkeys(columns, 0.0)
    for query in queries:
        try:
            named = filtered_columns(query.predicate, columns)
        except PredicateError as error:
            raise WorkloadError(query.source, f"holds a predicate it cannot read: {error}",
                                "predicates as zspark_scan takes them") from None
        for column in named:
            weights[column] += query.count
    if not any(weights.values()):
        raise WorkloadError(
            "workload", "declares no query that filters on a clustering column",
            "predicates that name at least one of: " + ", ".join(columns))
    return tuple(weights[c] for c in columns)
