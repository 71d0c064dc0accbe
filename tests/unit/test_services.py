"""The services' orchestration as units: the real services over a real ``RunContext``
whose connection and reach are fakes, answering the queries they are asked and recording
the statements they are given, in order. No Spark: what Spark does with the statements
is the functional tests' part."""

from __future__ import annotations

import time
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest
from dbt.adapters.spark.relation import SparkRelation
from dbt_common.exceptions import DbtRuntimeError

from dbt.adapters.zspark.impl import MODEL_CONFIG_KEYS
from dbt.adapters.zspark.layouts.keyed_plan import spread_sql
from dbt.adapters.zspark.services.builds import TableBuilds
from dbt.adapters.zspark.services.context import RunContext
from dbt.adapters.zspark.services.families import TableFamilies
from dbt.adapters.zspark.services.format_increments import FormatIncrements
from dbt.adapters.zspark.services.increments import IncrementPlanner, ParquetIncrements
from dbt.adapters.zspark.services.indexing import FileIndex
from dbt.adapters.zspark.services.plans import (
    FILE_ROWS_SETTING,
    BuildPlan,
    IncrementPlan,
    KeyedWrite,
)
from dbt.adapters.zspark.services.tables import TableFiles
from dbt.adapters.zspark.services.versioning import TableVersioning
from dbt.adapters.zspark.services.writes import KeyedWrites
from dbt.adapters.zspark.skipping.index import IndexSummary

DELTA_EXTENSION = "io.delta.sql.DeltaSparkSessionExtension"
ICEBERG_EXTENSION = "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"


class FakeConnection:
    """dbt's connection as the context uses it: queries answered by ``answer`` (SQL ->
    rows), every statement and query recorded in order."""

    def __init__(self, answer: Callable[[str], list[tuple[Any, ...]]]) -> None:
        self.answer = answer
        self.log: list[str] = []

    def add_query(self, sql: str, auto_begin: bool = False) -> tuple[None, Any]:
        self.log.append(sql)
        rows = self.answer(sql)
        return None, SimpleNamespace(description=[("key",), ("value",)],
                                     fetchall=lambda: rows)


class FakeAdapter:
    def __init__(self, answer: Callable[[str], list[tuple[Any, ...]]]) -> None:
        self.connections = FakeConnection(answer)
        self.config = SimpleNamespace(credentials=SimpleNamespace(method="session"))

    def execute(self, sql: str, fetch: bool = False) -> tuple[str, Any]:
        _, cursor = self.connections.add_query(sql)
        return "OK", SimpleNamespace(rows=cursor.fetchall())

    @property
    def log(self) -> list[str]:
        return self.connections.log


class FakeReach:
    """A reach whose table listing is given and whose index writes are recorded."""

    runs_python = reaches_jvm = journals_batches = True

    def __init__(self, files: set[str]) -> None:
        self.files = files
        self.updates: list[tuple[list[str], list[str]]] = []

    def table_files(self, relation: Any, known: Any = ()) -> set[str]:
        return set(self.files)

    def update_index(self, relation: Any, index: Any, added: list[str], removed: list[str],
                     clustering: Any, configured: Any) -> IndexSummary:
        self.updates.append((list(added), list(removed)))
        return IndexSummary(str(index), len(self.files), 10 * len(self.files), ["a"])


class FakeContext(RunContext):
    def __init__(self, answer: Callable[[str], list[tuple[Any, ...]]] = lambda sql: [],
                 reach: FakeReach | None = None) -> None:
        super().__init__(FakeAdapter(answer))  # type: ignore[arg-type]
        self.fake_reach = reach or FakeReach(set())

    def reach(self) -> Any:
        return self.fake_reach


def services(ctx: RunContext) -> SimpleNamespace:
    """The services as the adapter composes them."""
    tables = TableFiles(ctx)
    writes = KeyedWrites(ctx)
    index = FileIndex(ctx, tables)
    builds = TableBuilds(ctx, writes)
    planner = IncrementPlanner(ctx, tables, index, writes)
    increments = ParquetIncrements(ctx, tables, index, writes, TableVersioning(ctx, index),
                                   planner)
    format_increments = FormatIncrements(ctx, tables, index, writes, planner)
    return SimpleNamespace(tables=tables, writes=writes, index=index, builds=builds,
                           increments=increments,
                           families=TableFamilies(builds, tables, increments,
                                                  format_increments))


def model_config(**configs: Any) -> dict[str, Any]:
    """A model's configs as ``zspark_model_config`` hands them (every key, None unset)."""
    return {**dict.fromkeys(MODEL_CONFIG_KEYS), "skip_coverage_predicates": [], **configs}


def extensions(value: str | None) -> Callable[[str], list[tuple[Any, ...]]]:
    """Answers of a session whose ``spark.sql.extensions`` are ``value``."""
    def answer(sql: str) -> list[tuple[Any, ...]]:
        if sql == "set spark.sql.extensions":
            return [("spark.sql.extensions", value or "<undefined>")]
        return []
    return answer


