{#-
  Re-cluster a clustered table on demand:
      dbt run-operation zspark_recluster --args '{relation: my_schema.my_table}'
  merges every run written since the last full clustering into one run of narrow pieces;
  with `full: true` the whole table is re-sampled and rewritten. Nothing to do rewrites
  nothing. Either way the next version replaces the table only once it is whole.
-#}
{% macro zspark_recluster(relation, full=false) %}
  {{ return(adapter.dispatch('zspark_recluster', 'zspark')(relation, full)) }}
{% endmacro %}

{% macro default__zspark_recluster(relation, full) %}
  {%- if not execute -%}{{ return('') }}{%- endif -%}
  {%- set relation = zspark_begin_operation(relation) -%}
  {%- do adapter.zspark_recluster(relation, full) -%}
  {%- do adapter.zspark_end() -%}
  {{ return('') }}
{% endmacro %}


{#-
  The layout figures of a clustered table, as a table, and a picture of its files'
  [min, max] boxes over two clustering columns (the first two unless x / y say):
      dbt run-operation zspark_layout_report --args '{relation: my_schema.my_table}'
-#}
{% macro zspark_layout_report(relation, x=none, y=none, path=none) %}
  {%- if not execute -%}{{ return('') }}{%- endif -%}
  {%- set relation = zspark_resolve_relation(relation) -%}
  {%- do adapter.zspark_layout_report(relation, x, y, path) -%}
  {{ return('') }}
{% endmacro %}
