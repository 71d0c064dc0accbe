-- Seed 002's baseline: rows spread round-robin over the files, no clustering. The index
-- depends_on: {{ ref('lineorder_profile') }}
-- (not built by default without clustering) lets zspark_scan run here too, skipping ~nothing.
{{ config(file_count=var('file_count'), zspark_index=true) }}
select * from {{ source('ssb', 'lineorder_flat') }}
