"""Files a point query skips per curve, in numpy alone: no Spark, a minute on one core.

    python -m bench.curve_skips                     # 1 M rows, 3 columns, 1000 files
    python -m bench.curve_skips --rows 200000 --files 200

Each layout keys the same uniform rows (``boundary_count`` 1000, as a build samples
them), the rows are sorted by the key and cut into files of equal rows, and each file's
[min, max] per column decides whether a point query on that column opens it: the share
of files it skips, averaged over random values. It compares the curves' shapes as a
build's files would show them, without the cost of writing them.
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd

from dbt.adapters.zspark.core import value_ranks
from dbt.adapters.zspark.layouts import LAYOUTS, ColumnSpec

CURVES = ("linear_by", "zorder_by", "gray_by", "hilbert_by")


def skip_shares(layout: str, values: np.ndarray, files: int, probes: int,
                seed: int) -> list[float]:
    """Per column, the mean share of files a point query on it skips."""
    rows, dims = values.shape
    columns = [pd.Series(values[:, d]) for d in range(dims)]
    specs = [ColumnSpec(f"c{d}", "int", value_ranks.sample_boundaries(
        c.sample(min(rows, 100_000), random_state=seed), 1000))
        for d, c in enumerate(columns)]
    key = LAYOUTS[layout].key_function(specs, "boundary", 1000)(*columns).to_numpy()
    # Rows of one key in the columns' order, as a build sorts them.
    order = np.lexsort([values[:, d] for d in reversed(range(dims))] + [key])
    ordered = values[order]
    cuts = np.array_split(np.arange(rows), files)
    low = np.array([ordered[c].min(axis=0) for c in cuts])
    high = np.array([ordered[c].max(axis=0) for c in cuts])
    rng = np.random.default_rng(seed)
    shares = []
    for d in range(dims):
        probe = rng.choice(values[:, d], probes)
        opened = ((low[:, d][None, :] <= probe[:, None])
                  & (high[:, d][None, :] >= probe[:, None])).sum(axis=1)
        shares.append(float(1 - opened.mean() / files))
    return shares


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--columns", type=int, default=3)
    parser.add_argument("--distinct", type=int, default=5000, help="values per column")
    parser.add_argument("--probes", type=int, default=300)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    values = rng.integers(0, args.distinct, (args.rows, args.columns))
    print(f"{args.rows} uniform rows, {args.columns} columns of {args.distinct} values, "
          f"{args.files} files: share of files a point query skips, per column")
    for layout in CURVES:
        shares = skip_shares(layout, values, args.files, args.probes, args.seed)
        print(f"  {layout:11} " + " ".join(f"{s:6.1%}" for s in shares)
              + f"   mean {np.mean(shares):6.1%}")


if __name__ == "__main__":
    main()
