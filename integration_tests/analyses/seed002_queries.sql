{#-
  Seed 002's three queries over every layout, through zspark_scan. `dbt compile` turns this
  into plain Spark SQL (the index is consulted at compile time); bench/run.py splits the
  compiled file on the `-- zspark-bench:` lines and runs each query in its own session.
-#}
{%- set values = {'s_city': var('s_city_value'), 'c_city': var('c_city_value'),
                  'p_brand': var('p_brand_value')} -%}
{%- for layout in ['random', 'linear', 'z_direct', 'z', 'hilbert'] %}
{%- for column in ['s_city', 'c_city', 'p_brand'] %}
-- zspark-bench: lineorder_{{ layout }} {{ column }}
select {{ column }}, d_year, sum(lo_revenue) as lo_revenue
from {{ zspark_scan(ref('lineorder_' ~ layout), column ~ " = '" ~ values[column] ~ "'") }} t
group by {{ column }}, d_year
order by d_year asc, lo_revenue desc;
{% endfor %}
{%- endfor %}
