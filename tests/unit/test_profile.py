"""A new user's profile: what `dbt init` asks for a zspark target, and what `dbt debug`
shows of it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from dbt.task.init import InitTask

from dbt.adapters.zspark.connections import ZSparkCredentials

TEMPLATE = Path(__file__).parents[2] / "dbt" / "include" / "zspark" / "profile_template.yml"


def _answered(answers: list[str]) -> dict[str, Any]:
    """The target `dbt init` writes from the template, given the user's ``answers``."""
    template = yaml.safe_load(TEMPLATE.read_text())
    task = InitTask.__new__(InitTask)  # the prompting needs no project or flags
    with CliRunner().isolation(input="".join(f"{a}\n" for a in answers)):
        return task.generate_target_from_input(template["prompts"], dict(template["fixed"]))


@pytest.mark.parametrize(("answers", "expected"), [
    (["1", "", "2", "analytics", "4"],
     {"type": "zspark", "method": "session", "session_dir": ".zspark",
      "table_format": "delta", "schema": "analytics", "threads": 4}),
    (["1", "/data/zs", "1", "analytics", ""],
     {"type": "zspark", "method": "session", "session_dir": "/data/zs",
      "schema": "analytics", "threads": 1}),
    (["2", "spark.internal", "", "analytics", "2"],
     {"type": "zspark", "method": "thrift", "host": "spark.internal", "port": 10000,
      "schema": "analytics", "threads": 2}),
])
def test_dbt_init_asks_how_to_reach_spark_and_writes_a_target_zspark_reads(
        answers: list[str], expected: dict[str, Any]) -> None:
    target = _answered(answers)
    assert target == expected
    credentials = ZSparkCredentials.from_dict(
        {k: v for k, v in target.items() if k not in ("type", "threads")})
    assert credentials.schema == "analytics"


def test_dbt_debug_shows_a_sessions_own_fields_not_a_host(tmp_path: Path) -> None:
    session = ZSparkCredentials.from_dict(
        {"method": "session", "schema": "analytics", "session_dir": str(tmp_path),
         "table_format": "iceberg"})
    shown = dict(session.connection_info())
    assert shown.keys() == {"method", "schema", "session_dir", "table_format", "master",
                            "warehouse"}
    assert shown["master"] == "local[*]"
    assert shown["warehouse"] == str(tmp_path.resolve() / "warehouse")
    thrift = ZSparkCredentials.from_dict(
        {"method": "thrift", "schema": "analytics", "host": "spark.internal", "port": 10000})
    assert dict(thrift.connection_info())["host"] == "spark.internal"
    assert "session_dir" not in dict(thrift.connection_info())
