"""Vectorised (Arrow / pandas) UDFs that compute curve keys inside Spark.

Documented functions, registered on the embedded session once (``embedded.py``) and
callable from any model's SQL:

``zspark_zorder_key(r1, ..., rn)``
    Z-order key (bigint) of n non-negative integer ranks, each below ``2 ** (63 // n)``.
``zspark_hilbert_key(r1, ..., rn)``
    Hilbert-curve key (bigint) of the same ranks.

Table builds also register one function per model, ``zspark_key_<model>``, which holds the
model's sampled boundaries and maps raw column values straight to the key.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dbt.adapters.zspark.core import curves
from dbt.adapters.zspark.layouts import KeyFunction


def ranks_key(curve: str) -> KeyFunction:
    """The key function of ``zspark_<curve>_key``. It runs in Spark's Python workers, so
    this module imports nothing of dbt's but the pure core (``executor_code.py``)."""

    def key(*ranks: pd.Series) -> pd.Series:
        bits = curves.MAX_KEY_BITS // len(ranks)
        arrays = [r.fillna(0).to_numpy(dtype=np.int64).astype(np.uint64) for r in ranks]
        if any(int(a.max(initial=0)) >= 1 << bits for a in arrays):
            raise ValueError(
                f"zspark_{curve}_key: with {len(ranks)} columns each rank must be below "
                f"2**{bits}"
            )
        combine = curves.interleave_bits if curve == "zorder" else curves.hilbert_index
        return pd.Series(combine(arrays, bits).astype(np.int64))

    return key
