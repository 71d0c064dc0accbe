"""What an advice's sample of a table costs: drawn from every file, as every incremental
``cluster_by='auto'`` run did, against drawn from the bounded share of files
``advice/table_sample.py`` picks.

Writes a Parquet table of ``--rows`` rows in ``--files`` files once (kept under
``--session-dir`` for the next run), then takes the advice's sample both ways, in turns,
``--rounds`` times: the count of the rows read, then about 100,000 of them drawn at
random, as ``WorkloadAdvisor._sample`` runs them. Prints each round's seconds.

    python -m bench.advice_sample --rows 10000000 --files 5000
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from pathlib import Path

from bench.common import spark_session
from dbt.adapters.zspark.advice.table_sample import count_sql, sample_sql, sampled_files
from dbt.adapters.zspark.skipping.stats import spark_path

SAMPLE_ROWS = 100_000
#: The key inputs of the bar's clustering columns, as the advice samples them.
INPUTS = {"city": "city", "product": "product", "day": "day"}


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--files", type=int, default=5_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--session-dir", type=Path, default=Path("/tmp/zspark-advice-sample"))
    args = parser.parse_args(argv)
    spark = spark_session(args.session_dir, "zspark-advice-sample", metastore=False)
    spark.sparkContext.setLogLevel("ERROR")
    path = args.session_dir / f"table_{args.rows}_{args.files}"
    if not path.exists():
        started = time.perf_counter()
        (spark.range(args.rows).selectExpr(
            "id", "concat('C', cast(pmod(hash(id, 1), 250) as string)) as city",
            "cast(pmod(hash(id, 2), 1000) as int) as product",
            "date_add(date'2024-01-01', cast(pmod(hash(id, 3), 730) as int)) as day",
            "rand(5) * 100 as amount", "concat('note ', id) as note")
         .repartition(args.files).write.parquet(str(path)))
        print(f"wrote {args.rows:,} rows into {args.files:,} files in "
              f"{time.perf_counter() - started:.1f} s", flush=True)
    table = f"parquet.`{path}`"
    paths = sorted(spark_path(f) for f in spark.read.parquet(str(path)).inputFiles())
    chosen = sampled_files(paths)
    for round_ in range(1, args.rounds + 1):
        for label, files in (("every file", None), (f"{len(chosen):,} files", chosen)):
            started = time.perf_counter()
            rows = int(spark.sql(count_sql(table, files)).first()[0])  # type: ignore[index]
            drawn = spark.sql(sample_sql(table, INPUTS, files, rows, SAMPLE_ROWS)).toArrow()
            print(f"round {round_}, {label} of {len(paths):,}: "
                  f"{time.perf_counter() - started:.1f} s, {drawn.num_rows:,} rows drawn "
                  f"of {rows:,}", flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
