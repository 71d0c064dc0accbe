-- The same rows into a clustered incremental model (Hilbert, zspark's default policy).
{{ config(enabled=var('bar', false), materialized='incremental',
          incremental_strategy='append', hilbert_by=['city', 'product', 'day'],
          file_count=var('bar_files', 100),
          zspark_sort_appends=var('bar_sort_appends', none)) }}
select * from {{ ref('bar_source') }}
{{ bar_rows() }}
