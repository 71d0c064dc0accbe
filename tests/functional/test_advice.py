"""``zspark_advise``: the workload read from the project's own code and configs, candidate
layouts scored on a sample of the table, and the choice."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from dbt.adapters.zspark.advice import table_sample
from dbt.adapters.zspark.advice.table_sample import count_sql, sample_sql, sampled_files
from dbt.adapters.zspark.skipping.stats import spark_path
from tests.functional.dbt_project import DbtProject, files_read

EVENTS = """
{{ config(materialized='table', file_count=16,
          workload=[{'predicate': "day = date'2024-03-01'", 'count': 4}]) }}
select id,
       concat('CITY', lpad(cast(pmod(hash(id, 1), 40) as string), 3, '0')) as city,
       cast(pmod(hash(id, 2), 1000) as int) as brand,
       date_add(date'2024-01-01', cast(pmod(hash(id, 3), 120) as int)) as day,
       cast(pmod(hash(id, 4), 997) as double) / 10 as amount,
       concat('note ', id) as note
from range(40000)
"""


def test_advise_reads_the_projects_queries_and_scores_layouts(project: DbtProject) -> None:
    project.write("models/advice/adv_events.sql", EVENTS)
    # Queries of the table in the project's own code: a filter of a downstream model (a
    # qualified one joined with another table too), and a zspark_scan.
    project.write("models/advice/adv_city.sql", """
        {{ config(materialized='view') }}
        select * from {{ ref('adv_events') }} where city = 'CITY007' and amount > 0
    """)
    project.write("models/advice/adv_city_days.sql", """
        {{ config(materialized='view') }}
        select e.city, count(*) as n
        from {{ ref('adv_events') }} e join {{ ref('adv_city') }} c on e.id = c.id
        where e.day between date'2024-02-01' and date'2024-02-07' and e.city = 'CITY003'
          and c.brand > 3
        group by e.city
    """)
    project.write("models/advice/adv_scan.sql", """
        {{ config(materialized='view', enabled=false) }}
        select * from {{ zspark_scan(ref('adv_events'), "brand = 77") }}
    """)
    project.dbt("run", "--select", "adv_events")
    project.dbt("run-operation", "zspark_advise", "--args", "{relation: adv_events}")
    text = project.log_text()
    assert "zspark_advise" in text, text
    # Every source counted: the declared workload and both models' filters.
    assert "[workload] x4: day = date'2024-03-01'" in text or \
        "[workload] x4: day = DATE'2024-03-01'" in text, text
    assert "[model adv_city] x1: city = 'CITY007' AND amount > 0" in text, text
    assert re.search(r"\[model adv_city_days\] x1: day BETWEEN .* AND city = 'CITY003'",
                     text), text
    assert "brand > 3" not in text  # a filter on the other table of the join
    scored = {m.group(2): float(m.group(1)) for m in re.finditer(
        r"^ [ *]\s+([\d.]+)%\s+(\S.*)$", text, re.MULTILINE)}
    assert "unclustered" in scored, text
    chosen = re.search(r"^choice: (\S+=\[[^\]]*\])", text, re.MULTILINE)
    assert chosen is not None, text
    # The workload filters on day (5 queries) and city (2): the choice clusters both, and
    # reads far fewer files than no clustering.
    assert "'day'" in chosen.group(1), text
    assert "'city'" in chosen.group(1), text
    assert scored[chosen.group(1)] < scored["unclustered"] / 3, scored


def test_a_misspelt_clustering_config_is_warned_by_name(project: DbtProject) -> None:
    project.write("models/advice/adv_typo.sql", """
        {{ config(materialized='table', hilbrt_by=['city'], layout='hilbrt') }}
        select id, concat('CITY', cast(id % 7 as string)) as city from range(100)
    """)
    project.dbt("run", "--select", "adv_typo")
    text = project.log_text()
    assert ("model 'adv_typo': config 'hilbrt_by' is not a zspark config; did you mean "
            "'hilbert_by'? It was ignored.") in text, text
    assert "model 'adv_typo': config 'layout' is not a zspark config; did you mean " \
        "'hilbert_by'?" in text, text


AUTO_ROWS = """
select id,
       concat('CITY', lpad(cast(pmod(hash(id, 1), 40) as string), 3, '0')) as city,
       cast(pmod(hash(id, 2), 1000) as int) as brand,
       date_add(date'2024-01-01', cast(pmod(hash(id, 3), 120) as int)) as day
