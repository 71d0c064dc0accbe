{#-
  Table builds that never lose the previous table: the new table is written under a
  staging name first; only once it is whole does it replace the old one (two renames).
  Clustering configs turn the SELECT into a range-partitioned, key-sorted one, and a
  clustered table gets its file-stats index right after.
-#}
{% materialization table, adapter='zspark', supported_languages=['sql', 'python'] %}
  {%- set language = model['language'] -%}
  {%- set identifier = model['alias'] -%}
  {%- set grant_config = config.get('grants') -%}
  {%- set zconfig = zspark_model_config() -%}

  {%- set old_relation = adapter.get_relation(database=database, schema=schema, identifier=identifier) -%}
  {%- set target_relation = api.Relation.create(identifier=identifier, schema=schema,
                                                database=database, type='table') -%}
  {%- set staging_relation = api.Relation.create(identifier=identifier ~ '__zspark_new',
                                                 schema=schema, database=database, type='table') -%}
  {%- set backup_relation = api.Relation.create(identifier=identifier ~ '__zspark_old',
                                                schema=schema, database=database, type='table') -%}

  {#- All validation (columns, types, configs) happens here, before anything is written. -#}
  {%- if language == 'sql' -%}
    {%- set build_sql = adapter.zspark_build_sql(model['name'], target_relation, zconfig, compiled_code) -%}
    {%- set clustered = adapter.zspark_check_config(model['name'], zconfig, 'table') -%}
  {%- else -%}
    {%- do adapter.zspark_check_config(model['name'], zconfig, 'python') -%}
    {%- set build_sql = compiled_code -%}
    {%- set clustered = false -%}
  {%- endif -%}

  {{ run_hooks(pre_hooks) }}

  {#- Leftovers of a build that died before its swap (the staging index table is one
      only versions that wrote the index before the swap leave). -#}
  {{ adapter.drop_relation(staging_relation) }}
  {{ adapter.drop_relation(backup_relation) }}
  {{ adapter.drop_relation(staging_relation.incorporate(path={'identifier': adapter.zspark_index_name(staging_relation)})) }}

  {%- call statement('main', language=language) -%}
    {{ zspark_create_table(staging_relation, build_sql, language) }}
  {%- endcall -%}

  {#- The index is read from the staging table's footers before the swap: should that fail,
      the previous table and its index stay as they were. -#}
  {%- set want_index = clustered if zconfig.zspark_index is none else zconfig.zspark_index -%}
  {%- set index_args = zspark_index_args() -%}
  {%- if want_index -%}
    {%- do adapter.zspark_stage_index(staging_relation, target_relation, index_args.clustering, index_args.index_columns) -%}
  {%- endif -%}

  {%- if old_relation is not none -%}
    {{ adapter.rename_relation(old_relation, backup_relation.incorporate(type=old_relation.type)) }}
  {%- endif -%}
  {{ adapter.rename_relation(staging_relation, target_relation) }}
  {%- if old_relation is not none -%}
    {{ adapter.drop_relation(backup_relation.incorporate(type=old_relation.type)) }}
  {%- endif -%}

  {%- if want_index -%}
    {%- do adapter.zspark_publish_index(staging_relation, target_relation, index_args.clustering, index_args.index_columns) -%}
  {%- endif -%}

  {% set should_revoke = should_revoke(old_relation, full_refresh_mode=True) %}
  {% do apply_grants(target_relation, grant_config, should_revoke) %}
  {% do persist_docs(target_relation, model) %}
  {% do persist_constraints(target_relation, model) %}

  {{ run_hooks(post_hooks) }}

  {{ return({'relations': [target_relation]}) }}
{% endmaterialization %}
