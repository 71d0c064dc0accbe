"""Seeds: zspark's (the CSV read column-wise, one Spark write) beside dbt's reader with
zspark's one write, and beside dbt-spark's loader (insert statements whose values Jinja
formats), in an embedded session.

Generates a CSV of ``--rows`` rows (an id, a text with commas and quotes, a decimal, a
date, a timestamp, a boolean, some empty values), and one of ``--sql-rows`` rows (what
dbt-spark's loader finishes in minutes). Each ``dbt seed`` runs as its own process;
the time is dbt's own for the seed node (run_results.json).

    python -m bench.seeds --rows 1000000 --sql-rows 5000   # bench/results/seeds.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

from bench.common import RESULTS, Progress

BIN = Path(sys.executable).parent
#: A project's macros beat the adapter's: this one puts dbt's own reader back (its
#: agate table; zspark still inserts its rows in one write) ...
DBT_READER = """
{% materialization seed, adapter='zspark' %}
  {{ return(materialization_seed_default()) }}
{% endmaterialization %}
"""
#: ... and this one dbt-spark's loader too.
DBT_SPARK_LOADER = """
{% macro zspark__load_csv_rows(model, agate_table) %}
  {{ return(spark__load_csv_rows(model, agate_table)) }}
{% endmacro %}
"""


def write_csv(path: Path, rows: int) -> None:
    with path.open("w") as out:
        out.write("id,label,amount,day,at,flag\n")
        for i in range(rows):
            label = f'"item {i % 997}, size ""{i % 7}"""' if i % 11 else ""
            out.write(f"{i},{label},{(i * 37) % 100000 / 100:.2f},"
                      f"2026-{1 + i % 12:02d}-{1 + i % 28:02d},"
                      f"2026-01-01 {i % 24:02d}:{i % 60:02d}:00,{'true' if i % 3 else 'false'}\n")


def _seed(root: Path, name: str, progress: Progress) -> dict[str, Any]:
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}
    started = time.monotonic()
    done = subprocess.run([str(BIN / "dbt"), "seed", "--select", name, "--full-refresh",
                           "--project-dir", str(root), "--profiles-dir", str(root)],
                          cwd=root, env=env, capture_output=True, text=True, check=False)
    wall = time.monotonic() - started
    if done.returncode != 0:
        raise SystemExit(f"dbt seed {name} failed:\n{done.stdout[-4000:]}")
    results = json.loads((root / "target" / "run_results.json").read_text())["results"]
    seconds = results[0]["execution_time"]
    progress(f"{name}: {seconds:.1f} s in dbt ({wall:.1f} s with the process)")
    return {"seconds": round(seconds, 2), "process_seconds": round(wall, 2)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--sql-rows", type=int, default=5_000,
                        help="rows of the seed both loaders load")
    parser.add_argument("--out", type=Path, default=RESULTS / "seeds.json")
    args = parser.parse_args(argv)
    progress = Progress()
    root = Path(tempfile.mkdtemp(prefix="zspark_seeds_"))
    (root / "seeds").mkdir()
    (root / "macros").mkdir()
    (root / "dbt_project.yml").write_text(textwrap.dedent("""\
        name: zspark_seeds
        version: "1.0"
        config-version: 2
        profile: zspark_seeds
        flags:
          send_anonymous_usage_stats: false
    """))
    (root / "profiles.yml").write_text(textwrap.dedent(f"""\
        zspark_seeds:
          target: dev
          outputs:
            dev:
              type: zspark
              method: session
              schema: bench_seeds
              session_dir: {root / 'session'}
              server_side_parameters:
                spark.driver.memory: 4g
    """))
    write_csv(root / "seeds" / "big.csv", args.rows)
    write_csv(root / "seeds" / "small.csv", args.sql_rows)
    progress(f"CSVs of {args.rows} and {args.sql_rows} rows written")
    figures: dict[str, Any] = {"rows": args.rows, "sql_rows": args.sql_rows}
    figures["zspark_small"] = _seed(root, "small", progress)
    figures["zspark_big"] = _seed(root, "big", progress)
    (root / "macros" / "dbt_reader.sql").write_text(DBT_READER)
    figures["dbt_reader_big"] = _seed(root, "big", progress)
    (root / "macros" / "dbt_spark_loader.sql").write_text(DBT_SPARK_LOADER)
    figures["dbt_spark_small"] = _seed(root, "small", progress)
    figures["speedup_small"] = round(figures["dbt_spark_small"]["seconds"]
                                     / figures["zspark_small"]["seconds"], 1)
    figures["speedup_big_reader"] = round(figures["dbt_reader_big"]["seconds"]
                                          / figures["zspark_big"]["seconds"], 1)
    figures["date"] = time.strftime("%Y-%m-%d %H:%M")
    progress(json.dumps(figures))
    args.out.write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
