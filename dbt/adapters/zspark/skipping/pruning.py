"""Translate a ``zspark_scan`` predicate into a file-skipping condition over ``<model>__zindex``.

The index table holds one row per data file with ``row_count`` and, per indexed column ``c``,
``c__min``, ``c__max`` (same Spark type as ``c``), ``c__nulls`` and, for float/double columns,
``c__nans``; any of them may be NULL when unknown.  :func:`may_match_sql` returns a Spark SQL
boolean over those columns that is TRUE for every file that could hold a row satisfying the
predicate, so ``where not (<may_match>)`` selects files that are safe to skip.

Soundness rests on two facts.  First, Spark itself compares the stats with the literals, so
collation, decimal and datetime semantics are Spark's.  Second, the stats have the column's own
type, so Spark applies the same implicit casts to ``c__min`` / ``c__max`` as to ``c``; we only
prune when those casts are monotone on the column side.  Anything else translates to TRUE.

Assumes Spark defaults for ``spark.sql.parser.escapedStringLiterals``,
``spark.sql.ansi.doubleQuotedIdentifiers`` and
``spark.sql.legacy.typeCoercion.datetimeToString.enabled`` (all false); ANSI mode may be on or
off.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from sqlglot import exp

from dbt.adapters.zspark.skipping.predicates import (
    BOOL,
    COMPATIBLE,
    DATE,
    LTZ,
    NTZ,
    NULL,
    NUMERIC,
    STRING,
    Lit,
    PredicateError,
    has_only,
    literal_of,
    parse_names,
    parse_predicate,
)

__all__ = [
    "STATS",
    "PredicateError",
    "index_column_types",
    "may_match_sql",
    "parse_predicate",
    "path_name",
    "path_parts",
    "stat_column",
]

STATS = ("min", "max", "nulls", "nans")

TRUE = "true"
FALSE = "false"

def stat_column(column: str, stat: str) -> str:
    """Name of the index column holding ``stat`` (one of :data:`STATS`) for ``column``."""
    if stat not in STATS:
        raise ValueError(f"unknown stat {stat!r}; expected one of {', '.join(STATS)}")
    return f"{column}__{stat}"


def indexed_columns(index_columns: Iterable[str]) -> list[str]:
    """The columns an index holds stats of, from the names of its columns."""
    suffix = "__min"
    return [c.removesuffix(suffix) for c in index_columns if c.endswith(suffix)]


def path_name(parts: Sequence[str]) -> str:
    """Index name of a column path: a top-level column keeps its own name, a struct leaf (or a
    name that could be mistaken for one) is its backtick-quoted parts joined by dots.

    ``("st.i",)`` and ``("st", "i")`` are different columns and get different names.

    >>> path_name(["payload", "user_id"]), path_name(["st.i"]), path_name(["id"])
    ('`payload`.`user_id`', 'st.i', 'id')
    """
    if len(parts) == 1 and not parts[0].startswith("`"):
        return parts[0]
    return ".".join("`" + p.replace("`", "``") + "`" for p in parts)


def path_parts(name: str) -> tuple[str, ...]:
    """Inverse of :func:`path_name`.

    >>> path_parts("`payload`.`user_id`"), path_parts("st.i")
    (('payload', 'user_id'), ('st.i',))
    """
    if not name.startswith("`"):
        return (name,)
    parts: list[str] = []
    i = 0
    while i < len(name):
        if name[i] != "`":
            raise ValueError(f"not a column path name: {name!r}")
        i, current = i + 1, []
        while True:
            end = name.index("`", i)
            current.append(name[i:end])
            if name[end + 1 : end + 2] == "`":  # a doubled backtick is one backtick
                current.append("`")
                i = end + 2
                continue
            i = end + 1
            break
        parts.append("".join(current))
        if i < len(name):
            if name[i] != ".":
                raise ValueError(f"not a column path name: {name!r}")
            i += 1
    return tuple(parts)


# --------------------------------------------------------------------------- SQL building


def _and(*parts: str) -> str:
    kept: list[str] = []
    for p in parts:
        if p == FALSE:
            return FALSE
        if p != TRUE and p not in kept:
            kept.append(p)
    if not kept:
        return TRUE
    return kept[0] if len(kept) == 1 else "(" + " and ".join(kept) + ")"


def _or(*parts: str) -> str:
    kept: list[str] = []
    for p in parts:
        if p == TRUE:
            return TRUE
        if p != FALSE and p not in kept:
            kept.append(p)
    if not kept:
        return FALSE
    return kept[0] if len(kept) == 1 else "(" + " or ".join(kept) + ")"


def _known(sql: str) -> str:
    """A necessary condition that is NULL when a stat is unknown: unknown means 'may match'."""
    return f"coalesce({sql}, true)"


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


_FAMILY_OF_TYPE: dict[str, str] = {
    **dict.fromkeys(
        ("tinyint", "byte", "smallint", "short", "int", "integer", "bigint", "long"), NUMERIC
    ),
    **dict.fromkeys(("float", "real", "double"), NUMERIC),
    "string": STRING,
    "date": DATE,
    "timestamp": LTZ,
    "timestamp_ltz": LTZ,
    "timestamp_ntz": NTZ,
    "boolean": BOOL,
    "bool": BOOL,
}
_DECIMAL_TYPE = re.compile(r"(?:decimal|dec|numeric)(?:\(\d+(?:,\d+)?\))?")


_CHAR_TYPE = re.compile(r"char\((\d+)\)")


@dataclass(frozen=True)
class _Col:
    name: str
    family: str
    has_nans: bool
    char_length: int | None = None  # char(n): Spark pads values and compared literals to n

    def stat(self, stat: str) -> str:
        return _quote(stat_column(self.name, stat))


def _column_info(name: str, spark_type: str) -> _Col | None:
    t = re.sub(r"\s+", "", spark_type.lower())
    if _DECIMAL_TYPE.fullmatch(t):
        return _Col(name, NUMERIC, has_nans=False)
    char = _CHAR_TYPE.fullmatch(t)
    if char:
        return _Col(name, STRING, has_nans=False, char_length=int(char.group(1)))
    family = _FAMILY_OF_TYPE.get(t)
    if family is None:  # collated strings, intervals, nested types...
        return None
    return _Col(name, family, has_nans=t in ("float", "real", "double"))


def _names(node: exp.Expression) -> list[str] | None:
    """The dotted parts of a column reference (``t.payload.user_id``), or None."""
    if isinstance(node, exp.Dot):
        head = _names(node.this)
        if head is None or not isinstance(node.expression, exp.Identifier):
            return None
        return [*head, node.expression.name]
    if not isinstance(node, exp.Column) or not has_only(node, "this", "table", "db", "catalog"):
        return None
    parts = node.parts
    if not all(isinstance(p, exp.Identifier) for p in parts):
        return None
    return [p.name for p in parts]


_NEGATED = {"=": "<>", "<>": "=", "<": ">=", ">=": "<", "<=": ">", ">": "<="}
_FLIPPED = {"=": "=", "<>": "<>", "<": ">", ">": "<", "<=": ">=", ">=": "<="}
_COMPARISONS: dict[type[exp.Expression], str] = {
    exp.EQ: "=",
    exp.NEQ: "<>",
    exp.LT: "<",
    exp.LTE: "<=",
    exp.GT: ">",
    exp.GTE: ">=",
}


class _Translator:
    """Computes, for a predicate node, a may-match condition for it being TRUE (or FALSE)."""

    def __init__(
        self,
        columns: Mapping[tuple[str, ...], _Col],
        unsafe: frozenset[str],
        qualifiers: Collection[tuple[str, ...]],
        top_level: frozenset[str],
    ) -> None:
        self.columns = columns
        self.unsafe = unsafe
        self.qualifiers = qualifiers
        self.top_level = top_level
        # Spark pads a string literal compared with a char(n) column to n, but not in BETWEEN.
        self.pad_chars = True

    # Each method answers: may some row of the file make `node` TRUE (neg=False) or FALSE
    # (neg=True)?  Both are needed because NOT is pushed down: in three-valued logic NOT p holds
    # exactly where p is FALSE (not where p is merely not TRUE).

    def may(self, node: exp.Expression, neg: bool) -> str:
        if isinstance(node, exp.Paren):
            return self.may(node.this, neg)
        if isinstance(node, exp.Not):
            return self.may(node.this, not neg)
        if isinstance(node, exp.And | exp.Or):
            left, right = self.may(node.this, neg), self.may(node.expression, neg)
            # NOT (a AND b) is TRUE iff a or b is FALSE; NOT (a OR b) iff both are FALSE.
            return _and(left, right) if isinstance(node, exp.And) != neg else _or(left, right)
        if isinstance(node, exp.Boolean):
            return TRUE if bool(node.this) != neg else FALSE
        if isinstance(node, exp.Null):
            return FALSE  # NULL is neither TRUE nor FALSE
        if type(node) in _COMPARISONS:
            return self.comparison(node, _COMPARISONS[type(node)], neg)
        if isinstance(node, exp.NullSafeEQ | exp.NullSafeNEQ):
            return self.null_safe_eq(node, neg != isinstance(node, exp.NullSafeNEQ))
        if isinstance(node, exp.Between) and has_only(node, "this", "low", "high"):
            # Spark replaces BETWEEN by exactly this conjunction, coercing each side separately.
            both = exp.And(
                this=exp.GTE(this=node.this, expression=node.args["low"]),
                expression=exp.LTE(this=node.this, expression=node.args["high"]),
            )
            # It does so after padding literals for char columns: BETWEEN compares unpadded.
            padding, self.pad_chars = self.pad_chars, False
            try:
                return self.may(both, neg)
            finally:
                self.pad_chars = padding
        if isinstance(node, exp.In) and has_only(node, "this", "expressions"):
            return self.in_list(node, neg)
        if isinstance(node, exp.Is) and has_only(node, "this", "expression", "negate"):
            return self.is_null(node, neg != bool(node.args.get("negate")))
        if isinstance(node, exp.Like) and has_only(node, "this", "expression", "negate"):
            return self.like(node, neg != bool(node.args.get("negate")))
        if isinstance(node, exp.StartsWith) and has_only(node, "this", "expression"):
            return self.starts_with(node, neg)
        if isinstance(node, exp.Column):
            col = self.column(node)
            if col is not None and col.family == BOOL:  # `where flag` means flag = true
                return self.compare(col, "=", Lit("false" if neg else "true", BOOL, BOOL))
        return TRUE

    def column(self, node: exp.Expression) -> _Col | None:
        """The indexed column or struct leaf ``node`` refers to, resolved as Spark does.

        Spark reads ``a.b`` as column ``b`` of a table ``a`` when ``a`` names the table (longest
        qualifier first), otherwise as field ``b`` of a column ``a``. A first part that is a
        column we do not know ends the search: the reference is not ours to prune on.
        """
        names = _names(node)
        if names is None:
            return None
        lowered = tuple(n.lower() for n in names)
        candidates = [
            lowered[len(q):] for q in sorted(self.qualifiers, key=len, reverse=True)
            if len(q) < len(lowered) and lowered[: len(q)] == q
        ]
        for rest in [*candidates, lowered]:
            if rest[0] in self.top_level:
                return self.columns.get(rest)
        return None

    def operands(self, node: exp.Expression) -> tuple[_Col | None, Lit, bool] | None:
        """(column, literal, column_on_the_right) of a binary node, or None if not of that form."""
        left, right = node.this, node.expression
        lit = literal_of(right, self.unsafe)
        if lit is not None:
            return self.column(left), lit, False
        lit = literal_of(left, self.unsafe)
        if lit is not None:
            return self.column(right), lit, True
        return None

    def comparison(self, node: exp.Expression, op: str, neg: bool) -> str:
        found = self.operands(node)
        if found is None:
            return TRUE
        col, lit, flipped = found
        if lit.family == NULL:
            return FALSE  # x op NULL is NULL: neither it nor its negation is ever TRUE
        if col is None:
            return TRUE
        if flipped:
            op = _FLIPPED[op]
        if neg:
            # NOT (c op L) is TRUE iff c is non-null and c (negated op) L: Spark orders every
            # type totally here (NaN is the largest double and equals itself).
            op = _NEGATED[op]
        return self.compare(col, op, lit)

    def compare(self, col: _Col, op: str, lit: Lit) -> str:
        """May some row satisfy ``col op lit``?"""
        if lit.family not in COMPATIBLE[col.family]:
            return TRUE
        if col.char_length is not None and self.pad_chars:
            # The index bounds the padded values: unpadded literals compare with them as is.
            padded = _char_literal(lit, col.char_length)
            if padded is None:
                return TRUE
            lit = padded
        lo, hi = col.stat("min"), col.stat("max")
        v = lit.sql
        if op == "=":
            cond = _known(f"{lo} <= {v} and {hi} >= {v}")
        elif op == "<>":
            # Only a file whose every non-null value equals v can be skipped.
            cond = _known(f"not ({lo} = {v} and {hi} = {v})")
        elif op in ("<", "<="):
            cond = _known(f"{lo} {op} {v}")
        else:
            cond = _known(f"{hi} {op} {v}")
        # Float min/max ignore NaN, which Spark orders above +inf: a file with NaNs has a larger
        # true max.  That matters wherever max is used, except `= v` with v a plain number (NaN
        # rows cannot equal it).  Conditions on min alone are unaffected.
        if col.has_nans and (op in (">", ">=", "<>") or (op == "=" and not lit.plain)):
            cond = _or(cond, _known(f"{col.stat('nans')} > 0"))
        return cond

    def null_safe_eq(self, node: exp.Expression, neg: bool) -> str:
        found = self.operands(node)
        if found is None:
            return TRUE
        col, lit, _ = found
        if col is None:
            return TRUE
        if lit.family == NULL:
            return self.null_count(col, not neg)  # c <=> NULL is c IS NULL
        if not neg:
            return self.compare(col, "=", lit)
        # NOT (c <=> v): c is NULL or differs from v.
        return _or(self.null_count(col, True), self.compare(col, "<>", lit))

    def null_count(self, col: _Col, is_null: bool) -> str:
        nulls = col.stat("nulls")
        return _known(f"{nulls} > 0" if is_null else f"{nulls} < {_quote('row_count')}")

    def is_null(self, node: exp.Is, is_not: bool) -> str:
        col = self.column(node.this)
        if col is None or not isinstance(node.expression, exp.Null):
            return TRUE  # IS TRUE / IS FALSE / ... are not translated
        return self.null_count(col, not is_not)

    def in_list(self, node: exp.In, neg: bool) -> str:
        col = self.column(node.this)
        values = [literal_of(v, self.unsafe) for v in node.expressions]
        if col is None or not values or any(v is None for v in values):
            return TRUE
        known = [v for v in values if v is not None and v.family != NULL]
        if neg and len(known) < len(values):
            return FALSE  # c NOT IN (.., NULL) is never TRUE
        # Spark casts the column and all values to one common type.  That equals the type of
        # each single comparison only if all values share a coercion group, and a string in the
        # list turns a numeric/date column into a string when ANSI mode is off.
        if len({v.coercion for v in known}) > 1:
            return TRUE
        if any(v.family == STRING for v in known) and col.family != STRING:
            return TRUE
        if neg:
            return _and(*(self.compare(col, "<>", v) for v in known))
        return _or(*(self.compare(col, "=", v) for v in known))

    def like(self, node: exp.Like, neg: bool) -> str:
        col = self.column(node.this)
        pattern = literal_of(node.expression, self.unsafe)
        if neg or col is None or col.family != STRING or pattern is None:
            return TRUE
        if pattern.family == NULL:
            return FALSE
        if pattern.value is None:
            return TRUE
        # Backslashes (the default LIKE escape) never reach here: see safe_string.
        cut = min((i for i, ch in enumerate(pattern.value) if ch in "%_"), default=None)
        if cut is None:
            return self.compare(col, "=", pattern)  # no wildcard: plain equality
        return self.prefix(col, pattern.value[:cut])

    def starts_with(self, node: exp.StartsWith, neg: bool) -> str:
        col = self.column(node.this)
        prefix = literal_of(node.expression, self.unsafe)
        if neg or col is None or col.family != STRING or prefix is None:
            return TRUE
        if prefix.family == NULL:
            return FALSE
        return TRUE if prefix.value is None else self.prefix(col, prefix.value)

    def prefix(self, col: _Col, prefix: str) -> str:
        """May some value start with ``prefix``?  (Spark orders strings by code point.)"""
        if not prefix:
            return TRUE
        cond = f"{col.stat('max')} >= '{prefix}'"
        upper = _prefix_upper_bound(prefix)
        if upper is not None:
            cond += f" and {col.stat('min')} < '{upper}'"
        return _known(cond)


def _char_literal(lit: Lit, length: int) -> Lit | None:
    """The literal as Spark compares it with a char(length) column: padded with spaces.

    A longer literal makes Spark pad the column instead; that is left unpruned.
    """
    if lit.value is None or len(lit.value) > length:
        return None
    padded = lit.value.ljust(length)
    return Lit(f"'{padded}'", STRING, STRING, value=padded)


def _prefix_upper_bound(prefix: str) -> str | None:
    """Smallest convenient string above every string that starts with ``prefix``."""
    chars = list(prefix)
    while chars:
        code = ord(chars[-1]) + 1
        if 0xD800 <= code <= 0xDFFF:  # surrogates are not characters
            code = 0xE000
        # A larger bound is still a bound: step over quotes, backslashes and control characters
        # so that the literal needs no escaping and stays printable.
        while code <= 0x10FFFF and (chr(code) in "'\\" or unicodedata.category(chr(code)) == "Cc"):
            code += 1
        if code <= 0x10FFFF:
            chars[-1] = chr(code)
            return "".join(chars)
        chars.pop()  # U+10FFFF cannot grow: bound the shorter prefix instead
    return None


def index_column_types(index_columns: Iterable[tuple[str, str]],
                       table_columns: Mapping[str, str]) -> dict[str, str]:
    """Column types for :func:`may_match_sql`: from the index's ``<c>__min`` columns, with
    the table's own declaration where it is ``char(n)`` (the index holds it as string).

    >>> index_column_types([("c__min", "string"), ("c__nulls", "bigint")], {"c": "char(5)"})
    {'c': 'char(5)'}
    """
    declared = {name.lower(): spark_type.lower() for name, spark_type in table_columns.items()}
    types: dict[str, str] = {}
    for column, spark_type in index_columns:
        name, _, stat = column.rpartition("__")
        if stat.lower() == "min" and name:
            own = declared.get(name.lower(), "")
            types[name] = own if _CHAR_TYPE.fullmatch(own.replace(" ", "")) else spark_type
    return types


def may_match_sql(
    predicate: str,
    column_types: Mapping[str, str],
    *,
    qualifiers: Collection[str] = (),
    table_columns: Collection[str] | None = None,
) -> str:
    """Spark SQL over the index columns, TRUE for every file that may hold a matching row.

    ``column_types`` maps each indexed column (its :func:`path_name`) to its Spark simple
    type string ("int", "decimal(10,2)", "char(5)", ...).  ``qualifiers`` are the dotted
    names a qualified reference may use for the table ("events", "analytics.events").
    ``table_columns`` are all top-level columns of the table, indexed or not; without them
    only the indexed ones are known, and a qualified name never prunes.  The result is never
    NULL; it is ``"true"`` when nothing can be pruned.
    """
    tree, unsafe = parse_names(predicate)
    columns: dict[tuple[str, ...], _Col] = {}
    for name, spark_type in column_types.items():
        info = _column_info(name, spark_type)
        if info is not None:
            columns[tuple(p.lower() for p in path_parts(name))] = info
    if table_columns is None:
        top_level = frozenset(path[0] for path in columns)
        quals: frozenset[tuple[str, ...]] = frozenset()
        if any(len(path) > 1 for path in columns):
            # A struct and a table could share a name: without the table's columns, a
            # dotted name is not resolved at all.
            columns = {path: col for path, col in columns.items() if len(path) == 1}
            top_level = frozenset(path[0] for path in columns)
    else:
        top_level = frozenset(c.lower() for c in table_columns)
        quals = frozenset(tuple(p.lower() for p in q.split(".")) for q in qualifiers)
    return _Translator(columns, unsafe, quals, top_level).may(tree, neg=False)
