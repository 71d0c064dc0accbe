-- Spark's own sorted write: range-partitioned on the clustering columns into `bar_files`
-- files, each sorted by them.
{{ config(enabled=var('bar', false), materialized='table',
          file_format=var('bar_format', 'parquet')) }}
select /*+ REPARTITION_BY_RANGE({{ var('bar_files', 100) }}, city, product, day) */ *
from {{ ref('bar_source') }} where id < {{ var('bar_rows', 1000000) }}
sort by city, product, day
