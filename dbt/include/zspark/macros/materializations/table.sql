{#-
  Table builds that never lose the previous table: the new table is written under a
  staging name first; only once it is whole does it replace the old one (the swap of
  swap.py, which the next run repairs should this one be killed at any point).
  Clustering configs turn the SELECT into a range-partitioned, key-sorted one; a clustered
  table stores its layout in its own properties and gets its file-stats index right after.
-#}
{% materialization table, adapter='zspark', supported_languages=['sql', 'python'] %}
  {#- The path is chosen once, by the adapter, from the model's configs and format: a
      table of its own versions (Parquet, clustered or not), a clustered table of a format
      that commits on its own (Delta, Iceberg), dbt-spark's build of an unclustered one,
      or an unclustered Python model's result written as one. -#}
  {%- do zspark_warn_config_names() -%}
  {%- set flow = adapter.zspark_flow(model['name'], zspark_model_config(),
                                     config.get('file_format', default='parquet'), model['language'], 'table') -%}
  {%- set paths = {'versions': zspark_versions_table, 'commits': zspark_commits_table,
                   'spark': zspark_spark_table, 'python': zspark_python_format_table} -%}
  {{ return(paths[flow.path](flow)) }}
{% endmaterialization %}


{#- A table written into a version folder of its own and swapped in (swap.py), its index
    read before the swap. -#}
{% macro zspark_versions_table(flow) %}
  {%- do adapter.zspark_begin(model['name'], this) -%}
  {%- set old_relation = adapter.get_relation(database=database, schema=schema, identifier=model['alias']) -%}
  {%- set build = zspark_prepare_table_build('table', old_relation) -%}

  {{ run_hooks(pre_hooks) }}
  {%- do zspark_write_table_build(build, old_relation) -%}

  {{ return(zspark_finish_table(build.target, old_relation)) }}
{% endmacro %}


{#- An unclustered table of a format that commits on its own: dbt-spark's build, which
    replaces it in one commit of the format and keeps its history. -#}
{% macro zspark_spark_table(flow) %}
  {{ return(materialization_table_spark()) }}
{% endmacro %}


{#- The end of every table build, once its table is written: grants (revoked first, as a
    full refresh's), docs, constraints, post-hooks; what the materialization returns. -#}
{% macro zspark_finish_table(target, old_relation) %}
  {% set should_revoke = should_revoke(old_relation, full_refresh_mode=True) %}
  {% do apply_grants(target, config.get('grants'), should_revoke) %}
  {% do persist_docs(target, model) %}
  {% do persist_constraints(target, model) %}
  {{ run_hooks(post_hooks) }}
  {{ return({'relations': [target]}) }}
{% endmacro %}


{#- Everything a table build checks and samples before it writes anything, as the plan
    its later steps are handed (`adapter.zspark_build_plan`, services/plans.py);
    `previous` is the table it replaces (its stored layout tells the sample how many rows
    to expect). -#}
{% macro zspark_prepare_table_build(materialized, previous=none, file_format='parquet') %}
  {%- set target_relation = api.Relation.create(identifier=model['alias'], schema=schema,
                                                database=database, type='table') -%}
  {{ return(adapter.zspark_build_plan(model['name'], target_relation, zspark_model_config(),
                                      compiled_code, previous, file_format, materialized,
                                      model['language'])) }}
{% endmacro %}


{#- Write a prepared build under the staging name, read its index, swap it in. What a
    killed build left was repaired by zspark_begin. -#}
{% macro zspark_write_table_build(build, old_relation) %}
  {%- set target_relation = build.target -%}
  {%- set staging_relation = adapter.zspark_next_version(target_relation) -%}

  {#- Written once into a folder of its own, which the swap never moves. -#}
  {%- set location = adapter.zspark_next_location(target_relation, config.get('location_root')) -%}
  {%- if build.language == 'sql' -%}
    {%- do zspark_write_statement(zspark_create_table(staging_relation, build, location=location), build) -%}
  {%- else -%}
    {%- do zspark_python_statement('main', zspark_py_write_table(build.sql, staging_relation, location)) -%}
  {%- endif -%}

  {#- The index is read from the staging table's footers before the swap: should that fail,
      the previous table and its index stay as they were. -#}
  {%- set index_args = zspark_index_args() -%}
  {%- if build.want_index -%}
    {%- do adapter.zspark_stage_index(build, staging_relation, index_args.clustering, index_args.index_columns) -%}
  {%- endif -%}

  {%- do adapter.zspark_swap_in(model['name'], target_relation, old_relation) -%}

  {%- if build.want_index -%}
    {%- do adapter.zspark_publish_index(build, index_args.clustering, index_args.index_columns) -%}
  {%- endif -%}
{% endmacro %}


{#- A clustered Delta or Iceberg table: the clustered rows replace the table in one commit
    of the format (`create or replace`: readers see the old rows or the new, and its
    history keeps the old); the format's own statistics are its index, no `__zindex`. -#}
{% macro zspark_commits_table(flow, materialized='table') %}
  {%- set file_format = flow.file_format -%}
  {%- set old_relation = adapter.get_relation(database=database, schema=schema, identifier=model['alias']) -%}
  {%- set build = zspark_prepare_table_build(materialized, old_relation, file_format) -%}

  {{ run_hooks(pre_hooks) }}
  {%- if old_relation is not none and not flow.same_format(old_relation) -%}
    {#- A view, or a table of another format, cannot be replaced by this one. -#}
    {{ adapter.drop_relation(old_relation) }}
  {%- endif -%}
  {%- do zspark_write_statement(zspark_create_table(build.target, build, replace=true), build) -%}
  {%- do adapter.zspark_log_format_stats(build) -%}
  {%- if materialized == 'incremental' -%}
    {%- do adapter.zspark_record_base(model['name'], build.target, file_format) -%}
  {%- endif -%}

  {{ return(zspark_finish_table(build.target, old_relation)) }}
{% endmacro %}
