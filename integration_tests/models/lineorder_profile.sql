-- Size and cardinalities of the generated input. Every layout model depends on it, so it is
-- built first and pays Spark's warm-up (JIT, first file reads) instead of the first layout.
select count(*) as row_count,
       count(distinct s_city) as s_city_distinct,
       count(distinct c_city) as c_city_distinct,
       count(distinct p_brand) as p_brand_distinct
from {{ source('ssb', 'lineorder_flat') }}
