-- Z-order on the values' own order-preserving bits, no sampled boundaries: seed 002's plain
-- "Interleaved Index", which it shows clustering poorly on strings sharing a prefix.
-- depends_on: {{ ref('lineorder_profile') }}
{{ config(zorder_by=['s_city', 'c_city', 'p_brand'], curve_method='direct',
          file_count=var('file_count')) }}
select * from {{ source('ssb', 'lineorder_flat') }}
