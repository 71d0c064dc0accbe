-- The balanced layout: nested ranges of s_city then c_city, each group cut by p_brand.
-- depends_on: {{ ref('lineorder_profile') }}
{{ config(balanced_by=['s_city', 'c_city', 'p_brand'], file_count=var('file_count')) }}
select * from {{ source('ssb', 'lineorder_flat') }}
