"""Replacing a table by its next version so that a kill at any instruction loses no row.

This module is the protocol's one home: its steps, and the recovery that any later zspark
entry point (a build, an incremental run, a re-clustering, a run-operation) runs first.
It is pure: the state of the three names in, the actions that repair it out.

Names. A model's table ``T``; its next version ``T__zspark_new`` (the *next*), written
whole and checked before it replaces ``T``; the table being replaced, ``T__zspark_old``
(the *previous*).

Folders. Every version is written once into a folder of its own,
``T__zspark_versions/<version>`` beside the schema's tables, and registered as an external
table there: a rename or a drop then changes the metastore only, and no file ever moves,
on a local disk as on an object store whose renames copy file by file. A version's folder
is deleted with its name, by a session through Hadoop and by a server through a managed
scratch table's drop (``folders.py``). (Tables written before versions had folders of
their own are managed: they live in their name's folder under the schema's folder, which
moves with a rename.)

The swap, each step one metastore commit (a rename of a managed table is two: the folder
moves, then the metastore entry follows; a drop removes the entry, then the folder)::

    1. rename T -> T__zspark_old      (a managed table's folder moves too)
    2. rename T__zspark_new -> T      commit point: once T's entry names the next
                                      version, the swap has happened
    3. drop T__zspark_old             (then its version's folder is deleted)
    (then the index of T is written: derived data, rebuilt when it does not match)

There is no journal besides the names themselves: every state a kill can leave is told
apart by which of the three names have a metastore entry and which folders exist, and
it is repaired by :func:`recovery_plan`:

a. An entry whose folder is gone while the folder of exactly one other name exists
   without an entry: a rename stopped between its halves. The folder moves back.
b. ``T`` and the previous both registered: the swap committed; the previous is dropped.
c. The previous without ``T``: the swap did not commit; the previous becomes ``T`` again
   (rolled back), and the next version is dropped.
d. A next version beside ``T`` (or with no table at all): never swapped in; dropped.
e. Folders of the next or previous version that no entry names (a create that stopped
   before registering its table, a drop that stopped before deleting its folder) are
   deleted, the previous one's only once ``T`` is whole.
f. Version folders that no entry names, once no next or previous version is registered
   (a version written but never registered, one whose table was dropped) are deleted:
   a version's folder is named by exactly one entry from its registration on, and its
   entry is dropped only once ``T`` names another version, so none of them holds rows
   of the table.

A table that holds committed rows is never dropped: the previous version is dropped only
once ``T`` holds the next one, and the next version only while it is not ``T``.
Anything else (a folder missing under every name, two candidates for one entry) is
ambiguous: recovery stops before changing anything and names what it found.

Over a connection that cannot see the warehouse's folders (a Thrift server), folders are
taken to agree with the metastore: a server runs each statement to its end even when
the dbt process that sent it is killed, so a rename is never seen half done there.

On a store whose renames copy objects one by one (S3, GCS: ``renames_atomic`` false), a
kill amid a rename can leave a folder split between two names, the table's entry still
naming one half. Such a previous version's folder may hold the only copy of some of the
table's files: recovery does not delete it (e.) but stops and names it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

#: Suffixes of the next and previous versions' names.
NEXT_SUFFIX = "__zspark_new"
PREVIOUS_SUFFIX = "__zspark_old"
#: Suffix of the folder that holds a table's versions, each in a folder of its own.
VERSIONS_SUFFIX = "__zspark_versions"

TABLE, NEXT, PREVIOUS = "table", "next", "previous"
ROLES = (TABLE, NEXT, PREVIOUS)


class AmbiguousSwapStateError(RuntimeError):
    """The names and folders of a table do not tell what a stopped swap was doing."""


@dataclass(frozen=True)
class Place:
    """What the metastore and the file system show for one name.

    ``entry``: the location the metastore gives the name (None: no entry).
    ``entry_folder``: does that location exist (None: cannot tell).
    ``folder``: the name's own folder in the schema (where a managed table of that name
    lives); ``folder_exists`` whether it exists (None: cannot tell).
    """

    folder: str
    folder_exists: bool | None
    entry: str | None = None
    entry_folder: bool | None = None


@dataclass(frozen=True)
class Action:
    """One repair: ``kind`` is ``move_folder`` (source -> target paths), ``rename``
    (role -> role), ``drop`` (role) or ``delete_folder`` (path)."""

    kind: str
    source: str
    target: str = ""
    why: str = ""


@dataclass(frozen=True)
class SwapState:
    """The three names of a table and what the metastore and file system show for each."""

    names: Mapping[str, str]
    places: Mapping[str, Place] = field(default_factory=dict)
    #: Whether the warehouse's file system renames a folder in one step.
    renames_atomic: bool = True
    #: The folders of the table's versions (``<T>__zspark_versions/*``) that exist.
    versions: tuple[str, ...] = ()

    def describe(self) -> str:
        parts = []
        for role in ROLES:
            place = self.places[role]
            entry = ("no table" if place.entry is None else
                     f"table at {place.entry}" + _exists(place.entry_folder))
            parts.append(f"{self.names[role]}: {entry}; folder {place.folder}"
                         f"{_exists(place.folder_exists)}")
        if self.versions:
            parts.append("version folders " + ", ".join(self.versions))
        return "; ".join(parts)


def _exists(flag: bool | None) -> str:
    return {True: " (exists)", False: " (missing)", None: ""}[flag]


def _folder_of(place: Place) -> bool:
    """Does a name's own folder hold files without an entry naming it? Unknown: no."""
    return place.entry != place.folder and bool(place.folder_exists)


