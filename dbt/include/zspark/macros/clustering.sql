{#- The clustering configs of the current model, as a plain dict for the adapter, with
    the predicates its skip_coverage tests declare (a workload the layout may weigh). -#}
{% macro zspark_model_config() %}
  {%- set keys = adapter.zspark_config_keys() -%}
  {%- set values = {} -%}
  {%- for key in keys -%}
    {%- do values.update({key: config.get(key)}) -%}
  {%- endfor -%}
  {%- do values.update({'skip_coverage_predicates': zspark_skip_coverage_predicates()}) -%}
  {%- set materialized = config.get('materialized') -%}
  {%- if values.get('cluster_by') is not none and execute and model.language == 'sql'
        and materialized in ('table', 'incremental') -%}
    {#- cluster_by='auto': the layout chosen from the workload, once per run of the model. -#}
    {%- set values = adapter.zspark_auto_config(model['name'], values, compiled_code, this,
                                                zspark_nodes_reading(model.unique_id),
                                                materialized,
                                                materialized == 'incremental' and is_incremental()) -%}
  {%- endif -%}
  {{ return(values) }}
{% endmacro %}


{#- The predicates of the current model's skip_coverage tests, from the project's graph. -#}
{% macro zspark_skip_coverage_predicates() %}
  {%- if execute and graph is defined and model is defined -%}
    {{ return(zspark_node_test_predicates(model.unique_id)) }}
  {%- endif -%}
  {{ return([]) }}
{% endmacro %}


{#- Warn of each config the model set that looks like one of zspark's but is not (a
    `hilbrt_by`, a `layout`), which nothing reads: once per run, from each materialization. -#}
{% macro zspark_warn_config_names() %}
  {%- do adapter.zspark_warn_config_names(model['name'], model['config']) -%}
{% endmacro %}


{#- Clustering lives in tables and incremental models only: the others refuse the configs. -#}
{% macro zspark_refuse_clustering(materialized) %}
  {%- do adapter.zspark_check_config(model['name'], zspark_model_config(), materialized) -%}
{% endmacro %}


{#- The CREATE TABLE statement of a `build` (its plan: the SELECT, the layout it stores),
    written into `relation` (the staging table), at `location` when given (a version's
    own folder), else at the model's location_root. -#}
{% macro zspark_create_table(relation, build, replace=false, location=none) %}
  {{ return(adapter.dispatch('zspark_create_table', 'zspark')(relation, build, replace, location)) }}
{% endmacro %}

{#- `replace`: the format's own `create or replace` (Delta, Iceberg), one commit. -#}
{% macro default__zspark_create_table(relation, build, replace=false, location=none) %}
  create {{ 'or replace ' if replace }}table {{ relation }}
  {{ file_format_clause() }}
  {{ zspark_properties_clause('options') }}
  {{ zspark_properties_clause('tblproperties', build.layout_properties) }}
  {{ partition_cols(label="partitioned by") }}
  {{ clustered_cols(label="clustered by") }}
  {%- set location_root = config.get('location_root', validator=validation.any[basestring]) -%}
  {%- if location is not none %}
  location {{ adapter.zspark_sql_string(location) }}
  {%- elif location_root is not none %}
  location '{{ location_root }}/{{ relation.identifier }}'
  {%- endif %}
  {{ comment_clause() }}
  as
  {{ build.sql }}
{% endmacro %}


{#- The model's `options` or `tblproperties` config, plus what a clustered build adds to
    it (the stored layout), as literals that survive any quote in a value. -#}
{% macro zspark_properties_clause(keyword, added={}) %}
  {%- set configured = config.get(keyword) -%}
  {%- if configured or added -%}
    {{ keyword }} {{ adapter.zspark_property_list(configured, added) }}
  {%- endif -%}
{% endmacro %}


{#- The statement that writes a model's rows (the `main` statement of its run), its files
    cut to the rows its `plan` (a build's or an increment's) planned for them. -#}
{% macro zspark_write_statement(sql, plan) %}
  {{ log('Writing runtime sql for node "{}"'.format(model['unique_id'])) }}
  {{ write(sql) }}
  {%- set response = adapter.zspark_execute_write(plan, sql) -%}
  {{ store_result('main', response=response) }}
{% endmacro %}
