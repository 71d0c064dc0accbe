"""Skip-aware scans and ``skip_coverage``: a predicate checked, turned into the files it
provably cannot match from the table's file statistics, and the scan that leaves them.
"""

from __future__ import annotations

from typing import Any

from dbt.adapters.events.logging import AdapterLogger
from dbt_common.exceptions import CompilationError, DbtRuntimeError

from dbt.adapters.zspark.core.sql_text import sql_string
from dbt.adapters.zspark.formats import (
    format_table,
)
from dbt.adapters.zspark.services.context import RunContext
from dbt.adapters.zspark.services.tables import TableFiles
from dbt.adapters.zspark.skipping import pruning
from dbt.adapters.zspark.skipping.scan import FileKey, scan_sql, skippable_files_sql

logger = AdapterLogger("zspark")


class SkipScans:
    """Skip-aware scans and ``skip_coverage``: a predicate checked, turned into the files it
    provably cannot match, and the scan that leaves them."""

    def __init__(self, ctx: RunContext, tables: TableFiles) -> None:
        self.ctx = ctx
        self.tables = tables

    def check_predicate(self, predicate: str) -> str:
        """``predicate``, or a compilation error of the model that names it (dbt adds
        the model and its file)."""

        try:
            pruning.parse_predicate(predicate)
        except pruning.PredicateError as error:
            raise CompilationError(str(error)) from None
        return predicate

    @staticmethod
    def _may_match(predicate: str, index_columns: list[tuple[str, str]], relation: Any,
                   declared: dict[str, str] | None) -> str:
        """``index_columns``: the index's (name, Spark type) pairs."""

        qualifiers: list[str] = []
        if relation is not None:
            qualifiers = [relation.identifier]
            if relation.schema:
                qualifiers += [f"{relation.schema}.{relation.identifier}",
                               f"spark_catalog.{relation.schema}.{relation.identifier}"]
        types = pruning.index_column_types(index_columns, declared or {})
        table_columns = list(declared) if declared is not None else None
        try:
            return pruning.may_match_sql(predicate, types, qualifiers=qualifiers,
                                         table_columns=table_columns)
        except pruning.PredicateError as error:
            raise DbtRuntimeError(str(error)) from error

    def skipped_files(self, relation: Any, predicates: list[str], properties: dict[str, str],
                      ) -> tuple[int, list[list[FileKey]]]:
        """(indexed files, per predicate the files it provably cannot match) from the
        table's file statistics (``properties``: the table's); their columns and the
        table's are read once for all predicates."""
        index = self.tables.file_stats(relation, properties, every_column=True)
        columns = list(self.ctx.described(f"describe table {index}").items())
        declared = self.ctx.columns(relation)
        files = 0
        skipped: list[list[FileKey]] = []
        for predicate in predicates:
            may_match = self._may_match(predicate, columns, relation, declared)
            _, table = self.ctx.execute(skippable_files_sql(str(index), may_match), fetch=True)
            files = len(table.rows)
            skipped.append([(str(row[0]), int(row[1]), int(row[2]))
                            for row in table.rows if row[3]])
        return files, skipped

    def plain_scan_sql(self, relation: Any, predicate: str, check: bool = True) -> str:
        """The scan without an index: ``select * from relation where predicate``
        (``check``: False while dbt parses, which reports an error against no model)."""
        if check:
            self.check_predicate(predicate)
        return scan_sql(str(relation), predicate, [])

    def scan_sql(self, relation: Any, predicate: str) -> str:
        """A parenthesised subquery reading only the files of ``relation`` that may match.

        Files are excluded by (path, size), so files added or rewritten since the index was
        built are always read, and indexed files that are gone simply match nothing.
        """
        self.check_predicate(predicate)
        file_format, properties = self.tables.format_of(relation)
        if format_table(file_format).engines_skip_files:
            return scan_sql(str(relation), predicate, [])
        try:
            skipped = self.skipped_files(relation, [predicate], properties)[1][0]
        except (LookupError, DbtRuntimeError) as error:
            logger.warning(f"zspark_scan: {relation}: index unusable ({error}); full scan")
            skipped = []
        return scan_sql(str(relation), predicate, skipped)

    def skip_coverage_placeholder_sql(self, predicates: list[str] | str,
                                      min_skip_ratio: float) -> str:
        """The test's query where it is compiled but not run (``dbt compile``, ``dbt docs
        generate``): its columns, no row, and what it measures when it runs."""
        listed = [predicates] if isinstance(predicates, str) else list(predicates)
        return (f"-- skip_coverage: measured when the test runs (dbt test, dbt build): the "
                f"share of files each of {len(listed)} predicate(s) skips, at least "
                f"{float(min_skip_ratio)!r}\n"
                f"select cast(null as string) as predicate, 0 as files, 0 as skipped_files, "
                f"cast(0 as double) as skip_ratio where false")

    def skip_coverage_sql(self, relation: Any, predicates: list[str],
                          min_skip_ratio: float) -> str:
        """The test query of ``skip_coverage``: one row per predicate that skips too little."""
        if isinstance(predicates, str):
            predicates = [predicates]
        for predicate in predicates:
            self.check_predicate(predicate)
        try:
            files, skipped_per_predicate = self.skipped_files(
                relation, list(predicates), self.tables.format_of(relation)[1])
        except LookupError as error:
            raise DbtRuntimeError(
                f"skip_coverage on {relation}: {error}; build the table with a clustering "
                f"config or run zspark_build_index first"
            ) from error
        rows = []
        for predicate, skipped in zip(predicates, skipped_per_predicate, strict=True):
            ratio = len(skipped) / files if files else 0.0
            verdict = "ok" if ratio >= min_skip_ratio else "TOO LOW"
            logger.info(
                f"skip_coverage {relation}: {predicate!r} skips {len(skipped)}/{files} files "
                f"({ratio:.3f}; required {min_skip_ratio}) {verdict}"
            )
            rows.append((predicate, files, len(skipped), ratio))

        values = ", ".join(
            f"({sql_string(p)}, {f}, {s}, cast({r!r} as double))" for p, f, s, r in rows
        )
        return (
            f"select * from (values {values}) as coverage(predicate, files, skipped_files, "
            f"skip_ratio) where skip_ratio < {float(min_skip_ratio)!r}"
        )
