"""The commits of a Delta or Iceberg table read straight from its folder, by another
reader than Spark: what a killed run left committed."""

from __future__ import annotations

import json
from pathlib import Path


def commits(table: Path, file_format: str) -> list[Path]:
    """The commits of a Delta or Iceberg table: its log's entries, or its metadata files."""
    found = (table / "_delta_log").glob("*.json") if file_format == "delta" else \
        (table / "metadata").glob("*.metadata.json")
    return sorted(found)


def committed_rows(table: Path, file_format: str) -> int:
    """The rows of the table's latest commit, read by another reader than Spark: delta-rs,
    or the newest Iceberg metadata file's current snapshot."""
    if file_format == "delta":
        from deltalake import DeltaTable

        return int(DeltaTable(str(table)).to_pyarrow_table().num_rows)
    metadata = json.loads(commits(table, file_format)[-1].read_text())
    current = next(s for s in metadata["snapshots"]
                   if s["snapshot-id"] == metadata["current-snapshot-id"])
    return int(current["summary"]["total-records"])
