{#- The clustering configs of the current model, as a plain dict for the adapter. -#}
{% macro zspark_model_config() %}
  {%- set keys = ['zorder_by', 'hilbert_by', 'linear_by', 'boundary_count', 'curve_method',
                  'file_count', 'target_file_size_mb', 'partition_by', 'index_columns',
                  'zspark_index', 'zspark_recluster'] -%}
  {%- set values = {} -%}
  {%- for key in keys -%}
    {%- do values.update({key: config.get(key)}) -%}
  {%- endfor -%}
  {{ return(values) }}
{% endmacro %}


{#- Clustering lives in tables and incremental models only: the others refuse the configs. -#}
{% macro zspark_refuse_clustering(materialized) %}
  {%- do adapter.zspark_check_config(model['name'], zspark_model_config(), materialized) -%}
{% endmacro %}


{#- The CREATE TABLE statement of a build, written into `relation` (the staging table). -#}
{% macro zspark_create_table(relation, select_sql, language='sql') %}
  {{ return(adapter.dispatch('zspark_create_table', 'zspark')(relation, select_sql, language)) }}
{% endmacro %}

{% macro default__zspark_create_table(relation, select_sql, language) %}
  {%- if language == 'python' -%}
    {{ py_write_table(compiled_code=select_sql, target_relation=relation) }}
  {%- else -%}
    create table {{ relation }}
    {{ file_format_clause() }}
    {{ zspark_options_clause(adapter.zspark_write_options(model['name'])) }}
    {{ zspark_tblproperties_clause(adapter.zspark_layout_properties(model['name'])) }}
    {{ partition_cols(label="partitioned by") }}
    {{ clustered_cols(label="clustered by") }}
    {%- set location_root = config.get('location_root', validator=validation.any[basestring]) -%}
    {%- if location_root is not none %}
    location '{{ location_root }}/{{ relation.identifier }}'
    {%- endif %}
    {{ comment_clause() }}
    as
    {{ select_sql }}
  {%- endif -%}
{% endmacro %}


{#- dbt-spark's `tblproperties` config, plus the stored layout of a clustered build. -#}
{% macro zspark_tblproperties_clause(layout_properties) %}
  {%- if not layout_properties -%}
    {{ return(tblproperties_clause()) }}
  {%- endif -%}
  {%- set properties = {} -%}
  {%- do properties.update(config.get('tblproperties') or {}) -%}
  {%- do properties.update(layout_properties) -%}
  tblproperties (
    {%- for prop in properties -%}
    '{{ prop }}' = '{{ properties[prop] }}' {% if not loop.last %}, {% endif %}
    {%- endfor %}
  )
{% endmacro %}


{#- dbt-spark's `options` config, plus the writer options of a clustered build. -#}
{% macro zspark_options_clause(write_options) %}
  {%- if not write_options -%}
    {{ return(options_clause()) }}
  {%- endif -%}
  {%- set options = {} -%}
  {%- do options.update(config.get('options') or {}) -%}
  {%- do options.update(write_options) -%}
  options (
    {%- for option in options -%}
    {{ option }} "{{ options[option] }}" {% if not loop.last %}, {% endif %}
    {%- endfor %}
  )
{% endmacro %}
