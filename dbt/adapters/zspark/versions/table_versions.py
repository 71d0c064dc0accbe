"""A table's versions on Spark: what its three names show, the swap, its recovery; and
appends whose batch becomes visible whole or not at all.

Each version is written once into a folder of its own under
``<schema folder>/<table>__zspark_versions/`` (:meth:`TableVersions.next_location`) and
registered there as an external table: the swap's renames and drops are metastore
operations that move no file, and a replaced version's folder is deleted with its name
(``folders.py``: a session through Hadoop, a server by a managed scratch table's drop).

The swap's protocol and its reasoning live in ``swap.py``; this module asks the metastore
(by SQL, so a session and a server alike) and the folders (``folders.py``) what each name
shows, and runs the swap's steps and recovery's repairs as statements.

An append in a session writes its rows into ``<table>__zspark_batch`` (created like the
table) with Spark's own commit, then journals the batch in the table's properties
(``zspark.batch.publishing``), moves its files into the table's folder one rename each,
registers new partitions, clears the journal and drops the batch. A kill before the
journal leaves a batch the next run drops (the rows are absent); after it, the next run
moves the rest of the files in (the rows are whole). Spark's own commit into the table
would make the files visible one by one with no record of which belong together.

An overwrite (``insert_overwrite``) publishes its batch the same way, after setting aside
what it replaces: the table's partition folders the batch has rows for (of an
unpartitioned table, every file) move into ``<table>__zspark_replacing``, then the empty
folder ``<table>__zspark_replaced`` is made (the mark that none of the table's remaining
files is old); only then do the batch's files move in, and the set-aside folder, then
the mark, are deleted once the journal is cleared. A kill before the mark: the next run
sets aside the rest (every file still in those places is old); after it: the rest of the
batch moves in. The rows replaced are deleted only once all their successors are in and
the overwrite is done.

A partial re-clustering (a merge of runs) publishes the same way, in place, instead of
carrying every file that stays into a new version: its rewritten rows are written into the
batch, the files they replace are named in the batch's hidden file ``_zspark_replaces``,
the table is journaled (``recluster``), the batch's files move in, and only then are the
replaced files deleted. A kill after the journal: the next run moves the rest in and
deletes the rest of the replaced files, so no row is lost or left twice; a reader in
between sees the rewritten rows twice, never none. A full re-clustering, which keeps no
file, is a new version swapped in.

Every move is of one file, and a file's move a kill stopped halfway (on an object store,
its copy made and its source not yet deleted) is finished by the next run's
(``folders.py``): no step needs a rename of a folder to be atomic.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from dbt.adapters.zspark.core.sql_text import sql_string
from dbt.adapters.zspark.core.stop_points import stop_point
from dbt.adapters.zspark.reach.folders import Folders
from dbt.adapters.zspark.skipping.stats import spark_path
from dbt.adapters.zspark.versions.swap import (
    NEXT,
    NEXT_SUFFIX,
    PREVIOUS,
    PREVIOUS_SUFFIX,
    ROLES,
    TABLE,
    VERSIONS_SUFFIX,
    Action,
    Place,
    SwapState,
    recovery_plan,
)

#: An append's rows, written whole before they move into the table (a session only).
BATCH, BATCH_SUFFIX = "batch", "__zspark_batch"
#: The table property that journals a batch moving into the table; its value is how.
BATCH_KEY = "zspark.batch.publishing"
APPEND, OVERWRITE, RECLUSTER = "append", "overwrite", "recluster"
#: The files a partial re-clustering's batch replaces, one path per line, in its folder
#: (hidden from Spark's readers and from the batch's files).
REPLACES_FILE = "_zspark_replaces"
#: Where an overwrite sets aside what it replaces, before and after all of it is there
#: (folders only, never tables).
REPLACING, REPLACING_SUFFIX = "replacing", "__zspark_replacing"
REPLACED, REPLACED_SUFFIX = "replaced", "__zspark_replaced"
#: The scratch table a server deletes a version's folder with (``folders.py``).
DELETING, DELETING_SUFFIX = "deleting", "__zspark_deleting"


def version_names(table: str) -> dict[str, str]:
    """The names of a table's versions by role (``swap.ROLES``), of an append's batch and
    of the folders an overwrite sets aside what it replaces in."""
    return {TABLE: table, NEXT: table + NEXT_SUFFIX, PREVIOUS: table + PREVIOUS_SUFFIX,
            BATCH: table + BATCH_SUFFIX, REPLACING: table + REPLACING_SUFFIX,
            REPLACED: table + REPLACED_SUFFIX, DELETING: table + DELETING_SUFFIX}


@dataclass
class TableVersions:
    """The versions of ``schema.table``: ``fetch`` runs a query and returns its rows,
    ``execute`` a statement."""

    schema: str
    table: str
    fetch: Callable[[str], list[tuple[Any, ...]]]
    execute: Callable[[str], Any]
    folders: Folders
    _schema_at: str | None = field(default=None, init=False, repr=False)

    @property
    def names(self) -> dict[str, str]:
        return version_names(self.table.lower())

    def qualified(self, role: str) -> str:
        return f"{self.schema}.{self.names[role]}"

    def _info(self, statement: str, key: str) -> str | None:
        """The value of row ``key`` in a DESCRIBE ... EXTENDED result."""
        return next((str(row[1]) for row in self.fetch(statement)
                     if str(row[0]).strip() == key and row[1] is not None), None)

    def _schema_folder(self) -> str:
        if self._schema_at is None:  # asked once: it does not move
            self._schema_at = spark_path(self._info(f"describe schema extended {self.schema}",
                                                    "Location") or "").rstrip("/")
        return self._schema_at

    def versions_root(self, base: str | None = None) -> str:
        """The folder of the table's versions: under ``base`` (a model's
        ``location_root``) or the schema's folder."""
        return f"{(base or self._schema_folder()).rstrip('/')}/{self.names[TABLE]}" \
               f"{VERSIONS_SUFFIX}"

    def next_location(self, base: str | None = None) -> str:
        """A new folder for the next version to be written into, once."""
        # Beside the table's own versions unless the model names a place.
        current = None
        if self._listed(TABLE):
            with contextlib.suppress(LookupError):  # a view: no folder of its own
                current = _version_root(self._location(TABLE))
        root = self.versions_root(base) if base else current or self.versions_root()
        stamp = time.strftime("%Y%m%d%H%M%S", time.gmtime())
        return f"{root}/{stamp}-{uuid.uuid4().hex[:12]}"

    def observe(self) -> SwapState:
        """What the metastore and the folders show for each of the three names, and the
        version folders there are."""
        names = self.names
        pattern = "|".join(names[role] for role in ROLES)
        listed = {str(row[1]).lower() for row in self.fetch(
            f"show tables in {self.schema} like {sql_string(pattern)}")}
        schema_folder = self._schema_folder()
        places = {}
        roots = {self.versions_root()}  # a server's folders list as none
        for role in ROLES:
            folder = f"{schema_folder}/{names[role]}"
            entry = entry_folder = None
            if names[role] in listed:
                location = self._info(f"describe table extended {self.qualified(role)}",
                                      "Location")
                # A view has no folder: its name is taken, nothing to move or delete.
                entry = spark_path(location).rstrip("/") if location else f"view:{role}"
                entry_folder = self.folders.exists(entry) if location else None
                root = _version_root(entry) if location else None
                if root is not None:
                    roots.add(root)
            places[role] = Place(folder, self.folders.exists(folder), entry, entry_folder)
        versions = tuple(sorted(spark_path(v).rstrip("/") for root in sorted(roots)
                                for v in self.folders.subfolders(root)))
        return SwapState(names, places, self.folders.renames_atomic(schema_folder), versions)

    def recover(self, state: SwapState, on_action: Callable[[Action], None]) -> list[Action]:
        """Repair what a stopped swap left in ``state`` (as :meth:`observe` found it; see
        ``swap.recovery_plan``); every repair is planned before the first runs.
        ``on_action`` is told of each once it has run."""
        actions = recovery_plan(state)
        self.folders.finish_deletes(self.qualified(DELETING))
        for action in actions:
            if action.kind == "move_folder":
                self.folders.move(action.source, action.target)
            elif action.kind == "delete_folder":
                self.folders.delete(action.source)
            elif action.kind == "drop":
                self._drop(action.source, state.places[action.source].entry)
            elif action.kind == "rename":
                self.execute(f"alter table {self.qualified(action.source)} rename to "
                             f"{self.qualified(action.target)}")
            on_action(action)
        return actions

    def own_folder(self) -> str | None:
        """The version folder the table's name points to (None: no table, a view, a
        managed table or a location of the user's)."""
        if not self._listed(TABLE):
            return None
        try:
            location = self._location(TABLE)
        except LookupError:  # a view
            return None
        return location if _version_root(location) else None

    def drop_table(self, folder: str) -> None:
        """Drop the table, whose files are the version ``folder``, and delete them (the
        metastore leaves an external table's files), then the versions' folder once it
        holds no other."""
        self._drop(TABLE, folder)
        root = _version_root(folder)
        if root is not None:
            self.folders.delete_if_empty(root)

    def _drop(self, role: str, entry: str | None, stop: str = "") -> None:
        """Drop ``role``'s table (``entry``: its location) and, if it is a version's, its
        folder (``stop``: the stop point between the two)."""
        def drop() -> None:
            self.execute(f"drop table if exists {self.qualified(role)}")
            if stop:
                stop_point(stop)

        if entry is None or _version_root(entry) is None:
            drop()  # a managed table's folder goes with it; a view or a user's location stays
        else:
            self.folders.drop_with_folder(drop, entry, self.qualified(DELETING))

    def _listed(self, role: str) -> bool:
        return bool(self.fetch(f"show tables in {self.schema} like "
                               f"{sql_string(self.names[role])}"))

    def _folder(self, role: str) -> str:
        """Where the schema keeps ``role``'s files when no table names them."""
        return f"{self._schema_folder()}/{self.names[role]}"

    def _location(self, role: str) -> str:
        location = self._info(f"describe table extended {self.qualified(role)}", "Location")
        if not location:
            raise LookupError(f"no location for {self.qualified(role)}")
        return spark_path(location).rstrip("/")

    def publish_batch(self, mode: str) -> list[str]:
        """Move the journaled batch's files into the table (those still in the batch), an
        ``OVERWRITE`` first setting aside what they replace, a ``RECLUSTER`` then deleting
        the files it rewrote; register new partitions, clear the journal, drop the batch,
        delete what was set aside. The files moved in, by their paths in the table (the
        index's form): what the run added, with no listing of the table after it."""
        batch_at, table_at = self._location(BATCH), self._location(TABLE)
        moved = self.folders.files(batch_at)
        rewritten = self._replaced_files(batch_at) if mode == RECLUSTER else []
        replaced = self._folder(REPLACED)
        partitioned = self._partitioned()
        # The mark outlives the journal: while it is absent, no file has moved in.
        if mode == OVERWRITE and not self.folders.exists(replaced):
            self._set_aside(batch_at, table_at, moved, partitioned)
        # One file, then the rest at once (several in flight): in any order, since
        # recovery moves whatever is still in the batch.
        moves = [(path, table_at + path[len(batch_at):]) for path in moved]
        self.folders.move_all(moves[:1])
        if moves:
            stop_point(f"{mode}:publishing")
        self.folders.move_all(moves[1:])
        # Only once all their successors are in: a file replaced may be a row's only copy.
        self.folders.delete_all(rewritten[:1])
        if rewritten:
            stop_point("recluster:deleting")
        self.folders.delete_all(rewritten[1:])
        if partitioned:
            self.execute(f"alter table {self.qualified(TABLE)} recover partitions")
        self.execute(f"alter table {self.qualified(TABLE)} unset tblproperties if exists "
                     f"({sql_string(BATCH_KEY)})")
        self.execute(f"drop table if exists {self.qualified(BATCH)}")
        if mode == OVERWRITE:
            self._delete_set_aside()
        return self.folders.to_uris([target for _, target in moves])

    def journal_replaced(self, uris: list[str]) -> None:
        """Name the files a partial re-clustering's batch replaces (by their Spark paths,
        as the index holds them), in the batch's folder (before the table is journaled:
        the journal's commit needs the list)."""
        self.folders.write_lines(f"{self._location(BATCH)}/{REPLACES_FILE}",
                                 sorted(self.folders.from_uris(uris)))

    def _replaced_files(self, batch_at: str) -> list[str]:
        listed = self.folders.read_lines(f"{batch_at}/{REPLACES_FILE}")
        if listed is None:
            raise RuntimeError(f"{self.qualified(BATCH)} is journaled as a re-clustering "
                               f"but names no files it replaces ({REPLACES_FILE})")
        return listed

    def _delete_set_aside(self) -> None:
        """The rows an overwrite replaced, then the mark (which outlives them)."""
        self.folders.delete(self._folder(REPLACING))
        self.folders.delete(self._folder(REPLACED))

    def _partitioned(self) -> bool:
        return any(str(row[0]).startswith("# Partition Information")
                   for row in self.fetch(f"describe table {self.qualified(TABLE)}"))

    def _set_aside(self, batch_at: str, table_at: str, batch_files: list[str],
                   partitioned: bool) -> None:
        """Move what the batch replaces out of the table into the replacing folder, then
        mark it complete by making the folder ``replaced``. Called only while no file of
        the batch has moved in, so everything still in those places is the old rows."""
        replacing = self._folder(REPLACING)
        if partitioned:  # the leaf partition folders the batch has rows for
            places = sorted({path[len(batch_at):].rsplit("/", 1)[0] for path in batch_files})
            old = [table_at + place for place in places if self.folders.exists(table_at + place)]
        else:
            old = self.folders.files(table_at)
        moves = [(path, replacing + path[len(table_at):]) for path in old]
        self.folders.move_all(moves[:1])
        if moves:
            stop_point("overwrite:set_aside")
        self.folders.move_all(moves[1:])
        self.folders.make(self._folder(REPLACED))

    def recover_batch(self, journal: str | None) -> str | None:
        """Finish or undo an append or overwrite a killed run left (``journal``: how the
        table's properties name a batch being published, or None); what was done, or None."""
        if journal is not None:
            mode = journal if journal in (OVERWRITE, RECLUSTER) else APPEND
            if self._listed(BATCH):
                self.publish_batch(mode)
                if mode == RECLUSTER:
                    return ("a re-clustering stopped while its files moved into the table: "
                            "the rest moved in and the files it rewrote are deleted")
                return (f"an {mode} stopped while its files moved into the table: "
                        + ("what it replaces is set aside and " if mode == OVERWRITE else "")
                        + "the rest moved in")
            self.execute(f"alter table {self.qualified(TABLE)} unset tblproperties if exists "
                         f"({sql_string(BATCH_KEY)})")
            return None
        done = []
        if self._listed(BATCH):
            self.execute(f"drop table if exists {self.qualified(BATCH)}")
            done.append("a batch that never reached the table: it is dropped")
        else:
            folder = self._folder(BATCH)
            if self.folders.exists(folder):
                self.folders.delete(folder)
                done.append("files of a batch that was never registered are deleted")
        if self.folders.exists(self._folder(REPLACED)):
            self._delete_set_aside()
            done.append("the rows an overwrite replaced, left once it was done, are deleted")
        return "; ".join(done) or None

    def swap(self, replaces: bool) -> None:
        """Make the next version the table (``replaces``: a table exists and becomes the
        previous version, dropped once the next one is the table; its folder is deleted
        when it is a version's own)."""
        replaced = self._location(TABLE) if replaces else None
        if replaces:
            self.execute(f"alter table {self.qualified(TABLE)} rename to "
                         f"{self.qualified(PREVIOUS)}")
            stop_point("swap:previous_renamed")
        self.execute(f"alter table {self.qualified(NEXT)} rename to {self.qualified(TABLE)}")
        stop_point("swap:next_renamed")
        if replaces:
            self._drop(PREVIOUS, replaced, stop="swap:previous_dropped")


def _version_root(location: str) -> str | None:
    """The versions folder ``location`` is a version of, or None (a managed table's own
    folder, or a location of the user's)."""
    parent = location.rstrip("/").rsplit("/", 1)[0]
    return parent if parent.endswith(VERSIONS_SUFFIX) else None
