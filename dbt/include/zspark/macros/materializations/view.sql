{% materialization view, adapter='zspark' -%}
  {%- do zspark_warn_config_names() -%}
  {%- do zspark_refuse_clustering('view') -%}
  {{ return(create_or_replace_view()) }}
{%- endmaterialization %}
