"""What every way of reaching Spark must do, run against each: the embedded session
(``SessionReach``), a Spark Thrift Server (``ServerReach``, SQL alone) and a Spark Connect
server (``FrameReach``, the connection's DataFrame session). The services call a
reach without asking which it is (``reach/base.SparkReach``); these tests hold each to
the same answers.

One server of each kind for the module, stopped by the process ids it started.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pytest
from dbt.adapters.spark.relation import SparkRelation

from dbt.adapters.zspark.core.generated_code import (
    HOTSPOT_HUGE_METHOD_BYTES,
    HUGE_METHOD_LIMIT,
    JVM_SETTINGS,
    keyed_code_settings,
)
from dbt.adapters.zspark.layouts.keyed_plan import key_inputs, udf_name
from dbt.adapters.zspark.layouts.planning import plan_clustering
from dbt.adapters.zspark.reach.base import SparkReach, execute_with, setting_value
from dbt.adapters.zspark.reach.frames.reach import FrameReach
from dbt.adapters.zspark.reach.server.reach import ServerReach
from dbt.adapters.zspark.reach.session.reach import SessionReach
from dbt.adapters.zspark.skipping.stats import spark_path
from tests.harness.reaches import frames_query
from tests.harness.servers import connect_client, connect_server, own_metastore, thrift_server

pytestmark = pytest.mark.spark

SCHEMA = "zcontract"
SPARK_ENV = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}
#: A model's SQL: 3,000 rows over two clustering columns and a few types.
MODEL_SQL = ("select id, cast(id % 37 as int) as a, concat('c', cast(id % 11 as string)) as b, "
             "date_add(date'2026-01-01', cast(id % 90 as int)) as day, id / 4.0d as x "
             "from range(3000)")


@dataclass
class Reached:
    """A reach under test, and the same Spark queried directly (names and rows)."""

    name: str
    reach: SparkReach
    query: Callable[[str], tuple[list[str], list[tuple[Any, ...]]]]

    def rows(self, sql: str) -> list[tuple[Any, ...]]:
        return sorted(self.query(sql)[1], key=repr)


def _thrift_query(port: int) -> Callable[[str], tuple[list[str], list[tuple[Any, ...]]]]:
    from pyhive import hive

    connection = hive.connect(host="127.0.0.1", port=port, username="dbt")

    def query(sql: str) -> tuple[list[str], list[tuple[Any, ...]]]:
        cursor = connection.cursor()
        cursor.execute(sql)
        if not cursor.description:
            return [], []
        return [str(d[0]) for d in cursor.description], [tuple(r) for r in cursor.fetchall()]

    return query


@pytest.fixture(scope="module", params=["session", "thrift", "connect"])
def reached(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
            ) -> Iterator[Reached]:
    name = str(request.param)
    if name == "session":
        spark = request.getfixturevalue("spark")
        query = frames_query(spark)
        query(f"create schema if not exists {SCHEMA}")
        yield Reached(name, SessionReach(spark, query, spark.sql), query)
        return
    home = tmp_path_factory.mktemp(f"contract_{name}")
    if name == "thrift":
        with thrift_server(home, own_metastore(home), SPARK_ENV) as port:
            query = _thrift_query(port)
            query(f"create schema if not exists {SCHEMA}")
            yield Reached(name, ServerReach(query, query, lambda: 2), query)
        return
    with connect_server(home, own_metastore(home), SPARK_ENV) as port, \
            connect_client(port) as client:
        query = frames_query(client)
        query(f"create schema if not exists {SCHEMA}")
        yield Reached(name, FrameReach(lambda: client, query, query, lambda: 2), query)


def _recorded_statements(reach: Any, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The statements ``reach`` fetches from now on (until ``monkeypatch.undo()``), each
    still run."""
    statements: list[str] = []
    fetch = reach.fetch

    def recorded(sql: str) -> list[tuple[Any, ...]]:
        statements.append(sql)
        return fetch(sql)

    monkeypatch.setattr(reach, "fetch", recorded)
    return statements


def _relation(identifier: str) -> Any:
    return SparkRelation.create(schema=SCHEMA, identifier=identifier, type="table")


def test_a_models_schema_is_read_without_running_it(reached: Reached) -> None:
    assert reached.reach.schema(MODEL_SQL) == {
        "id": "bigint", "a": "int", "b": "string", "day": "date", "x": "double"}