def next_action(state: SwapState) -> Action | None:
    """The first repair ``state`` needs (None: nothing to repair).

    Raises :class:`AmbiguousSwapStateError` when the state is not one a stopped swap leaves.
    """
    places = state.places
    table, following, previous = (places[r] for r in ROLES)
    named = {p.entry for p in places.values() if p.entry is not None}

    # a. A rename stopped after moving the folder: move it back under the entry.
    for role in ROLES:
        place = places[role]
        if place.entry is None or place.entry_folder is not False:
            continue
        movable = [r for r in ROLES if r != role and places[r].entry is None
                   and _folder_of(places[r]) and places[r].folder not in named]
        if len(movable) != 1 or place.entry != place.folder:
            raise AmbiguousSwapStateError(
                f"the table {state.names[role]} names the folder {place.entry}, which is "
                f"gone, and no single folder of a stopped rename can take its place")
        return Action("move_folder", places[movable[0]].folder, place.entry,
                      f"a rename of {state.names[movable[0]]} stopped halfway: its folder "
                      f"moves back under {state.names[role]}")

    if table.entry is not None and previous.entry is not None:
        if following.entry is not None:
            raise AmbiguousSwapStateError("the table, its next and its previous version are all "
                                     "registered")
        # b. The swap committed: the previous version is no longer the only copy.
        return Action("drop", PREVIOUS, why="the swap had committed: the previous version "
                                            "is dropped")
    if previous.entry is not None:
        # c. The swap did not commit: the previous version is the table.
        return Action("rename", PREVIOUS, TABLE, why="the swap had not committed: the "
                                                     "previous version is the table again")
    if following.entry is not None:
        # d. A next version that never replaced the table.
        return Action("drop", NEXT, why="a next version that was never swapped in is dropped")
    # e. Folders no entry names.
    if _folder_of(following) and following.folder not in named:
        return Action("delete_folder", following.folder,
                      why="files of a next version that was never registered are deleted")
    if _folder_of(previous) and previous.folder not in named:
        if table.entry is None:
            raise AmbiguousSwapStateError(
                f"the folder {previous.folder} of a previous version exists, and no table "
                f"{state.names[TABLE]}: it may hold the table's only copy")
        if not state.renames_atomic:
            raise AmbiguousSwapStateError(
                f"the folder {previous.folder} of a previous version exists beside the table "
                f"{state.names[TABLE]}, on a store whose renames copy files one by one: a "
                f"rename stopped halfway may have left some of the table's files only there. "
                f"Compare it with {table.entry}, move back what the table lacks, then delete it")
        return Action("delete_folder", previous.folder,
                      why="files of a dropped previous version are deleted")
    # f. Version folders no entry names.
    for folder in state.versions:
        if folder not in named:
            return Action("delete_folder", folder,
                          why="files of a version no table names are deleted")
    return None


def apply(state: SwapState, action: Action) -> SwapState:
    """The state once ``action`` has run (as far as the names and folders go)."""
    places = dict(state.places)
    versions = state.versions

    def update(role: str, **changes: object) -> None:
        places[role] = replace(places[role], **changes)  # type: ignore[arg-type]

    def folder_set(path: str, exists: bool) -> None:
        for role, place in places.items():
            if place.folder == path:
                update(role, folder_exists=exists)
            if place.entry == path:
                update(role, entry_folder=exists)

    if action.kind == "move_folder":
        folder_set(action.source, False)
        folder_set(action.target, True)
    elif action.kind == "delete_folder":
        folder_set(action.source, False)
        versions = tuple(v for v in versions if v != action.source)
    elif action.kind == "drop":
        place = places[action.source]
        update(action.source, entry=None, entry_folder=None)
        if place.entry is not None and place.entry == place.folder:
            folder_set(place.entry, False)  # a managed table's folder goes with its entry
    elif action.kind == "rename":
        source, target = places[action.source], places[action.target]
        assert source.entry is not None
        moved = source.entry == source.folder  # a managed table's folder follows its name
        update(action.source, entry=None, entry_folder=None)
        if moved:
            folder_set(source.folder, False)
            update(action.target, entry=target.folder, entry_folder=True, folder_exists=True)
        else:
            update(action.target, entry=source.entry, entry_folder=source.entry_folder)
    return SwapState(state.names, places, state.renames_atomic, versions)


def _repaired(state: SwapState, limit: int = 8) -> tuple[list[Action], SwapState]:
    """Every repair ``state`` needs, in order, and the state they leave."""
    actions: list[Action] = []
    while (action := next_action(state)) is not None:
        actions.append(action)
        if len(actions) > limit:
            raise AmbiguousSwapStateError(f"no end to repairs: {state.describe()}")
        state = apply(state, action)
    return actions, state


def recovery_plan(state: SwapState, limit: int = 8) -> list[Action]:
    """Every repair ``state`` needs, in order; empty when the table is as a finished swap
    leaves it. Raises :class:`AmbiguousSwapStateError` (before any repair is run)."""
    return _repaired(state, limit)[0]


def table_after_recovery(state: SwapState) -> bool:
    """Whether the table's name is registered once :func:`recovery_plan` has run. A
    model's SQL is compiled before its run repairs anything: where a stopped swap renamed
    the table away, dbt sees no table, yet the repair makes the previous version the
    table again, so the SQL must be the incremental one (``is_incremental``)."""
    return _repaired(state)[1].places[TABLE].entry is not None
