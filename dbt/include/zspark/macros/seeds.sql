{#- Seeds. In a session zspark reads the CSV as dbt reads it, its types decided a column
    at a time (core/seed_csv.py), and inserts its rows in one Spark write; the table is
    made by dbt's own macros from the seed's types. Over a server, or for a CSV whose
    shape dbt's reader mends or refuses, it is dbt's seed, its rows loaded by
    zspark__load_csv_rows. -#}
{% materialization seed, adapter='zspark' %}
  {%- set seed = adapter.zspark_read_seed(model) -%}
  {%- if seed is none -%}
    {{ return(materialization_seed_default()) }}
  {%- endif -%}
  {%- set full_refresh_mode = should_full_refresh() -%}
  {%- set old_relation = adapter.get_relation(database=database, schema=schema, identifier=model['alias']) -%}
  {%- set exists_as_table = old_relation is not none and old_relation.is_table -%}
  {%- do store_result('agate_table', response='OK', agate_table=seed.preview()) -%}

  {{ run_hooks(pre_hooks, inside_transaction=False) }}
  {{ run_hooks(pre_hooks, inside_transaction=True) }}

  {%- if old_relation is not none and old_relation.is_view -%}
    {{ exceptions.raise_compiler_error("Cannot seed to '{}', it is a view".format(old_relation.render())) }}
  {%- elif exists_as_table -%}
    {%- set create_table_sql = reset_csv_table(model, full_refresh_mode, old_relation, seed.table_types()) -%}
  {%- else -%}
    {%- set create_table_sql = create_csv_table(model, seed.table_types()) -%}
  {%- endif -%}
  {%- set code = 'CREATE' if full_refresh_mode else 'INSERT' -%}
  {%- set loaded = adapter.zspark_load_seed_file(this, seed) if seed.rows > 0 else 0 -%}
  {% call noop_statement('main', code ~ ' ' ~ seed.rows, code, seed.rows) %}
    {{ get_csv_sql(create_table_sql, '-- ' ~ loaded ~ ' rows inserted by one Spark write') }};
  {% endcall %}

  {%- set target_relation = this.incorporate(type='table') -%}
  {% do apply_grants(target_relation, config.get('grants'), should_revoke=should_revoke(old_relation, full_refresh_mode)) %}
  {% do persist_docs(target_relation, model) %}
  {%- if full_refresh_mode or not exists_as_table -%}
    {% do create_indexes(target_relation) %}
  {%- endif -%}

  {{ run_hooks(post_hooks, inside_transaction=True) }}
  {{ adapter.commit() }}
  {{ run_hooks(post_hooks, inside_transaction=False) }}
  {{ return({'relations': [target_relation]}) }}
{% endmaterialization %}


{#- A seed's rows dbt read itself: in a session one Spark write of them (seeds.py),
    instead of dbt-spark's insert statements that format every value in Jinja; over a
    server, dbt-spark's. -#}
{% macro zspark__load_csv_rows(model, agate_table) %}
  {%- set loaded = adapter.zspark_load_seed(this, agate_table) -%}
  {%- if loaded is none -%}
    {{ return(spark__load_csv_rows(model, agate_table)) }}
  {%- endif -%}
  {{ return('-- ' ~ loaded ~ ' rows inserted by one Spark write') }}
{% endmacro %}
