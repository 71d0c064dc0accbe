{#-
  Build (or rebuild) the file-stats index `<table>__zindex` of a Parquet table.
  Called by clustered table builds; usable as a post-hook on any table model
  (`post_hook="{{ zspark_build_index(this) }}"`) or on demand:
      dbt run-operation zspark_build_index --args '{relation: my_schema.my_table}'
-#}
{% macro zspark_build_index(relation, index_columns=none) %}
  {{ return(adapter.dispatch('zspark_build_index', 'zspark')(relation, index_columns)) }}
{% endmacro %}

{% macro default__zspark_build_index(relation, index_columns) %}
  {%- if not execute -%}{{ return('') }}{%- endif -%}
  {%- set operation = model is not defined or model is none -%}
  {#- A run-operation takes the table's lock and repairs a killed run first (a model's
      run, where this is a post-hook, has done both). -#}
  {%- set relation = zspark_begin_operation(relation) if operation else zspark_resolve_relation(relation) -%}
  {%- set args = zspark_index_args(index_columns) -%}
  {%- do adapter.zspark_build_index(relation, args.clustering, args.index_columns) -%}
  {%- if operation -%}{%- do adapter.zspark_end() -%}{%- endif -%}
  {{ return('') }}
{% endmacro %}


{#- Clustering columns and `index_columns` of the current model, if there is one. -#}
{% macro zspark_index_args(index_columns=none) %}
  {%- set clustering = [] -%}
  {%- if model is defined and model is not none and model.get('config') -%}
    {%- set zconfig = zspark_model_config() -%}
    {%- for key in adapter.zspark_layout_config_keys() -%}
      {%- set cols = zconfig[key] -%}
      {%- if cols -%}
        {%- do clustering.extend([cols] if cols is string else cols) -%}
      {%- endif -%}
    {%- endfor -%}
    {%- set index_columns = index_columns or zconfig.index_columns -%}
  {%- endif -%}
  {{ return({'clustering': clustering, 'index_columns': index_columns}) }}
{% endmacro %}


{#- A run-operation's table: its lock taken and a killed run's leftovers repaired (which
    may bring the table back under its name), then resolved. -#}
{% macro zspark_begin_operation(relation) %}
  {%- if relation is string -%}
    {%- set parts = relation.split('.') -%}
    {%- set named = api.Relation.create(schema=parts[0] if parts | length > 1 else target.schema,
                                        identifier=parts[-1], type='table') -%}
  {%- else -%}
    {%- set named = relation -%}
  {%- endif -%}
  {%- do adapter.zspark_begin(named.identifier, named) -%}
  {{ return(zspark_resolve_relation(relation)) }}
{% endmacro %}


{#- A relation object from a relation, or from 'schema.table' / 'table' text. -#}
{% macro zspark_resolve_relation(relation) %}
  {%- if relation is string -%}
    {%- set parts = relation.split('.') -%}
    {%- set found = adapter.get_relation(database=none,
                                         schema=parts[0] if parts | length > 1 else target.schema,
                                         identifier=parts[-1]) -%}
    {%- if found is none -%}
      {%- do exceptions.raise_compiler_error("zspark: relation '" ~ relation ~ "' not found") -%}
    {%- endif -%}
    {{ return(found) }}
  {%- endif -%}
  {{ return(relation) }}
{% endmacro %}
