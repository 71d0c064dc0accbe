"""``method: connect``: a Spark Connect server on loopback (pyspark ships its jar), dbt as
a Connect client. The dbt process starts no JVM: keys, index and scans are Spark SQL run
on the server, as over Thrift.

One server and one kept dbt process for the module; the test queries the server through
Connect's own client, which starts no JVM in pytest either.
"""

from __future__ import annotations

import itertools
import os
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.functional.dbt_project import skip_coverage_yml, write_project
from tests.functional.format_project import WORKERS, FormatProject, release
from tests.functional.server_protocols import (
    killed_overwrite_is_finished_by_the_server,
    second_run_fails_fast_while_another_writes,
)
from tests.functional.test_python_models import GROWS, PANDAS, SOURCE, TABLE
from tests.functional.test_seeds import CSV, EXPECTED
from tests.functional.test_thrift import (
    CLUSTERED_SQL,
    PARTED_SQL,
    POINT_QUERIES,
    _check_files_and_index,
    _file_keys,
)
from tests.harness.servers import connect_client, connect_server, own_metastore

pytestmark = pytest.mark.spark

SCHEMA = "zc"
SPARK_ENV = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}


@pytest.fixture(scope="module")
def connect_port(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    home = tmp_path_factory.mktemp("connect_server")
    # Its queries logged, plain (a server's SQL reads no codec), for the history test.
    (home / "events").mkdir()
    events = {"spark.eventLog.enabled": "true", "spark.eventLog.dir": f"file://{home}/events",
              "spark.eventLog.compress": "false"}
    with connect_server(home, {**own_metastore(home), **events}, SPARK_ENV) as port:
        yield port


@pytest.fixture(scope="module")
def server(connect_port: int) -> Iterator[Any]:
    """A Connect client session of the test's own on the server, stopped before it."""
    with connect_client(connect_port) as session:
        yield session


def _rows(server: Any, sql: str, fresh: str = "") -> list[tuple[Any, ...]]:
    """``sql``'s rows, sorted; ``fresh``: a table first refreshed (a Connect session keeps
    a table's file listing, and dbt wrote it from a session of its own)."""
    if fresh:
        server.sql(f"refresh table {fresh}").collect()
    return sorted(tuple(row) for row in server.sql(sql).collect())


def connect_profile(port: int, schema: str) -> str:
    return f"""
        target: dev
        outputs:
          dev:
            type: zspark
            method: connect
            host: sc://127.0.0.1:{port}
            schema: {schema}
    """


@pytest.fixture(scope="module")
def project(connect_port: int, tmp_path_factory: pytest.TempPathFactory
            ) -> Iterator[FormatProject]:
    root = tmp_path_factory.mktemp("connect_project")
    name = "events"
    models = {
        # An incremental model of CLUSTERED_SQL's ids in [lo, hi), clustered by a Hilbert
        # curve over three columns into 16 files.
        f"{name}.sql": (
            "{{ config(materialized='incremental', hilbert_by=['city', 'brand', 'day'], "
            "file_count=16) }}"
            f"select * from ({CLUSTERED_SQL}) where id >= {{{{ var('lo') }}}} "
            f"and id < {{{{ var('hi') }}}}"),
        f"{name}.yml": skip_coverage_yml([name], POINT_QUERIES),
    }
    # Python models, their DataFrames Connect's (``test_python_models.py``'s models).
    models.update({"python/py_source.sql": SOURCE, "python/py_table.py": TABLE,
                   "python/py_pandas.py": PANDAS, "python/py_grows.py": GROWS})
    for i, predicate in enumerate(POINT_QUERIES):
        models[f"{name}_scan{i}.sql"] = (
            "{{ config(materialized='table') }}\n"
            f"select * from {{{{ zspark_scan(ref('{name}'), \"{predicate}\") }}}} t\n")
    write_project(root, "zspark_connect",
                  {file: textwrap.dedent(text).lstrip() for file, text in models.items()},
                  connect_profile(connect_port, SCHEMA))
    yield FormatProject(root, root)
    release(root)  # its dbt process ends its Connect session while the server runs


def _dbt(project: FormatProject, *args: str) -> str:
    done = project.dbt(*args)
    assert done.returncode == 0, done.stdout[-4000:]
    return " ".join(done.stdout.split())


def _java_below(pid: int) -> list[str]:
    """The command lines of ``pid``'s descendants that run a JVM."""
    found, pending = [], [pid]
    while pending:
        current = pending.pop()
        for task in Path(f"/proc/{current}/task").iterdir():
            children = (task / "children").read_text().split()
            pending.extend(int(child) for child in children)
        if current != pid:
            command = Path(f"/proc/{current}/cmdline").read_bytes().replace(b"\0", b" ")
            if b"java" in command:
                found.append(command.decode())
    return found


def test_a_clustered_incremental_model_builds_appends_and_scans_over_connect(
        project: FormatProject, server: Any) -> None:
    """Over Connect: a clustered build and an append hold the model's exact rows, the
    index covers every file, `zspark_scan` returns the plain filter's rows while its SQL
    names the files it leaves out, `skip_coverage` passes; dbt's process runs no JVM."""
    table = f"{SCHEMA}.events"
    built = _dbt(project, "run", "-s", "events", "--vars", "{lo: 0, hi: 3000}")
    assert "PASS=1" in built
    assert "index built by SQL" in built
    assert "16 files, 3,000 rows" in built
    assert _rows(server, f"select * from {table}", table) == _rows(
        server, f"select * from ({CLUSTERED_SQL}) where id < 3000")

    appended = _dbt(project, "run", "-s", "events", "--vars", "{lo: 3000, hi: 4000}")
    assert "PASS=1" in appended
    assert _rows(server, f"select * from {table}", table) == _rows(server, CLUSTERED_SQL)
    server.sql(f"refresh table {table}__zindex").collect()
    files = {str(row[0]) for row in server.sql(
        f"select distinct _metadata.file_path from {table}").collect()}
    indexed = {str(row[0]) for row in server.sql(
        f"select file_path from {table}__zindex where row_group is null").collect()}
    assert indexed == files
    assert len(files) > 16  # the append's files beside the build's

    scanned = _dbt(project, "run", "-s", "events_scan*")
    assert "PASS=3" in scanned
    for i, predicate in enumerate(POINT_QUERIES):
        plain = _rows(server, f"select * from {table} where {predicate}")
        assert plain
        assert _rows(server, f"select * from {SCHEMA}.events_scan{i}") == plain
        compiled = next(project.root.glob(f"target/compiled/**/events_scan{i}.sql")).read_text()
        left_out = sum(f"'{path}#" in compiled for path in files)
        assert left_out >= len(files) // 3, (predicate, left_out, len(files))

    tested = _dbt(project, "test", "-s", "events")
    assert "PASS=1" in tested
    assert "skips" in tested

    worker = WORKERS[project.session_dir].process
    assert worker.poll() is None
    assert _java_below(worker.pid) == []



def test_keys_only_python_computes_are_the_servers_udfs_over_connect(
        project: FormatProject, server: Any) -> None:
    """``curve_method='direct'`` over Connect: the model's key function goes to the server
    as a pandas UDF of dbt's Connect session, its code pickled by value. Z-order's
    byte-string key and Hilbert's integer one: rows exact, every file sorted by the
    stored layout's own key function and the files' key ranges disjoint; dbt's process
    runs no JVM."""
    import pyarrow.parquet as pq

    from dbt.adapters.zspark.layouts.keyed_plan import key_input_type
    from dbt.adapters.zspark.layouts.layout_state import StoredLayout

    clusterings = {"direct_z": "zorder_by=['city', 'brand']",
                   # The direct Hilbert key keeps each value's top bits (31 of two
                   # columns): columns whose top bits differ.
                   "direct_h": "hilbert_by=['price', 'day']"}
    for name, clustering in clusterings.items():
        (project.root / "models" / f"{name}.sql").write_text(
            f"{{{{ config(materialized='table', {clustering}, curve_method='direct', "
            f"file_count=8) }}}}" + CLUSTERED_SQL)
    assert "PASS=2" in _dbt(project, "run", "-s", *clusterings)
    for name in clusterings:
        table = f"{SCHEMA}.{name}"
        assert _rows(server, f"select * from {table}", table) == _rows(server, CLUSTERED_SQL)
        stored = StoredLayout.from_properties({str(k): str(v) for k, v in server.sql(
            f"show tblproperties {table}").collect()})
        assert stored is not None
        assert stored.curve_method == "direct"
        function = stored.key_function([key_input_type(t) for t in stored.column_types])
        files = sorted(str(r[0]) for r in server.sql(
            f"select distinct _metadata.file_path from {table}").collect())
        assert len(files) == 8, files
        ranges = []
        for path in files:
            frame = pq.read_table(path.removeprefix("file:")).to_pandas()
            keys = list(function(*(frame[c] for c in stored.columns)))
            assert keys == sorted(keys), (name, path)
            ranges.append((keys[0], keys[-1]))
        ranges.sort()
        assert all(a[1] <= b[0] for a, b in itertools.pairwise(ranges)), name
    worker = WORKERS[project.session_dir].process
    assert _java_below(worker.pid) == []


def test_python_models_run_on_the_connections_connect_session(
        project: FormatProject, server: Any) -> None:
    """Python models over Connect: the model's code runs in the dbt process on its Connect
    session (DataFrames the server computes); a table model is written into a version
    folder of its own and swapped in on a rebuild, a pandas result is written, an
    incremental model appends only the new rows; dbt's process runs no JVM."""
    _dbt(project, "run", "-s", "python")
    table = f"{SCHEMA}.py_table"
    assert _rows(server, f"select count(*), sum(twice) from {table}", table) == [
        (100, 2 * sum(range(100)))]
    threes = [i for i in range(100) if i % 7 == 3]
    assert _rows(server, f"select count(*), sum(half) from {SCHEMA}.py_pandas",
                 f"{SCHEMA}.py_pandas") == [(len(threes), sum(threes) / 2)]

    def location() -> str:
        return str(next(row[1] for row in server.sql(
            f"describe table extended {table}").collect() if row[0] == "Location"))

    first = location()
    assert "/py_table__zspark_versions/" in first, first
    _dbt(project, "run", "-s", "python", "--vars", "{n: 150}")
    assert _rows(server, f"select count(*), sum(twice) from {table}", table) == [
        (150, 2 * sum(range(150)))]
    assert location() != first
    grows = f"{SCHEMA}.py_grows"
    assert _rows(server, f"select count(*), count(distinct id), sum(id) from {grows}",
                 grows) == [(150, 150, sum(range(150)))]
    worker = WORKERS[project.session_dir].process
    assert _java_below(worker.pid) == []


def test_a_seed_is_one_dataframe_write_over_connect(project: FormatProject, server: Any) -> None:
    """Over Connect a seed's rows go to the server as one DataFrame write (Arrow), with
    dbt's seed semantics (``test_seeds.py``'s CSV: quoting, empty values as nulls,
    inferred types and ``column_types``)."""
    seeds = project.root / "seeds"
    seeds.mkdir(exist_ok=True)
    (seeds / "people.csv").write_text(CSV)
    (seeds / "people.yml").write_text(
        "version: 2\nseeds:\n  - name: people\n    config:\n"
        "      column_types: {id: string}\n")
    seeded = _dbt(project, "seed", "-s", "people")
    assert "3 seed rows inserted by one Spark write" in seeded, seeded[-3000:]
    assert "the CSV read by zspark" in seeded
    table = f"{SCHEMA}.people"
    assert _rows(server, f"select * from {table}", table) == EXPECTED


@pytest.mark.slow
def test_balanced_keys_and_partitioned_merges_over_connect(project: FormatProject,
                                                          server: Any) -> None:
    """A balanced incremental model (its tree fitted on the sample in dbt's process, each
    row's group found by SQL on the server) and a Hilbert one partitioned by day, each
    built, appended to and merged over Connect: rows exact after every run, every file
    sorted by the stored layout's key and its index row exact (``_check_files_and_index``),
    a balanced file one group, the merged partitions' files kept in their partitions."""
    from dbt.adapters.zspark.layouts import group_shift

    models = {"cbalanced": ("balanced_by=['city', 'brand']", CLUSTERED_SQL, (2000, 2200, 2400)),
              "cparted": ("hilbert_by=['city', 'brand'], partition_by=['day']", PARTED_SQL,
                          (3000, 3400, 3800))}
    for name, (layout, source, _) in models.items():
        (project.root / "models" / f"{name}.sql").write_text(
            f"{{{{ config(materialized='incremental', {layout}, file_count=8, "
            "zspark_recluster_runs=2, zspark_sort_appends=true) }}"
            f"select * from ({source}) where id >= {{{{ var('lo') }}}} "
            f"and id < {{{{ var('hi') }}}}")

    def checked(table: str) -> dict[str, list[tuple[Any, ...]]]:
        for fresh in (table, f"{table}__zindex"):
            server.sql(f"refresh table {fresh}").collect()
        return _check_files_and_index(
            lambda sql: [tuple(row) for row in server.sql(sql).collect()], table)

    for name, (_, source, (built, appended, merged)) in models.items():
        table = f"{SCHEMA}.{name}"
        logs = []
        for lo, hi in ((0, built), (built, appended), (appended, merged)):
            logs.append(_dbt(project, "run", "-s", name, "--vars", f"{{lo: {lo}, hi: {hi}}}"))
            assert _rows(server, f"select * from {table}", table) == _rows(
                server, f"select * from ({source}) where id < {hi}")
            files = checked(table)
            if lo == 0:
                base = files
            if lo == 0 and name == "cbalanced":
                properties = {str(k): str(v) for k, v in server.sql(
                    f"show tblproperties {table}").collect()}
                shift = group_shift(1000)
                groups = [{k >> shift for k in _file_keys(properties, path)} for path in base]
                assert all(len(g) == 1 for g in groups), groups  # no base file holds two
                assert len(set.union(*groups)) >= 2
        assert f"zspark: {name}: append (" in logs[1], logs[1][-3000:]
        assert f"zspark: {name}: merge (" in logs[2], logs[2][-3000:]
        if name == "cbalanced":
            assert "balanced layout:" in logs[0], logs[0][-3000:]
        else:
            for path, rows in files.items():
                if rows in base.values():  # a base file the merge kept, row for row
                    source_path = next(p for p, v in base.items() if v == rows)
                    assert path.rsplit("/", 2)[-2] == source_path.rsplit("/", 2)[-2]
            assert {path.rsplit("/", 2)[-2] for path in files} == {
                "day=2024-01-01", "day=2024-01-02"}


def test_a_killed_full_reclustering_over_connect_is_recovered_by_the_next_run(
        connect_port: int, server: Any, tmp_path: Path) -> None:
    """dbt clients killed (SIGKILL) over Connect at a full re-clustering's steps after an
    append (its new version written; checked, not yet swapped), the server up, the model
    keyed by the server's Python UDF (``curve_method='direct'``): each next run repairs
    what the one before left; a plain `dbt build` at the end finds the rows, the index
    and the scan exact (the checks of test_kills), the table's layout still direct."""
    from dbt.adapters.zspark.layouts.layout_state import StoredLayout
    from tests.harness.kills import MODEL, KilledProject

    killed = KilledProject(tmp_path, connect_port=connect_port, schema="zc_kills",
                           curve_method="direct")
    killed.build(1500)
    killed.build(1800)  # an append: rows for the full re-clustering to rewrite
    for step in ("rewrite:written", "rewrite:checked"):
        killed.killed(step, *killed.recluster(full=True))
    killed.build(killed.stop + 300)
    stored = StoredLayout.from_properties({str(k): str(v) for k, v in server.sql(
        f"show tblproperties zc_kills.{MODEL}").collect()})
    assert stored is not None
    assert stored.curve_method == "direct", stored.describe()


def test_a_killed_overwrite_over_connect_is_finished_by_the_server(
        connect_port: int, tmp_path: Path) -> None:
    """A client killed over Connect once its overwrite ran (server_protocols.py)."""
    from tests.harness.kills import KilledProject

    killed_overwrite_is_finished_by_the_server(KilledProject(
        tmp_path, connect_port=connect_port, strategy="insert_overwrite",
        schema="zc_overwrite"))


def test_a_second_run_over_connect_fails_fast_while_another_process_writes(
        connect_port: int, tmp_path: Path) -> None:
    """The lock over Connect, two schedulers against one server (server_protocols.py)."""
    from tests.harness.kills import KilledProject

    second_run_fails_fast_while_another_writes(
        KilledProject(tmp_path / "project", connect_port=connect_port, schema="zc_lock"),
        tmp_path / "gate")


def test_the_servers_event_logs_are_a_workload_over_connect(
        project: FormatProject, server: Any) -> None:
    """The query history over a server: the Connect server's own event logs, read by its
    SQL (``reach/server/event_logs.py``), give `zspark_advise` each filter with its count;
    a compressed log is counted and left out, by name."""
    (project.root / "models" / "history.sql").write_text(
        "{{ config(materialized='table', file_count=4) }}\n"
        f"select * from ({CLUSTERED_SQL})")
    _dbt(project, "run", "-s", "history")
    table = f"{SCHEMA}.history"
    server.sql(f"refresh table {table}").collect()
    for _ in range(3):
        server.sql(f"select count(*) from {table} where brand = 42").collect()
    server.sql(f"select * from {table} where city in ('CITY001', 'CITY002')").collect()
    folder = server.conf.get("spark.eventLog.dir")
    Path(folder.removeprefix("file:"), "app-0-lz4.lz4").write_bytes(b"\x00\x01")
    advice = _dbt(project, "run-operation", "zspark_advise", "--args",
                  f"{{relation: {table}}}")
    assert "query history read from: file:" in advice, advice[-3000:]
    assert "[history] x3: `brand` = 42" in advice, advice[-3000:]
    assert "[history] x1: `city` IN ('CITY001', 'CITY002')" in advice, advice[-3000:]
    assert "event logs of a codec not read here (1 files" in advice, advice[-3000:]
