{#-
  dbt's `is_incremental()`, which a model's SQL calls when dbt compiles it, before its run
  repairs what a killed run left. A run killed inside its swap can leave the table's name
  renamed away: dbt then finds no table, yet the repair makes the previous version the
  table again, and a model compiled as a first build would append every row twice. So a
  missing table counts as there when zspark's repair will restore it.
-#}
{% macro is_incremental() %}
  {%- if not execute -%}
    {{ return(false) }}
  {%- endif -%}
  {%- if model.config.materialized != 'incremental' or should_full_refresh() -%}
    {{ return(false) }}
  {%- endif -%}
  {%- set relation = adapter.get_relation(this.database, this.schema, this.table) -%}
  {%- if relation is not none -%}
    {{ return(relation.type == 'table') }}
  {%- endif -%}
  {{ return(adapter.zspark_table_after_recovery(this)) }}
{% endmacro %}