from range({{ var('start', 0) }}, {{ var('stop', 20000) }})
"""


def test_cluster_by_auto_builds_the_layout_the_workload_asks_for(project: DbtProject) -> None:
    project.write("models/advice/auto_events.sql",
                  "{{ config(materialized='table', cluster_by='auto', file_count=8) }}\n"
                  + AUTO_ROWS)
    # Two models query it, one by brand, one by day.
    project.write("models/advice/auto_by_brand.sql", """
        {{ config(materialized='view') }}
        select * from {{ ref('auto_events') }} where brand = 7
    """)
    project.write("models/advice/auto_by_day.sql", """
        {{ config(materialized='view') }}
        select * from {{ ref('auto_events') }} where day = date'2024-02-02'
    """)
    project.write("models/advice/auto_appended.sql",
                  "{{ config(materialized='incremental', incremental_strategy='append', "
                  "cluster_by='auto', file_count=4, "
                  "workload=['city = \\'CITY001\\'', 'brand = 3']) }}\n" + AUTO_ROWS)
    project.write("models/advice/auto_idle.sql",
                  "{{ config(materialized='table', cluster_by='auto') }}\n" + AUTO_ROWS)
    project.dbt("run", "--select", "auto_events", "auto_appended", "auto_idle")
    text = project.log_text()
    chosen = re.search(r"auto_events: cluster_by='auto' chose (\w+)=\[([^\]]*)\] from 2 "
                       r"queries \(2 from model\)", text)
    assert chosen is not None, text
    assert set(re.findall(r"'(\w+)'", chosen.group(2))) == {"brand", "day"}, text
    # The table is clustered as chosen: its stored layout names those columns, and every
    # row is there.
    properties = {r.key: r.value for r in project.spark.sql(
        f"show tblproperties {project.table('auto_events')}").collect()}
    assert any("brand" in v and "day" in v for k, v in properties.items()
               if k.startswith("zspark")), properties
    assert project.rows(f"select count(*), count(distinct id) from "
                        f"{project.table('auto_events')}") == [(20000, 20000)]
    assert project.spark.catalog.tableExists(project.table("auto_events__zindex"))
    # A declared workload counts as well; no queries at all: unclustered, and said so.
    assert re.search(r"auto_appended: cluster_by='auto' chose \w+=\[.*'city'.*\] from 2 "
                     r"queries \(2 from workload\)", text), text
    assert "auto_idle: cluster_by='auto': no workload yet (0 queries found" in text, text
    assert not project.spark.catalog.tableExists(project.table("auto_idle__zindex"))
    # Rows added to an incremental model go by the layout its build chose.
    project.dbt("run", "--select", "auto_appended", "--vars", "{start: 20000, stop: 21000}")
    assert "auto_appended: cluster_by='auto': rows added by the table's layout" in \
        project.log_text(), project.log_text()
    assert project.rows(f"select count(*) from {project.table('auto_appended')}") == [(21000,)]


def test_cluster_by_takes_auto_alone(project: DbtProject) -> None:
    project.write("models/advice/auto_bad.sql",
                  "{{ config(materialized='table', cluster_by='always') }}\nselect 1 as id")
    project.write("models/advice/auto_both.sql",
                  "{{ config(materialized='table', cluster_by='auto', hilbert_by=['id']) }}\n"
                  "select 1 as id")
    project.write("models/advice/auto_horizon.sql",
                  "{{ config(materialized='table', cluster_by='auto', "
                  "zspark_auto_horizon_days='weekly') }}\nselect 1 as id")
    project.dbt("run", "--select", "auto_bad", "auto_both", "auto_horizon", expect_pass=False)
    text = project.log_text()
    assert ("Model 'auto_horizon': config 'zspark_auto_horizon_days' is 'weekly'. Allowed: a "
            "number of days above 0") in text, text
    assert not project.spark.catalog.tableExists(project.table("auto_horizon"))
    assert "Model 'auto_bad': config 'cluster_by' is 'always'. Allowed: 'auto'" in text, text
    assert "Model 'auto_both': config 'cluster_by and hilbert_by' are both set" in text, text


def test_the_query_history_in_sparks_event_logs_is_a_workload(project: DbtProject) -> None:
    project.write("models/advice/adv_history.sql",
                  "{{ config(materialized='table', file_count=8) }}\n" + AUTO_ROWS)
    project.dbt("run", "--select", "adv_history")
    table = project.table("adv_history")
    # Queries of the table as anyone runs them: the session logs them (zstd, rolling).
    for _ in range(3):
        project.spark.sql(f"select count(*) from {table} where brand = 77").collect()
    project.spark.sql(f"select * from {table} where city in ('CITY001', 'CITY002') "
                      f"and day >= date'2024-03-01'").collect()
    project.spark.sql(f"select * from {table} where id + 1 = 5").collect()  # no column filter
    # A log of a codec not read here is counted and left out.
    folder = project.spark.conf.get("spark.eventLog.dir")
    assert folder is not None
    Path(folder.removeprefix("file:"), "app-0-lz4.lz4").write_bytes(b"\x00\x01")
    project.dbt("run-operation", "zspark_advise", "--args", "{relation: adv_history}")
    text = project.log_text()
    assert "event logs of a codec not read here (1 files" in text, text
    assert "query history read from: file:" in text, text
    assert "[history] x3: `brand` = 77" in text, text
    assert ("[history] x1: `city` IN ('CITY001', 'CITY002') AND `day` >= date'2024-03-01'"
            in text), text
    assert re.search(r"^choice: \w+=\[.*'brand'.*\]", text, re.MULTILINE), text


def stored_layout(project: DbtProject, name: str) -> str:
    """The layout stored with a table: its config and columns."""
    from dbt.adapters.zspark.layouts.layout_state import StoredLayout

    properties = {r.key: r.value for r in project.spark.sql(
        f"show tblproperties {project.table(name)}").collect()}
    stored = StoredLayout.from_properties(properties)
    assert stored is not None
    return f"{stored.config_key}={list(stored.columns)}"


def test_an_unchanged_workload_keeps_the_layout_and_a_shift_changes_it(
        project: DbtProject) -> None:
    project.write("models/advice/auto_steady.sql",
                  "{{ config(materialized='table', cluster_by='auto', file_count=8, "
                  "workload=var('steady_workload')) }}\n" + AUTO_ROWS)
    before = "{steady_workload: ['brand = 7', \"day = date'2024-02-02'\"]}"
    project.dbt("run", "--select", "auto_steady", "--vars", before)
    first = stored_layout(project, "auto_steady")
    for _ in range(2):  # rebuilt on the same workload: the same layout, nothing changed
        project.dbt("run", "--select", "auto_steady", "--vars", before)
        assert ": changed, " not in project.log_text()
        assert stored_layout(project, "auto_steady") == first
    project.dbt("run", "--select", "auto_steady", "--vars",
                "{steady_workload: [\"city = 'CITY001'\"]}")
    assert "auto_steady: cluster_by='auto': linear_by=['city'] against the table's" in \
        project.log_text(), project.log_text()
    assert ": changed, " in project.log_text()
    assert "city" in stored_layout(project, "auto_steady")


def test_an_incremental_model_is_re_clustered_once_when_its_workload_moves(
        project: DbtProject) -> None:
    project.write("models/advice/auto_growing.sql",
                  "{{ config(materialized='incremental', incremental_strategy='append', "
                  "cluster_by='auto', file_count=8, workload=var('growing_workload'), "
                  "zspark_auto_horizon_days=var('horizon', none)) }}\n"
                  + AUTO_ROWS)
    before = "{growing_workload: ['brand = 7', 'brand = 9']"
    # Queries a day: 40 over the default 30-day horizon pay for rewriting ten files; over
    # a thousandth of a day they do not.
    after = ("{growing_workload: [{predicate: \"city = 'CITY001'\", count: 20}, "
             "{predicate: \"city = 'CITY002'\", count: 20}]")
    project.dbt("run", "--select", "auto_growing", "--vars", before + ", stop: 20000}")
    assert stored_layout(project, "auto_growing") == "linear_by=['brand']"
    # The same workload: rows added by the table's layout.
    project.dbt("run", "--select", "auto_growing", "--vars",
                before + ", start: 20000, stop: 21000}")
    assert "re-clustering the table by it" not in project.log_text()
    assert stored_layout(project, "auto_growing") == "linear_by=['brand']"
    # The workload moves to city, but over a short horizon the rewrite does not pay.
    project.dbt("run", "--select", "auto_growing", "--vars",
                after + ", start: 21000, stop: 21500, horizon: 0.001}")
    assert re.search(r"auto_growing: cluster_by='auto': linear_by=\['city'\] .*: kept, the "
                     r"workload's [\d.]+ queries would open \d+ files fewer, less than the",
                     project.log_text()), project.log_text()
    assert stored_layout(project, "auto_growing") == "linear_by=['brand']"
    # Over the default horizon: the whole table re-clustered by the new choice, once.
    project.dbt("run", "--select", "auto_growing", "--vars",
                after + ", start: 21500, stop: 22000}")
    assert "auto_growing: cluster_by='auto': linear_by=['city'] (" in project.log_text(), \
        project.log_text()
    assert "re-clustering the table by it" in project.log_text()
    assert stored_layout(project, "auto_growing") == "linear_by=['city']"
    project.dbt("run", "--select", "auto_growing", "--vars",
                after + ", start: 22000, stop: 23000}")
    assert "re-clustering the table by it" not in project.log_text()
    # Every row once, and the files narrow on city: a point on it could skip most.
    table = project.table("auto_growing")
    assert project.rows(f"select count(*), count(distinct id) from {table}") == \
        [(23000, 23000)]
    [(files, holding)] = project.rows(
        f"select count(*), count_if(low <= 'CITY001' and high >= 'CITY001') from ("
        f"select min(city) as low, max(city) as high from {table} "
        f"group by input_file_name())")
    assert holding * 3 <= files, (holding, files)


def test_the_advice_samples_a_bounded_share_of_a_large_tables_files(
        project: DbtProject, monkeypatch: pytest.MonkeyPatch) -> None:
    """An incremental AUTO run asks for advice at every run: a table of more files than
    ``SAMPLE_FILES`` is sampled from that many of them, and Spark opens no other."""
    project.write("models/advice/adv_events.sql", EVENTS)
    project.dbt("run", "--select", "adv_events")
    table = project.table("adv_events")
    paths = sorted(spark_path(f) for f in project.files("adv_events"))
    assert len(paths) == 16, paths
    chosen = sampled_files(paths, 4)
    assert len(chosen) == 4
    assert set(chosen) <= set(paths)
    [(rows,)] = project.rows(count_sql(table, chosen))
    assert 0 < rows < 40000
    sample = sample_sql(table, {"city": "city", "src": "_metadata.file_path"}, chosen, rows,
                        rows // 2)
    drawn, opened = files_read(project.spark, sample)
    assert opened == 4, opened
    assert 0.3 * rows < drawn < 0.7 * rows, (drawn, rows)
    assert {r[0] for r in project.rows(f"select distinct src from ({sample})")} <= set(chosen)
    # The same rows at every run of the unchanged table: its choice cannot move by chance.
    assert project.rows(sample) == project.rows(sample)
    # The advice through dbt, with the bound below the table's files: said, and still
    # choosing the columns the workload filters on.
    monkeypatch.setattr(table_sample, "SAMPLE_FILES", 4)
    project.dbt("run-operation", "zspark_advise", "--args", "{relation: adv_events}")
    text = project.log_text()
    assert "advice sampled from 4 of its 16 files" in text, text
    chosen_layout = re.search(r"^choice: (\S+=\[[^\]]*\])", text, re.MULTILINE)
    assert chosen_layout is not None, text
    assert "'day'" in chosen_layout.group(1), text
