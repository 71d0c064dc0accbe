"""Configs that look like zspark's but are not: named, with the one meant (pure)."""

from __future__ import annotations

import doctest
from typing import Any, cast

import pytest
from dbt.artifacts.resources import ModelConfig
from hypothesis import given, settings
from hypothesis import strategies as st

from dbt.adapters.zspark.core import config_names
from dbt.adapters.zspark.core.config_names import edit_distance, misnamed_configs, nearest
from dbt.adapters.zspark.impl import MODEL_CONFIG_KEYS
from dbt.adapters.zspark.layouts import CONFIG_KEYS
from dbt.adapters.zspark.services.builds import DBT_CONFIG_KEYS, TableBuilds

#: zspark's configs as the adapter passes them, with ``cluster_by`` (its own config, which
#: the caller passes: the module knows no names of its own).
ZSPARK = (*MODEL_CONFIG_KEYS, "cluster_by")
#: The layout configs as a warning lists them: the registry's (``layouts.LAYOUTS``) order.
LAYOUT_LIST = "linear_by, zorder_by, hilbert_by, gray_by or balanced_by"


def misnamed(config: dict[str, object]) -> dict[str, tuple[str, ...]]:
    return {m.given: m.meant
            for m in misnamed_configs(config, ZSPARK, CONFIG_KEYS, DBT_CONFIG_KEYS)}


def test_the_examples_in_the_docstrings_hold() -> None:
    assert doctest.testmod(config_names).failed == 0


def test_the_warnings_list_every_layout() -> None:
    assert sorted(LAYOUT_LIST.replace(" or", ",").split(", ")) == sorted(CONFIG_KEYS)


@pytest.mark.parametrize(("given", "meant"), [
    ("hilbrt_by", ("hilbert_by",)),           # a letter left out
    ("hilbert_bys", ("hilbert_by",)),         # one added
    ("hilbetr_by", ("hilbert_by",)),          # two neighbours swapped
    ("hibert_b", ("hilbert_by",)),            # two edits
    ("Hilbert_By", ("hilbert_by",)),          # case: dbt's keys are spelt exactly
    ("hilbertby", ("hilbert_by",)),
    ("z_order_by", ("zorder_by",)),
    ("zorderby", ("zorder_by",)),
    ("gary_by", ("gray_by",)),
    ("grey_by", ("gray_by",)),
    ("liner_by", ("linear_by",)),
    ("balance_by", ("balanced_by",)),
    ("partiton_by", ("partition_by",)),
    ("partitions_by", ("partition_by",)),
    ("clustr_by", ("cluster_by",)),
    ("cluster_weight", ("cluster_weights",)),
    ("work_load", ("workload",)),
    ("boundary_counts", ("boundary_count",)),
    ("curve_methd", ("curve_method",)),
    ("file_counts", ("file_count",)),
    ("target_file_size_m", ("target_file_size_mb",)),
    ("index_column", ("index_columns",)),
    ("zspark_idx", ("zspark_index",)),
    ("zpark_recluster", ("zspark_recluster",)),
    ("zspark_recluster_run", ("zspark_recluster_runs",)),
    ("zspark_sort_append", ("zspark_sort_appends",)),
    ("sort_by", ()),                          # a *_by that is no layout: the layouts named
    ("order_by", ("zorder_by",)),           # a sort meant as a layout
    ("clusterby_columns", ()),                # neither near nor a *_by: not flagged
])
def test_a_near_miss_names_the_config_meant(given: str, meant: tuple[str, ...]) -> None:
    found = misnamed({given: ["a"]})
    if given == "clusterby_columns":
        assert found == {}
    else:
        assert found == {given: meant}


def test_the_warnings_say_what_was_meant_and_that_the_config_was_ignored() -> None:
    builds = TableBuilds(cast(Any, None), cast(Any, None))
    config = {"materialized": "table", "hilbrt_by": ["a"], "sort_by": "a", "layout": "hilbrt",
              "layouts": ["x"], "hilbert_by": ["b"], "tags": ["t"]}
    assert builds.warn_config_names("orders", config, ZSPARK) == [
        "zspark: model 'orders': config 'hilbrt_by' is not a zspark config; did you mean "
        "'hilbert_by'? It was ignored.",
        "zspark: model 'orders': config 'sort_by' is not a zspark config and chooses no "
        f"layout; a layout is chosen by {LAYOUT_LIST}. It was ignored.",
        "zspark: model 'orders': config 'layout' is not a zspark config; did you mean "
        "'hilbert_by'? A layout is chosen by its own config, set to the columns to cluster "
        f"by: {LAYOUT_LIST}. It was ignored.",
        "zspark: model 'orders': config 'layouts' is not a zspark config; a layout is chosen "
        f"by its own config, set to the columns to cluster by: {LAYOUT_LIST}. It was "
        "ignored.",
    ]


