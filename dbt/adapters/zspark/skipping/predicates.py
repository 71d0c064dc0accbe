"""A ``zspark_scan`` predicate parsed (sqlglot, Spark dialect) and its literals typed as
Spark types them; ``pruning.py`` turns the parsed predicate into a file condition."""

from __future__ import annotations

import re
from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.dialects.spark import Spark
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokens import TokenType

_ALLOWED = (
    "expected one boolean Spark SQL expression over the model's columns, e.g. "
    "\"s_city = 'X' and d_year >= 1995\" (no ';', statements or subqueries)"
)


class PredicateError(ValueError):
    """A ``zspark_scan`` predicate that is not a single boolean SQL expression."""




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


def parse_names(predicate: str) -> tuple[exp.Expression, frozenset[str]]:
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
    return parse_names(predicate)[0]


# --------------------------------------------------------------------------- literals

# Spark type families: the side a comparison casts is decided per family pair (see COMPATIBLE).
NUMERIC = "numeric"
STRING = "string"
DATE = "date"
_TS = "timestamp"  # TIMESTAMP keyword: LTZ unless spark.sql.timestampType says otherwise
LTZ = "timestamp_ltz"
NTZ = "timestamp_ntz"
BOOL = "boolean"
NULL = "null"

# Column family -> literal families whose comparison leaves the column uncast or casts it
# monotonically (int -> bigint/double/decimal, date -> timestamp).  A string column compared with
# a number is cast to a number, and a timestamp_ntz column compared with an LTZ timestamp is cast
# through the session time zone (not monotone across DST gaps): both are left out.
COMPATIBLE: dict[str, frozenset[str]] = {
    NUMERIC: frozenset({NUMERIC, STRING}),
    STRING: frozenset({STRING}),
    DATE: frozenset({STRING, DATE, _TS, LTZ, NTZ}),
    LTZ: frozenset({STRING, DATE, _TS, LTZ, NTZ}),
    NTZ: frozenset({STRING, DATE, NTZ}),
    BOOL: frozenset({BOOL}),
}

_NUMBER = re.compile(r"(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_INTEGRAL_TYPES = {
    exp.DataType.Type.TINYINT: "tinyint",
    exp.DataType.Type.SMALLINT: "smallint",
    exp.DataType.Type.INT: "int",
    exp.DataType.Type.BIGINT: "bigint",
}


@dataclass(frozen=True)
class Lit:
    """A literal re-rendered for Spark.

    ``coercion`` groups literals that IN-lists may mix without changing the common type Spark
    picks; ``plain`` marks bare numbers, which can never be NaN.
    """

    sql: str
    family: str
    coercion: str
    plain: bool = False
    value: str | None = None  # text of a string literal


def safe_string(value: str, unsafe: frozenset[str]) -> bool:
    if value in unsafe or "'" in value or "\\" in value:
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates: not a Spark string
        return False
    return True


def _number(text: str) -> Lit | None:
    if not _NUMBER.fullmatch(text):
        return None
    digits = sum(ch.isdigit() for ch in text.lower().split("e")[0])
    if "e" in text.lower():
        coercion = "double"
    elif digits <= 38:
        coercion = "exact"  # int, bigint or decimal: comparisons stay exact
    else:
        coercion = f"number:{text}"  # too wide for a decimal: keep it apart from everything
    return Lit(text, NUMERIC, coercion, plain=True)


def _cast_target(to: exp.DataType) -> tuple[str, str, str] | None:
    """(Spark type, family, coercion group) of a CAST target we understand."""
    kind = to.this
    params = to.expressions
    if kind in _INTEGRAL_TYPES and not params:
        return _INTEGRAL_TYPES[kind], NUMERIC, "exact"
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
        return spark_type, NUMERIC, "exact"
    simple = {
        exp.DataType.Type.FLOAT: ("float", NUMERIC, "float"),
        exp.DataType.Type.DOUBLE: ("double", NUMERIC, "double"),
        exp.DataType.Type.DATE: ("date", DATE, DATE),
        exp.DataType.Type.TIMESTAMPTZ: ("timestamp", _TS, _TS),  # sqlglot's name for TIMESTAMP
        exp.DataType.Type.TIMESTAMPLTZ: ("timestamp_ltz", LTZ, LTZ),
        exp.DataType.Type.TIMESTAMPNTZ: ("timestamp_ntz", NTZ, NTZ),
        exp.DataType.Type.BOOLEAN: ("boolean", BOOL, BOOL),
    }
    # STRING is left out on purpose: sqlglot reads char(n)/varchar(n) as plain text too.
    if kind in simple and not params:
        return simple[kind]
    return None


def has_only(node: exp.Expression, *allowed: str) -> bool:
    """True if ``node`` sets no argument besides ``allowed`` (guards against new sqlglot flags)."""
    return all(k in allowed or not v for k, v in node.args.items())


def literal_of(node: exp.Expression, unsafe: frozenset[str]) -> Lit | None:
    """The literal ``node`` stands for, or None if it is anything else."""
    if isinstance(node, exp.Null):
        return Lit("null", NULL, NULL)
    if isinstance(node, exp.Boolean):
        return Lit("true" if node.this else "false", BOOL, BOOL)
    if isinstance(node, exp.Literal):
        text = node.this
        if not isinstance(text, str):
            return None
        if node.is_string:
            if not safe_string(text, unsafe):
                return None
            return Lit(f"'{text}'", STRING, STRING, value=text)
        return _number(text)
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal):
        inner = literal_of(node.this, unsafe)
        if inner is None or inner.family != NUMERIC:
            return None
        # Parenthesised so that no rendering can ever produce '--' (a comment).
        return Lit(f"(-{inner.sql})", NUMERIC, inner.coercion, plain=True)
    if isinstance(node, exp.Cast):  # also TryCast; DATE '..' etc. arrive as casts too
        if not has_only(node, "this", "to", "safe", "requires_string"):
            return None
        inner = literal_of(node.this, unsafe)
        target = _cast_target(node.to) if isinstance(node.to, exp.DataType) else None
        if inner is None or target is None:
            return None
        spark_type, family, coercion = target
        if inner.family == NULL:
            return inner
        # sqlglot reads Spark's CAST as TryCast (NULL on failure, ANSI off); 'safe' is TRY_CAST.
        func = "try_cast" if node.args.get("safe") else "cast"
        return Lit(f"{func}({inner.sql} as {spark_type})", family, coercion)
    return None


