-- Spark's bare write of the base rows into `bar_files` files: no key, no sort.
{{ config(enabled=var('bar', false), materialized='table',
          file_format=var('bar_format', 'parquet')) }}
select /*+ REPARTITION({{ var('bar_files', 100) }}) */ *
from {{ ref('bar_source') }} where id < {{ var('bar_rows', 1000000) }}
