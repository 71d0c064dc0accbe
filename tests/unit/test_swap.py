"""The swap protocol against kills at every instruction, on a model of the metastore and
the file system in which renames and drops take two steps, as they do in Spark's.

Every prefix of the swap (and of its recovery, killed again) is followed by recovery; the
table must then hold exactly the previous rows or exactly the next ones (the next only
once the commit point was passed), with no leftover name or folder.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from dbt.adapters.zspark.versions.swap import (
    NEXT,
    PREVIOUS,
    ROLES,
    TABLE,
    Action,
    AmbiguousSwapStateError,
    Place,
    SwapState,
    recovery_plan,
    table_after_recovery,
)

NAMES = {TABLE: "t", NEXT: "t__zspark_new", PREVIOUS: "t__zspark_old"}
FOLDER = {role: f"/wh/{name}" for role, name in NAMES.items()}


@dataclass
class World:
    """Metastore entries (name -> location) and folders (path -> what they hold)."""

    entries: dict[str, str] = field(default_factory=dict)
    folders: dict[str, str] = field(default_factory=dict)

    def copy(self) -> World:
        return World(dict(self.entries), dict(self.folders))

    def state(self) -> SwapState:
        places = {}
        for role, name in NAMES.items():
            entry = self.entries.get(name)
            places[role] = Place(FOLDER[role], FOLDER[role] in self.folders, entry,
                                 None if entry is None else entry in self.folders)
        return SwapState(NAMES, places)

    def table(self) -> str | None:
        location = self.entries.get(NAMES[TABLE])
        return None if location is None else self.folders.get(location, "MISSING")


# Primitive steps: each is one instruction a kill may fall after.
def move_folder(source: str, target: str):
    def step(world: World) -> None:
        assert target not in world.folders, f"{target} exists"
        world.folders[target] = world.folders.pop(source)
    return step


def set_entry(name: str, location: str | None):
    def step(world: World) -> None:
        if location is None:
            world.entries.pop(name)
        else:
            world.entries[name] = location
    return step


def rename(source: str, target: str):
    """A managed table's rename: the folder moves, then the entry follows."""
    return [move_folder(f"/wh/{source}", f"/wh/{target}"),
            lambda w: (w.entries.pop(source), w.entries.__setitem__(target, f"/wh/{target}"))]


def drop(name: str):
    """A drop: the entry goes, then the folder's files, one after the other."""
    def delete_some(world: World) -> None:
        world.folders[f"/wh/{name}"] = "PARTLY DELETED"

    return [set_entry(name, None), delete_some,
            lambda w: w.folders.pop(f"/wh/{name}")]


def create_next(content: str):
    """CREATE TABLE AS SELECT: files written first, the entry registered after."""
    folder = FOLDER[NEXT]
    return [lambda w: w.folders.__setitem__(folder, "PARTLY WRITTEN"),
            lambda w: w.folders.__setitem__(folder, content),
            set_entry(NAMES[NEXT], folder)]


def swap_steps() -> tuple[list, int]:
    """The protocol's steps after the next version is whole, and the index of the step
    that commits it."""
    steps = [*rename(NAMES[TABLE], NAMES[PREVIOUS]), *rename(NAMES[NEXT], NAMES[TABLE])]
    commit = len(steps)  # after the entry of the next version is renamed
    return [*steps, *drop(NAMES[PREVIOUS])], commit


def run_actions(world: World, actions: list[Action], stop: int | None = None) -> None:
    """Run repairs on the world in primitive steps; stop after ``stop`` steps."""
    steps = []
    for action in actions:
        if action.kind == "move_folder":
            steps.append(move_folder(action.source, action.target))
        elif action.kind == "delete_folder":
            steps.append(lambda w, p=action.source: w.folders.pop(p))
        elif action.kind == "drop":
            steps += drop(NAMES[action.source])
        elif action.kind == "rename":
            steps += rename(NAMES[action.source], NAMES[action.target])
    for i, step in enumerate(steps):
        if stop is not None and i >= stop:
            return
        step(world)


def recover(world: World) -> None:
    run_actions(world, recovery_plan(world.state()))


def assert_clean(world: World, allowed: set[str | None]) -> None:
    assert world.table() in allowed, (world, allowed)
    assert set(world.entries) <= {NAMES[TABLE]}
    assert set(world.folders) <= {FOLDER[TABLE]}
    assert recovery_plan(world.state()) == []


def histories(old: bool) -> list[tuple[World, set[str | None]]]:
    """Every state a kill can leave during a build (or a rewrite) of the table, with the
    contents the table may hold after recovery."""
    start = World({NAMES[TABLE]: FOLDER[TABLE]}, {FOLDER[TABLE]: "OLD"}) if old else World()
    before = "OLD" if old else None
    steps = create_next("NEW")
    if old:
        swap, commit = swap_steps()
    else:
        swap, commit = rename(NAMES[NEXT], NAMES[TABLE]), 2
    steps += swap
    commit += len(create_next("NEW"))
    return stopped_after_each_step(start, steps, commit, before)


