-- The balanced layout for a declared workload of 80% s_city and 20% c_city point queries.
-- depends_on: {{ ref('lineorder_profile') }}
{{ config(balanced_by=['s_city', 'c_city', 'p_brand'], file_count=var('file_count'),
          workload=[{'predicate': "s_city = 'UNITED KI143'", 'count': 80},
                    {'predicate': "c_city = 'UNITED KI158'", 'count': 20}]) }}
select * from {{ source('ssb', 'lineorder_flat') }}
