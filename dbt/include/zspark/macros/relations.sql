{#- Dropping a table whose folder is one of its versions' (swap.py) deletes that folder
    too, as dropping a managed table deletes its own: the metastore leaves an external
    table's files. A model that becomes a view, or a table of another format, leaves no
    version behind. -#}
{% macro zspark__drop_relation(relation) -%}
  {%- if not adapter.zspark_drop_versioned_table(relation) -%}
    {{ spark__drop_relation(relation) }}
  {%- endif -%}
{%- endmacro %}
