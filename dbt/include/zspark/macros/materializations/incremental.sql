{#-
  dbt-spark's incremental materialization validates its file format first, through this
  macro; zspark's copy of it (adapter packages shadow their parents' macros) also refuses
  clustering configs, which incremental builds do not support yet.
-#}
{% macro dbt_spark_validate_get_file_format(raw_file_format) %}
  {%- do zspark_refuse_clustering('incremental') -%}
  {%- set known = ['text', 'csv', 'json', 'jdbc', 'parquet', 'orc', 'hive', 'delta', 'iceberg',
                   'libsvm', 'hudi'] -%}
  {%- if raw_file_format not in known -%}
    {%- do exceptions.raise_compiler_error("Invalid file format provided: " ~ raw_file_format
        ~ "\n    Expected one of: " ~ known | join(', ')) -%}
  {%- endif -%}
  {{ return(raw_file_format) }}
{% endmacro %}
