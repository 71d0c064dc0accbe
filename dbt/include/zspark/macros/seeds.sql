{#- A seed's rows: in a session one Spark write of the rows dbt read (seeds.py), instead
    of dbt-spark's insert statements that format every value in Jinja; over a server,
    dbt-spark's. -#}
{% macro zspark__load_csv_rows(model, agate_table) %}
  {%- set loaded = adapter.zspark_load_seed(this, agate_table) -%}
  {%- if loaded is none -%}
    {{ return(spark__load_csv_rows(model, agate_table)) }}
  {%- endif -%}
  {{ return('-- ' ~ loaded ~ ' rows inserted by one Spark write') }}
{% endmacro %}
