"""Which incremental strategies a clustered model may use, and which tables it may write
into, refused by name before anything is written."""

from __future__ import annotations

import pytest
from dbt_common.exceptions import DbtRuntimeError

from dbt.adapters.zspark.services.increments import check_incremental_strategy, check_table_format


@pytest.mark.parametrize(("strategy", "file_format", "partition_by"), [
    ("append", "parquet", None), ("insert_overwrite", "parquet", ["day"]),
    ("merge", "delta", None), ("insert_overwrite", "iceberg", None),
    ("microbatch", "delta", ["day"]), ("microbatch", "iceberg", "day")])
def test_allowed_strategies_pass(strategy: str, file_format: str, partition_by: object) -> None:
    check_incremental_strategy("events", strategy, file_format, partition_by)


@pytest.mark.parametrize(("strategy", "file_format", "allowed"), [
    ("merge", "parquet", "Allowed: 'append' or 'insert_overwrite'."),
    ("microbatch", "parquet", "Allowed: 'append' or 'insert_overwrite'."),
    ("delete+insert", "delta",
     "Allowed: 'append', 'merge', 'insert_overwrite' or 'microbatch'.")])
def test_other_strategies_are_refused_naming_the_model_and_what_is_allowed(
        strategy: str, file_format: str, allowed: str) -> None:
    with pytest.raises(DbtRuntimeError) as refused:
        check_incremental_strategy("events", strategy, file_format, ["day"])
    message = " ".join(str(refused.value).split())
    assert f"Model 'events': config 'incremental_strategy' is '{strategy}'" in message
    assert message.endswith(allowed)


@pytest.mark.parametrize("partition_by", [None, []])
def test_a_microbatch_format_model_needs_partition_by(partition_by: object) -> None:
    with pytest.raises(DbtRuntimeError, match="microbatch model needs 'partition_by'"):
        check_incremental_strategy("events", "microbatch", "delta", partition_by)


@pytest.mark.parametrize(("file_format", "table_format"), [
    ("parquet", None), ("delta", "delta"), ("iceberg", "iceberg")])
def test_a_model_writes_into_a_table_of_its_own_format(file_format: str,
                                                       table_format: str | None) -> None:
    check_table_format("events", "analytics.events", file_format, table_format)


@pytest.mark.parametrize(("file_format", "table_format", "found"), [
    ("delta", None, "a non-Delta, non-Iceberg table"), ("parquet", "delta", "a delta table"),
    ("iceberg", "delta", "a delta table")])
def test_a_table_of_another_format_is_refused_naming_the_rebuild(
        file_format: str, table_format: str | None, found: str) -> None:
    with pytest.raises(DbtRuntimeError) as refused:
        check_table_format("events", "analytics.events", file_format, table_format)
    message = " ".join(str(refused.value).split())
    assert (f"Model 'events': config 'file_format' is '{file_format}' but analytics.events "
            f"is {found};") in message
    assert message.endswith(f"`dbt run --full-refresh --select events` to rebuild it as "
                            f"{file_format}.")
