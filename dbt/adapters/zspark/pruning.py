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

import sqlglot
from sqlglot import exp
from sqlglot.dialects.spark import Spark
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokens import TokenType

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

_ALLOWED = (
    "expected one boolean Spark SQL expression over the model's columns, e.g. "
    "\"s_city = 'X' and d_year >= 1995\" (no ';', statements or subqueries)"
)


class PredicateError(ValueError):
    """A ``zspark_scan`` predicate that is not a single boolean SQL expression."""


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


# --------------------------------------------------------------------------- parsing


def _error(predicate: str, what: str) -> PredicateError:
    return PredicateError(f"zspark_scan: predicate {predicate!r} {what}; {_ALLOWED}")


#: sqlglot's words for an operator that lacks an operand (its class names them).
_MISSING_OPERAND = re.compile(r"Required keyword: '\w+' missing for <class '[\w.]*?(\w+)'>\."
                              r"(?: Line \d+, Col: (\d+)\.)?")


def _parse_problem(error: Exception) -> str:
    """What is wrong with a predicate, in a user's words rather than the parser's.

    >>> _parse_problem(ParseError("Required keyword: 'expression' missing for "
    ...                           "<class 'sqlglot.expressions.core.EQ'>. Line 1, Col: 3."))
    'an operand of = is missing, at column 3'
    """
    first = str(error).splitlines()[0]
    missing = _MISSING_OPERAND.search(first)
    if missing is None:
        return first
    operator = _OPERATOR_WORDS.get(missing.group(1), missing.group(1).lower())
    where = f", at column {missing.group(2)}" if missing.group(2) else ""
    return f"an operand of {operator} is missing{where}"


_OPERATOR_WORDS = {"EQ": "=", "NEQ": "!=", "GT": ">", "GTE": ">=", "LT": "<", "LTE": "<=",
                   "And": "and", "Or": "or", "Not": "not", "In": "in", "Like": "like",
                   "Between": "between", "Add": "+", "Sub": "-", "Mul": "*", "Div": "/"}


def _parse(predicate: str) -> tuple[exp.Expression, frozenset[str]]:
    """Parse and validate; also return the values of string literals we must not re-render."""
    if not isinstance(predicate, str):
        raise PredicateError(f"zspark_scan: predicate must be a string, got {predicate!r}")
    if not predicate.strip():
        raise _error(predicate, "is empty")
    try:
        tokens = Spark().tokenize(predicate)
    except (TokenError, ParseError) as e:
        raise _error(predicate, f"cannot be tokenized ({e})") from None
    if any(t.token_type == TokenType.SEMICOLON for t in tokens):
        raise _error(predicate, "contains ';'")
    # sqlglot and Spark disagree on some escapes (e.g. '\Z'), and Spark's own reading depends on
    # spark.sql.parser.escapedStringLiterals, so a literal spelled with a backslash is never used.
    unsafe = frozenset(
        t.text
        for t in tokens
        if t.token_type == TokenType.STRING and "\\" in predicate[t.start : t.end + 1]
    )
    try:
        trees = [t for t in sqlglot.parse(predicate, read="spark") if t is not None]
    except (ParseError, TokenError) as e:
        raise _error(predicate, f"does not parse ({_parse_problem(e)})") from None
    if len(trees) != 1:
        raise _error(predicate, f"holds {len(trees)} statements")
    tree = trees[0]
    if (
        not isinstance(tree, exp.Expression)
        or not isinstance(tree, exp.Condition)
        or isinstance(tree, exp.Query)
    ):
        raise _error(predicate, f"is a {type(tree).__name__} statement, not an expression")
    for node in tree.walk():
        if isinstance(node, exp.Query | exp.Exists) and (
            not isinstance(node, exp.Exists) or isinstance(node.this, exp.Query)
        ):
            raise _error(predicate, "contains a subquery")
        if isinstance(node, exp.DDL | exp.DML | exp.Command):
            raise _error(predicate, f"contains a {type(node).__name__} statement")
    return tree, unsafe


def parse_predicate(predicate: str) -> exp.Expression:
    """Parse ``predicate`` (Spark SQL) into one sqlglot expression, or raise PredicateError."""
    return _parse(predicate)[0]


# --------------------------------------------------------------------------- literals

# Spark type families: the side a comparison casts is decided per family pair (see _COMPATIBLE).
_NUMERIC = "numeric"
_STRING = "string"
_DATE = "date"
_TS = "timestamp"  # TIMESTAMP keyword: LTZ unless spark.sql.timestampType says otherwise
_LTZ = "timestamp_ltz"
_NTZ = "timestamp_ntz"
_BOOL = "boolean"
_NULL = "null"

