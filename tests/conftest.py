"""Shared fixtures: one embedded Spark session and one dbt project per test process (two
workers of pytest-xdist, each given whole modules)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.bench.runs import BENCH_PROCESSES, BENCH_ROOT, start_bench_runs
from tests.harness import dbt_launcher

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
# Every JVM of the suite (sessions, dbt processes, the thrift server, the cluster) runs
# small data for seconds: the C1 compiler alone starts them sooner and leaves the two
# cores to the tests, where C2's threads would compile for a long run that never comes.
os.environ.setdefault("JAVA_TOOL_OPTIONS", "-XX:TieredStopAtLevel=1")


#: The modules that take longest, first: the two workers (pytest-xdist, one module each at
#: a time) start on them, and the many short ones fill in after.
LONGEST_FIRST = ("test_incremental", "test_kills", "test_skipping_edges", "test_object_store",
                 "test_format_increments", "test_thrift", "test_connect", "test_connect_formats",
                 "test_build", "test_reach_contract", "test_pruning_spark",
                 "test_format_partitioned", "test_scan",
                 "test_batches", "test_scan_properties", "test_cluster", "test_sql_keys",
                 "test_errors", "test_data_edges")


def _module_rank(item: pytest.Item) -> tuple[int, int]:
    if item.nodeid.startswith("tests/bench/"):
        return (2, 0)  # last: their benchmarks run meanwhile
    name = item.nodeid.split("::")[0].rsplit("/", 1)[-1].removesuffix(".py")
    return (0, LONGEST_FIRST.index(name)) if name in LONGEST_FIRST else (1, 0)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=_module_rank)


def pytest_configure(config: pytest.Config) -> None:
    """The folder of the suite's benchmark runs: the controller's, handed to each worker."""
    if hasattr(config, "workerinput"):
        config.stash[BENCH_ROOT] = Path(config.workerinput["zspark_bench_root"])
    else:
        config.stash[BENCH_ROOT] = Path(tempfile.mkdtemp(prefix="zspark-benches-"))


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    node.workerinput["zspark_bench_root"] = str(node.config.stash[BENCH_ROOT])


def pytest_collection_finish(session: pytest.Session) -> None:
    """The first worker (or the only process) starts the benchmarks tests/bench checks
    now, to run beside every other test; a bench test in any worker waits for them."""
    config = session.config
    first = getattr(config, "workerinput", {}).get("workerid", "gw0") == "gw0"
    benched = any(item.nodeid.startswith("tests/bench/") for item in session.items)
    if first and benched and not config.option.collectonly:
        config.stash[BENCH_PROCESSES] = start_bench_runs(config.stash[BENCH_ROOT])


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """The benchmarks this process started: waited for (another worker's tests may wait
    on them), or stopped when the suite was interrupted; its dbt launcher stopped."""
    dbt_launcher.stop()
    for process in session.config.stash.get(BENCH_PROCESSES, []):
        if exitstatus != pytest.ExitCode.INTERRUPTED:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=2400)
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def pytest_report_header(config: pytest.Config) -> list[str]:
    from importlib.metadata import version

    names = ("dbt-core", "dbt-spark", "pyspark", "pyarrow", "sqlglot", "hypothesis")
    return ["versions: " + ", ".join(f"{n} {version(n)}" for n in names)]


@contextlib.contextmanager
def _full_jit() -> Iterator[None]:
    """A JVM started without the suite's C1-only option: the process's own session runs
    all of its module's in-process dbt commands, long enough for C2's code to pay."""
    saved = os.environ.pop("JAVA_TOOL_OPTIONS", None)
    try:
        yield
    finally:
        if saved is not None:
            os.environ["JAVA_TOOL_OPTIONS"] = saved


@pytest.fixture(scope="session")
def session_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("zspark_session")


@pytest.fixture(scope="session")
def spark(session_dir: Path) -> Any:
    """The process's Spark session, configured exactly as the dbt profile configures it."""
    from pyspark.sql import SparkSession

    from dbt.adapters.zspark.connections import session_defaults

    builder = SparkSession.builder.master("local[2]").enableHiveSupport()
    # Its queries land in an event log (Spark 4's default: rolling, zstd): the query
    # history a cluster_by='auto' choice reads (tests/functional/test_advice.py).
    events = session_dir / "spark-events"
    events.mkdir(exist_ok=True)
    settings = {
        **session_defaults(str(session_dir)),
        "spark.eventLog.enabled": "true",
        "spark.eventLog.dir": events.as_uri(),
        "spark.sql.shuffle.partitions": "4",
        "spark.sql.ansi.enabled": "false",
        "spark.driver.memory": "2g",
    }
    for key, value in settings.items():
        builder = builder.config(key, value)
    with _full_jit():
        session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session
