"""``zspark_advise``: the workload read from the project's own code and configs, candidate
layouts scored on a sample of the table, and the choice."""

from __future__ import annotations

import re

from tests.functional.dbt_project import DbtProject

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
