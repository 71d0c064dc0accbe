{#-
  Incremental models. Unclustered ones are dbt-spark's. A clustered one is built like a
  clustered table on its first run and on --full-refresh (atomic swap, layout stored with
  the table, index); later runs key their new rows with the stored layout. insert_overwrite
  writes them sorted in files of the table's size, replacing the partitions they fall in
  (the whole table when it has none); append follows the re-clustering policy
  (recluster.py): insert them as a run of narrow pieces, or rewrite them with some pending
  runs (or the whole table) into the table's next version. The index follows either way.
-#}
{% materialization incremental, adapter='zspark', supported_languages=['sql', 'python'] -%}
  {#- The path is chosen once, by the adapter, from the model's configs and format: a
      clustered table of its own versions (Parquet), a clustered table of a format that
      commits on its own (Delta, Iceberg), or dbt-spark's run of an unclustered model
      (through the session for a Python one). -#}
  {%- do zspark_warn_config_names() -%}
  {%- set flow = adapter.zspark_flow(model['name'], zspark_model_config(),
                                     config.get('file_format', default='parquet'), model['language'], 'incremental') -%}
  {%- do adapter.zspark_begin(model['name'], this) -%}
  {%- set paths = {'versions': zspark_versions_incremental, 'commits': zspark_commits_incremental,
                   'spark': zspark_spark_incremental, 'python': zspark_python_incremental} -%}
  {{ return(paths[flow.path](flow)) }}
{%- endmaterialization %}


{#- dbt-spark's run of an unclustered incremental model. -#}
{% macro zspark_spark_incremental(flow) %}
  {{ return(materialization_incremental_spark()) }}
{% endmacro %}


{#- A clustered incremental model of a table of its own versions (Parquet). -#}
{% macro zspark_versions_incremental(flow) %}
  {%- set zconfig = zspark_model_config() -%}
  {%- set file_format = flow.file_format -%}
  {%- set strategy = zspark_clustered_strategy(flow) -%}
  {%- set grant_config = config.get('grants') -%}
  {%- set existing_relation = load_relation(this) -%}

  {%- if existing_relation is none or existing_relation.is_view or should_full_refresh() -%}
    {%- set build = zspark_prepare_table_build('incremental', existing_relation) -%}
    {{ run_hooks(pre_hooks) }}
    {%- do zspark_write_table_build(build, existing_relation) -%}
    {%- set target_relation = build.target -%}
    {% do persist_constraints(target_relation, model) %}
  {%- else -%}
    {%- set target_relation = existing_relation -%}
    {%- set step = adapter.zspark_increment(model['name'], target_relation, zconfig, compiled_code, strategy, file_format) -%}
    {%- set index_args = zspark_index_args() -%}
    {{ run_hooks(pre_hooks) }}
    {%- if step.rows == 0 -%}
      {#- No new rows: nothing is inserted (Spark would still write an empty file). -#}
      {%- call statement('main') -%} select 0 as rows_inserted {%- endcall -%}
    {%- elif step.rewrite -%}
      {#- The new rows and the runs they are merged with go into the table's next
          version, swapped in once whole. -#}
      {%- set staging = adapter.zspark_begin_rewrite(model['name'], target_relation, step) -%}
      {%- do zspark_write_statement('insert into ' ~ staging ~ ' ' ~ step.sql, step) -%}
      {%- do adapter.zspark_finish_rewrite(model['name'], target_relation, staging, step) -%}
    {%- else -%}
      {%- set tmp_relation = this.incorporate(path={"identifier": this.identifier ~ '__dbt_tmp'}).include(database=false, schema=false) -%}
      {%- call statement('create_tmp_relation') -%}
        {{ create_table_as(True, tmp_relation, step.sql) }}
      {%- endcall -%}
      {%- do process_schema_changes(incremental_validate_on_schema_change(config.get('on_schema_change'), default='ignore'), tmp_relation, existing_relation) -%}
      {#- In a session the rows go into a batch whose files then move into the table
          (in place of the partitions an overwrite replaces) under a journal
          (table_versions.py): a killed run leaves them whole or absent. -#}
      {%- set batch = adapter.zspark_begin_batch(model['name'], target_relation) -%}
      {%- set published = none -%}
      {%- if batch is not none -%}
        {%- do zspark_write_statement(dbt_spark_get_incremental_sql('append', tmp_relation, batch, batch, none, none), step) -%}
        {%- set published = adapter.zspark_publish_batch(model['name'], target_relation, strategy) -%}
      {%- else -%}
        {%- if strategy == 'insert_overwrite' and config.get('partition_by') -%}
          {%- call statement() -%} set spark.sql.sources.partitionOverwriteMode = DYNAMIC {%- endcall -%}
        {%- endif -%}
        {%- do zspark_write_statement(dbt_spark_get_incremental_sql(strategy, tmp_relation, target_relation, existing_relation, none, none), step) -%}
      {%- endif -%}
      {%- set want_index = zconfig.zspark_index is none or zconfig.zspark_index -%}
      {%- do adapter.zspark_finish_increment(model['name'], target_relation, step, want_index, index_args.clustering, index_args.index_columns, published) -%}
    {%- endif -%}
  {%- endif -%}

  {% set should_revoke = should_revoke(existing_relation, should_full_refresh()) %}
  {% do apply_grants(target_relation, grant_config, should_revoke) %}
  {% do persist_docs(target_relation, model) %}

  {{ run_hooks(post_hooks) }}

  {{ return({'relations': [target_relation]}) }}
{%- endmacro %}


{#- The incremental strategy of a clustered model, checked against its format's. -#}
{% macro zspark_clustered_strategy(flow) %}
  {%- set file_format = dbt_spark_validate_get_file_format(flow.file_format) -%}
  {%- set strategy = dbt_spark_validate_get_incremental_strategy(config.get('incremental_strategy') or 'append', file_format) -%}
  {%- do adapter.zspark_check_incremental(model['name'], strategy, file_format, config.get('partition_by')) -%}
  {{ return(strategy) }}
{% endmacro %}


{#- A clustered Delta or Iceberg incremental model: built like its table model on the
    first run and on --full-refresh (then its files are recorded as the clustered base);
    later runs commit the new rows, keyed with the stored layout, as a run of pieces
    (append), merged on `unique_key` (merge: the format's MERGE) or replacing the
    partitions they fall in (insert_overwrite, and each batch of a microbatch model: their
    files then the partitions' clustered base), and the re-clustering the policy chooses
    as a commit of its own that changes no data. -#}
{% macro zspark_commits_incremental(flow) %}
  {%- set file_format = flow.file_format -%}
  {%- set strategy = zspark_clustered_strategy(flow) -%}
  {%- set existing_relation = load_relation(this) -%}
  {%- if existing_relation is none or existing_relation.is_view or should_full_refresh() -%}
    {{ return(zspark_commits_table(flow, 'incremental')) }}
  {%- endif -%}
  {#- Planned (a table of another format refused), then known by its format: a relation
      cached by this run's earlier build, such as a microbatch model's first batch, does
      not carry it, and dbt-spark's statements differ for Iceberg. -#}
  {%- set step = adapter.zspark_format_increment(model['name'], existing_relation, zspark_model_config(), compiled_code, strategy, file_format) -%}
  {%- set existing_relation = existing_relation.incorporate(**flow.relation_flags()) -%}
  {{ run_hooks(pre_hooks) }}
  {%- if step.rows == 0 -%}
    {%- call statement('main') -%} select 0 as rows_inserted {%- endcall -%}
  {%- else -%}
    {%- if strategy == 'merge' -%}
      {%- do zspark_write_statement(get_merge_sql(existing_relation, '(' ~ step.sql ~ ')', config.get('unique_key'), none, config.get('incremental_predicates')), step) -%}
    {%- elif strategy in ('insert_overwrite', 'microbatch') -%}
      {#- The partitions the new rows (of a run, or of a microbatch model's batch) fall
          in replaced in one commit (the whole table when it has none), as dbt-spark does
          it: through a view of the keyed rows. -#}
      {%- set tmp_relation = this.incorporate(path={"identifier": this.identifier ~ '__dbt_tmp'}).include(database=false, schema=false) -%}
      {%- call statement('create_tmp_relation') -%}
        {{ create_table_as(True, tmp_relation, step.sql) }}
      {%- endcall -%}
      {%- if config.get('partition_by') -%}
        {%- call statement() -%} set spark.sql.sources.partitionOverwriteMode = DYNAMIC {%- endcall -%}
      {%- endif -%}
      {%- do zspark_write_statement(dbt_spark_get_incremental_sql(strategy, tmp_relation, existing_relation, existing_relation, none, none), step) -%}
    {%- else -%}
      {%- do zspark_write_statement('insert into ' ~ existing_relation ~ ' ' ~ step.sql, step) -%}
    {%- endif -%}
    {%- do adapter.zspark_finish_format_increment(model['name'], existing_relation, step) -%}
  {%- endif -%}
  {% do apply_grants(existing_relation, config.get('grants'), should_revoke(existing_relation, False)) %}
  {% do persist_docs(existing_relation, model) %}
  {{ run_hooks(post_hooks) }}
  {{ return({'relations': [existing_relation]}) }}
{% endmacro %}
