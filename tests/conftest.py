"""Shared fixtures: one embedded Spark session and one dbt project per test process."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from tests.bench.runs import BENCH_RUNS, start_bench_runs

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The benchmarks' checks last: their benchmarks run meanwhile."""
    items.sort(key=lambda item: item.nodeid.startswith("tests/bench/"))


def pytest_collection_finish(session: pytest.Session) -> None:
    """Start the benchmarks tests/bench checks now, to run beside every other test."""
    if any(item.nodeid.startswith("tests/bench/") for item in session.items):
        root = Path(tempfile.mkdtemp(prefix="zspark-benches-"))
        session.config.stash[BENCH_RUNS] = start_bench_runs(root)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Stop the benchmarks of an interrupted suite."""
    for run in session.config.stash.get(BENCH_RUNS, {}).values():
        run.stop()


def pytest_report_header(config: pytest.Config) -> list[str]:
    from importlib.metadata import version

    names = ("dbt-core", "dbt-spark", "pyspark", "pyarrow", "sqlglot", "hypothesis")
    return ["versions: " + ", ".join(f"{n} {version(n)}" for n in names)]


@pytest.fixture(scope="session")
def session_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("zspark_session")


@pytest.fixture(scope="session")
def spark(session_dir: Path) -> Any:
    """The process's Spark session, configured exactly as the dbt profile configures it."""
    from pyspark.sql import SparkSession

    from dbt.adapters.zspark.connections import session_defaults

    builder = SparkSession.builder.master("local[2]").enableHiveSupport()
    settings = {
        **session_defaults(str(session_dir)),
        "spark.sql.shuffle.partitions": "4",
        "spark.sql.ansi.enabled": "false",
        "spark.driver.memory": "2g",
    }
    for key, value in settings.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session
