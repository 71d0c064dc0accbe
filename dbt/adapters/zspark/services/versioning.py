"""Runs that survive a kill: one run per table (its lock), the repair of what a killed run
left (``versions/swap.py``), journaled batches and the swap of a next version.
"""

from __future__ import annotations

import threading
from typing import Any

from dbt.adapters.events.logging import AdapterLogger
from dbt_common.exceptions import DbtRuntimeError

from dbt.adapters.zspark.core.model_lock import LOCK_SUFFIX, LockOwner
from dbt.adapters.zspark.core.sql_text import property_list
from dbt.adapters.zspark.core.stop_points import stop_point
from dbt.adapters.zspark.services.context import RunContext
from dbt.adapters.zspark.services.indexing import FileIndex
from dbt.adapters.zspark.versions.rewrite import (
    set_properties_sql,
)
from dbt.adapters.zspark.versions.swap import (
    NEXT,
    PREVIOUS,
    Action,
    AmbiguousSwapStateError,
    table_after_recovery,
)
from dbt.adapters.zspark.versions.table_versions import (
    APPEND,
    BATCH,
    BATCH_KEY,
    OVERWRITE,
)

logger = AdapterLogger("zspark")


class TableVersioning:
    """Runs that survive a kill: one run per table (its lock), the repair of what a killed
    run left, a table's versions and their swap."""

    def __init__(self, ctx: RunContext, index: FileIndex) -> None:
        self.ctx = ctx
        self.index = index

    def next_version(self, relation: Any) -> Any:
        """The name a build or a re-clustering writes the table's next version under."""
        return self.ctx.version_of(relation, NEXT)

    def next_location(self, relation: Any, location_root: str | None = None) -> str:
        """The folder of its own the next version of ``relation`` is written into, once
        (``swap.py``), under the model's ``location_root`` if it has one."""
        return self.ctx.versions_of(relation).next_location(location_root)

    def drop_versioned_table(self, relation: Any) -> bool:
        """Drop ``relation`` if it is a table whose folder is one of its versions', and
        that folder with it (the metastore leaves an external table's files). False
        when it is not (a view, a managed table, a user's location): nothing done."""
        if relation is None or relation.is_view:
            return False
        versions = self.ctx.versions_of(relation)
        folder = versions.own_folder()
        if folder is None:
            return False
        versions.drop_table(folder)
        return True

    def swap_in(self, model: str, target: Any, old_relation: Any = None) -> None:
        """Make the written next version of ``target`` the table (``swap.py``)."""
        stop_point("swap:begin")
        versions = self.ctx.versions_of(target)
        if old_relation is not None and old_relation.is_view:
            # A view holds no rows: it goes first, and the swap has no previous version.
            self.ctx.execute(f"drop view if exists {old_relation}")
            self.ctx.cache_dropped(old_relation)
            old_relation = None
        versions.swap(replaces=old_relation is not None)
        if old_relation is not None:
            self.ctx.cache_renamed(target, self.ctx.version_of(target, PREVIOUS))
            self.ctx.cache_dropped(self.ctx.version_of(target, PREVIOUS))
        self.ctx.cache_renamed(self.ctx.version_of(target, NEXT), target)

    def table_after_recovery(self, relation: Any) -> bool:
        """Whether ``relation``, which dbt does not find, is a table once this run's
        repair of a stopped swap has run (``swap.table_after_recovery``); no change made.
        A state zspark cannot repair answers False: the run's repair then fails, naming it."""
        try:
            return table_after_recovery(self.ctx.versions_of(relation).observe())
        except AmbiguousSwapStateError:
            return False

    def begin(self, model: str, relation: Any) -> None:
        """First step of every zspark run on ``relation``: take its lock, then repair what
        a killed run left (``swap.py``) and log it in one line naming the model."""
        self.lock(model, relation)
        versions = self.ctx.versions_of(relation)
        try:
            state = versions.observe()
            done: list[Action] = []

            def cached(action: Action) -> None:
                done.append(action)
                if action.kind == "rename":
                    self.ctx.cache_renamed(self.ctx.version_of(relation, action.source),
                                           self.ctx.version_of(relation, action.target))
                elif action.kind == "drop":
                    self.ctx.cache_dropped(self.ctx.version_of(relation, action.source))

            versions.recover(state, cached)
            if self.ctx.has_table(relation) and self.ctx.reach().journals_batches:
                batch = versions.recover_batch(self.ctx.table_properties(relation).get(BATCH_KEY))
                if batch is not None:
                    done.append(Action("batch", BATCH, why=batch))
        except AmbiguousSwapStateError as error:
            raise DbtRuntimeError(
                f"Model '{model}': a stopped run left {relation} in a state zspark cannot "
                f"repair safely ({error}); nothing was changed. Found: {state.describe()}"
            ) from error
        # The staged index of a next version is derived data; the table's is checked next.
        self.ctx.execute(f"drop table if exists "
                         f"{self.ctx.index_of(self.ctx.version_of(relation, NEXT))}")
        if not done:
            return
        logger.warning(f"zspark: {model}: recovered {relation} from a run that was stopped: "
                       + "; ".join(a.why for a in done))
        if self.ctx.has_table(relation):
            self.index.repair_index(model, relation, create=False)

    def begin_batch(self, model: str, relation: Any) -> Any:
        """The batch an append or an overwrite writes before its files move into the table
        (a session; over a server, None: Spark's own commit writes into the table)."""
        if not self.ctx.reach().journals_batches:
            return None
        batch = self.ctx.version_of(relation, BATCH)
        self.ctx.execute(f"create table {batch} like {relation}")
        return batch

    def publish_batch(self, model: str, relation: Any, strategy: str) -> list[str]:
        """Journal the written batch in the table's properties, then move its files in
        (``strategy`` insert_overwrite: in place of what it replaces). The files moved in,
        by their paths in the table."""
        mode = OVERWRITE if strategy == "insert_overwrite" else APPEND
        stop_point(f"{mode}:written")
        batch = self.ctx.version_of(relation, BATCH)
        self.ctx.execute(set_properties_sql(str(relation), {BATCH_KEY: mode}))
        published = self.ctx.versions_of(relation).publish_batch(mode)
        self.ctx.cache_dropped(batch)
        return published

    def lock(self, model: str, relation: Any) -> None:
        """Take the lock of ``relation`` for this run (``model_lock.py``), or fail naming
        the run that holds it."""

        lock = relation.incorporate(path={"identifier": relation.identifier + LOCK_SUFFIX},
                                    type="view")
        key = str(lock).lower()
        if key in self.ctx.run.locks:
            return
        me = LockOwner.this_process()
        create = (f"create view {lock} tblproperties {property_list(me.to_properties())} "
                  f"as select 1 as zspark_lock")
        for _ in range(2):
            try:
                self.ctx.execute(create)
            except DbtRuntimeError as error:
                if "already exists" not in str(error).lower() and \
                        "ALREADY_EXISTS" not in str(error):
                    raise
            else:
                self.ctx.run.locks[key] = threading.get_ident()
                return
            owner = LockOwner.from_properties(self.ctx.table_properties(lock))
            if owner is not None and owner.same_process(me):
                self.ctx.run.locks[key] = threading.get_ident()
                return
            if owner is None or not owner.is_gone():
                who = owner.describe() if owner is not None else "an unknown run"
                raise DbtRuntimeError(
                    f"Model '{model}': another run is writing {relation}: {lock} is held by "
                    f"{who}. Runs of one table never overlap; run again once it has ended. "
                    f"If that process is gone from its host, `drop view {lock}` frees it.")
            logger.warning(f"zspark: {model}: {lock} was held by {owner.describe()}, which "
                           f"has ended; taking it over")
            self.ctx.execute(f"drop view if exists {lock}")
        raise DbtRuntimeError(f"Model '{model}': could not take the lock {lock}")

    def unlock(self, thread: int | None = None) -> None:
        """Drop the locks taken by ``thread`` (every lock of this process for None)."""
        for key, owner in list(self.ctx.run.locks.items()):
            if thread is None or owner == thread:
                self.ctx.run.locks.pop(key)
                try:
                    with self.ctx.cleaning_up():
                        self.ctx.execute(f"drop view if exists {key}")
                except DbtRuntimeError as error:  # the next run takes a dead owner's over
                    logger.warning(f"zspark: could not release {key}: {error}")
