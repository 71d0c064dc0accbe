"""SSB-like wide table of seed 002 (lineorder joined with dates, customer, supplier, part).

Everything is computed in Spark SQL from ``range(rows)``: each random draw is a hash of
(row id, seed, draw number), so the data are identical for a given seed whatever the
partitioning or machine. Cardinalities follow the seed: ``s_city`` and ``c_city`` take
5025 values (25 SSB nations x 201, formatted like ``'UNITED KI143'``), ``p_brand`` 884686
values formatted like ``'MFGR#053072348'``; the seed's three literals all occur.

Variants:
  uniform     every city and brand equally likely (SSB's own generator is uniform);
  zipf        popularity ~ 1/rank (log-uniform draw), popular values scattered in the alphabet;
  correlated  c_city mostly near s_city, p_brand mostly from a block tied to s_city;
  heavy       per column, 10 values hold 80% of the rows, the other 20% spread evenly
              over every value (a few heavy values among many rare ones).

    python -m bench.generate --rows 2000000 --variant uniform
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from bench.common import DEFAULT_SESSION_DIR, SOURCE_SCHEMA, SOURCE_TABLE, Progress

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

VARIANTS = ("uniform", "zipf", "correlated", "heavy")
#: The heavy variant: how many values hold the heavy share of a column's rows.
HEAVY_VALUES, HEAVY_SHARE = 10, 0.8
# Part of the stamp that --reuse compares: bump it when the generated data change.
GENERATOR_VERSION = 2
CITIES_PER_NATION = 201
CITY_COUNT = 25 * CITIES_PER_NATION  # 5025, as in the seed
BRAND_COUNT = 884_686  # as in the seed
# Brand number = 1130 * index + 768, zero-padded to 9 digits (all below 10^9, so text order
# equals index order); index 46966 is the seed's 'MFGR#053072348', 5 % into the range like
# a typical value, so random files do not skip it by chance of sitting at an edge.
BRAND_STEP, BRAND_OFFSET = 1130, 768
SEED_BRAND_INDEX = 46_966
# (nation, region) of TPC-H / SSB, in n_nationkey order.
NATIONS = (
    ("ALGERIA", "AFRICA"), ("ARGENTINA", "AMERICA"), ("BRAZIL", "AMERICA"),
    ("CANADA", "AMERICA"), ("EGYPT", "MIDDLE EAST"), ("ETHIOPIA", "AFRICA"),
    ("FRANCE", "EUROPE"), ("GERMANY", "EUROPE"), ("INDIA", "ASIA"), ("INDONESIA", "ASIA"),
    ("IRAN", "MIDDLE EAST"), ("IRAQ", "MIDDLE EAST"), ("JAPAN", "ASIA"),
    ("JORDAN", "MIDDLE EAST"), ("KENYA", "AFRICA"), ("MOROCCO", "AFRICA"),
    ("MOZAMBIQUE", "AFRICA"), ("PERU", "AMERICA"), ("CHINA", "ASIA"), ("ROMANIA", "EUROPE"),
    ("SAUDI ARABIA", "MIDDLE EAST"), ("VIETNAM", "ASIA"), ("RUSSIA", "EUROPE"),
    ("UNITED KINGDOM", "EUROPE"), ("UNITED STATES", "AMERICA"),
)
# Multipliers coprime to the cardinalities: they scatter zipf's popular ranks.
CITY_SCATTER = 2003
BRAND_SCATTER = 1_000_003
DAYS = 2405  # 1992-01-01 .. 1998-08-02, SSB's date range


def _uniform(seed: int, draw: int) -> str:
    """A double in [0, 1) drawn from the row id."""
    return f"(pmod(xxhash64(id, {seed}, {draw}), 9007199254740992) / 9007199254740992.0)"


def _int(seed: int, draw: int, count: int) -> str:
    """A whole number in [0, count) drawn from the row id."""
    return f"pmod(xxhash64(id, {seed}, {draw}), {count})"


def _zipf(seed: int, draw: int, count: int, scatter: int) -> str:
    # floor((count+1)^u) - 1 has P(k) = log((k+2)/(k+1)) / log(count+1) ~ 1/k.
    rank = f"(cast(floor(pow({count + 1}, {_uniform(seed, draw)})) as bigint) - 1)"
    return f"pmod({rank} * {scatter} + 17, {count})"


def _heavy(seed: int, draw: int, count: int, scatter: int) -> str:
    heavy = f"pmod({_int(seed, draw + 10, HEAVY_VALUES)} * {scatter} + 17, {count})"
    return (f"case when {_uniform(seed, draw + 20)} < {HEAVY_SHARE} then {heavy} "
            f"else {_int(seed, draw, count)} end")


def _indexes(variant: str, seed: int) -> tuple[str, str, str]:
    """SQL of the supplier city, customer city and brand indexes of a row."""
    if variant == "uniform":
        return (_int(seed, 1, CITY_COUNT), _int(seed, 2, CITY_COUNT),
                _int(seed, 3, BRAND_COUNT))
    if variant == "zipf":
        return (_zipf(seed, 1, CITY_COUNT, CITY_SCATTER), _zipf(seed, 2, CITY_COUNT, CITY_SCATTER),
                _zipf(seed, 3, BRAND_COUNT, BRAND_SCATTER))
    if variant == "correlated":
        s_idx = _int(seed, 1, CITY_COUNT)
        # 80 %: a customer city within +-10 of the supplier city (mostly the same nation).
        c_idx = (f"case when {_uniform(seed, 4)} < 0.8 "
                 f"then pmod({s_idx} + {_int(seed, 5, 21)} - 10, {CITY_COUNT}) "
                 f"else {_int(seed, 2, CITY_COUNT)} end")
        # 80 %: a brand from the supplier city's own block of 176 brands.
        block = BRAND_COUNT // CITY_COUNT
        brand = (f"case when {_uniform(seed, 6)} < 0.8 "
                 f"then {s_idx} * {block} + {_int(seed, 7, block)} "
                 f"else {_int(seed, 3, BRAND_COUNT)} end")
        return s_idx, c_idx, brand
    if variant == "heavy":
        return (_heavy(seed, 1, CITY_COUNT, CITY_SCATTER),
                _heavy(seed, 2, CITY_COUNT, CITY_SCATTER),
                _heavy(seed, 3, BRAND_COUNT, BRAND_SCATTER))
    raise ValueError(f"unknown variant {variant!r}; expected one of {', '.join(VARIANTS)}")


def _array(values: list[str]) -> str:
    return "array(" + ", ".join(f"'{v}'" for v in values) + ")"


def generate_sql(rows: int, variant: str = "uniform", seed: int = 2) -> str:
    """The SELECT producing the wide table."""
    s_idx, c_idx, b_idx = _indexes(variant, seed)
    nations = _array([n for n, _ in NATIONS])
    regions = _array([r for _, r in NATIONS])
    # SSB city = the nation's first 9 characters, space-padded, then a number.
    prefixes = _array([n[:9].ljust(9) for n, _ in NATIONS])

    def city(idx: str) -> str:
        return (f"concat(element_at({prefixes}, cast({idx} div {CITIES_PER_NATION} as int) + 1), "
                f"cast(pmod({idx}, {CITIES_PER_NATION}) as string))")

    def nation(idx: str, names: str) -> str:
        return f"element_at({names}, cast({idx} div {CITIES_PER_NATION} as int) + 1)"

    return f"""
