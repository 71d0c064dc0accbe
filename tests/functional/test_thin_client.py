"""The thin install, as a user makes it: README.md's commands ("A thin install") run in a
fresh venv, Connect's pure-Python client in place of pyspark, then that venv's dbt runs a
clustered project on a local Spark Connect server: a seed, a clustered incremental
model built and appended (rows exact), `zspark_scan`, `skip_coverage` and a Python model.
A session target is refused by name. Slow (``make test-thin-client``): pip installs dbt
and its dependencies from the index (about a minute).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.functional.dbt_project import skip_coverage_yml, write_project
from tests.functional.test_connect import _rows, connect_profile
from tests.functional.test_python_models import SOURCE, TABLE
from tests.functional.test_thrift import CLUSTERED_SQL, POINT_QUERIES
from tests.harness.servers import connect_client, connect_server, own_metastore
from tests.harness.thin_install import PLUGIN_PATH, readme_commands

pytestmark = [pytest.mark.spark, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
SCHEMA = "thin"
SPARK_ENV = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}


@pytest.fixture(scope="module")
def thin_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv made by README's commands, the plugin installed from this checkout."""
    venv = tmp_path_factory.mktemp("thin") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    for command in readme_commands():
        assert command[0] == "pip"
        words = [str(REPO) if word == PLUGIN_PATH else word for word in command[1:]]
        subprocess.run([python, "-m", "pip", "--quiet", *words], check=True, cwd=venv.parent)
    return venv


@pytest.fixture(scope="module")
def connect_port(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    home = tmp_path_factory.mktemp("thin_server")
    with connect_server(home, own_metastore(home), SPARK_ENV) as port:
        yield port


@pytest.fixture(scope="module")
def server(connect_port: int) -> Iterator[Any]:
    with connect_client(connect_port) as session:
        yield session


def test_the_venv_holds_connects_client_alone(thin_venv: Path) -> None:
    """No py4j, no jars, pyspark remote-only: this venv cannot start a JVM."""
    probe = subprocess.run(
        [str(thin_venv / "bin" / "python"), "-c", textwrap.dedent("""
            import importlib.util, pathlib, pyspark, pyspark.util
            print(importlib.util.find_spec('py4j') is None,
                  (pathlib.Path(pyspark.__file__).parent / 'jars').exists(),
                  pyspark.util.is_remote_only())
        """)], capture_output=True, text=True, check=True)
    assert probe.stdout.split() == ["True", "False", "True"]


def test_a_clustered_project_runs_on_the_thin_install(
        thin_venv: Path, connect_port: int, server: Any,
        tmp_path_factory: pytest.TempPathFactory) -> None:
    root = tmp_path_factory.mktemp("thin_project")
    models = {
        "events.sql": "{{ config(materialized='incremental', "
                      "hilbert_by=['city', 'brand', 'day'], file_count=8) }}\n"
                      f"select * from ({CLUSTERED_SQL}) "
                      "where id >= {{ var('lo') }} and id < {{ var('hi') }}",
        "events.yml": skip_coverage_yml(["events"], POINT_QUERIES),
        "events_scan.sql": "{{ config(materialized='table') }}\n"
                           f"select * from {{{{ zspark_scan(ref('events'), "
                           f"\"{POINT_QUERIES[0]}\") }}}} t\n",
        "python/py_source.sql": SOURCE,
        "python/py_table.py": TABLE,
    }
    # The Connect target, and a session target that the thin install cannot run.
    profile = connect_profile(connect_port, SCHEMA).rstrip() + f"""
          embedded:
            type: zspark
            method: session
            schema: {SCHEMA}
    """
    write_project(root, "thin_client",
                  {name: textwrap.dedent(text).lstrip() for name, text in models.items()},
                  profile)
    (root / "seeds").mkdir()
    (root / "seeds" / "codes.csv").write_text('code,label\n1,"a, quoted"\n2,\n')

    def dbt(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(thin_venv / "bin" / "dbt"), *args, "--profiles-dir", str(root)],
            cwd=root, capture_output=True, text=True, timeout=600,
            env={**os.environ, "DBT_SEND_ANONYMOUS_USAGE_STATS": "false"})

    def ok(*args: str) -> str:
        done = dbt(*args)
        assert done.returncode == 0, done.stdout[-4000:]
        return " ".join(done.stdout.split())

    refused = dbt("debug", "--target", "embedded")
    assert refused.returncode != 0
    assert "method: session runs Spark's driver in the dbt process" in refused.stdout
    assert "pyspark-client" in refused.stdout

    assert "PASS=1" in ok("seed")
    assert _rows(server, f"select * from {SCHEMA}.codes", f"{SCHEMA}.codes") == [
        (1, "a, quoted"), (2, None)]

    table = f"{SCHEMA}.events"
    built = ok("run", "-s", "events", "--vars", "{lo: 0, hi: 3000}")
    assert "8 files, 3,000 rows" in built
    ok("run", "-s", "events", "--vars", "{lo: 3000, hi: 4000}")
    assert _rows(server, f"select * from {table}", table) == _rows(server, CLUSTERED_SQL)

    assert "PASS=3" in ok("run", "-s", "events_scan", "python")
    assert _rows(server, f"select * from {SCHEMA}.events_scan") == _rows(
        server, f"select * from {table} where {POINT_QUERIES[0]}")
    py_table = f"{SCHEMA}.py_table"
    assert _rows(server, f"select count(*), sum(twice) from {py_table}", py_table) == [
        (100, 2 * sum(range(100)))]

    tested = ok("test", "-s", "events")
    assert "PASS=1" in tested
    assert "skips" in tested
