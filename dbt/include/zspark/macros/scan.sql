{#-
  A subquery over `relation` that opens only the files its predicate can touch:
      select ... from {{ zspark_scan(ref('lineorder_z'), "s_city = 'UNITED KI1'") }} t
  The rows always equal `select * from relation where <predicate>`.
-#}
{% macro zspark_scan(relation, predicate) %}
  {{ return(adapter.dispatch('zspark_scan', 'zspark')(relation, predicate)) }}
{% endmacro %}

{% macro default__zspark_scan(relation, predicate) %}
  {%- if not execute -%}
    {#- Checked when the model compiles, where an error names the model. -#}
    {{ return(adapter.zspark_plain_scan_sql(relation, predicate, false)) }}
  {%- endif -%}
  {{ return(adapter.zspark_scan_sql(relation, predicate)) }}
{% endmacro %}