def test_a_clustered_select_holds_every_input_row_once(reached: Reached) -> None:
    """The sample counts the rows exactly; the keyed SELECT returns the model's rows,
    each once, planned into the files asked for."""
    reach = reached.reach
    schema = reach.schema(MODEL_SQL)
    plan = plan_clustering("contract", {"hilbert_by": ["a", "b"], "file_count": 4}, schema,
                           "table")
    assert plan is not None
    sampled = reach.sample(plan, MODEL_SQL, schema, None)
    assert sampled.rows == 3000
    assert 0 < len(sampled.sample) <= 3000
    assert set(sampled.sample.columns) >= {"a", "b"}
    prepared = reach.keyed(plan, MODEL_SQL, sampled, None, 4, schema, False, False)
    assert prepared.file_count == 4
    assert prepared.input_rows == 3000
    assert reached.rows(prepared.select_sql) == reached.rows(MODEL_SQL)


def test_a_first_builds_sample_of_a_large_scan_counts_it_first_and_is_its_top_k(
        reached: Reached, monkeypatch: pytest.MonkeyPatch) -> None:
    """A first build's sample is the top-k of every row's random draw, as one top-k query
    gives it. Its input counted first (over SQL always, as its own query; over a
    DataFrame session where Spark counts it from scans alone and it is large, made so
    here), the sample's top-k drops the rows drawn above four times the sample's share:
    each task ships about its share to the one that merges them, not its own 100,000."""
    from dbt.adapters.zspark.layouts import keyed_plan
    from dbt.adapters.zspark.reach.frames import clustering

    sql = ("select id, cast(id % 37 as int) as a, concat('c', cast(id % 11 as string)) as b "
           "from range(0, 500000, 1, 8)")
    plan = plan_clustering("contract", {"hilbert_by": ["a", "b"]},
                           {"id": "bigint", "a": "int", "b": "string"}, "table")
    assert plan is not None
    wanted = keyed_plan.sample_size(plan)
    cutoffs: list[float] = []

    def cutoff(wanted: int, expected_rows: int | None) -> float:
        cutoffs.append(keyed_plan.draw_cutoff(wanted, expected_rows))
        return cutoffs[-1]

    monkeypatch.setattr(keyed_plan, "COUNT_FIRST_BYTES", 0)
    monkeypatch.setattr(clustering, "draw_cutoff", cutoff)
    statements = _recorded_statements(reached.reach, monkeypatch)
    sampled = reached.reach.sample(plan, sql, reached.reach.schema(sql), None)
    monkeypatch.undo()
    assert sampled.rows == 500_000
    assert len(sampled.sample) == wanted
    if reached.name == "thrift":
        assert any(f"< {4 * wanted / 500_000!r} order by" in s for s in statements), statements
    else:
        assert cutoffs == [4 * wanted / 500_000]
    got, top_k = _sample_and_top_k(reached, sampled, sql, plan)
    assert got == top_k


def test_a_sample_of_many_tasks_on_a_local_session_is_merged_into_its_cores_first(
        reached: Reached, monkeypatch: pytest.MonkeyPatch) -> None:
    """A first build's sample of an input in 16 tasks, not counted first: on a
    local DataFrame session (the embedded one, a ``local[2]`` Connect server) the input's
    tasks are merged into the session's 2 cores before the top-k, so its merge takes 2 x k
    rows, not 16 x k; a server reached by SQL keeps the one top-k query. Either way the
    sample is exactly the top-k of one plain query's draws."""
    from dbt.adapters.zspark.layouts import keyed_plan
    from dbt.adapters.zspark.reach.frames import clustering

    sql = ("select id, cast(id % 37 as int) as a, concat('c', cast(id % 11 as string)) as b "
           "from range(0, 300000, 1, 16)")
    plan = plan_clustering("contract", {"hilbert_by": ["a", "b"]},
                           {"id": "bigint", "a": "int", "b": "string"}, "table")
    assert plan is not None
    merged_into: list[int | None] = []
    sample_and_count = clustering._sample_and_count

    def recorded(*args: Any, **kwargs: Any) -> Any:
        merged_into.append(kwargs.get("merge_tasks"))
        return sample_and_count(*args, **kwargs)

    monkeypatch.setattr(clustering, "_sample_and_count", recorded)
    monkeypatch.setattr(keyed_plan, "COUNT_FIRST_BYTES", 1 << 62)  # one job, not counted
    sampled = reached.reach.sample(plan, sql, reached.reach.schema(sql), None)
    monkeypatch.undo()
    assert merged_into == ([] if reached.name == "thrift" else [2])
    assert sampled.rows == 300_000
    got, top_k = _sample_and_top_k(reached, sampled, sql, plan)
    assert got == top_k


def _sample_and_top_k(reached: Reached, sampled: Any, sql: str, plan: Any
                      ) -> tuple[list[tuple[int, str]], list[tuple[int, str]]]:
    """A sample's (a, b) values and those of one plain top-k query of the same draws over
    ``sql``, each sorted."""
    from dbt.adapters.zspark.layouts.keyed_plan import sample_size
    from dbt.adapters.zspark.reach.server.sql_build import sample_sql

    got = sorted(zip(sampled.sample["a"].tolist(), sampled.sample["b"].tolist(), strict=True))
    top_k = sorted((int(a), str(b)) for a, b in
                   reached.query(sample_sql(sql, plan, sample_size(plan)))[1])
    return got, top_k


