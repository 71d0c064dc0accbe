-- zspark_scan must return exactly the rows of the plain filter: a row in one and not in the
-- other (multiset difference, both ways) fails the test.
{%- set layouts = ['lineorder_random', 'lineorder_linear', 'lineorder_z', 'lineorder_hilbert'] %}
{%- set predicates = [
    "s_city = '" ~ var('s_city_value') ~ "'",
    "c_city = '" ~ var('c_city_value') ~ "'",
    "p_brand = '" ~ var('p_brand_value') ~ "'",
    "s_city between 'CHINA' and 'EGYPT' and c_city < 'B'",
] %}
{%- for layout in layouts %}
{%- set outer = loop %}
{%- for predicate in predicates %}
{% if not (outer.first and loop.first) %}union all{% endif %}
select '{{ layout }}' as model, {{ loop.index }} as predicate, count(*) as rows_off from (
  (select * from {{ zspark_scan(ref(layout), predicate) }} s
   except all
   select * from {{ ref(layout) }} where {{ predicate }})
  union all
  (select * from {{ ref(layout) }} where {{ predicate }}
   except all
   select * from {{ zspark_scan(ref(layout), predicate) }} s)
) diff
having count(*) > 0
{%- endfor %}
{%- endfor %}