# Column family -> literal families whose comparison leaves the column uncast or casts it
# monotonically (int -> bigint/double/decimal, date -> timestamp).  A string column compared with
# a number is cast to a number, and a timestamp_ntz column compared with an LTZ timestamp is cast
# through the session time zone (not monotone across DST gaps): both are left out.
_COMPATIBLE: dict[str, frozenset[str]] = {
    _NUMERIC: frozenset({_NUMERIC, _STRING}),
    _STRING: frozenset({_STRING}),
    _DATE: frozenset({_STRING, _DATE, _TS, _LTZ, _NTZ}),
    _LTZ: frozenset({_STRING, _DATE, _TS, _LTZ, _NTZ}),
    _NTZ: frozenset({_STRING, _DATE, _NTZ}),
    _BOOL: frozenset({_BOOL}),
}

_NUMBER = re.compile(r"(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_INTEGRAL_TYPES = {
    exp.DataType.Type.TINYINT: "tinyint",
    exp.DataType.Type.SMALLINT: "smallint",
    exp.DataType.Type.INT: "int",
    exp.DataType.Type.BIGINT: "bigint",
}


@dataclass(frozen=True)
class _Lit:
    """A literal re-rendered for Spark.

    ``coercion`` groups literals that IN-lists may mix without changing the common type Spark
    picks; ``plain`` marks bare numbers, which can never be NaN.
    """

    sql: str
    family: str
    coercion: str
    plain: bool = False
    value: str | None = None  # text of a string literal


def _safe_string(value: str, unsafe: frozenset[str]) -> bool:
    if value in unsafe or "'" in value or "\\" in value:
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates: not a Spark string
        return False
    return True


def _number(text: str) -> _Lit | None:
    if not _NUMBER.fullmatch(text):
        return None
    digits = sum(ch.isdigit() for ch in text.lower().split("e")[0])
    if "e" in text.lower():
        coercion = "double"
    elif digits <= 38:
        coercion = "exact"  # int, bigint or decimal: comparisons stay exact
    else:
        coercion = f"number:{text}"  # too wide for a decimal: keep it apart from everything
    return _Lit(text, _NUMERIC, coercion, plain=True)


def _cast_target(to: exp.DataType) -> tuple[str, str, str] | None:
    """(Spark type, family, coercion group) of a CAST target we understand."""
    kind = to.this
    params = to.expressions
    if kind in _INTEGRAL_TYPES and not params:
        return _INTEGRAL_TYPES[kind], _NUMERIC, "exact"
    if kind == exp.DataType.Type.DECIMAL:
        values: list[str] = []
        for p in params:
            if not (isinstance(p, exp.DataTypeParam) and isinstance(p.this, exp.Literal)):
                return None
            if p.this.is_string or not p.this.this.isdigit() or p.args.get("expression"):
                return None
            values.append(p.this.this)
        if len(values) > 2:
            return None
        spark_type = f"decimal({','.join(values)})" if values else "decimal"
        return spark_type, _NUMERIC, "exact"
    simple = {
        exp.DataType.Type.FLOAT: ("float", _NUMERIC, "float"),
        exp.DataType.Type.DOUBLE: ("double", _NUMERIC, "double"),
        exp.DataType.Type.DATE: ("date", _DATE, _DATE),
        exp.DataType.Type.TIMESTAMPTZ: ("timestamp", _TS, _TS),  # sqlglot's name for TIMESTAMP
        exp.DataType.Type.TIMESTAMPLTZ: ("timestamp_ltz", _LTZ, _LTZ),
        exp.DataType.Type.TIMESTAMPNTZ: ("timestamp_ntz", _NTZ, _NTZ),
        exp.DataType.Type.BOOLEAN: ("boolean", _BOOL, _BOOL),
    }
    # STRING is left out on purpose: sqlglot reads char(n)/varchar(n) as plain text too.
    if kind in simple and not params:
        return simple[kind]
    return None


def _only(node: exp.Expression, *allowed: str) -> bool:
    """True if ``node`` sets no argument besides ``allowed`` (guards against new sqlglot flags)."""
    return all(k in allowed or not v for k, v in node.args.items())