def test_a_keyed_writes_tasks_read_the_shuffle_not_the_plan_that_keyed_it(
        reached: Reached, monkeypatch: pytest.MonkeyPatch) -> None:
    """On the embedded session the keyed SELECT reads its rows as a scan of their shuffle
    (the keys' constants then stay out of the write's tasks); its rows are the model's,
    and the code settings it was keyed under are restored. A server plans both stages."""
    import dbt.adapters.zspark.reach.session.reach as session_reach

    # The setting a cluster's keyed write runs with, asked for as a cluster would.
    monkeypatch.setattr(session_reach, "keyed_code_settings",
                        lambda *answers: {HUGE_METHOD_LIMIT: "8000"})
    # The setting in force when the session hands the keyed rows to Spark to plan.
    in_force: list[str] = []
    keyed_rows = session_reach.SessionJvm.dataset

    def recorded(frame: Any) -> Any:
        in_force.append(frame.sparkSession.conf.get(HUGE_METHOD_LIMIT))
        return keyed_rows(frame)

    monkeypatch.setattr(session_reach.SessionJvm, "dataset", staticmethod(recorded))
    before = setting_value(reached.reach.fetch, HUGE_METHOD_LIMIT)
    reach = reached.reach
    schema = reach.schema(MODEL_SQL)
    plan = plan_clustering("contract_shuffle", {"hilbert_by": ["a", "b"], "file_count": 4},
                           schema, "table")
    assert plan is not None
    prepared = reach.keyed(plan, MODEL_SQL, reach.sample(plan, MODEL_SQL, schema, None),
                           None, 4, schema, False, False)
    plan_text = "\n".join(str(r[0]) for r in reached.query(
        f"explain {prepared.select_sql}")[1])
    assert ("Scan ExistingRDD" in plan_text) == (reached.name == "session"), plan_text
    assert ("Exchange" in plan_text) == (reached.name != "session"), plan_text
    assert in_force == (["8000"] if reached.name == "session" else [])
    assert setting_value(reached.reach.fetch, HUGE_METHOD_LIMIT) == before
    assert reached.rows(prepared.select_sql) == reached.rows(MODEL_SQL)


def test_keyed_writes_keep_their_generated_code_compiled_where_the_jvm_would_not(
        reached: Reached) -> None:
    """The embedded session's JVM compiles methods of any size; the test's servers run
    with JVM options of their own, without it: there a keyed write's statement gets
    Spark's limit on whole-stage code (``core/generated_code.py``), and its rows are the
    model's under it."""
    def rows(sql: str) -> list[tuple[Any, ...]]:
        return reached.query(sql)[1]

    answers = {key: setting_value(rows, key) or "" for key in JVM_SETTINGS}
    settings = keyed_code_settings(*(answers[key] for key in JVM_SETTINGS))
    assert settings == ({} if reached.name == "session" else {HUGE_METHOD_LIMIT: "8000"})
    reach = reached.reach
    schema = reach.schema(MODEL_SQL)
    plan = plan_clustering("contract_code", {"hilbert_by": ["a", "b", "day"], "file_count": 3},
                           schema, "table")
    assert plan is not None
    prepared = reach.keyed(plan, MODEL_SQL, reach.sample(plan, MODEL_SQL, schema, None), None,
                           3, schema, False, False)
    keyed = execute_with(rows, rows, {HUGE_METHOD_LIMIT: str(HOTSPOT_HUGE_METHOD_BYTES)},
                         prepared.select_sql)
    assert sorted(keyed, key=repr) == reached.rows(MODEL_SQL)
    assert answers[HUGE_METHOD_LIMIT] == setting_value(rows, HUGE_METHOD_LIMIT)  # restored


def test_a_key_only_python_computes_runs_where_the_reach_runs_python(reached: Reached) -> None:
    """``curve_method='direct'`` keys by the model's key function, a UDF of the session:
    the embedded session's and a Connect server's workers run it; a Thrift server runs no
    Python, and says so (the build refuses such a model before anything runs)."""
    reach = reached.reach
    assert reach.runs_python == (reached.name != "thrift")
    if not reach.runs_python:
        return
    schema = reach.schema(MODEL_SQL)
    plan = plan_clustering("contract_direct", {"zorder_by": ["a", "day"], "file_count": 3,
                                               "curve_method": "direct"}, schema, "table")
    assert plan is not None
    sampled = reach.sample(plan, MODEL_SQL, schema, None)
    prepared = reach.keyed(plan, MODEL_SQL, sampled, None, 3, schema, False, False)
    # The rows come out in the order of the UDF's keys (partitions own ascending ranges
    # of it): the session keyed them before its write's stage, which shows no UDF.
    keys = [row[0] for row in reached.query(
        f"select {udf_name(plan.model)}({', '.join(key_inputs(plan))}) "
        f"from ({prepared.select_sql})")[1]]
    assert keys == sorted(keys)
    assert len(set(keys)) > 3
    assert reached.rows(prepared.select_sql) == reached.rows(MODEL_SQL)


