{#-
  dbt Python models in an embedded session (python_models.py): the model's code runs in the
  dbt process on its Spark session. dbt's own `statement` submits Python only from a
  materialization's body; zspark's materializations submit it from their helpers.
-#}

{#- Run a Python model's `code`, its response stored as dbt's `statement` stores one. -#}
{% macro zspark_python_statement(name, code) %}
  {%- if name == 'main' -%}
    {{ log('Writing runtime python for node "{}"'.format(model['unique_id'])) }}
    {{ write(code) }}
  {%- endif -%}
  {%- do store_result(name, response=adapter.zspark_submit_python(model, code)) -%}
{% endmacro %}


{#- A Python model's code and the lines that write its result as `relation` (into
    `location` when given). -#}
{% macro zspark_py_write_table(compiled_code, relation, location=none) %}
{{ compiled_code }}
# zspark: the model's result written as {{ relation }} (dbt/adapters/zspark/reach/frames/python_models.py)
from dbt.adapters.zspark.reach.frames.python_models import write_result as zspark_write_result
zspark_write_result(spark, model(dbtObj(spark.table), spark), {{ adapter.zspark_python_literal(relation | string) }},
                    {{ adapter.zspark_python_literal(config.get('file_format')) }}, {{ adapter.zspark_python_literal(location) }})
{% endmacro %}


{#- A Python table model of Delta or Iceberg: its result replaces the table in one
    overwrite commit of the format, which keeps the table's history. -#}
{% macro zspark_python_format_table(flow) %}
  {%- set old_relation = adapter.get_relation(database=database, schema=schema, identifier=model['alias']) -%}
  {%- set target = api.Relation.create(identifier=model['alias'], schema=schema, database=database, type='table') -%}
  {{ run_hooks(pre_hooks) }}
  {%- if old_relation is not none and not flow.same_format(old_relation) -%}
    {{ adapter.drop_relation(old_relation) }}
  {%- endif -%}
  {%- do zspark_python_statement('main', zspark_py_write_table(compiled_code, target)) -%}
  {{ return(zspark_finish_table(target, old_relation)) }}
{% endmacro %}


{#- An unclustered Python incremental model, as dbt-spark runs one: its first run and a
    full refresh write the table; a later run writes its rows to `<model>__dbt_tmp` and
    applies the model's incremental strategy from there. -#}
{% macro zspark_python_incremental(flow) %}
  {%- set file_format = dbt_spark_validate_get_file_format(flow.file_format) -%}
  {%- set strategy = dbt_spark_validate_get_incremental_strategy(config.get('incremental_strategy') or 'append', file_format) -%}
  {%- set existing = load_relation(this) -%}
  {{ run_hooks(pre_hooks) }}
  {%- if existing is none or existing.is_view or should_full_refresh() -%}
    {%- if existing is not none and not flow.same_format(existing) -%}
      {% do adapter.drop_relation(existing) %}
    {%- endif -%}
    {%- do zspark_python_statement('main', zspark_py_write_table(compiled_code, this)) -%}
  {%- else -%}
    {%- set tmp_relation = this.incorporate(path={"identifier": this.identifier ~ '__dbt_tmp'}) -%}
    {%- do zspark_python_statement('create_tmp_relation', zspark_py_write_table(compiled_code, tmp_relation)) -%}
    {%- do process_schema_changes(incremental_validate_on_schema_change(config.get('on_schema_change'), default='ignore'), tmp_relation, existing) -%}
    {%- if strategy in ('insert_overwrite', 'microbatch') and config.get('partition_by') -%}
      {%- call statement() -%} set spark.sql.sources.partitionOverwriteMode = DYNAMIC {%- endcall -%}
    {%- endif -%}
    {%- call statement('main') -%}
      {{ dbt_spark_get_incremental_sql(strategy, tmp_relation, this, existing, config.get('unique_key'), config.get('incremental_predicates') or config.get('predicates')) }}
    {%- endcall -%}
    {%- call statement('drop_tmp_relation') -%} drop table if exists {{ tmp_relation }} {%- endcall -%}
  {%- endif -%}
  {% do apply_grants(this, config.get('grants'), should_revoke(existing, should_full_refresh())) %}
  {% do persist_docs(this, model) %}
  {{ run_hooks(post_hooks) }}
  {{ return({'relations': [this]}) }}
{% endmacro %}
