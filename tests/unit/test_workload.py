"""Column weights from the declared workload (``workload.py``) and the curves' weights:
what planning derives and refuses, and that a weighted Z-order reads fewer files for its
workload than the plain one."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest

from dbt.adapters.zspark.core import value_ranks
from dbt.adapters.zspark.layouts import LAYOUTS, ColumnSpec
from dbt.adapters.zspark.layouts.planning import ClusteringConfigError, plan_clustering

SCHEMA = {"s_city": "string", "c_city": "string", "p_brand": "string", "d": "date"}
COLUMNS = ["s_city", "c_city", "p_brand"]


def weights_of(config: dict[str, Any]) -> tuple[float, ...]:
    plan = plan_clustering("m", config, SCHEMA, "incremental")
    assert plan is not None
    return plan.weights


def test_workload_counts_go_to_the_columns_each_predicate_filters() -> None:
    workload = [{"predicate": "s_city = 'UNITED KI1'", "count": 80},
                {"predicate": "C_CITY in ('UNITED KI5', 'X')", "count": 15},
                "c_city = 'Y' and S_City >= 'A'",
                {"predicate": "d = date'1997-01-01'"}]
    assert weights_of({"balanced_by": COLUMNS, "workload": workload}) == (81, 16, 0)
    # The same declared through cluster_weights: workload, on a Z-order.
    assert weights_of({"zorder_by": COLUMNS, "cluster_weights": "workload",
                       "workload": workload}) == (81, 16, 0)


def test_skip_coverage_predicates_join_the_workload_only_when_asked() -> None:
    tests = ["p_brand = 'MFGR#2239'", "s_city = '{{ var(\"city\") }}'",
             "p_brand = {{ var('brand') }}"]  # a test's predicates reach the graph unrendered
    asked = {"balanced_by": COLUMNS, "cluster_weights": "workload",
             "skip_coverage_predicates": tests}
    assert weights_of(asked) == (1, 0, 2)
    assert weights_of({**asked, "workload": [{"predicate": "c_city = 'Z'", "count": 4}]}) \
        == (1, 4, 2)
    # Tests alone declare what must be skipped; they do not change the layout unasked.
    assert weights_of({"balanced_by": COLUMNS, "skip_coverage_predicates": tests}) == (1, 1, 1)


@pytest.mark.parametrize(("config", "named", "problem"), [
    ({"hilbert_by": COLUMNS, "workload": ["s_city = 'X'"]}, "workload",
     "is set with hilbert_by"),
    ({"linear_by": COLUMNS, "cluster_weights": {"s_city": 2}}, "cluster_weights",
     "is set with linear_by"),
    ({"zorder_by": COLUMNS, "curve_method": "direct", "cluster_weights": {"s_city": 2}},
     "cluster_weights", "is set with zorder_by and curve_method='direct'"),
    ({"balanced_by": COLUMNS, "cluster_weights": {"s_city": 2}, "workload": ["s_city = 'X'"]},
     "cluster_weights", "is a mapping and 'workload' is set too"),
    ({"balanced_by": COLUMNS, "cluster_weights": "workload"}, "cluster_weights",
     "declares no workload"),
    ({"balanced_by": COLUMNS, "cluster_weights": "queries"}, "cluster_weights",
     "is 'queries'"),
    ({"balanced_by": COLUMNS, "workload": "s_city = 'X'"}, "workload", "is \"s_city = 'X'\""),
    ({"balanced_by": COLUMNS, "workload": [{"predicate": "s_city = 'X'", "count": 0}]},
     "workload", "gives \"s_city = 'X'\" the count 0"),
    ({"balanced_by": COLUMNS, "workload": [{"query": "s_city = 'X'"}]}, "workload",
     "has the entry"),
    ({"balanced_by": COLUMNS, "workload": ["s_city = "]}, "workload",
     "holds a predicate it cannot read"),
    ({"balanced_by": COLUMNS, "workload": ["d > date'2000-01-01'"]}, "workload",
     "declares no query that filters on a clustering column"),
    ({"balanced_by": COLUMNS, "cluster_weights": "workload",
      "skip_coverage_predicates": ["s_city = ;"]}, "skip_coverage",
     "holds a predicate it cannot read"),
])
def test_a_workload_that_cannot_weigh_the_layout_is_refused_by_name(
        config: dict[str, Any], named: str, problem: str) -> None:
    with pytest.raises(ClusteringConfigError, match="Allowed: ") as raised:
        plan_clustering("m", config, SCHEMA, "table")
    assert str(raised.value).startswith(f"Model 'm': config '{named}' ")
    assert problem in str(raised.value)


def files_read(keys: np.ndarray, columns: list[np.ndarray], files: int) -> list[float]:
    """Per column, the mean share of files a point query on one of its values reads, when
    rows sorted by ``keys`` are cut into ``files`` files of equal rows."""
    order = np.argsort(keys, kind="stable")
    file_of = np.empty(keys.size, dtype=np.int64)
    file_of[order] = np.arange(keys.size) * files // keys.size
    shares = []
    for values in columns:
        pairs = np.unique(np.stack([values, file_of]), axis=1)
        _, per_value = np.unique(pairs[0], return_counts=True)
        shares.append(float(per_value.mean() / files))
    return shares


def test_a_weighted_z_order_reads_fewer_files_for_its_workload() -> None:
    """80% of point queries on the first column, 20% on the second: the weighted key gives
    the first column the most leading bits, and the workload reads under half the files it
    reads under plain Z-order, whose round robin serves every column alike."""
    rng = np.random.default_rng(3)
    frames = [rng.integers(0, 256, 200_000) for _ in range(3)]
    series = [pd.Series(c) for c in frames]
    specs = [ColumnSpec(f"c{i}", "int", value_ranks.sample_boundaries(s[:20_000], 255))
             for i, s in enumerate(series)]
    zorder = LAYOUTS["zorder_by"]
    plain = zorder.key_function(specs, "boundary", 255)(*series).to_numpy()
    weighted = zorder.key_function(specs, "boundary", 255, weights=(0.8, 0.2, 0.0))(
        *series).to_numpy()
    plain_reads = files_read(plain, frames, 1024)
    weighted_reads = files_read(weighted, frames, 1024)

    def workload(reads: list[float]) -> float:
        return 0.8 * reads[0] + 0.2 * reads[1]

    # The leading 10 bits cut the 1024 files: plain Z-order gives the columns 4/3/3 of
    # them, the weighted one 6/4/0 (files read: 115/138/165 against 27/74/546 here).
    assert weighted_reads[0] < plain_reads[0] / 3
    assert weighted_reads[1] < plain_reads[1]
    assert workload(weighted_reads) < 0.5 * workload(plain_reads)
    # The column no query filters on pays: most files hold each of its values.
    assert weighted_reads[2] > 0.5


def test_every_layout_in_the_registry_is_a_model_config() -> None:
    """A layout's config is declared to dbt (``ZSparkConfig``) and read by the macros
    (``zspark_model_config``), from the registry: adding a layout adds both."""
    from dbt.adapters.zspark.impl import MODEL_CONFIG_KEYS, ZSparkConfig
    from dbt.adapters.zspark.layouts import CONFIG_KEYS, LAYOUTS_BY_NAME

    declared = set(ZSparkConfig.__dataclass_fields__)
    assert set(CONFIG_KEYS) <= declared
    assert set(CONFIG_KEYS) <= set(MODEL_CONFIG_KEYS)
    assert {layout.config_key for layout in LAYOUTS_BY_NAME.values()} == set(CONFIG_KEYS)
