-- Seed 002's second query, reading only the files of lineorder_hilbert the index cannot rule out.
select c_city, d_year, sum(lo_revenue) as lo_revenue
from {{ zspark_scan(ref('lineorder_hilbert'), "c_city = '" ~ var('c_city_value') ~ "'") }} lo
group by c_city, d_year
