"""The queries a dbt project's own code runs against a table, read from the code (sqlglot).

Each model, test or analysis that refers to the table (``ref``) is a query: the filters
its SELECTs apply to the table's rows (the ``where`` conjuncts that name only the table's
columns) become one predicate, as ``zspark_scan`` would take it; each ``zspark_scan`` of
the table is its predicate. Jinja other than ``ref`` and ``zspark_scan`` is blanked out,
so a filter on ``{{ var('x') }}`` keeps its column with a stand-in value. Code that does
not parse is counted, not guessed at.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from dbt.adapters.zspark.skipping.workload import DeclaredQuery

#: The name the table goes by in code read here (its ``ref``s are replaced by it).
TARGET = "zspark_advised_table"
_OTHER = "zspark_other_table"
_REF = re.compile(r"""ref\(\s*(?:['"][^'"]*['"]\s*,\s*)?['"]([^'"]+)['"]\s*(?:,[^)]*)?\)""")
_SCAN = re.compile(r"""zspark_scan\(\s*ref\(\s*['"]([^'"]+)['"]\s*\)\s*,\s*"""
                   r"""(?:"((?:[^"\\]|\\.)*)"|'((?:[^'\\]|\\.)*)')\s*\)""")
_EXPRESSION = re.compile(r"\{\{(.*?)\}\}", re.DOTALL)
_STATEMENT = re.compile(r"\{%.*?%\}|\{#.*?#\}", re.DOTALL)


@dataclass(frozen=True)
class ProjectNode:
    """A node of the project's graph that refers to the table: its kind, name and code."""

    resource_type: str
    name: str
    code: str


@dataclass
class GraphWorkload:
    """The queries found in the project's code, and the nodes read."""

    queries: list[DeclaredQuery] = field(default_factory=list)
    nodes_read: int = 0
    #: Nodes whose code could not be parsed, by name.
    unreadable: list[str] = field(default_factory=list)


def _plain_sql(code: str, model: str) -> str:
    """``code`` with the table's refs as :data:`TARGET`, other refs as another table and
    ``config`` gone and every other Jinja expression as a literal."""
    def expression(match: re.Match[str]) -> str:
        inner = match.group(1)
        ref = _REF.search(inner)
        if ref is not None and inner.strip().startswith("ref"):
            return TARGET if ref.group(1) == model else _OTHER
        return "" if inner.strip().startswith("config") else "0"
    return _EXPRESSION.sub(expression, _STATEMENT.sub(" ", code))


def _conjuncts(condition: object) -> list[object]:
    from sqlglot import exp

    if isinstance(condition, exp.And):
        return [*_conjuncts(condition.left), *_conjuncts(condition.right)]
    if isinstance(condition, exp.Paren):
        return _conjuncts(condition.this)
    return [condition]


def select_predicates(sql: str) -> list[str]:
    """Per SELECT that reads :data:`TARGET`, the conjunction of its ``where`` conjuncts
    that name only the table's columns (unqualified where it is the only table read),
    unqualified, in Spark SQL. Raises sqlglot's ParseError on code it cannot read."""
    import sqlglot
    from sqlglot import exp

    found = []
    for tree in sqlglot.parse(sql, read="spark"):
        if tree is None:
            continue
        for select in tree.find_all(exp.Select):
            sources = list(_sources(select))
            aliases = {t.alias_or_name.lower() for t in sources if t.name.lower() == TARGET}
            where = select.args.get("where")
            if not aliases or where is None:
                continue
            alone = len(sources) == 1
            kept = []
            for conjunct in _conjuncts(where.this):
                assert isinstance(conjunct, exp.Expression)
                columns = list(conjunct.find_all(exp.Column))
                if columns and not any(conjunct.find_all(exp.Select)) and all(
                        (c.table.lower() in aliases) if c.table else alone for c in columns):
                    kept.append(conjunct.transform(
                        lambda n: exp.column(n.name) if isinstance(n, exp.Column) else n))
            if kept:
                found.append(" AND ".join(k.sql(dialect="spark") for k in kept))
    return found


def _sources(select: object) -> Iterable[Any]:
    """The tables a SELECT reads directly (its FROM and JOINs, not its subqueries')."""
    from sqlglot import exp

    assert isinstance(select, exp.Select)
    parts = [select.args.get("from_") or select.args.get("from"),
             *(select.args.get("joins") or [])]
    for part in parts:
        if part is not None and isinstance(part.this, exp.Table):
            yield part.this


def scan_predicates(code: str, model: str) -> list[str]:
    """The predicates of ``zspark_scan(ref('<model>'), "...")`` calls in ``code``."""
    found = []
    for match in _SCAN.finditer(code):
        if match.group(1) == model:
            text = match.group(2) if match.group(2) is not None else match.group(3)
            found.append(text.encode().decode("unicode_escape"))
    return found


def project_queries(model: str, nodes: Sequence[ProjectNode]) -> GraphWorkload:
    """The queries the project's ``nodes`` run against ``model``'s table, each counted once
    per SELECT (a node's source: ``<resource type> <name>``)."""
    from sqlglot.errors import ParseError, TokenError

    workload = GraphWorkload()
    for node in nodes:
        workload.nodes_read += 1
        source = f"{node.resource_type} {node.name}"
        scans = scan_predicates(node.code, model)
        workload.queries += [DeclaredQuery(p, 1.0, source) for p in scans]
        if scans:
            continue
        try:
            predicates = select_predicates(_plain_sql(node.code, model))
        except (ParseError, TokenError):
            workload.unreadable.append(node.name)
            continue
        workload.queries += [DeclaredQuery(p, 1.0, source) for p in predicates]
    return workload
