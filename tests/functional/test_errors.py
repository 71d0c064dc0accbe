"""Bad configs fail before anything is written; failed builds keep the previous table."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.functional.dbt_project import DbtProject

ROWS = "select id, cast(id % 7 as int) as a, cast(id as string) as s from range(50)"

BAD_CONFIGS = {
    "unknown_column": ("zorder_by=['a', 'nope']", "zorder_by", "names column 'nope'"),
    "both_curves": ("zorder_by=['a'], hilbert_by=['s']", "zorder_by and hilbert_by",
                    "are both set"),
    "empty_list": ("hilbert_by=[]", "hilbert_by", "is empty"),
    "few_boundaries": ("zorder_by=['a', 's'], boundary_count=1", "boundary_count",
                       "a whole number >= 2"),
    "no_files": ("zorder_by=['a'], file_count=0", "file_count", "a whole number >= 1"),
    "bad_method": ("zorder_by=['a'], curve_method='fancy'", "curve_method", "'boundary'"),
    "unknown_partition": ("zorder_by=['a'], partition_by=['day']", "partition_by",
                          "names column 'day'"),
}

BAD_TYPES = {
    "array_column": "array(id, id)",
    "map_column": "map('k', id)",
    "struct_column": "named_struct('x', id)",
    "binary_column": "cast(s as binary)",
}


def table_exists(project: DbtProject, name: str) -> bool:
    return bool(project.spark.catalog.tableExists(project.table(name)))


def refusals(project: DbtProject, models: dict[str, str]) -> dict[str, str]:
    """Each of ``models`` (name: SQL) written and run in one invocation, each failing on
    its own: the message of each model's result."""
    for name, sql in models.items():
        project.write(f"models/errors/{name}.sql", sql)
    results = project.dbt("run", "--select", *models, expect_pass=False)
    messages = {result.node.name: str(result.message) for result in results}
    assert set(messages) == set(models), messages
    assert all(result.status == "error" for result in results), messages
    return messages


def test_bad_config_names_model_config_and_allowed_values(project: DbtProject) -> None:
    messages = refusals(project, {case: f"""
        {{{{ config(materialized='table', {config}) }}}}
        {ROWS}
    """ for case, (config, _, _) in BAD_CONFIGS.items()})
    for case, (_, key, problem) in BAD_CONFIGS.items():
        assert f"Model '{case}': config '{key}' " in messages[case], (case, messages[case])
        assert problem in messages[case], (case, messages[case])
        assert "Allowed:" in messages[case], (case, messages[case])
        assert not table_exists(project, case)
        assert not table_exists(project, f"{case}__zspark_new")


def test_unsupported_column_type_is_refused(project: DbtProject) -> None:
    messages = refusals(project, {case: f"""
        {{{{ config(materialized='table', hilbert_by=['id', 'bad']) }}}}
        select id, s, {expression} as bad from ({ROWS})
    """ for case, expression in BAD_TYPES.items()})
    for case in BAD_TYPES:
        assert (f"Model '{case}': config 'hilbert_by' names column 'bad' of type"
                in messages[case]), (case, messages[case])
        assert ("Allowed: columns of type byte, short, int, long, float, double, decimal"
                in messages[case]), (case, messages[case])
        assert not table_exists(project, case)


def test_clustering_a_view_is_refused(project: DbtProject) -> None:
    project.write("models/errors/clustered_view.sql", f"""
        {{{{ config(materialized='view', zorder_by=['a']) }}}}
        {ROWS}
    """)
    project.dbt("run", "--select", "clustered_view", expect_pass=False)
    assert ("Model 'clustered_view': config 'zorder_by' is set on a model materialized as "
            "'view'") in project.log_text()
    assert not table_exists(project, "clustered_view")


@pytest.mark.parametrize(
    ("case", "broken_sql"),
    [
        # Fails while Spark writes the files (the column is not needed to sample boundaries).
        ("fails_midway", "select id, a, case when id = 42 then raise_error('injected failure') "
                         "else s end as s from ({rows})"),
        # Fails validation before anything is written.
        ("fails_validation", "select id, s from ({rows})"),
    ],
)
def test_failed_build_keeps_the_previous_table(project: DbtProject, case: str,
                                               broken_sql: str) -> None:
    broken = broken_sql.format(rows=ROWS)
    project.write(f"models/errors/{case}.sql", f"""
        {{{{ config(materialized='table', zorder_by=['id', 'a'], file_count=3) }}}}
        {{% if var('break_it', false) %}} {broken} {{% else %}} {ROWS} {{% endif %}}
    """)
    project.dbt("run", "--select", case)
    before = project.rows(f"select * from {project.table(case)}")
    assert len(before) == 50

    project.dbt("run", "--select", case, "--vars", "{break_it: true}", expect_pass=False)
    project.spark.catalog.refreshTable(project.table(case))
    assert project.rows(f"select * from {project.table(case)}") == before
    assert not table_exists(project, f"{case}__zspark_old")

    project.dbt("run", "--select", case)  # and the next good run cleans up and succeeds
    assert project.rows(f"select * from {project.table(case)}") == before
    assert not table_exists(project, f"{case}__zspark_new")