@pytest.mark.parametrize(("value", "meant"), [
    ("hilbert", ("hilbert_by",)), ("Z-order", ("zorder_by",)), ("zorder_by", ("zorder_by",)),
    ("balancd", ("balanced_by",)), ("grey", ("gray_by",)), ("curve", ()), (["a"], ()),
    (None, ()),
])
def test_a_layout_config_names_the_layout_its_value_names(value: object,
                                                          meant: tuple[str, ...]) -> None:
    assert misnamed({"layout": value}) == {"layout": meant}
    assert misnamed({"Layouts": value}) == {"Layouts": meant}


def test_no_config_of_dbt_or_dbt_spark_is_flagged() -> None:
    """A model's whole config as dbt hands it to the materialization (every field of
    dbt's ``ModelConfig``, ``post-hook`` spelt so) with dbt-spark's and zspark's."""
    config = ModelConfig.from_dict({"materialized": "incremental"}).to_dict()
    config.update(dict.fromkeys((*DBT_CONFIG_KEYS, *ZSPARK)))
    assert {"post-hook", "clustered_by", "buckets", "file_format", "location_root",
            "unique_key", "incremental_strategy", "on_schema_change", "tags", "meta",
            "docs", "partition_by", "cluster_id"} <= config.keys()
    assert misnamed(config) == {}


@pytest.mark.parametrize("key", [
    "tags", "meta", "docs", "alias", "schema", "grants", "enabled", "by_name", "tblproperties",
    "sql_header", "incremental_predicates", "predicates", "indexes", "store_failures",
    "packages", "timeout", "options", "my_custom_key", "owner", "clustered",
])
def test_configs_that_look_like_no_zspark_config_are_left_alone(key: str) -> None:
    """Known or not, a config far from every zspark name is no business of zspark's."""
    assert misnamed_configs({key: 1}, ZSPARK, CONFIG_KEYS) == []


def test_a_zspark_config_passed_by_the_caller_is_never_flagged() -> None:
    assert misnamed({"cluster_by": "auto", "hilbert_by": ["a"], "partition_by": "d"}) == {}
    # The names are the caller's: without cluster_by, it is a *_by that chooses no layout.
    known = [k for k in MODEL_CONFIG_KEYS if k != "cluster_by"]
    assert [m.given for m in misnamed_configs({"cluster_by": "auto"}, known,
                                              CONFIG_KEYS)] == ["cluster_by"]
    assert misnamed_configs({"clustr_by": "auto"}, MODEL_CONFIG_KEYS, CONFIG_KEYS)[0].meant \
        == ("cluster_by",)


def test_ties_name_every_config_at_the_least_distance() -> None:
    assert nearest("abcd_by", ["abce_by", "abcf_by", "abc_by"]) == ("abce_by", "abcf_by",
                                                                    "abc_by")
    assert nearest("abcd_by", ["abcdef_by", "abce_by"]) == ("abce_by",)


def test_short_names_take_fewer_edits() -> None:
    assert nearest("abcdef", ["abcdxy"]) == ("abcdxy",)  # two edits from six letters
    assert nearest("abcde", ["abcxy"]) == ()
    assert nearest("abcd", ["abcx"]) == ("abcx",)        # one from four
    assert nearest("abc", ["abx"]) == ()                 # none below


_NAMES = st.text(alphabet="abcdz_", max_size=9)


@settings(max_examples=300, deadline=None)
@given(a=_NAMES, b=_NAMES, c=_NAMES)
def test_the_distance_is_a_metric_with_swaps_of_neighbours_as_one_edit(a: str, b: str,
                                                                      c: str) -> None:
    assert edit_distance(a, b) == edit_distance(b, a)
    assert (edit_distance(a, b) == 0) == (a == b)
    assert abs(len(a) - len(b)) <= edit_distance(a, b) <= max(len(a), len(b))
    assert edit_distance(a, a + c) == len(c)
    if len(a) >= 2:
        swapped = a[:-2] + a[-1] + a[-2]
        assert edit_distance(a, swapped) == (0 if a[-1] == a[-2] else 1)


@settings(max_examples=300, deadline=None)
@given(name=st.sampled_from(ZSPARK), data=st.data())
def test_one_edit_of_a_zspark_config_is_always_caught(name: str, data: st.DataObject) -> None:
    at = data.draw(st.integers(0, len(name) - 1))
    letter = data.draw(st.sampled_from("abcdefghijklmnopqrstuvwxyz_"))
    edit = data.draw(st.sampled_from(["drop", "add", "change"]))
    typo = {"drop": name[:at] + name[at + 1:], "add": name[:at] + letter + name[at:],
            "change": name[:at] + letter + name[at + 1:]}[edit]
    found = misnamed({typo: ["a"]})
    if typo in (*ZSPARK, *DBT_CONFIG_KEYS):
        assert found == {}
    else:
        assert name in found[typo]


@settings(max_examples=200, deadline=None)
@given(known=st.sampled_from(sorted(DBT_CONFIG_KEYS | set(ZSPARK))))
def test_a_known_config_is_never_flagged(known: str) -> None:
    assert misnamed({known: "x"}) == {}
