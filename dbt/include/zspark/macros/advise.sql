{#-
  The layout a table's workload asks for:
      dbt run-operation zspark_advise --args '{relation: orders}'
  prints the queries found (the model's `workload` config and skip_coverage tests, the
  filters of every model, test and analysis that refers to it, its zspark_scan calls),
  the candidate layouts scored in files read per query on a sample of the table, and
  the choice with its reason. `relation` is a model's name or a table's
  (`schema.table`: a table no model builds, whose queries are the `workload` given).
-#}
{% macro zspark_advise(relation, workload=none, files=none) %}
  {%- if not execute -%}{{ return('') }}{%- endif -%}
  {%- set model_node = zspark_model_node(relation) -%}
  {%- if model_node is none -%}
    {%- set table = zspark_resolve_relation(relation) -%}
    {%- set config = {'workload': workload} -%}
    {%- set name = table.identifier -%}
    {%- set nodes = [] -%}
  {%- else -%}
    {%- set table = zspark_resolve_relation(model_node.schema ~ '.' ~ (model_node.alias or model_node.name)) -%}
    {%- set config = {'workload': workload or model_node.config.get('workload'),
                      'skip_coverage_predicates': zspark_node_test_predicates(model_node.unique_id)} -%}
    {%- set name = model_node.name -%}
    {%- set nodes = zspark_nodes_reading(model_node.unique_id) -%}
  {%- endif -%}
  {%- do adapter.zspark_advise(name, table, config, nodes, files) -%}
  {{ return('') }}
{% endmacro %}


{#- The model node of that name in the project's graph, or none. -#}
{% macro zspark_model_node(name) %}
  {%- for node in graph.nodes.values() -%}
    {%- if node.resource_type == 'model' and node.name == name -%}
      {{ return(node) }}
    {%- endif -%}
  {%- endfor -%}
  {{ return(none) }}
{% endmacro %}


{#- The predicates of the skip_coverage tests on a node. -#}
{% macro zspark_node_test_predicates(unique_id) %}
  {%- set found = [] -%}
  {%- for node in graph.nodes.values() -%}
    {%- set test = node.get('test_metadata') or {} -%}
    {%- if node.resource_type == 'test' and test.get('name') == 'skip_coverage'
          and node.get('attached_node') == unique_id -%}
      {%- do found.extend(test.get('kwargs', {}).get('predicates') or []) -%}
    {%- endif -%}
  {%- endfor -%}
  {{ return(found) }}
{% endmacro %}


{#- The models, analyses and singular tests that refer to a node, with their code. -#}
{% macro zspark_nodes_reading(unique_id) %}
  {%- set found = [] -%}
  {%- for node in graph.nodes.values() -%}
    {%- if unique_id in (node.get('depends_on', {}).get('nodes') or [])
          and node.resource_type in ('model', 'analysis', 'test', 'snapshot')
          and not node.get('test_metadata') -%}
      {%- do found.append({'resource_type': node.resource_type, 'name': node.name,
                           'code': node.get('raw_code') or ''}) -%}
    {%- endif -%}
  {%- endfor -%}
  {{ return(found) }}
{% endmacro %}
