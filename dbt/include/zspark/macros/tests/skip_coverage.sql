{#-
  Fails when a declared predicate skips a smaller share of the model's files than required:
      data_tests:
        - skip_coverage:
            arguments:
              predicates: ["s_city = 'X'", "p_brand = 'Y'"]
              min_skip_ratio: 0.8
  The measured ratio of every predicate is logged; failing rows carry them too.
-#}
{% test skip_coverage(model, predicates, min_skip_ratio=0.8) %}
  {%- if not execute or flags.WHICH not in ('test', 'build', 'retry') -%}
    {#- Measured when the test runs: `dbt compile` and `dbt docs generate` scan nothing. -#}
    {{ adapter.zspark_skip_coverage_placeholder_sql(predicates, min_skip_ratio) }}
  {%- else -%}
    {{ adapter.zspark_skip_coverage_sql(model, predicates, min_skip_ratio) }}
  {%- endif -%}
{% endtest %}