with draws as (
  select id,
         cast({s_idx} as bigint) as s_idx,
         cast({c_idx} as bigint) as c_idx,
         -- Row 0 carries the seed's brand so its third query has an answer at any scale.
         cast(case when id = 0 then {SEED_BRAND_INDEX} else {b_idx} end as bigint) as b_idx,
         date_add(date'1992-01-01', cast({_int(seed, 8, DAYS)} as int)) as lo_orderdate,
         cast(1 + {_int(seed, 9, 50)} as int) as lo_quantity,
         cast({_int(seed, 10, 11)} as int) as lo_discount,
         cast({_int(seed, 11, 9)} as int) as lo_tax,
         cast(90000 + {_int(seed, 12, 110001)} as bigint) as unit_price
  from range({rows})
)
select
  id div 4 + 1 as lo_orderkey,
  cast(pmod(id, 4) + 1 as int) as lo_linenumber,
  c_idx + 1 as lo_custkey,
  b_idx + 1 as lo_partkey,
  s_idx + 1 as lo_suppkey,
  lo_orderdate,
  lo_quantity,
  lo_quantity * unit_price div 100 as lo_extendedprice,
  lo_discount,
  lo_quantity * unit_price div 100 * (100 - lo_discount) div 100 as lo_revenue,
  unit_price * 6 div 1000 as lo_supplycost,
  lo_tax,
  year(lo_orderdate) as d_year,
  year(lo_orderdate) * 100 + month(lo_orderdate) as d_yearmonthnum,
  {city('c_idx')} as c_city,
  {nation('c_idx', nations)} as c_nation,
  {nation('c_idx', regions)} as c_region,
  {city('s_idx')} as s_city,
  {nation('s_idx', nations)} as s_nation,
  {nation('s_idx', regions)} as s_region,
  concat('MFGR#', lpad(cast(b_idx * {BRAND_STEP} + {BRAND_OFFSET} as string), 9, '0')) as p_brand,
  concat('MFGR#', cast(1 + pmod(b_idx, 5) as string),
         cast(1 + pmod(b_idx div 5, 5) as string)) as p_category,
  concat('MFGR#', cast(1 + pmod(b_idx, 5) as string)) as p_mfgr
