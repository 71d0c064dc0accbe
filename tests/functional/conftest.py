"""Fixtures of the functional tests: the shared dbt project."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.class_archives import record_all
from tests.functional.dbt_project import SCHEMA, DbtProject
from tests.functional.format_project import release_all


@pytest.fixture(scope="session")
def project(tmp_path_factory: pytest.TempPathFactory, session_dir: Path, spark: Any) -> DbtProject:
    root = tmp_path_factory.mktemp("dbt_project")
    result = DbtProject(root, spark)
    result.write("dbt_project.yml", """
        name: zspark_tests
        version: "1.0"
        config-version: 2
        profile: zspark_tests
        flags:
          send_anonymous_usage_stats: false
    """)
    result.write("profiles.yml", f"""
        zspark_tests:
          target: dev
          outputs:
            dev:
              type: zspark
              method: session
              schema: {SCHEMA}
              session_dir: {session_dir}
    """)
    result.write("models/.keep", "")
    return result


@pytest.fixture(scope="session", autouse=True)
def _class_archives() -> None:
    """The class archives of the suite's JVMs, recorded before its first functional test
    by whichever worker comes first (the other waits, then finds them)."""
    record_all()


@pytest.fixture(autouse=True)
def _kept_dbt_processes() -> Iterator[None]:
    """The dbt processes a format test kept (``format_project.py``) end with it."""
    yield
    release_all()


@pytest.fixture(scope="session")
def jars() -> None:
    """The Delta and Iceberg jars `make setup` fetched (format tests start sessions
    with them, offline)."""
    from dbt.adapters.zspark.formats.settings import DELTA, ICEBERG, JARS_DIR

    for table_format in (DELTA, ICEBERG):
        assert table_format.jar_files(), (
            f"{table_format.name} jars missing in {JARS_DIR}: `make setup` fetches them")
