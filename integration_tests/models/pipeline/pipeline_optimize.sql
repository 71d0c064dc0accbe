-- Pipeline scenario (python -m bench.pipeline): The OPTIMIZE policy of dbt-databricks: a full re-clustering after every run.
-- Built only with --vars '{pipeline: true, ...}'.
{{ config(enabled=var('pipeline', false), materialized='incremental',
          incremental_strategy='append', hilbert_by=['s_city', 'c_city', 'p_brand'],
          file_count=var('pipeline_base_files', 500), zspark_recluster=false,
          post_hook="{{ zspark_recluster(this, full=true) if is_incremental() else '' }}") }}
select * from {{ source('ssb', 'lineorder_flat') }}
where lo_orderkey <= {{ var('pipeline_upto', 0) }}
{% if is_incremental() %}
  and lo_orderkey > (select max(lo_orderkey) from {{ this }})
{% endif %}
