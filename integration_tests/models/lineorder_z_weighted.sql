-- Z-order for a declared workload of 80% s_city and 20% c_city point queries: the key
-- bits that cut files go to the columns by weight.
-- depends_on: {{ ref('lineorder_profile') }}
{{ config(zorder_by=['s_city', 'c_city', 'p_brand'], file_count=var('file_count'),
          workload=[{'predicate': "s_city = 'UNITED KI143'", 'count': 80},
                    {'predicate': "c_city = 'UNITED KI158'", 'count': 20}]) }}
select * from {{ source('ssb', 'lineorder_flat') }}
