-- zspark's Z-order build of the same rows into the same number of files.
{{ config(enabled=var('bar', false), materialized='table',
          file_format=var('bar_format', 'parquet'),
          zorder_by=['city', 'product', 'day'], file_count=var('bar_files', 100)) }}
select * from {{ ref('bar_source') }} where id < {{ var('bar_rows', 1000000) }}
