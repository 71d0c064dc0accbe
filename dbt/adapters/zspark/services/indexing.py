"""A table's file statistics after each write: a Parquet table's ``__zindex`` built,
staged, published and repaired; the line that logs files, rows and layout figures.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from dbt.adapters.events.logging import AdapterLogger
from dbt_common.exceptions import DbtRuntimeError

from dbt.adapters.zspark.core.sql_text import quote
from dbt.adapters.zspark.core.stop_points import stop_point
from dbt.adapters.zspark.formats import (
    format_table,
)
from dbt.adapters.zspark.layouts.keyed_plan import key_input_sql, key_input_type
from dbt.adapters.zspark.layouts.layout_state import (
    StoredLayout,
    StoredLayoutError,
    pending_rows,
)
from dbt.adapters.zspark.services.context import RunContext
from dbt.adapters.zspark.services.plans import BuildPlan, KeyedWrite, lap
from dbt.adapters.zspark.services.tables import TableFiles
from dbt.adapters.zspark.skipping.health import LayoutSample, layout_health, rebuild_bounds
from dbt.adapters.zspark.skipping.index import IndexSummary
from dbt.adapters.zspark.skipping.pruning import indexed_columns, stat_column

logger = AdapterLogger("zspark")

#: Sample values a point query is probed with when the layout is judged.
PROBES = 1000


class FileIndex:
    """A table's file statistics after each write: a Parquet table's ``__zindex`` built,
    staged, published and repaired; the line that logs files, rows and layout figures."""

    def __init__(self, ctx: RunContext, tables: TableFiles) -> None:
        self.ctx = ctx
        self.tables = tables

    def build_index(self, relation: Any, clustering: list[str] | None = None,
                    configured: list[str] | None = None) -> dict[str, Any]:
        """Build ``<table>__zindex`` from the table's Parquet footers and log the layout."""
        index = self.ctx.index_of(relation)
        summary = self.ctx.reach().build_index(relation, index, clustering, configured)
        return self.log_index(relation, index, summary)

    def repair_index(self, model: str, relation: Any, create: bool = False,
                     listed: set[str] | None = None) -> bool:
        """Rebuild the index of a table whose index does not list exactly its files (a run
        stopped between its write and its index), or (``create``) of a clustered table
        that lost it; True when it was rebuilt. ``listed``: the files the index lists, when
        the caller read them already."""

        index = self.ctx.index_of(relation)
        has_index = listed is not None or self.ctx.has_table(index)
        try:
            stored = StoredLayout.from_properties(self.ctx.table_properties(relation))
        except StoredLayoutError:
            stored = None
        if not has_index and (stored is None or not create):
            return False
        if has_index:
            reach = self.ctx.reach()
            if listed is None:
                listed = {str(r[0]) for r in reach.fresh_rows(
                    index, f"select file_path from {index} where row_group is null") or []}
            if listed == reach.table_files(relation, known=listed):
                return False
        configured = indexed_columns(list(self.ctx.described(f"describe table {index}"))) \
            if has_index else None
        clustering = list(stored.columns) if stored is not None else []
        logger.warning(f"zspark: {model}: the index {index.identifier} does not list exactly "
                       f"the files of {relation}; rebuilding it")
        self.build_index(relation, clustering, configured)
        return True

    def log_index(self, relation: Any, index: Any, summary: Any, write: KeyedWrite | None = None,
                  held_in: str | None = None, just_built: bool = False) -> dict[str, Any]:
        """Log a table's files, rows and layout figures (probed with the sample of the
        ``write`` that made them, and its timings; ``just_built``: by a commit that
        replaced every file, so none is pending re-clustering): one short line, and the
        detail in dbt's debug log."""
        counts = f"{summary.files:,} files, {summary.rows:,} rows"
        detail = (f"zspark: {relation.identifier}: {summary.files} files, {summary.rows} rows, "
                  f"{len(summary.columns)} columns indexed in {held_in or index.identifier}")
        short = ""
        if write is not None and summary.files:
            try:
                health, _ = self.layout_health(relation, index, write.sample, just_built)
                detail += "; layout: " + health.describe()
                short = health.skip_words()
            except Exception as error:  # the figures inform; they never fail a build
                logger.warning(f"zspark: {relation.identifier}: layout figures unavailable "
                               f"({type(error).__name__}: {error})")
        if write is not None:
            write.lap("log")
            steps = ("sample", "write", "index", "log")
            detail += "; seconds: " + ", ".join(
                f"{step} {write.timings.get(step, 0.0):.1f}" for step in steps)
            action = f"{write.action}: " if write.action else ""
            # dbt opens it with "zspark adapter: ".
            logger.info(f"{relation.identifier}: {action}{counts}"
                        + (f"; {short}" if short else ""))
            logger.debug(detail)
        else:
            logger.info(detail)
        return {"files": summary.files, "rows": summary.rows, "columns": summary.columns}

    def log_format_stats(self, relation: Any, file_format: str, write: KeyedWrite | None,
                         just_built: bool = True) -> None:
        """After a clustered Delta or Iceberg build (``just_built``) or increment (its
        ``write``): its files and rows, and the layout figures, from the format's own
        statistics (the table's index)."""

        stop_point("format:committed")
        lap(write, "write")
        view, columns = self.tables.format_files(relation, file_format,
                                                 self.ctx.table_properties(relation))
        totals = self.ctx.fetch(f"select count(1), sum(row_count) from {view}")[0]
        summary = IndexSummary(view, int(totals[0]), int(totals[1] or 0),
                               [name for name, _ in columns])
        lap(write, "index")
        self.log_index(relation, view, summary, write, held_in=f"its {file_format} statistics",
                       just_built=just_built)

    def layout_health(self, relation: Any, index: Any, sample: LayoutSample,
                      just_built: bool = False) -> tuple[Any, Any]:
        """Depth and overlaps per clustering column from the index, probed with a sample of
        the rows, against a rebuild estimated from the same sample; and the index's files
        (path, rows and each column's bounds as ``<column>.min`` / ``<column>.max``)."""

        typed = list(zip(sample.columns, sample.types, strict=True))
        picked = ", ".join(
            f"{key_input_sql(quote(stat_column(c, s)), t)} as {quote(f'{c}.{s}')}"
            for c, t in typed for s in ("min", "max"))
        query = (f"select file_path, row_count, {picked} from {index} "
                 f"where row_group is null and row_count > 0")
        files = self.ctx.reach().frame(query, {
            f"{c}.{s}": key_input_type(t) for c, t in typed for s in ("min", "max")})
        bounds = {c: files[[f"{c}.min", f"{c}.max"]].set_axis(["min", "max"], axis=1)
                  for c in sample.columns}
        rebuilt = rebuild_bounds(sample.rows, sample.partitions, np.asarray(sample.keys),
                                 sample.columns, len(files))
        rows = [int(r) for r in files["row_count"]]
        pending = 0 if just_built else pending_rows(
            list(zip(map(str, files["file_path"]), rows, strict=True)),
            self.ctx.table_properties(relation))
        health = layout_health(bounds, sample.rows.head(PROBES), rebuilt, sum(rows), pending)
        return health, files

    def live_files(self, relation: Any, file_format: str | None,
                   properties: dict[str, str], create: bool = True,
                   ) -> list[tuple[str, int, int]] | None:
        """The table's live files as the re-clustering policy reads them (path, rows,
        modification time): a Parquet table's from its index, rebuilt first when it no
        longer lists the table's files (None: no index; ``create``: a clustered table
        that lost it gets one), a Delta or Iceberg table's from its own log."""
        if not format_table(file_format).commits_on_its_own:
            return self.indexed_files(relation, create)
        assert file_format is not None
        return self.tables.format_file_list(relation, file_format, properties)

    def indexed_files(self, relation: Any,
                      create: bool = True) -> list[tuple[str, int, int]] | None:
        """The table's files from its index (path, rows, modification time), the index
        rebuilt first when it does not list exactly the table's files (a run stopped
        between its write and its index; ``create``: or when a clustered table has none).
        None when the table has no index."""
        index = self.ctx.index_of(relation)
        query = f"select file_path, row_count, file_mtime from {index} where row_group is null"
        reach = self.ctx.reach()
        found = reach.fresh_rows(index, query)
        listed = None if found is None else {str(r[0]) for r in found}
        if self.repair_index(relation.identifier, relation, create, listed):
            found = reach.fresh_rows(index, query)
        if found is None:
            return None
        return [(str(r[0]), int(r[1]), int(r[2] or 0)) for r in found]

    def stage_index(self, build: BuildPlan, staging: Any,
                    clustering: list[str] | None = None,
                    configured: list[str] | None = None) -> None:
        """Read the index of a build's staging table before it replaces the model's table,
        so that a failure reading footers leaves the previous table and its index as they
        were. The rows wait (a session's executors hold them; a server, a table of their
        own) until :meth:`zspark_publish_index`."""
        stop_point("build:written")
        lap(build.write, "write")
        build.staged = self.ctx.reach().stage_index(
            staging, self.ctx.index_of(staging), clustering, configured)
        lap(build.write, "index")

    def publish_index(self, build: BuildPlan, clustering: list[str] | None = None,
                      configured: list[str] | None = None) -> dict[str, Any]:
        """After the swap: the staged rows, their paths moved to the model's table, are
        written as ``<model>__zindex``. Should the paths not match the table's files, or the
        staged rows be gone, the index is built again."""
        # The swap since the index was staged is the write's: it puts the table in place.
        lap(build.write, "write")
        target = build.target
        index = self.ctx.index_of(target)
        if build.staged is None:
            raise DbtRuntimeError(f"zspark: {target}: the build's index was not staged "
                                  f"before its swap")
        summary = self.ctx.reach().publish_index(build.staged, target, index, clustering,
                                                 configured)
        stop_point("index:published")
        lap(build.write, "index")
        return self.log_index(target, index, summary, build.write)
