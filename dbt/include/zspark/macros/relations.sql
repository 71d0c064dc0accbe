{#- Dropping a table whose folder is one of its versions' (a session's Parquet table:
    swap.py) deletes that folder too, as dropping a managed table deletes its own: the
    metastore leaves an external table's files. A model that becomes a view, or a table
    of another format, leaves no version behind. -#}
{% macro zspark__drop_relation(relation) -%}
  {%- set folder = adapter.zspark_version_folder(relation) -%}
  {{ spark__drop_relation(relation) }}
  {%- if folder is not none -%}
    {%- do adapter.zspark_delete_dropped_version(relation, folder) -%}
  {%- endif -%}
{%- endmacro %}