def stopped_after_each_step(start: World, steps: list, commit: int,
                            before: str | None) -> list[tuple[World, set[str | None]]]:
    """The world after each prefix of ``steps``, with what the table may hold after
    recovery: the new rows once the ``commit``-th step has run, else ``before``."""
    found = []
    for stop in range(len(steps) + 1):
        world = start.copy()
        for step in steps[:stop]:
            step(world)
        found.append((world, {"NEW"} if stop >= commit else {before}))
    return found


@pytest.mark.parametrize("old", [True, False])
def test_recovery_after_a_kill_at_any_step_keeps_exactly_one_version(old: bool) -> None:
    for world, allowed in histories(old):
        recover(world)
        assert_clean(world, allowed)


@pytest.mark.parametrize("old", [True, False])
def test_recovery_killed_at_any_step_and_run_again_still_keeps_one_version(old: bool) -> None:
    for world, allowed in histories(old):
        plan = recovery_plan(world.state())
        for stop in range(8):
            again = world.copy()
            run_actions(again, plan, stop)
            recover(again)
            assert_clean(again, allowed)


def test_a_table_whose_folder_is_gone_everywhere_is_ambiguous() -> None:
    world = World({NAMES[TABLE]: FOLDER[TABLE]}, {})
    with pytest.raises(AmbiguousSwapStateError, match="names the folder /wh/t, which is gone"):
        recovery_plan(world.state())


def test_a_previous_folder_without_any_table_is_left_alone() -> None:
    world = World({}, {FOLDER[PREVIOUS]: "OLD"})
    with pytest.raises(AmbiguousSwapStateError, match="may hold the table's only copy"):
        recovery_plan(world.state())


def test_unknown_folders_are_taken_to_agree_with_the_metastore() -> None:
    """A server's folders cannot be seen: recovery works from the entries alone."""
    places = {role: Place(FOLDER[role], None) for role in ROLES}
    places[PREVIOUS] = Place(FOLDER[PREVIOUS], None, FOLDER[PREVIOUS], None)
    places[NEXT] = Place(FOLDER[NEXT], None, FOLDER[NEXT], None)
    plan = recovery_plan(SwapState(NAMES, places))
    assert [(a.kind, a.source, a.target) for a in plan] == [
        ("rename", PREVIOUS, TABLE), ("drop", NEXT, "")]


def test_a_previous_folder_beside_the_table_is_kept_where_renames_copy_file_by_file() -> None:
    """On an object store a rename copies file by file: a previous version's folder beside
    the table may be half of a stopped rename, holding some of the table's only copies."""
    world = World({NAMES[TABLE]: FOLDER[TABLE]}, {FOLDER[TABLE]: "NEW", FOLDER[PREVIOUS]: "OLD"})
    assert [a.kind for a in recovery_plan(world.state())] == ["delete_folder"]
    split = SwapState(NAMES, world.state().places, renames_atomic=False)
    with pytest.raises(AmbiguousSwapStateError, match="renames copy files one by one"):
        recovery_plan(split)


# Versions in folders of their own (a session's tables): external tables whose renames
# and drops change the metastore only; a version's folder is deleted file by file.
VERSIONS = "/wh/t__zspark_versions"
OLD_VERSION, NEW_VERSION = f"{VERSIONS}/v1", f"{VERSIONS}/v2"


def versioned_state(world: World, renames_atomic: bool = False) -> SwapState:
    state = world.state()
    found = tuple(sorted(f for f in world.folders if f.startswith(VERSIONS + "/")))
    return SwapState(NAMES, state.places, renames_atomic, found)


def rename_entry(source: str, target: str):
    """An external table's rename: one metastore commit, no file moves."""
    return [lambda w: w.entries.__setitem__(target, w.entries.pop(source))]


def delete_folder(path: str):
    """A folder's deletion on an object store: its files go one page at a time."""
    return [lambda w: w.folders.__setitem__(path, "PARTLY DELETED"),
            lambda w: w.folders.pop(path)]


def run_versioned(world: World, actions: list[Action], stop: int | None = None) -> None:
    steps = []
    for action in actions:
        if action.kind == "delete_folder":
            steps += delete_folder(action.source)
        elif action.kind == "drop":
            name = NAMES[action.source]
            if world.entries.get(name) == f"/wh/{name}":
                steps += drop(name)
            else:
                steps.append(set_entry(name, None))
        elif action.kind == "rename":
            source, target = NAMES[action.source], NAMES[action.target]
            if world.entries.get(source) == f"/wh/{source}":
                steps += rename(source, target)
            else:
                steps += rename_entry(source, target)
        elif action.kind == "move_folder":
            steps.append(move_folder(action.source, action.target))
    for i, step in enumerate(steps):
        if stop is not None and i >= stop:
            return
        step(world)


