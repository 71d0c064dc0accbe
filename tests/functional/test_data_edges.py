"""Every clusterable type and hostile data build correctly, with both curve methods."""

from __future__ import annotations

import pytest

from tests.functional.dbt_project import DbtProject

# Each column covers nulls and the awkward values of its type.
HOSTILE = """
select id,
  cast(case when id % 11 = 0 then null else id % 100 - 50 end as tinyint) as c_byte,
  cast(case when id % 13 = 0 then null else id * 37 % 2000 - 1000 end as smallint) as c_short,
  cast(id * 7919 % 100003 - 50000 as int) as c_int,
  case when id % 17 = 0 then null else id * 1000003 - 9000000000000 end as c_long,
  cast(case id % 9 when 0 then 'NaN' when 1 then '-0.0' when 2 then 'Infinity'
       when 3 then '-Infinity' when 4 then null else cast(id / 7 - 20 as string) end
       as double) as c_double,
  cast(case when id % 10 = 0 then 'NaN' else cast(id / 3 - 100 as string) end as float)
       as c_float,
  cast(case when id % 19 = 0 then null else id / 8 - 12.5 end as decimal(12, 3)) as c_decimal,
  case when id % 23 = 0 then null else date_add(date '1969-12-20', cast(id * 3 as int)) end
       as c_date,
  case when id % 29 = 0 then null
       else timestamp_micros(id * 3600000000 - 100000000000) end as c_timestamp,
  case when id % 31 = 0 then null
       else concat('https://example.com/a/very/long/shared/prefix/', cast(id % 97 as string))
  end as c_url,
  case when id % 5 = 0 then '' when id % 7 = 0 then 'ünïcødé-' || id else 'x' || id end
       as c_text,
  case when id % 37 = 0 then null else id % 3 = 0 end as c_bool
from range(400)
"""
COLUMNS = ["c_byte", "c_short", "c_int", "c_long", "c_double", "c_float", "c_decimal",
           "c_date", "c_timestamp", "c_url", "c_text", "c_bool"]

SHAPES = {
    "empty": "select * from ({hostile}) where false",
    "one_row": "select * from ({hostile}) where id = 5",
    "identical": "select 7 as id, 'same' as c_url, cast(1.5 as double) as c_double "
                 "from range(300)",
    "skewed": "select id, case when id % 10 < 9 then 'hot' else cast(id as string) end "
              "as c_url, cast(case when id % 10 < 9 then 0 else id end as double) as c_double "
              "from range(2000)",
    "all_null": "select id, cast(null as string) as c_url, cast(null as double) as c_double "
                "from range(100)",
}


@pytest.mark.parametrize("method", ["boundary", "direct"])
@pytest.mark.parametrize("key", ["zorder_by", "hilbert_by"])
def test_every_primitive_type_clusters_and_keeps_rows(project: DbtProject, method: str,
                                                       key: str) -> None:
    name = f"types_{key.removesuffix('_by')}_{method}"
    project.write("models/edges/hostile.sql", "{{ config(materialized='view') }}\n" + HOSTILE)
    project.write(f"models/edges/{name}.sql", f"""
        {{{{ config(materialized='table', {key}={COLUMNS}, curve_method='{method}',
                    file_count=4, boundary_count=16) }}}}
        select * from {{{{ ref('hostile') }}}}
    """)
    project.dbt("run", "--select", f"+{name}")
    expected = project.rows(f"select * from {project.table('hostile')}")
    assert project.rows(f"select * from {project.table(name)}") == expected
    assert len(project.files(name)) == 4


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_awkward_inputs_build(project: DbtProject, shape: str) -> None:
    name = f"shape_{shape}"
    sql = SHAPES[shape].format(hostile=HOSTILE)
    project.write(f"models/edges/{name}.sql", f"""
        {{{{ config(materialized='table', hilbert_by=['c_url', 'c_double'], file_count=5) }}}}
        {sql}
    """)
    project.dbt("run", "--select", name)
    assert project.rows(f"select * from {project.table(name)}") == project.rows(sql)