RELATION = SparkRelation.create(schema="analytics", identifier="orders", type="table")
CLUSTERED = {"zorder_by": ["a", "b"]}


@pytest.mark.parametrize(("configs", "file_format", "language", "materialized", "path"), [
    (CLUSTERED, "parquet", "sql", "table", "versions"),
    (CLUSTERED, "parquet", "sql", "incremental", "versions"),
    (CLUSTERED, "delta", "sql", "table", "commits"),
    (CLUSTERED, "iceberg", "sql", "incremental", "commits"),
    ({}, "parquet", "sql", "table", "versions"),
    ({"file_count": 4}, "parquet", "sql", "table", "versions"),
    ({}, "parquet", "sql", "incremental", "spark"),
    ({}, "delta", "sql", "table", "spark"),
    ({}, "iceberg", "sql", "incremental", "spark"),
    ({}, "hudi", "sql", "table", "spark"),
    ({}, "parquet", "python", "table", "versions"),
    ({}, "parquet", "python", "incremental", "python"),
    ({}, "delta", "python", "table", "python"),
])
def test_a_models_path_is_chosen_from_its_configs_and_format(
        configs: dict[str, Any], file_format: str, language: str, materialized: str,
        path: str) -> None:
    ctx = FakeContext(extensions(f"{DELTA_EXTENSION},{ICEBERG_EXTENSION}"))
    flow = services(ctx).families.flow("orders", model_config(**configs), file_format,
                                       language, materialized)
    assert (flow.path, flow.file_format, flow.clustered) == (path, file_format,
                                                             bool(configs.get("zorder_by")))
    # Chosen by asking the session what it can write, nothing else.
    assert all(sql.startswith("set spark.sql.extensions") for sql in ctx.adapter.log)


def test_a_flow_gives_the_relation_flags_of_its_format() -> None:
    ctx = FakeContext(extensions(DELTA_EXTENSION))
    families = services(ctx).families
    delta = families.flow("orders", model_config(**CLUSTERED), "delta", "sql", "table")
    assert delta.relation_flags() == {"is_delta": True, "is_iceberg": False}
    assert delta.same_format(RELATION.incorporate(is_delta=True))
    assert not delta.same_format(RELATION)
    parquet = families.flow("orders", model_config(**CLUSTERED), "parquet", "sql", "table")
    assert parquet.relation_flags() == {"is_delta": False, "is_iceberg": False}


def test_a_format_the_session_cannot_write_is_refused_naming_the_profile_line() -> None:
    ctx = FakeContext(extensions(None))
    with pytest.raises(DbtRuntimeError, match=r"Model 'orders': config 'file_format' is "
                                              r"'delta', .*Add `table_format: delta`"):
        services(ctx).families.flow("orders", model_config(**CLUSTERED), "delta", "sql",
                                    "table")
    assert ctx.adapter.log == ["set spark.sql.extensions"]


@pytest.mark.parametrize(("file_format", "materialized"), [("hudi", "table"),
                                                           ("delta", "snapshot")])
def test_a_clustered_model_of_a_format_zspark_cannot_cluster_is_refused(
        file_format: str, materialized: str) -> None:
    ctx = FakeContext(extensions(DELTA_EXTENSION))
    with pytest.raises(DbtRuntimeError, match=rf"Model 'orders': config 'file_format' is "
                                              rf"'{file_format}' on a clustered "
                                              rf"{materialized} model\. Allowed: 'parquet'"):
        services(ctx).builds.check_file_format("orders", file_format, True, materialized)


def test_an_unclustered_builds_plan_is_its_select_or_its_spread_and_writes_nothing() -> None:
    ctx = FakeContext()
    builds = services(ctx).builds
    plain = builds.build_plan("orders", RELATION, model_config(), "select 1 as a", None,
                              "parquet", "table", "sql")
    assert (plain.sql, plain.write, plain.layout_properties, plain.want_index) == (
        "select 1 as a", None, {}, False)
    spread = builds.build_plan("orders", RELATION, model_config(file_count=4, zspark_index=True),
                               "select 1 as a", None, "parquet", "table", "sql")
    assert (spread.sql, spread.want_index) == (spread_sql("select 1 as a", 4), True)
    python = builds.build_plan("orders", RELATION, model_config(), "def model(dbt, s): ...",
                               None, "parquet", "table", "python")
    assert (python.sql, python.language, python.write) == ("def model(dbt, s): ...",
                                                           "python", None)
    assert ctx.adapter.log == []


