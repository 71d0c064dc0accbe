"""A table's versions on Spark: what its three names show, the swap, its recovery.

The protocol and its reasoning live in ``swap.py``; this module asks the metastore (by
SQL, so a session and a server alike) and the folders (``folders.py``) what each name
shows, and runs the swap's steps and recovery's repairs as statements.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dbt.adapters.zspark.folders import Folders
from dbt.adapters.zspark.sqltext import sql_string
from dbt.adapters.zspark.stats import spark_path
from dbt.adapters.zspark.stop_points import stop_point
from dbt.adapters.zspark.swap import (
    NEXT,
    NEXT_SUFFIX,
    PREVIOUS,
    PREVIOUS_SUFFIX,
    ROLES,
    TABLE,
    Action,
    Place,
    SwapState,
    recovery_plan,
)


def version_names(table: str) -> dict[str, str]:
    """The names of a table's versions by role (``swap.ROLES``)."""
    return {TABLE: table, NEXT: table + NEXT_SUFFIX, PREVIOUS: table + PREVIOUS_SUFFIX}


@dataclass
class TableVersions:
    """The versions of ``schema.table``: ``fetch`` runs a query and returns its rows,
    ``execute`` a statement."""

    schema: str
    table: str
    fetch: Callable[[str], list[tuple[Any, ...]]]
    execute: Callable[[str], Any]
    folders: Folders

    @property
    def names(self) -> dict[str, str]:
        return version_names(self.table.lower())

    def qualified(self, role: str) -> str:
        return f"{self.schema}.{self.names[role]}"

    def _info(self, statement: str, key: str) -> str | None:
        """The value of row ``key`` in a DESCRIBE ... EXTENDED result."""
        return next((str(row[1]) for row in self.fetch(statement)
                     if str(row[0]).strip() == key and row[1] is not None), None)

    def observe(self) -> SwapState:
        """What the metastore and the folders show for each of the three names."""
        names = self.names
        listed = {str(row[1]).lower() for row in self.fetch(
            f"show tables in {self.schema} like {sql_string('|'.join(names.values()))}")}
        schema_folder = spark_path(self._info(f"describe schema extended {self.schema}",
                                              "Location") or "").rstrip("/")
        places = {}
        for role in ROLES:
            folder = f"{schema_folder}/{names[role]}"
            entry = entry_folder = None
            if names[role] in listed:
                location = self._info(f"describe table extended {self.qualified(role)}",
                                      "Location")
                # A view has no folder: its name is taken, nothing to move or delete.
                entry = spark_path(location).rstrip("/") if location else f"view:{role}"
                entry_folder = self.folders.exists(entry) if location else None
            places[role] = Place(folder, self.folders.exists(folder), entry, entry_folder)
        return SwapState(names, places)

    def recover(self, on_action: Callable[[Action], None]) -> list[Action]:
        """Repair whatever a stopped swap left (``swap.recovery_plan``); every repair is
        planned before the first runs. ``on_action`` is told of each once it has run."""
        actions = recovery_plan(self.observe())
        for action in actions:
            if action.kind == "move_folder":
                self.folders.move(action.source, action.target)
            elif action.kind == "delete_folder":
                self.folders.delete(action.source)
            elif action.kind == "drop":
                self.execute(f"drop table if exists {self.qualified(action.source)}")
            elif action.kind == "rename":
                self.execute(f"alter table {self.qualified(action.source)} rename to "
                             f"{self.qualified(action.target)}")
            on_action(action)
        return actions

    def swap(self, replaces: bool) -> None:
        """Make the next version the table (``replaces``: a table exists and becomes the
        previous version, dropped once the next one is the table)."""
        if replaces:
            self.execute(f"alter table {self.qualified(TABLE)} rename to "
                         f"{self.qualified(PREVIOUS)}")
            stop_point("swap:previous_renamed")
        self.execute(f"alter table {self.qualified(NEXT)} rename to {self.qualified(TABLE)}")
        stop_point("swap:next_renamed")
        if replaces:
            self.execute(f"drop table if exists {self.qualified(PREVIOUS)}")
            stop_point("swap:previous_dropped")
