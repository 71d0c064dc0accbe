-- The rows of bench.auto_shift: eight candidate columns (bench.auto_choice's generator).
{{ config(enabled=var('auto_shift', false), materialized='table') }}
{{ var('auto_source_sql', 'select 1 as id') }}
