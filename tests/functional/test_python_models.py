"""dbt Python models in an embedded session: run in the dbt process on its Spark session
(``python_models.py``), a table model written into a version folder of its own and
swapped in as a SQL model's, an incremental one appending, a pandas result."""

from __future__ import annotations

import pytest

from tests.functional.dbt_project import DbtProject

pytestmark = pytest.mark.spark

SOURCE = """
{{ config(materialized='table') }}
select id, cast(id % 7 as int) as a from range({{ var('n', 100) }})
"""

TABLE = """
def model(dbt, session):
    dbt.config(materialized="table")
    return dbt.ref("py_source").selectExpr("id", "a", "id * 2 as twice")
"""

PANDAS = """
def model(dbt, session):
    dbt.config(materialized="table")
    frame = dbt.ref("py_source").where("a = 3").toPandas()
    return frame.assign(half=frame["id"] / 2)
"""

GROWS = """
def model(dbt, session):
    dbt.config(materialized="incremental")
    rows = dbt.ref("py_source")
    if dbt.is_incremental:
        [[last]] = session.sql(f"select max(id) from {dbt.this}").collect()
        rows = rows.where(f"id > {last}")
    return rows
"""

CLUSTERED = """
def model(dbt, session):
    dbt.config(materialized="table", zorder_by=["a"])
    return dbt.ref("py_source")
"""


def _location(project: DbtProject, name: str) -> str:
    return str(next(row[1] for row in project.spark.sql(
        f"describe table extended {project.table(name)}").collect() if row[0] == "Location"))


def test_python_models_build_rebuild_and_append_in_the_session(project: DbtProject) -> None:
    for name, text in (("py_source.sql", SOURCE), ("py_table.py", TABLE),
                       ("py_pandas.py", PANDAS), ("py_grows.py", GROWS)):
        project.write(f"models/python/{name}", text)
    project.dbt("run", "--select", "models/python")
    assert project.rows(f"select count(*), sum(twice) from {project.table('py_table')}") \
        == [(100, 2 * sum(range(100)))]
    threes = [i for i in range(100) if i % 7 == 3]
    assert project.rows(f"select count(*), sum(half) from {project.table('py_pandas')}") \
        == [(len(threes), sum(threes) / 2)]
    first = _location(project, "py_table")
    assert "/py_table__zspark_versions/" in first, first

    # A rebuild is a new version swapped in; the incremental model appends the new rows.
    project.dbt("run", "--select", "models/python", "--vars", "{n: 150}")
    assert project.rows(f"select count(*), sum(twice) from {project.table('py_table')}") \
        == [(150, 2 * sum(range(150)))]
    second = _location(project, "py_table")
    assert second != first
    assert "/py_table__zspark_versions/" in second, second
    assert project.rows(f"select count(*), count(distinct id), sum(id) from "
                        f"{project.table('py_grows')}") == [(150, 150, sum(range(150)))]


def test_clustering_a_python_model_is_refused_naming_it(project: DbtProject) -> None:
    model = project.root / "models/python_clustered/py_clustered.py"
    project.write(str(model.relative_to(project.root)), CLUSTERED)
    try:
        project.dbt("run", "--select", "models/python_clustered", expect_pass=False)
    finally:
        model.unlink()  # the shared project's other runs never meet it
    text = project.log_text()
    assert "py_clustered" in text, text[-3000:]
    assert "zorder_by" in text, text[-3000:]
