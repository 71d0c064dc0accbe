{#-
  The scale bar's point queries (python -m bench.bar), one per clustering column, through
  zspark_scan on the Hilbert table; `dbt compile` turns each into plain Spark SQL. The plain
  `where` of each is the same query over the table itself.
-#}
{%- if var('bar', false) %}
{%- for column, value in [('city', "'city_17'"), ('product', "'product_123'"), ('day', "date'2026-07-04'")] %}
-- zspark-bench: bar_hilbert {{ column }}
select count(*) as orders, sum(cast(amount as decimal(18, 2))) as amount
from {{ zspark_scan(ref('bar_hilbert'), column ~ ' = ' ~ value) }} t;
{% endfor %}
{%- endif %}
