-- The balanced layout for a workload of 80% s_city and 20% c_city point queries.
-- depends_on: {{ ref('lineorder_profile') }}
{{ config(balanced_by=['s_city', 'c_city', 'p_brand'], file_count=var('file_count'),
          cluster_weights={'s_city': 0.8, 'c_city': 0.2}) }}
select * from {{ source('ssb', 'lineorder_flat') }}