def _literal(node: exp.Expression, unsafe: frozenset[str]) -> _Lit | None:
    """The literal ``node`` stands for, or None if it is anything else."""
    if isinstance(node, exp.Null):
        return _Lit("null", _NULL, _NULL)
    if isinstance(node, exp.Boolean):
        return _Lit("true" if node.this else "false", _BOOL, _BOOL)
    if isinstance(node, exp.Literal):
        text = node.this
        if not isinstance(text, str):
            return None
        if node.is_string:
            if not _safe_string(text, unsafe):
                return None
            return _Lit(f"'{text}'", _STRING, _STRING, value=text)
        return _number(text)
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal):
        inner = _literal(node.this, unsafe)
        if inner is None or inner.family != _NUMERIC:
            return None
        # Parenthesised so that no rendering can ever produce '--' (a comment).
        return _Lit(f"(-{inner.sql})", _NUMERIC, inner.coercion, plain=True)
    if isinstance(node, exp.Cast):  # also TryCast; DATE '..' etc. arrive as casts too
        if not _only(node, "this", "to", "safe", "requires_string"):
            return None
        inner = _literal(node.this, unsafe)
        target = _cast_target(node.to) if isinstance(node.to, exp.DataType) else None
        if inner is None or target is None:
            return None
        spark_type, family, coercion = target
        if inner.family == _NULL:
            return inner
        # sqlglot reads Spark's CAST as TryCast (NULL on failure, ANSI off); 'safe' is TRY_CAST.
        func = "try_cast" if node.args.get("safe") else "cast"
        return _Lit(f"{func}({inner.sql} as {spark_type})", family, coercion)
    return None


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
        ("tinyint", "byte", "smallint", "short", "int", "integer", "bigint", "long"), _NUMERIC
    ),
    **dict.fromkeys(("float", "real", "double"), _NUMERIC),
    "string": _STRING,
    "date": _DATE,
    "timestamp": _LTZ,
    "timestamp_ltz": _LTZ,
    "timestamp_ntz": _NTZ,
    "boolean": _BOOL,
    "bool": _BOOL,
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
        return _Col(name, _NUMERIC, has_nans=False)
    char = _CHAR_TYPE.fullmatch(t)
    if char:
        return _Col(name, _STRING, has_nans=False, char_length=int(char.group(1)))
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
    if not isinstance(node, exp.Column) or not _only(node, "this", "table", "db", "catalog"):
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
        if isinstance(node, exp.Between) and _only(node, "this", "low", "high"):
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
        if isinstance(node, exp.In) and _only(node, "this", "expressions"):
            return self.in_list(node, neg)
        if isinstance(node, exp.Is) and _only(node, "this", "expression", "negate"):
            return self.is_null(node, neg != bool(node.args.get("negate")))
        if isinstance(node, exp.Like) and _only(node, "this", "expression", "negate"):
            return self.like(node, neg != bool(node.args.get("negate")))
        if isinstance(node, exp.StartsWith) and _only(node, "this", "expression"):
            return self.starts_with(node, neg)
        if isinstance(node, exp.Column):
            col = self.column(node)
            if col is not None and col.family == _BOOL:  # `where flag` means flag = true
                return self.compare(col, "=", _Lit("false" if neg else "true", _BOOL, _BOOL))
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

    def operands(self, node: exp.Expression) -> tuple[_Col | None, _Lit, bool] | None:
        """(column, literal, column_on_the_right) of a binary node, or None if not of that form."""
        left, right = node.this, node.expression
        lit = _literal(right, self.unsafe)
        if lit is not None:
            return self.column(left), lit, False
        lit = _literal(left, self.unsafe)
        if lit is not None:
            return self.column(right), lit, True
        return None

    def comparison(self, node: exp.Expression, op: str, neg: bool) -> str:
        found = self.operands(node)
        if found is None:
            return TRUE
        col, lit, flipped = found
        if lit.family == _NULL:
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

    def compare(self, col: _Col, op: str, lit: _Lit) -> str:
        """May some row satisfy ``col op lit``?"""
        if lit.family not in _COMPATIBLE[col.family]:
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
        if lit.family == _NULL:
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
        values = [_literal(v, self.unsafe) for v in node.expressions]
        if col is None or not values or any(v is None for v in values):
            return TRUE
        known = [v for v in values if v is not None and v.family != _NULL]
        if neg and len(known) < len(values):
            return FALSE  # c NOT IN (.., NULL) is never TRUE
        # Spark casts the column and all values to one common type.  That equals the type of
        # each single comparison only if all values share a coercion group, and a string in the
        # list turns a numeric/date column into a string when ANSI mode is off.
        if len({v.coercion for v in known}) > 1:
            return TRUE
        if any(v.family == _STRING for v in known) and col.family != _STRING:
            return TRUE
        if neg:
            return _and(*(self.compare(col, "<>", v) for v in known))
        return _or(*(self.compare(col, "=", v) for v in known))

    def like(self, node: exp.Like, neg: bool) -> str:
        col = self.column(node.this)
        pattern = _literal(node.expression, self.unsafe)
        if neg or col is None or col.family != _STRING or pattern is None:
            return TRUE
        if pattern.family == _NULL:
            return FALSE
        if pattern.value is None:
            return TRUE
        # Backslashes (the default LIKE escape) never reach here: see _safe_string.
        cut = min((i for i, ch in enumerate(pattern.value) if ch in "%_"), default=None)
        if cut is None:
            return self.compare(col, "=", pattern)  # no wildcard: plain equality
        return self.prefix(col, pattern.value[:cut])

    def starts_with(self, node: exp.StartsWith, neg: bool) -> str:
        col = self.column(node.this)
        prefix = _literal(node.expression, self.unsafe)
        if neg or col is None or col.family != _STRING or prefix is None:
            return TRUE
        if prefix.family == _NULL:
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


def _char_literal(lit: _Lit, length: int) -> _Lit | None:
    """The literal as Spark compares it with a char(length) column: padded with spaces.

    A longer literal makes Spark pad the column instead; that is left unpruned.
    """
    if lit.value is None or len(lit.value) > length:
        return None
    padded = lit.value.ljust(length)
    return _Lit(f"'{padded}'", _STRING, _STRING, value=padded)


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
    tree, unsafe = _parse(predicate)
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
