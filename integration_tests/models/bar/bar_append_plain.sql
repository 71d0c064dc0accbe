-- A plain incremental model: the base, then the rows of [bar_lo, bar_hi) appended.
{{ config(enabled=var('bar', false), materialized='incremental',
          incremental_strategy='append') }}
select * from {{ ref('bar_source') }}
{% if is_incremental() %}
where id >= {{ var('bar_lo') }} and id < {{ var('bar_hi') }}
{% else %}
where id < {{ var('bar_rows', 1000000) }}
{% endif %}
