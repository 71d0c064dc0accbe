"""A DataFrame session reached as a :class:`~dbt.adapters.zspark.reach.SparkReach`: a
Spark Connect client's, and the base of the embedded session's (``reach/session``).

On top of what SQL alone does (``ServerReach``), a session that takes DataFrames
samples and counts a model's input in one job (its metrics observed), sends each keyed
row to its shuffle partition by number, keys by Python where only Python computes the key
(its UDFs), and hands rows over as Arrow: seeds in one write, queries' rows as frames.
Everything here is the DataFrame and SQL APIs both sessions share; what needs the JVM is
``SessionReach``'s.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from dbt.adapters.zspark.layouts.keyed_plan import PlannedInput, scan_nodes_only
from dbt.adapters.zspark.reach.base import Execute, Query, Relation
from dbt.adapters.zspark.reach.frames.clustering import (
    as_pandas,
    keyed_build,
    model_schema,
    sample_input,
)
from dbt.adapters.zspark.reach.frames.seeds import load_seed
from dbt.adapters.zspark.reach.server.reach import ServerReach
from dbt.adapters.zspark.reach.server.sql_build import (
    Fetch,
    explain_cost,
    optimized_plan,
    planned_bytes,
)
from dbt.adapters.zspark.skipping.sql_index import files_sql
from dbt.adapters.zspark.skipping.stats import spark_path

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

    from dbt.adapters.zspark.layouts.keyed_plan import InputSample, PreparedBuild
    from dbt.adapters.zspark.layouts.layout_state import StoredLayout
    from dbt.adapters.zspark.layouts.planning import ClusteringPlan


def limit_dropped(fetch: Fetch, sql: str, rows: int) -> bool:
    """Whether Spark's optimizer drops a limit of ``rows`` over ``sql``: it knows the
    query holds no more rows than that (the optimized plan's root is no limit)."""
    text = "\n".join(str(row[0]) for row in fetch(
        f"explain extended select * from (\n{sql}\n) zspark_source limit {rows}"))
    optimized = optimized_plan(text).split("\n", 1)[0]
    return not optimized.startswith(("GlobalLimit", "Limit", "CollectLimit"))


class FrameReach(ServerReach):
    """A DataFrame session (``session``: the connection's, asked for when a step needs
    it); statements still go through dbt's connection, in the order they run."""

    runs_python = True
    loads_frames = True

    def __init__(self, session: Callable[[], Any], query: Query, execute: Execute,
                 cores: Callable[[], int]) -> None:
        super().__init__(query, execute, cores)
        self._session = session

    @property
    def spark(self) -> Any:
        return self._session()

    def planned_input(self, frame: Any, sql: str, rows: int) -> PlannedInput:
        """Spark's size estimate of ``sql``'s output and its optimized plan's nodes
        (``EXPLAIN COST``), and whether it knows the output holds at most ``rows`` rows:
        its optimizer then drops a limit of ``rows`` (the plan a client sees has no row
        bound of its own)."""
        explained = explain_cost(self.fetch, sql)
        return PlannedInput(planned_bytes(explained), limit_dropped(self.fetch, sql, rows),
                            scan_nodes_only(optimized_plan(explained)))

    def schema(self, sql: str) -> dict[str, str]:
        return model_schema(self.spark, sql)

    def sample(self, plan: ClusteringPlan, sql: str, schema: Mapping[str, str],
               expected_rows: int | None) -> InputSample:

        return sample_input(self.spark, plan, sql, self.planned_input, expected_rows,
                            self.sample_tasks())

    def sample_tasks(self) -> int | None:
        """How many tasks a sample's top-k merges its input's tasks into: a local
        session's cores, which run its tasks that many at a time however the input is cut
        (20 M rows in 200 tasks, ``local[2]``: 1.8 s against 16.4 s, the same rows).
        None elsewhere: a cluster's executors at hand when a build starts may be few
        (dynamic allocation), and the input keeps its own tasks."""
        master = self.spark.conf.get("spark.master", None) or ""
        return self._cores() if master.startswith("local") else None

    def keyed(self, plan: ClusteringPlan, sql: str, sampled: InputSample,
              stored: StoredLayout | None, file_count: int, schema: Mapping[str, str],
              pieces: bool, file_per_partition: bool, select: bool = True) -> PreparedBuild:

        return keyed_build(self.spark, plan, sql, sampled, stored, file_count, self._cores(),
                           schema, pieces, file_per_partition, select, self.shuffled)

    def shuffled(self, rows: Any) -> Any:
        """``rows`` (keyed, sent to their shuffle partitions) as a keyed write reads them:
        here as they are, the server planning both stages."""
        return rows

    def frame(self, sql: str, types: Mapping[str, str]) -> pd.DataFrame:
        return as_pandas(self.spark.sql(sql))

    def table_files(self, table: Relation, known: Collection[str] = ()) -> set[str]:
        """The table's listing (``inputFiles``: its folder or its log, no file opened),
        less the files that hold no row. Those ``known`` to hold rows (the index's) are
        taken as listed, and so is every file Spark's writer cannot have left empty
        (:func:`may_hold_no_row`); only the others are opened to tell. A table Spark lists
        no files of (Iceberg's, an empty one): every row's file, as over SQL. At 10,000
        files and 100 M rows a listing took 1.2-4.3 s, the distinct file of every row
        22-32 s."""
        self.spark.catalog.refreshTable(str(table))
        listed = {spark_path(f) for f in self.spark.table(str(table)).inputFiles()}
        if not listed:
            return super().table_files(table)
        known = set(known)
        holding = {f for f in listed if f in known or not may_hold_no_row(f)}
        unknown = sorted(listed - holding)
        if unknown:
            holding |= {str(r[0]) for r in self.fetch(files_sql(str(table), unknown))}
        return holding

    def fresh_rows(self, table: Relation, sql: str) -> list[tuple[Any, ...]] | None:
        if not self.spark.catalog.tableExists(str(table)):
            return None
        self.refresh(table)
        # As Arrow: a table's file rows (tens of thousands) pickled row by row took seconds.
        found = self.spark.sql(sql).toArrow()
        return list(zip(*(column.to_pylist() for column in found.columns), strict=True))

    def load_seed(self, table: str, names: Sequence[str],
                  texts: Sequence[pa.Array]) -> int | None:
        return load_seed(self.spark, table, names, texts)


def may_hold_no_row(path: str) -> bool:
    """Whether a data file may hold no row. Spark's file writer names a file
    ``part-<task>-<job>-c<count>`` and opens a task's file on its first row, but for
    task 0's first file, which it writes in any case, so that a write of no row keeps the
    schema. So only that file may be empty, or a file other writers named."""
    name = path.rsplit("/", 1)[-1]
    task, dash, _ = name.removeprefix("part-").partition("-")
    return not (name.startswith("part-") and dash and len(task) >= 5 and task.isdigit()
                and int(task) > 0)
