-- Seed 002's repartitionByRange(1000, s_city, c_city, p_brand).
-- depends_on: {{ ref('lineorder_profile') }}
{{ config(linear_by=['s_city', 'c_city', 'p_brand'], file_count=var('file_count')) }}
select * from {{ source('ssb', 'lineorder_flat') }}
