"""Seeds in a session: one Spark write of the rows dbt read (``seeds.py``), with dbt's
seed semantics: its CSV quoting, empty values as nulls, inferred types and
``column_types``, and ``--full-refresh``."""

from __future__ import annotations

import datetime
import textwrap

import pytest

from tests.functional.dbt_project import DbtProject

pytestmark = pytest.mark.spark

CSV = '''\
id,name,price,ok,day,at,note
1,"Smith, John",1.50,true,2026-01-02,2026-01-02 03:04:05,"said ""hi"""
2,,2,false,,,"two
lines"
3,Ana,,,2026-12-31,2026-12-31 23:59:59,
'''

EXPECTED = [
    ("1", "Smith, John", 1.5, True, datetime.date(2026, 1, 2),
     datetime.datetime(2026, 1, 2, 3, 4, 5), 'said "hi"'),
    ("2", None, 2.0, False, None, None, "two\nlines"),
    ("3", "Ana", None, None, datetime.date(2026, 12, 31),
     datetime.datetime(2026, 12, 31, 23, 59, 59), None),
]


def test_a_seed_is_one_spark_write_with_dbts_seed_semantics(project: DbtProject) -> None:
    (project.root / "seeds").mkdir(exist_ok=True)
    (project.root / "seeds" / "people.csv").write_text(CSV)
    project.write("seeds/people.yml", """
        version: 2
        seeds:
          - name: people
            config:
              column_types: {id: string}
    """)
    project.dbt("seed", "--select", "people")
    assert "3 seed rows inserted by one Spark write" in project.log_text()
    assert "the CSV read by zspark" in project.log_text()
    table = project.table("people")
    types = {row.col_name: row.data_type
             for row in project.spark.sql(f"describe table {table}").collect()}
    assert types == {"id": "string", "name": "string", "price": "double", "ok": "boolean",
                     "day": "date", "at": "timestamp", "note": "string"}
    assert sorted(tuple(row) for row in project.spark.table(table).collect()) == EXPECTED

    # --full-refresh replaces the table with the file's rows.
    (project.root / "seeds" / "people.csv").write_text(textwrap.dedent('''\
        id,name,price,ok,day,at,note
        7,Zoe,9.25,true,2026-05-05,2026-05-05 05:05:05,z
    '''))
    project.dbt("seed", "--select", "people", "--full-refresh")
    assert [tuple(row) for row in project.spark.table(table).collect()] == [
        ("7", "Zoe", 9.25, True, datetime.date(2026, 5, 5),
         datetime.datetime(2026, 5, 5, 5, 5, 5), "z")]


def test_a_seed_whose_rows_dbt_mends_is_read_by_dbt_and_loaded_the_same(
        project: DbtProject) -> None:
    """A row short of its last values (dbt's reader pads it with nulls) leaves the CSV to
    dbt's reader; its rows are loaded by the same one write, equal to the file's."""
    (project.root / "seeds").mkdir(exist_ok=True)
    (project.root / "seeds" / "short_rows.csv").write_text(CSV + "4,Bo\n")
    project.dbt("seed", "--select", "short_rows")
    loaded = [line for line in project.log_text().splitlines()
              if "short_rows" in line and "seed rows inserted by one Spark write" in line]
    assert loaded
    assert not any("read by zspark" in line for line in loaded)
    rows = sorted(tuple(row) for row in project.spark.table(project.table("short_rows"))
                  .collect())
    assert rows == [(int(row[0]), *row[1:]) for row in EXPECTED] + [
        (4, "Bo", None, None, None, None, None)]
