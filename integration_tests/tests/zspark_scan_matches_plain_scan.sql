-- zspark_scan must return exactly the rows of the plain filter. Each side is summarised by
-- its row count and the sum of its rows' hashes (a decimal sum: no overflow; equal multisets give equal pairs, a lost
-- or extra row changes both), which costs one pass instead of a shuffle per EXCEPT ALL.
{%- set layouts = ['lineorder_random', 'lineorder_linear', 'lineorder_z', 'lineorder_hilbert'] %}
{%- set predicates = [
    "s_city = '" ~ var('s_city_value') ~ "'",
    "c_city = '" ~ var('c_city_value') ~ "'",
    "p_brand = '" ~ var('p_brand_value') ~ "'",
    "s_city between 'CHINA' and 'EGYPT' and c_city < 'B'",
    "p_brand in ('" ~ var('p_brand_value') ~ "', 'MFGR#500000000') or d_year is null",
] %}
{%- for layout in layouts %}
{%- set outer = loop %}
{%- for predicate in predicates %}
{% if not (outer.first and loop.first) %}union all{% endif %}
select '{{ layout }}' as model, {{ loop.index }} as predicate, scan.row_count, plain.row_count as plain_row_count
from (select count(*) as row_count, coalesce(sum(cast(xxhash64(*) as decimal(38, 0))), 0) as hash_sum
      from {{ zspark_scan(ref(layout), predicate) }} s) scan
cross join (select count(*) as row_count, coalesce(sum(cast(xxhash64(*) as decimal(38, 0))), 0) as hash_sum
            from {{ ref(layout) }} where {{ predicate }}) plain
where scan.row_count <> plain.row_count or scan.hash_sum <> plain.hash_sum
{%- endfor %}
{%- endfor %}
