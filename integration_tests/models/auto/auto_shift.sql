-- bench.auto_shift: an incremental model that lets zspark choose its layout from the
-- workload it declares, fed the source's ids from lo to hi at each run.
{{ config(enabled=var('auto_shift', false), materialized='incremental',
          incremental_strategy='append', cluster_by='auto',
          file_count=var('auto_files', 32), workload=var('auto_workload', [])) }}
select * from {{ ref('auto_shift_source') }}
where id >= {{ var('lo', 0) }} and id < {{ var('hi', 0) }}
