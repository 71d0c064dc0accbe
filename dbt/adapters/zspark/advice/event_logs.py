"""Query history from Spark's event logs: each scan of a table with the filters Spark
pushed to it, as a predicate ``zspark_scan`` takes.

An event log holds one JSON event per line; a ``SparkListenerSQLExecutionStart`` event
carries the query's physical plan, whose file scans name their table and list the filters
pushed to the reader (``PushedFilters: [EqualTo(city,c3), In(brand, [1,2])]``). Logs are
read whole, by the executors (``scan_batches``, through Hadoop: local disk or an object
store), written plain or zstd-compressed (Spark 4's default codec), in the rolling
(``eventlog_v2_*`` folders) or the single-file form; logs of other codecs are counted and
skipped. Runs on executors: imports only the standard library and pyarrow
(``reach/executor_code.py``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import pyarrow as pa

EXECUTION_START = "SparkListenerSQLExecutionStart"
#: What each scan row holds: the table, its pushed filters, the log it came from.
SCAN_FIELDS = (("table_name", pa.string()), ("pushed_filters", pa.string()),
               ("log_path", pa.string()), ("started_ms", pa.string()))
#: Rows of a log Spark's codecs wrote that cannot be read here.
UNREADABLE = "<unreadable codec>"
_CODECS = {"zstd": "zstd", "zst": "zstd", "gz": "gzip"}
_SKIPPED_CODECS = ("lz4", "lzf", "snappy")


def log_lines(path: str, content: bytes) -> Iterator[str] | None:
    """The lines of one event log file (None: a codec read nowhere here)."""
    name = path.rsplit("/", 1)[-1].removesuffix(".inprogress")
    suffix = name.rsplit(".", 1)[-1] if "." in name else ""
    if suffix in _SKIPPED_CODECS:
        return None
    data = content
    if suffix in _CODECS:
        with pa.input_stream(pa.BufferReader(content), compression=_CODECS[suffix]) as stream:
            data = stream.read()
    return iter(data.decode("utf-8", errors="replace").splitlines())


#: Marks an Iceberg scan's filters (its own expressions' text) among pushed filters.
ICEBERG_FILTERS = "iceberg:"
_ICEBERG_SCAN = re.compile(r"IcebergScan\(.*?, filters=(.*?), runtimeFilters=", re.DOTALL)


def plan_scans(event: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """(table, pushed filters) of each file scan of a query's plan: a file source's
    ``PushedFilters``, or an Iceberg scan's ``filters=`` marked :data:`ICEBERG_FILTERS`."""
    def walk(node: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
        name = str(node.get("nodeName", ""))
        metadata = node.get("metadata") or {}
        if name.startswith("Scan ") and "PushedFilters" in metadata:
            yield name.rsplit(" ", 1)[-1], str(metadata["PushedFilters"])
        elif name.startswith("BatchScan "):
            found = _ICEBERG_SCAN.search(str(node.get("simpleString", "")))
            if found is not None:
                yield name.rsplit(" ", 1)[-1], ICEBERG_FILTERS + found.group(1)
        for child in node.get("children") or ():
            yield from walk(child)
    yield from walk(event.get("sparkPlanInfo") or {})


def scan_rows(path: str, content: bytes,
              tables: frozenset[str]) -> list[tuple[str, str, str, str]]:
    """The scans of ``tables`` (lower-case ``schema.table`` names; a scan's may carry its
    catalog too) in one log file, with the time its query started (epoch milliseconds)."""
    lines = log_lines(path, content)
    if lines is None:
        return [(UNREADABLE, "", path, "")]
    found = []
    for line in lines:
        if EXECUTION_START not in line:
            continue
        try:
            event = json.loads(line)
        except ValueError:  # the last line of a log still being written
            continue
        if not str(event.get("Event", "")).endswith(EXECUTION_START):
            continue
        for table, filters in plan_scans(event):
            match = matching_table(table, tables)
            if match is not None:
                found.append((match, filters, path, str(event.get("time") or "")))
    return found


def matching_table(scanned: str, tables: frozenset[str]) -> str | None:
    """Which of ``tables`` (lower-case ``schema.table``) a plan's scan names (its name may
    carry the catalog too), or None."""
    lowered = scanned.lower()
    return next((t for t in tables if lowered == t or lowered.endswith("." + t)), None)


def scan_batches(batches: Iterable[pa.RecordBatch],
                 tables: frozenset[str]) -> Iterator[pa.RecordBatch]:
    """``binaryFile`` rows (path, content) -> scan rows of :data:`SCAN_FIELDS`."""
    schema = pa.schema(list(SCAN_FIELDS))
    for batch in batches:
        paths = batch.column("path").to_pylist()
        contents = batch.column("content").to_pylist()
        rows = [row for path, content in zip(paths, contents, strict=True)
                for row in scan_rows(path, content or b"", tables)]
        yield pa.RecordBatch.from_pylist(
            [dict(zip(schema.names, row, strict=True)) for row in rows], schema=schema)


# ----------------------------------------------------------------- pushed filters -> SQL

_COMPARISONS = {"EqualTo": "=", "EqualNullSafe": "<=>", "GreaterThan": ">",
                "GreaterThanOrEqual": ">=", "LessThan": "<", "LessThanOrEqual": "<="}
_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


def _split_top(text: str, separator: str) -> list[str]:
    """``text`` split at ``separator`` outside brackets and parentheses."""
    parts, depth, start, i = [], 0, 0, 0
    while i < len(text):
        char = text[i]
        if char in "([":
            depth += 1
        elif char in ")]":
            depth -= 1
        elif depth == 0 and text.startswith(separator, i):
            parts.append(text[start:i])
            start = i + len(separator)
            i = start
            continue
        i += 1
    parts.append(text[start:])
    return parts


def _literal(value: str, spark_type: str) -> str | None:
    """A pushed filter's value (its Java text) as a SQL literal of the column's type."""
    family = re.split(r"[(<]", spark_type.lower(), maxsplit=1)[0].strip()
    if family in ("string", "varchar", "char"):
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    if family in ("tinyint", "smallint", "int", "bigint", "float", "double", "decimal",
                  "byte", "short", "integer", "long"):
        return value if _NUMBER.fullmatch(value) else None
    if family == "boolean":
        return value if value in ("true", "false") else None
    if family == "date" and re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
        return f"date'{value}'"
    if family in ("timestamp", "timestamp_ntz") and \
            re.fullmatch(r"\d{4}-\d{2}-\d{2}[ T][\d:.]+", value):
        return f"{family}'{value}'"
    return None


def _filter_sql(text: str, types: Mapping[str, str]) -> str | None:
    """One pushed filter as SQL over ``types``' columns (None: nothing it can say)."""
    head = text.find("(")
    if head <= 0 or not text.endswith(")"):
        return None
    name, inner = text[:head], text[head + 1:-1]
    columns = {c.lower(): c for c in types}
    if name in ("And", "Or"):
        parts = [_filter_sql(p.strip(), types) for p in _split_top(inner, ",")]
        if len(parts) != 2:
            return None
        if name == "And":
            kept = [p for p in parts if p is not None]
            return " AND ".join(f"({p})" for p in kept) if kept else None
        return None if None in parts else f"({parts[0]}) OR ({parts[1]})"
    if name in _COMPARISONS or name in ("In", "StringStartsWith"):
        column, _, value = inner.partition(",")
        found = columns.get(column.strip().lower())
        if found is None:
            return None
        quoted = "`" + found.replace("`", "``") + "`"
        if name == "In":
            values = value.strip()
            if not (values.startswith("[") and values.endswith("]")):
                return None
            literals = [_literal(v, types[found]) for v in values[1:-1].split(",")]
            if not literals or None in literals:
                return None
            return f"{quoted} IN ({', '.join(str(v) for v in literals)})"
        if name == "StringStartsWith":
            if any(c in value for c in "%_\\'"):
                return None
            return f"{quoted} LIKE '{value}%'"
        literal = _literal(value, types[found])
        return None if literal is None else f"{quoted} {_COMPARISONS[name]} {literal}"
    return None  # IsNotNull says nothing a file's range can answer; Not and the rest: skip


def filters_predicate(pushed: str, types: Mapping[str, str]) -> str | None:
    """A scan's ``PushedFilters`` text as one predicate over the table's columns, or None
    when none of its filters can be read (values whose text is ambiguous are left out)."""
    if pushed.startswith(ICEBERG_FILTERS):
        return iceberg_predicate(pushed.removeprefix(ICEBERG_FILTERS), types)
    text = pushed.strip()
    if not (text.startswith("[") and text.endswith("]")):
        return None
    parts = [_filter_sql(p.strip(), types) for p in _split_top(text[1:-1], ", ") if p.strip()]
    kept = [p for p in parts if p is not None]
    return " AND ".join(kept) if kept else None


def _split_terms(text: str) -> list[str]:
    """An Iceberg scan's filters split at ``, `` outside quotes and parentheses."""
    parts, depth, quoted, start = [], 0, False, 0
    for i, char in enumerate(text):
        if char == "'":
            quoted = not quoted
        elif not quoted and char == "(":
            depth += 1
        elif not quoted and char == ")":
            depth -= 1
        elif not quoted and depth == 0 and text.startswith(", ", i):
            parts.append(text[start:i])
            start = i + 2
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def iceberg_predicate(filters: str, types: Mapping[str, str]) -> str | None:
    """An Iceberg scan's filters (its expressions' text: dates as days and timestamps as
    microseconds since the epoch) as one predicate over ``types``' columns."""
    import datetime

    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import ParseError, TokenError

    columns = {c.lower(): c for c in types}
    epoch = datetime.date(1970, 1, 1)

    def typed(node: Any, column: str) -> Any:
        family = re.split(r"[(<]", types[column].lower(), maxsplit=1)[0].strip()
        if not (isinstance(node, exp.Literal) and not node.is_string):
            return node
        number = int(node.this)
        if family == "date":
            day = epoch + datetime.timedelta(days=number)
            return sqlglot.parse_one(f"date'{day}'", read="spark")
        if family in ("timestamp", "timestamp_ntz"):
            moment = datetime.datetime(1970, 1, 1) + datetime.timedelta(microseconds=number)
            zone = "+00:00" if family == "timestamp" else ""
            return sqlglot.parse_one(f"{family}'{moment.isoformat(sep=' ')}{zone}'",
                                     read="spark")
        return node

    def fix(node: Any) -> Any:
        column = node.args.get("this")
        if isinstance(node, exp.Binary | exp.In) and isinstance(column, exp.Column) \
                and column.name.lower() in columns:
            name = columns[column.name.lower()]
            if isinstance(node, exp.In):
                node.set("expressions", [typed(e, name) for e in node.expressions])
            else:
                node.set("expression", typed(node.expression, name))
        return node

    kept = []
    for term in _split_terms(filters):
        if term.upper().endswith("IS NOT NULL"):  # says nothing a file's range answers
            continue
        try:
            tree = sqlglot.parse_one(term, read="spark")
        except (ParseError, TokenError):
            continue
        names = {c.name.lower() for c in tree.find_all(exp.Column)}
        if not names or not names <= set(columns):
            continue
        kept.append(tree.transform(fix).sql(dialect="spark"))
    return " AND ".join(kept) if kept else None