def test_a_bad_config_is_refused_by_the_build_plan_before_anything_runs() -> None:
    ctx = FakeContext()
    with pytest.raises(DbtRuntimeError, match=r"'orders'.*'boundary_count'"):
        services(ctx).builds.build_plan("orders", RELATION,
                                        model_config(zorder_by=["a", "b"], boundary_count=0),
                                        "select 1 as a, 2 as b", None, "parquet", "table",
                                        "sql")
    assert ctx.adapter.log == []


def keyed_write(file_rows: int | None, settings: dict[str, str] | None = None) -> KeyedWrite:
    return KeyedWrite("select 1", file_rows, sample=None,  # type: ignore[arg-type]
                      timings={"since": 0.0}, settings=dict(settings or {}))


def session_with(settings: dict[str, str], fail: str | None = None,
                 ) -> Callable[[str], list[tuple[Any, ...]]]:
    """Answers of a session whose settings are ``settings`` (``fail``: a statement that
    raises)."""
    def answer(sql: str) -> list[tuple[Any, ...]]:
        if fail is not None and sql == fail:
            raise RuntimeError("the write failed")
        if sql.startswith("set ") and "=" not in sql:
            key = sql[len("set "):]
            return [(key, settings.get(key, "<undefined>"))]
        return []
    return answer


def statements(log: list[str]) -> list[str]:
    """The statements of a log, without the queries that read a setting."""
    return [sql for sql in log if not (sql.startswith("set ") and "=" not in sql)]


def test_a_clustered_write_runs_with_its_rows_per_file_and_settings_restored_after() -> None:
    cut = "spark.databricks.delta.properties.defaults.dataSkippingStringPrefixLength"
    ctx = FakeContext(session_with({cut: "32"}))
    services(ctx).writes.execute_write(keyed_write(5000, {cut: "64"}), "insert into t select 1")
    assert statements(ctx.adapter.log) == [
        f"set {cut} = 64", f"set {FILE_ROWS_SETTING} = 5000", "insert into t select 1",
        f"set {cut} = 32", f"reset {FILE_ROWS_SETTING}"]


def test_a_failed_write_still_restores_the_session_settings() -> None:
    ctx = FakeContext(session_with({}, fail="insert into t select 1"))
    with pytest.raises(RuntimeError, match="the write failed"):
        services(ctx).writes.execute_write(keyed_write(100), "insert into t select 1")
    assert statements(ctx.adapter.log)[-1] == f"reset {FILE_ROWS_SETTING}"


def test_an_unclustered_write_is_its_statement_alone() -> None:
    ctx = FakeContext(session_with({}))
    writes = services(ctx).writes
    writes.execute_write(None, "insert into t select 1")
    writes.execute_write(keyed_write(None), "insert into t select 2")
    assert ctx.adapter.log == ["insert into t select 1", "insert into t select 2"]


def test_a_writes_steps_are_timed_by_laps() -> None:
    write = keyed_write(None)
    write.timings["since"] = time.perf_counter()
    write.lap("write")
    write.lap("index")
    write.lap("write")
    assert set(write.timings) == {"since", "write", "index"}
    assert all(seconds >= 0 for seconds in write.timings.values())


def test_an_index_is_published_only_once_staged() -> None:
    ctx = FakeContext()
    build = BuildPlan(RELATION, "select 1", "sql", "parquet", want_index=True)
    with pytest.raises(DbtRuntimeError, match="was not staged before its swap"):
        services(ctx).index.publish_index(build)
    assert ctx.adapter.log == []


def test_an_increments_new_files_are_indexed_and_replaced_ones_dropped() -> None:
    reach = FakeReach({"f1", "f2", "f3"})
    ctx = FakeContext(reach=reach)
    step = IncrementPlan(10, False, files_before={"f1", "f0"})
    done = services(ctx).increments.finish("orders", RELATION, step, want_index=True)
    assert done == {"added": 2, "removed": 1}
    assert reach.updates == [(["f2", "f3"], ["f0"])]
    assert not any(sql.startswith("alter table") for sql in ctx.adapter.log)


def test_an_increment_of_whole_partitions_records_its_files_as_clustered() -> None:
    old, new = (f"file:/w/orders/part-00000-{job}.c000.snappy.parquet"
                for job in ("6b436be3-f21c-434e-a27e-728232976d02",
                            "1e0ddf51-6256-4b4d-bb9a-ffdd0fba134a"))
    reach = FakeReach({old, new})
    ctx = FakeContext(reach=reach)
    step = IncrementPlan(10, False, files_before={old}, clustered_insert=True)
    done = services(ctx).increments.finish("orders", RELATION, step, want_index=False)
    assert done == {"added": 1, "removed": 0}
    altered = [sql for sql in ctx.adapter.log if sql.startswith("alter table")]
    assert len(altered) == 1
    # The new write's job is clustered; the old one, never recorded, stays pending.
    assert "1e0ddf51-6256-4b4d-bb9a-ffdd0fba134a" in altered[0]
    assert "6b436be3" not in altered[0]
    assert reach.updates == []  # no index wanted
