-- Seed 002's boundary-based Z-order (repartitionByZOrderRange).
-- depends_on: {{ ref('lineorder_profile') }}
{{ config(zorder_by=['s_city', 'c_city', 'p_brand'], file_count=var('file_count')) }}
select * from {{ source('ssb', 'lineorder_flat') }}