def test_a_build_that_died_before_registering_its_table_does_not_block_the_next(
        project: DbtProject) -> None:
    """A build killed while Spark wrote its next version leaves files in a version folder
    no table names; the next build deletes them first."""
    project.write("models/errors/died.sql", f"""
        {{{{ config(materialized='table', zorder_by=['id', 'a'], file_count=3) }}}}
        {ROWS}
    """)
    location = project.spark.catalog.getDatabase("zspark_test").locationUri
    leftover = Path(location.removeprefix("file:")) / "died__zspark_versions" / "dead"
    leftover.mkdir(parents=True)
    (leftover / "part-00000-dead.snappy.parquet").write_bytes(b"not parquet")
    project.dbt("run", "--select", "died")
    assert ("zspark: died: recovered zspark_test.died from a run that was stopped: files of a "
            "version no table names are deleted") in project.log_text()
    assert not leftover.exists()
    assert len(project.rows(f"select * from {project.table('died')}")) == 50
    assert not leftover.exists()


def test_a_table_that_becomes_a_view_leaves_no_version_folder(project: DbtProject) -> None:
    """A clustered table's name points to a version folder of its own: when the model
    becomes a view, dbt drops the table, and its folder goes with it."""
    model = "models/errors/becomes_view.sql"
    project.write(model, f"""
        {{{{ config(materialized='table', zorder_by=['id', 'a'], file_count=2) }}}}
        {ROWS}
    """)
    project.dbt("run", "--select", "becomes_view")
    location = project.spark.catalog.getDatabase("zspark_test").locationUri
    versions = Path(location.removeprefix("file:")) / "becomes_view__zspark_versions"
    assert len(list(versions.iterdir())) == 1
    project.write(model, "{{ config(materialized='view') }}\n" + ROWS)
    project.dbt("run", "--select", "becomes_view")
    assert not versions.exists()
    assert len(project.rows(f"select * from {project.table('becomes_view')}")) == 50


def test_a_second_run_of_a_table_fails_fast_while_another_holds_its_lock(
        project: DbtProject) -> None:
    """The lock's owner is a live process of this machine: the run stops before writing,
    naming it; once that process is gone, the next run takes the lock over."""
    import subprocess
    import time

    from dbt.adapters.zspark.core.model_lock import LockOwner, _process_start
    from dbt.adapters.zspark.core.sql_text import property_list

    project.write("models/errors/locked.sql", f"""
        {{{{ config(materialized='incremental', zorder_by=['id', 'a'], file_count=2) }}}}
        {ROWS}
    """)
    project.dbt("run", "--select", "locked")
    assert not table_exists(project, "locked__zspark_lock")  # released after the run
    before = project.rows(f"select * from {project.table('locked')}")
    other = subprocess.Popen(["sleep", "120"])
    try:
        owner = LockOwner(LockOwner.this_process().host, other.pid,
                          _process_start(other.pid), time.time())
        project.spark.sql(f"create view {project.table('locked__zspark_lock')} tblproperties "
                          f"{property_list(owner.to_properties())} as select 1 as zspark_lock")
        project.dbt("run", "--select", "locked", "--full-refresh", expect_pass=False)
        assert (f"Model 'locked': another run is writing zspark_test.locked: "
                f"zspark_test.locked__zspark_lock is held by process {other.pid} on host "
                ) in project.log_text()
        assert project.rows(f"select * from {project.table('locked')}") == before
    finally:
        other.kill()
        other.wait()
    project.dbt("run", "--select", "locked", "--full-refresh")
    assert f"held by process {other.pid}" in project.log_text()
    assert "which has ended; taking it over" in project.log_text()
    assert not table_exists(project, "locked__zspark_lock")
    assert project.rows(f"select * from {project.table('locked')}") == before