def versioned_histories(start: str) -> list[tuple[World, set[str | None]]]:
    """Every state a kill leaves while a next version written into its own folder replaces
    ``start``: no table, a version in its own folder, or a managed table (built before
    versions had folders)."""
    if start == "none":
        world, before = World(), None
    elif start == "versioned":
        world, before = World({NAMES[TABLE]: OLD_VERSION}, {OLD_VERSION: "OLD"}), "OLD"
    else:
        world, before = World({NAMES[TABLE]: FOLDER[TABLE]}, {FOLDER[TABLE]: "OLD"}), "OLD"
    steps = [lambda w: w.folders.__setitem__(NEW_VERSION, "PARTLY WRITTEN"),
             lambda w: w.folders.__setitem__(NEW_VERSION, "NEW"),
             set_entry(NAMES[NEXT], NEW_VERSION)]
    if start == "none":
        steps += rename_entry(NAMES[NEXT], NAMES[TABLE])
        commit = len(steps)
    else:
        if start == "versioned":
            steps += rename_entry(NAMES[TABLE], NAMES[PREVIOUS])
        else:
            steps += rename(NAMES[TABLE], NAMES[PREVIOUS])
        steps += rename_entry(NAMES[NEXT], NAMES[TABLE])
        commit = len(steps)
        if start == "versioned":
            steps += [set_entry(NAMES[PREVIOUS], None), *delete_folder(OLD_VERSION)]
        else:
            steps += drop(NAMES[PREVIOUS])
    return stopped_after_each_step(world, steps, commit, before)


def assert_versioned_clean(world: World, allowed: set[str | None]) -> None:
    assert world.table() in allowed, (world, allowed)
    assert set(world.entries) <= {NAMES[TABLE]}, world
    assert set(world.folders) <= {world.entries.get(NAMES[TABLE])}, world
    assert recovery_plan(versioned_state(world, True)) == []


@pytest.mark.parametrize("start", ["none", "versioned", "managed"])
def test_versions_in_their_own_folders_recover_from_a_kill_at_any_step(start: str) -> None:
    """No folder of a version ever moves, so a store whose renames copy file by file is
    as safe as a local disk: every kill, and every kill of the recovery, ends in one
    version, its rows whole. (A managed table built before versions had folders moves
    once, when it is replaced: on a disk whose renames are atomic.)"""
    atomic = start == "managed"
    for world, allowed in versioned_histories(start):
        plan = recovery_plan(versioned_state(world, atomic))
        if not atomic:
            assert all(a.kind in ("delete_folder", "drop", "rename") for a in plan), plan
        for stop in range(10):
            again = world.copy()
            run_versioned(again, plan, stop)
            run_versioned(again, recovery_plan(versioned_state(again, atomic)))
            assert_versioned_clean(again, allowed)


def test_a_version_folder_no_table_names_is_deleted_only_after_the_names_are_repaired() -> None:
    world = World({NAMES[PREVIOUS]: OLD_VERSION, NAMES[NEXT]: NEW_VERSION},
                  {OLD_VERSION: "OLD", NEW_VERSION: "NEW", f"{VERSIONS}/v0": "PARTLY WRITTEN"})
    plan = recovery_plan(versioned_state(world))
    assert [(a.kind, a.source) for a in plan] == [
        ("rename", PREVIOUS), ("drop", NEXT), ("delete_folder", f"{VERSIONS}/v0"),
        ("delete_folder", NEW_VERSION)]


@pytest.mark.parametrize("start", ["none", "versioned", "managed"])
def test_the_table_a_model_compiles_against_is_the_one_the_repair_leaves(start: str) -> None:
    """dbt compiles a model (``is_incremental``) before its run repairs a stopped swap:
    the answer of ``table_after_recovery`` is whether the repair leaves a table, at every
    kill. Between the swap's two renames dbt finds no table, yet the repair restores one:
    a model compiled as a first build there would append every row twice."""
    atomic = start == "managed"
    restored = 0
    for world, _ in versioned_histories(start):
        seen_by_dbt = NAMES[TABLE] in world.entries
        predicted = table_after_recovery(versioned_state(world, atomic))
        run_versioned(world, recovery_plan(versioned_state(world, atomic)))
        assert predicted == (NAMES[TABLE] in world.entries), world
        restored += predicted and not seen_by_dbt
    assert restored == (0 if start == "none" else 1)

