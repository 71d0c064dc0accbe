"""``zspark_layout_report``: a clustered table's layout figures and its picture.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dbt.adapters.events.logging import AdapterLogger
from dbt_common.exceptions import DbtRuntimeError

from dbt.adapters.zspark.core.sql_text import quote
from dbt.adapters.zspark.layouts.keyed_plan import key_input_sql, key_input_type, part_column
from dbt.adapters.zspark.layouts.layout_state import (
    CLUSTERED_WRITES_KEY,
    clustered_writes,
    write_id,
)
from dbt.adapters.zspark.services.context import RunContext
from dbt.adapters.zspark.services.indexing import FileIndex
from dbt.adapters.zspark.services.tables import TableFiles
from dbt.adapters.zspark.skipping.health import LayoutSample
from dbt.adapters.zspark.skipping.layout_report import (
    ReportAxis,
    draw_layout,
    health_table,
    probe_value,
)

logger = AdapterLogger("zspark")


class LayoutReport:
    """``zspark_layout_report``: a clustered table's layout figures and its picture."""

    def __init__(self, ctx: RunContext, tables: TableFiles, index: FileIndex) -> None:
        self.ctx = ctx
        self.tables = tables
        self.index = index

    def layout_report(self, relation: Any, x: str | None = None, y: str | None = None,
                      path: str | None = None) -> dict[str, Any]:
        """``zspark_layout_report``: the layout figures of a clustered table as a table,
        and a picture of its files' boxes over two clustering columns."""

        model = relation.identifier
        properties = self.ctx.table_properties(relation)
        stored = self.tables.stored_layout(model, relation, properties)
        columns, types = stored.columns, stored.column_types
        x, y = x or columns[0], y or columns[min(1, len(columns) - 1)]
        for name in (x, y):
            if name not in columns:
                raise DbtRuntimeError(f"zspark_layout_report: {relation}: '{name}' is not a "
                                      f"clustering column. Allowed: {', '.join(columns)}")
        inputs = [f"{key_input_sql(quote(c), t)} as {quote(c)}"
                  for c, t in zip(columns, types, strict=True)]
        declared = {name.lower(): t for name, t in self.ctx.columns(relation).items()}
        partition_types = [(p, declared[p.lower()]) for p in stored.partition_by]
        parts = [f"{quote(p)} as {quote(part_column(i))}"
                 for i, p in enumerate(stored.partition_by)]
        index = self.tables.file_stats(relation, properties)
        rows = int(self.ctx.fetch(f"select sum(row_count) from {index} where row_group is null")
                   [0][0] or 0)
        fraction = min(1.0, 100_000 / max(rows, 1))
        sample = self.ctx.reach().frame(
            f"select {', '.join([*inputs, *parts])} from {relation} "
            f"where rand(17) < {fraction!r}",
            {**{c: key_input_type(t) for c, t in zip(columns, types, strict=True)},
             **{part_column(i): t for i, (_, t) in enumerate(partition_types)}})
        keys = stored.key_function(types)(*(sample[c] for c in columns))
        # A table whose clustered writes are not recorded (a Delta or Iceberg table model)
        # is replaced whole by each clustered build: none pending.
        recorded = CLUSTERED_WRITES_KEY in properties
        health, files = self.index.layout_health(relation, index, LayoutSample(
            columns, types, sample, keys.tolist(), [part_column(i) for i in range(len(parts))]),
            just_built=not recorded)
        logger.info(f"zspark_layout_report {relation}:\n{health_table(health)}")
        clustered = clustered_writes(properties)
        target = Path(path) if path else Path(getattr(self.ctx.config, "project_root", ".")) \
            / "target" / f"zspark_layout_{model}.png"
        paths = [str(p) for p in files["file_path"]]
        axes = [ReportAxis(c, types[columns.index(c)],
                           files[[f"{c}.min", f"{c}.max"]].set_axis(["min", "max"], axis=1),
                           probe_value(sample[c])) for c in (x, y)]
        subtitle = "; ".join(f"{c.column}: {c.skip_share:.1%} of files skipped per point "
                             f"query" for c in health.columns if c.column in (x, y))
        probes = draw_layout(target, axes[0], axes[1],
                             [recorded and write_id(p) not in clustered for p in paths],
                             f"{relation}: {len(files)} files, {health.rows} rows", subtitle)
        logger.info(f"zspark_layout_report {relation}: files' boxes over {x} and {y} in "
                    f"{target}; "
                    + "; ".join(p.describe() for p in probes))
        return {"columns": health.table(), "picture": str(target)}
