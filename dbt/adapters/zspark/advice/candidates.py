"""The layouts an advice weighs, and the files each would write, simulated on a sample.

A candidate is a layout config over a subset of the columns the workload filters on. Its
files are simulated the way a build cuts them: the sample keyed by the candidate's key
(boundaries from the sample itself), sorted by it and cut into files of equal rows; each
simulated file's min, max and null count per column then stand in for the index a build
would write. Pure Python (pandas, numpy and the layouts' own key functions).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np
import pandas as pd

from dbt.adapters.zspark.core import balanced, value_ranks
from dbt.adapters.zspark.core.value_ranks import normalize_type
from dbt.adapters.zspark.layouts import LAYOUTS, ColumnSpec, group_shift

#: At most this many clustering columns in a chosen layout: each more column halves the
#: resolution every other one gets.
MAX_AUTO_COLUMNS = 4
#: Candidate subsets are drawn from this many of the most-filtered columns.
CANDIDATE_POOL = 4
#: A simulated file holds at least this many sample rows, else its range is noise.
MIN_SAMPLE_ROWS_PER_FILE = 32
#: Sample rows a simulation keys per file it cuts (fitting a balanced tree costs time in
#: proportion), with at least :data:`MIN_SIMULATED_ROWS` in all.
SIMULATED_ROWS_PER_FILE = 128
MIN_SIMULATED_ROWS = 8_192
#: The layouts tried on two or more columns (one column: sorted by it, ``linear_by``).
MULTI_COLUMN_LAYOUTS = ("hilbert_by", "zorder_by", "balanced_by")
#: The candidate that clusters nothing: files as rows arrive.
UNCLUSTERED = "none"


@dataclass(frozen=True)
class Candidate:
    """A layout config (``hilbert_by``, ...; :data:`UNCLUSTERED` for none) over ``columns``
    with their ``weights`` (for the layouts that take weights)."""

    config_key: str
    columns: tuple[str, ...] = ()
    weights: tuple[float, ...] = ()

    @property
    def name(self) -> str:
        if self.config_key == UNCLUSTERED:
            return "unclustered"
        return f"{self.config_key}={list(self.columns)}"

    def same_layout(self, other: Candidate) -> bool:
        """The same layout config over the same columns (weights aside)."""
        return (self.config_key, [c.lower() for c in self.columns]) == \
            (other.config_key, [c.lower() for c in other.columns])

    @property
    def takes_weights(self) -> bool:
        return self.config_key != UNCLUSTERED and LAYOUTS[self.config_key].takes_weights


def ranked_columns(column_counts: Mapping[str, float], clusterable: Sequence[str]) -> list[str]:
    """The clusterable columns the workload filters on, most queries first (ties: the
    table's column order)."""
    order = {c.lower(): i for i, c in enumerate(clusterable)}
    named = [c for c in clusterable if column_counts.get(c, 0) > 0]
    return sorted(named, key=lambda c: (-column_counts[c], order[c.lower()]))


def candidates(column_counts: Mapping[str, float], clusterable: Sequence[str]
               ) -> list[Candidate]:
    """Every candidate an advice scores: unclustered; each of the most-filtered columns
    alone (sorted by it); and every subset of two or more of them under each multi-column
    layout, weighted by the queries on each column where the layout takes weights."""
    pool = ranked_columns(column_counts, clusterable)[:CANDIDATE_POOL]
    found = [Candidate(UNCLUSTERED)]
    found += [Candidate("linear_by", (c,), (1.0,)) for c in pool]
    for size in range(2, min(len(pool), MAX_AUTO_COLUMNS) + 1):
        for subset in combinations(pool, size):
            counts = tuple(float(column_counts[c]) for c in subset)
            for key in MULTI_COLUMN_LAYOUTS:
                weights = counts if LAYOUTS[key].takes_weights else tuple(1.0 for _ in subset)
                found.append(Candidate(key, subset, weights))
    return found


def simulated_file_count(sample_rows: int, file_count: int) -> int:
    """Files a simulation cuts the sample into: the table's own count, less where the
    sample is too thin to give each file :data:`MIN_SAMPLE_ROWS_PER_FILE` rows."""
    return max(1, min(file_count, sample_rows // MIN_SAMPLE_ROWS_PER_FILE))


def simulation_rows(sample: pd.DataFrame, files: int) -> pd.DataFrame:
    """The rows of ``sample`` a simulation of ``files`` files keys: enough for each file's
    range, no more (a uniform draw of the sample is a uniform sample)."""
    wanted = max(MIN_SIMULATED_ROWS, files * SIMULATED_ROWS_PER_FILE)
    if len(sample) <= wanted:
        return sample.reset_index(drop=True)
    return sample.sample(n=wanted, random_state=17).reset_index(drop=True)


def file_of_rows(sample: pd.DataFrame, candidate: Candidate, types: Mapping[str, str],
                 files: int, boundary_count: int,
                 boundaries: dict[str, np.ndarray] | None = None) -> np.ndarray:
    """The simulated file of each sample row under ``candidate``: rows in key order (the
    sample's own order, a random one, when unclustered) cut into ``files`` equal runs."""
    rows = len(sample)
    if candidate.config_key == UNCLUSTERED or rows == 0:
        order = np.arange(rows)
    else:
        layout = LAYOUTS[candidate.config_key]
        values = [sample[c] for c in candidate.columns]
        # A column's boundaries are the same in every candidate: drawn once.
        known = {} if boundaries is None else boundaries
        for c, v in zip(candidate.columns, values, strict=True):
            if c not in known:
                known[c] = value_ranks.sample_boundaries(v, boundary_count)
        specs = [ColumnSpec(c, types[c], known[c]) for c in candidate.columns]
        weights = candidate.weights if candidate.takes_weights else ()
        tree = layout.fit(specs, values, boundary_count, files, weights or
                          tuple(1.0 for _ in specs))
        keys = layout.key_function(specs, "boundary", boundary_count, tree,
                                   weights)(*values).to_numpy()
        # Rows of equal key in the build's order too (a linear key: the values themselves).
        ties = layout.tie_break(list(candidate.columns), tree)
        ordered = pd.DataFrame({"__key": keys, **{f"__tie{i}": sample[c].to_numpy()
                                                 for i, c in enumerate(ties)}})
        order = ordered.sort_values(list(ordered.columns), kind="stable",
                                    na_position="first").index.to_numpy()
        if tree is not None and not tree.curve:
            return _group_files(keys, order, group_shift(boundary_count), files)
    file = np.empty(rows, dtype=np.int64)
    file[order] = np.arange(rows) * files // max(rows, 1)
    return file


def _group_files(keys: np.ndarray, order: np.ndarray, shift: int, files: int) -> np.ndarray:
    """A balanced build's files: each group (the key's bits above ``shift``) cut on its
    own every ``balanced.file_rows`` rows, as the build cuts them (no file spans two)."""
    groups = keys.astype(np.int64) >> shift
    _, group_of, counts = np.unique(groups, return_inverse=True, return_counts=True)
    rows_per_file = balanced.file_rows(counts.tolist(), files, counts.tolist())
    ordered_groups = group_of[order]
    starts = np.r_[0, np.flatnonzero(np.diff(ordered_groups)) + 1]
    within = np.arange(order.size) - np.repeat(starts, np.diff(np.r_[starts, order.size]))
    file = np.empty(order.size, dtype=np.int64)
    file[order] = ordered_groups * (order.size + 1) + within // max(rows_per_file, 1)
    return np.unique(file, return_inverse=True)[1]


def file_stats(sample: pd.DataFrame, file: np.ndarray, columns: Sequence[str],
               types: Mapping[str, str]) -> pd.DataFrame:
    """Per simulated file: ``row_count`` and each column's ``__min``, ``__max``,
    ``__nulls`` (and ``__nans`` for floating columns), as the index holds them."""
    frame = sample[list(columns)].copy()
    frame["__file"] = file
    grouped = frame.groupby("__file", sort=True)
    stats = pd.DataFrame({"row_count": grouped.size()})
    for column in columns:
        values = grouped[column]
        stats[f"{column}__min"] = values.min()
        stats[f"{column}__max"] = values.max()
        stats[f"{column}__nulls"] = sample[column].isna().groupby(file).sum()
        if normalize_type(types[column]) in ("float", "double"):
            nans = np.isnan(pd.to_numeric(sample[column], errors="coerce")
                            .to_numpy(dtype=float, na_value=0.0))
            stats[f"{column}__nans"] = pd.Series(nans).groupby(file).sum()
    return stats.reset_index(drop=True)
