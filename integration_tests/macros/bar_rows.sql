{#- The scale bar's incremental models (python -m bench.bar): the base's rows on the first
    run, the rows of [bar_lo, bar_hi) on each later one. -#}
{% macro bar_rows() %}
{% if is_incremental() %}
where id >= {{ var('bar_lo') }} and id < {{ var('bar_hi') }}
{% else %}
where id < {{ var('bar_rows', 1000000) }}
{% endif %}
{% endmacro %}