from draws
"""


def generate(spark: SparkSession, rows: int, variant: str = "uniform", seed: int = 2,
             table: str = f"{SOURCE_SCHEMA}.{SOURCE_TABLE}", reuse: bool = False) -> bool:
    """Write the table; with ``reuse``, keep an existing one made with the same settings.

    Returns True when data were written.
    """
    stamp = f"v{GENERATOR_VERSION} rows={rows} variant={variant} seed={seed}"
    schema = table.split(".")[0]
    if reuse and spark.catalog.tableExists(table):
        props = {r[0]: r[1] for r in spark.sql(f"show tblproperties {table}").collect()}
        if props.get("zspark_bench.generated") == stamp:
            return False
    spark.sql(f"create database if not exists {schema}")
    # About 250k rows per source file: the source layout plays no part in the results.
    files = max(1, -(-rows // 250_000))
    frame = spark.sql(generate_sql(rows, variant, seed)).repartition(files)
    frame.write.mode("overwrite").format("parquet").saveAsTable(table)
    spark.sql(f"alter table {table} set tblproperties ('zspark_bench.generated' = '{stamp}')")
    return True


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--variant", choices=VARIANTS, default="uniform")
    parser.add_argument("--seed", type=int, default=2)
    parser.add_argument("--session-dir", type=Path, default=DEFAULT_SESSION_DIR)
    parser.add_argument("--table", default=f"{SOURCE_SCHEMA}.{SOURCE_TABLE}")
    parser.add_argument("--reuse", action="store_true",
                        help="keep the table if it was generated with the same settings")
    args = parser.parse_args(argv)

    from bench.common import spark_session

    log = Progress()
    log(f"starting Spark (session dir {args.session_dir.resolve()})")
    spark = spark_session(args.session_dir.resolve(), "zspark-bench-generate")
    log(f"generating {args.rows} rows ({args.variant}, seed {args.seed}) into {args.table}")
    written = generate(spark, args.rows, args.variant, args.seed, args.table, args.reuse)
    log("written" if written else "kept the existing table (same settings)")
    spark.stop()


if __name__ == "__main__":
    main()
