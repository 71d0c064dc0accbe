-- Seed 002's boundary-based Hilbert order (repartitionByHibertRange).
-- depends_on: {{ ref('lineorder_profile') }}
{{ config(hilbert_by=['s_city', 'c_city', 'p_brand'], file_count=var('file_count')) }}
select * from {{ source('ssb', 'lineorder_flat') }}
