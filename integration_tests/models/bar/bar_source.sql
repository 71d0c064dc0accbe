-- The scale bar's rows (python -m bench.bar): a plain table of `bar_source_rows` rows, the
-- first `bar_rows` the base, the rest appended a run at a time. Built only with
-- --vars '{bar: true, ...}'.
{{ config(enabled=var('bar', false), materialized='table', file_format='parquet') }}
select id,
       concat('city_', cast(pmod(hash(id, 1), 250) as string)) as city,
       concat('product_', cast(pmod(hash(id, 2), 1000) as string)) as product,
       date_add(date'2026-01-01', cast(pmod(hash(id, 3), 730) as int)) as day,
       round(pmod(hash(id, 4), 100000) / 100, 2) as amount,
       pmod(hash(id, 5), 1000000) as customer,
       concat('order note ', cast(pmod(hash(id, 6), 100000) as string)) as note
from range({{ var('bar_source_rows', 1000000) }})
