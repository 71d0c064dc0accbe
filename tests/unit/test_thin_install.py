"""README's thin install names the plugin's own dependencies: pyproject.toml's, with
Connect's client (``pyspark-client``) in place of pyspark, of the same minor line."""

from __future__ import annotations

from pathlib import Path

import tomllib
from packaging.requirements import Requirement

from tests.harness.thin_install import PLUGIN_PATH, readme_commands

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def _pyproject_requirements() -> dict[str, Requirement]:
    project = tomllib.loads(PYPROJECT.read_text())["project"]
    return {Requirement(text).name: Requirement(text) for text in project["dependencies"]}


def test_the_thin_install_is_the_client_then_the_plugin_without_its_dependencies() -> None:
    first, second = readme_commands()
    assert first[:2] == ["pip", "install"]
    assert second == ["pip", "install", "--no-deps", PLUGIN_PATH]


def test_the_thin_install_names_every_dependency_but_pyspark() -> None:
    listed = {Requirement(text).name: Requirement(text) for text in readme_commands()[0][2:]}
    expected = _pyproject_requirements()
    pyspark = expected.pop("pyspark")
    client = listed.pop("pyspark-client")
    assert set(listed) == set(expected)
    for name, requirement in expected.items():
        # dbt-spark's extras (its `session` one pulls pyspark) are left out, the versions kept.
        assert listed[name].specifier == requirement.specifier, name
        assert not listed[name].extras, name
    # The client of the pinned line: its upper bound the same (its 4.1.4 is not published).
    assert {str(s) for s in client.specifier if s.operator == "<"} == {
        str(s) for s in pyspark.specifier if s.operator == "<"}
    assert all(client.specifier.contains(v) for v in ("4.1.3", "4.1.9"))
    assert not client.specifier.contains("4.2.0")