def test_a_tables_files_and_its_index_agree(reached: Reached,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """``table_files`` lists the files holding the table's rows; ``build_index`` writes an
    index with one file row for each of them and the table's rows counted. A reach that
    lists files (Connect's) opens only the one its write's first task may have left
    empty, not every row's file."""
    table, index = _relation("files_t"), _relation("files_t__zindex")
    reached.query(f"drop table if exists {table}")
    reached.query(f"drop table if exists {index}")
    reached.query(f"create table {table} using parquet as "
                  f"select /*+ REPARTITION(3) */ * from ({MODEL_SQL})")
    files = {str(row[0]) for row in reached.query(
        f"select distinct _metadata.file_path from {table}")[1]}
    assert len(files) == 3
    statements = _recorded_statements(reached.reach, monkeypatch)
    assert reached.reach.table_files(table) == files
    monkeypatch.undo()
    if reached.name == "connect":
        first = [f for f in files if f.rsplit("/", 1)[-1].startswith("part-00000-")]
        assert len(first) == 1
        assert len(statements) == 1
        assert first[0] in statements[0]
        assert not any(f in statements[0] for f in files - set(first))
    summary = reached.reach.build_index(table, index, ["a", "b"], None)
    assert summary.files == 3
    assert summary.rows == 3000
    indexed = {str(row[0]) for row in reached.query(
        f"select file_path from {index} where row_group is null")[1]}
    assert indexed == files


def test_a_tables_files_agree_with_its_index_when_a_file_is_empty_and_files_are_known(
        reached: Reached, monkeypatch: pytest.MonkeyPatch) -> None:
    """An empty insert leaves a file of no row. Told which files hold rows (the index's),
    a reach lists the same files as without, and the index it builds lists them too; a
    reach that lists files (Connect's) opens only the files it was not told of."""
    table, index = _relation("files_e"), _relation("files_e__zindex")
    reached.query(f"drop table if exists {table}")
    reached.query(f"drop table if exists {index}")
    reached.query(f"create table {table} using parquet as "
                  f"select /*+ REPARTITION(3) */ * from ({MODEL_SQL})")
    reached.query(f"insert into {table} select * from ({MODEL_SQL}) where id < 0")
    holding = {str(row[0]) for row in reached.query(
        f"select distinct _metadata.file_path from {table}")[1]}
    assert len(holding) == 3
    reach = reached.reach
    assert isinstance(reach, ServerReach)  # each reach's statements go through fetch
    empty: set[str] = set()
    if isinstance(reach, FrameReach):
        empty = {spark_path(f) for f in reach.spark.table(str(table)).inputFiles()} - holding
        assert len(empty) == 1, "the empty insert's file is listed"
    listed = reach.table_files(table)
    statements = _recorded_statements(reach, monkeypatch)
    assert reach.table_files(table, known=holding) == listed
    assert holding <= listed
    if reached.name == "connect":
        # One statement, opening the one file not known: the empty one, which it drops.
        assert listed == holding
        assert len(statements) == 1
        assert empty.pop() in statements[0]
        assert not any(path in statements[0] for path in holding)
    monkeypatch.undo()
    summary = reach.build_index(table, index, ["a"], None)
    indexed = {str(row[0]) for row in reached.query(
        f"select file_path from {index} where row_group is null")[1]}
    assert indexed == listed
    assert summary.files == len(listed)
    assert summary.rows == 3000


def test_a_seed_loads_in_one_write_exactly_where_the_reach_takes_dataframes(
        reached: Reached) -> None:
    table = _relation("seed_t")
    reached.query(f"drop table if exists {table}")
    reached.query(f"create table {table} (id bigint, name string, day date) using parquet")
    texts = [pa.array(["1", "2"]), pa.array(["x", None]), pa.array(["2026-01-02", None])]
    loaded = reached.reach.load_seed(str(table), ["id", "name", "day"], texts)
    expected = {"session": 2, "thrift": None, "connect": 2}[reached.name]
    assert loaded == expected
    assert reached.reach.loads_frames == (expected is not None)
    if loaded:
        import datetime

        assert reached.rows(f"select * from {table}") == sorted(
            [(1, "x", datetime.date(2026, 1, 2)), (2, None, None)], key=repr)
