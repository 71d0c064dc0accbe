-- A plain incremental model: the base, then the rows of [bar_lo, bar_hi) appended.
{{ config(enabled=var('bar', false), materialized='incremental',
          incremental_strategy='append') }}
select * from {{ ref('bar_source') }}
{{ bar_rows() }}
