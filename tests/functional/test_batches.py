"""Publishing an append's, an overwrite's or a partial re-clustering's batch
(table_versions.py) stopped before each of its steps (every folder change and statement),
then recovered as the next run does: the table holds exactly its rows before or exactly
its rows after, and nothing of the batch or of what it replaced is left behind. Recovery
is itself stopped once, at a varying step.

Real Spark, real folders; the stop is an exception raised in place of the step. Real
processes killed with SIGKILL at the named steps are in test_kills.py.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from dbt.adapters.zspark.reach.folders import SessionFolders
from dbt.adapters.zspark.versions.table_versions import (
    APPEND,
    BATCH_KEY,
    OVERWRITE,
    RECLUSTER,
    REPLACED_SUFFIX,
    REPLACING_SUFFIX,
    TableVersions,
)

pytestmark = pytest.mark.spark

SCHEMA, TABLE = "zspark_batches", "published"
OLD = [(i, i % 3) for i in range(30)]  # partitions 0, 1, 2
NEW = [(100 + i, 1 + 2 * (i % 2)) for i in range(10)]  # partitions 1 and 3


class StoppedError(Exception):
    """Raised in place of the step a kill would have stopped before."""


class StopAfter:
    """Counts the steps of a publication; raises ``StoppedError`` in place of step ``left``
    (``halfway``: a file's move stopped is half done, as an object store's is when killed
    between its copy and the delete of its source)."""

    def __init__(self, left: int | None, halfway: bool = False) -> None:
        self.left, self.halfway = left, halfway

    def step(self) -> None:
        if self.left is not None:
            if self.left == 0:
                raise StoppedError
            self.left -= 1


class StoppingFolders(SessionFolders):
    def __init__(self, spark: Any, stop: StopAfter) -> None:
        super().__init__(spark)
        self.stop = stop

    def move(self, source: str, target: str) -> None:
        if self.stop.left == 0 and self.stop.halfway:
            located, files = self._path(source)
            if files.isFile(located):
                copied, _ = self._path(target)
                self._jvm.org.apache.hadoop.fs.FileUtil.copy(
                    files, located, files, copied, False, self._conf)
        self.stop.step()
        super().move(source, target)

    def delete(self, path: str) -> None:
        self.stop.step()
        super().delete(path)

    # File by file, so that a publication is stopped after every single file.
    def move_all(self, moves: Sequence[tuple[str, str]]) -> None:
        for source, target in moves:
            self.move(source, target)

    def delete_all(self, paths: Sequence[str]) -> None:
        for path in paths:
            self.delete(path)

    def make(self, path: str) -> None:
        self.stop.step()
        super().make(path)


def versions(spark: Any, stop: StopAfter) -> TableVersions:
    def execute(sql: str) -> Any:
        stop.step()
        return spark.sql(sql)

    return TableVersions(SCHEMA, TABLE, lambda sql: [tuple(r) for r in spark.sql(sql).collect()],
                         execute, StoppingFolders(spark, stop))


def written(spark: Any, partitioned: bool, recluster: bool = False) -> str:
    """The table with OLD's rows and its batch with NEW's; the schema's folder.
    (``recluster``: OLD is written in two runs, and the batch rewrites the second with
    NEW's rows and names its files as those it replaces.)"""
    spark.sql(f"create database if not exists {SCHEMA}")
    for name in (TABLE, TABLE + "__zspark_batch"):
        spark.sql(f"drop table if exists {SCHEMA}.{name}")
    folder = spark.catalog.getDatabase(SCHEMA).locationUri.rstrip("/")
    files = SessionFolders(spark)
    for suffix in (REPLACING_SUFFIX, REPLACED_SUFFIX):
        files.delete(f"{folder}/{TABLE}{suffix}")
    spark.sql(f"create table {SCHEMA}.{TABLE} (id int, p int) using parquet"
              + (" partitioned by (p)" if partitioned else ""))
    for run in [OLD[:15], OLD[15:]] if recluster else [OLD]:
        spark.createDataFrame(run, "id int, p int").repartition(2).write.insertInto(
            f"{SCHEMA}.{TABLE}")
    spark.sql(f"create table {SCHEMA}.{TABLE}__zspark_batch like {SCHEMA}.{TABLE}")
    spark.createDataFrame(NEW + (OLD[15:] if recluster else []),
                          "id int, p int").repartition(2).write.insertInto(
        f"{SCHEMA}.{TABLE}__zspark_batch")
    if recluster:  # named as the index names them: Spark's file paths
        versions(spark, StopAfter(None)).journal_replaced(run_files(spark, 15))
    return folder


def run_files(spark: Any, first_id: int) -> list[str]:
    """The Spark paths of the table's files written from ``first_id`` on (a later run)."""
    spark.catalog.refreshTable(f"{SCHEMA}.{TABLE}")
    return [str(r[0]) for r in spark.sql(
        f"select distinct _metadata.file_path from {SCHEMA}.{TABLE} "
        f"where id >= {first_id}").collect()]


def rows(spark: Any) -> list[tuple[int, int]]:
    spark.catalog.refreshTable(f"{SCHEMA}.{TABLE}")
    return sorted(tuple(r) for r in spark.table(f"{SCHEMA}.{TABLE}").collect())


def expected(mode: str, partitioned: bool) -> list[tuple[int, int]]:
    if mode in (APPEND, RECLUSTER):
        return sorted(OLD + NEW)
    replaced = {p for _, p in NEW} if partitioned else {p for _, p in OLD}
    return sorted([r for r in OLD if r[1] not in replaced] + NEW)


def leftovers(spark: Any, folder: str) -> list[str]:
    files = SessionFolders(spark)
    found = [f"{folder}/{TABLE}{suffix}" for suffix in
             ("__zspark_batch", REPLACING_SUFFIX, REPLACED_SUFFIX)
             if files.exists(f"{folder}/{TABLE}{suffix}")]
    if spark.catalog.tableExists(f"{SCHEMA}.{TABLE}__zspark_batch"):
        found.append("the batch's table")
    properties = {str(r[0]): str(r[1]) for r in
                  spark.sql(f"show tblproperties {SCHEMA}.{TABLE}").collect()}
    if BATCH_KEY in properties:
        found.append("the journal")
    return found


def journal(spark: Any) -> str | None:
    properties = {str(r[0]): str(r[1]) for r in
                  spark.sql(f"show tblproperties {SCHEMA}.{TABLE}").collect()}
    return properties.get(BATCH_KEY)


def stopped_runs(run: Callable[[StopAfter], Any]) -> int:
    """Run ``run`` stopped before its first, second, ... step until it completes; the
    number of steps it has."""
    steps = 0
    while True:
        try:
            run(StopAfter(steps))
        except StoppedError:
            steps += 1
            continue
        return steps


@pytest.mark.parametrize(("mode", "partitioned", "halfway"), [
    (OVERWRITE, True, False), (OVERWRITE, False, True), (APPEND, True, True),
    (RECLUSTER, False, True)])
def test_a_publication_stopped_at_any_step_recovers_to_all_or_nothing(
        spark: Any, mode: str, partitioned: bool, halfway: bool) -> None:
    """``halfway``: every file's move is stopped after its copy, before its source is
    deleted (an object store's move), and the next run finishes it."""
    want = expected(mode, partitioned)
    assert want != sorted(OLD)

    stop_count = [0]

    def publish(stop: StopAfter) -> None:
        stop.halfway = halfway
        folder = written(spark, partitioned, recluster=mode == RECLUSTER)
        spark.sql(f"alter table {SCHEMA}.{TABLE} set tblproperties "
                  f"('{BATCH_KEY}' = '{mode}')")
        try:
            versions(spark, stop).publish_batch(mode)
        except StoppedError:
            # The next run recovers, itself stopped at one of its first steps, and the
            # one after it finishes.
            with contextlib.suppress(StoppedError):
                versions(spark, StopAfter(stop_count[0] % 3)).recover_batch(journal(spark))
            stop_count[0] += 1
            versions(spark, StopAfter(None)).recover_batch(journal(spark))
            assert rows(spark) == want, f"stopped after {stop.left} steps"
            assert leftovers(spark, folder) == []
            raise
        assert rows(spark) == want
        assert leftovers(spark, folder) == []

    steps = stopped_runs(publish)
    # Set aside (overwrite), a move per file, a delete per file rewritten (recluster),
    # and the statements that close it.
    assert steps >= (5 if mode == OVERWRITE else 6 if mode == RECLUSTER else 4)


def test_a_batch_never_journaled_is_dropped_and_the_table_untouched(spark: Any) -> None:
    folder = written(spark, partitioned=True)
    done = versions(spark, StopAfter(None)).recover_batch(journal(spark))
    assert done == "a batch that never reached the table: it is dropped"
    assert rows(spark) == sorted(OLD)
    assert leftovers(spark, folder) == []


def test_a_merge_deletes_the_files_it_replaces_whatever_their_partition_values(
        spark: Any) -> None:
    """The index names files by their Spark paths (URIs, a partition value's escapes
    escaped again): a merge's publication deletes those very files, in partitions whose
    values Spark escapes, and no row is left twice."""
    values = ["a b", "50%", "x/y:z"]
    old = [(i, values[i % 3]) for i in range(12)]
    spark.sql(f"create database if not exists {SCHEMA}")
    for name in (TABLE, TABLE + "__zspark_batch"):
        spark.sql(f"drop table if exists {SCHEMA}.{name}")
    spark.sql(f"create table {SCHEMA}.{TABLE} (id int, p string) using parquet "
              f"partitioned by (p)")
    for run in (old[:6], old[6:]):
        spark.createDataFrame(run, "id int, p string").write.insertInto(f"{SCHEMA}.{TABLE}")
    spark.sql(f"create table {SCHEMA}.{TABLE}__zspark_batch like {SCHEMA}.{TABLE}")
    spark.createDataFrame(old[6:], "id int, p string").write.insertInto(
        f"{SCHEMA}.{TABLE}__zspark_batch")
    published = versions(spark, StopAfter(None))
    replaced = run_files(spark, 6)
    assert any("%25" in path for path in replaced), replaced  # escaped twice
    published.journal_replaced(replaced)
    spark.sql(f"alter table {SCHEMA}.{TABLE} set tblproperties ('{BATCH_KEY}' = "
              f"'{RECLUSTER}')")
    published.publish_batch(RECLUSTER)
    assert rows(spark) == sorted(old)
    assert not set(replaced) & set(run_files(spark, 0))


def test_files_move_and_delete_at_once_as_one_by_one(spark: Any, tmp_path: Any) -> None:
    """zspark's JVM class moves a table's files in one call: each as ``move`` does, a move a
    kill stopped after its copy finished, a file that is not there refused by name."""
    folders = SessionFolders(spark)
    assert folders._table_files is not None, "the suite's session has zspark's JVM classes"
    source, target = tmp_path / "batch", tmp_path / "table"
    for name in ("a.parquet", "b.parquet", "half.parquet", "other.parquet"):
        (source / "p=1").mkdir(parents=True, exist_ok=True)
        (source / "p=1" / name).write_bytes(name.encode() * 10)
    (target / "p=1").mkdir(parents=True)
    (target / "p=1" / "half.parquet").write_bytes(b"half.parquet" * 10)  # copied, not deleted
    (source / "_hidden").write_text("x")
    listed = folders.files(f"file:{source}")
    assert listed == sorted(f"file:{source}/p=1/{n}" for n in
                            ("a.parquet", "b.parquet", "half.parquet", "other.parquet"))
    moves = [(path, path.replace(str(source), str(target))) for path in listed
             if "other" not in path]
    folders.move_all(moves)
    assert sorted(p.name for p in (target / "p=1").iterdir()) == \
        ["a.parquet", "b.parquet", "half.parquet"]
    assert sorted(p.name for p in (source / "p=1").iterdir()) == ["other.parquet"]
    with pytest.raises(Exception, match=r"gone\.parquet"):
        folders.move_all([(f"file:{source}/p=1/gone.parquet", f"file:{target}/p=1/gone.parquet"),
                          (f"file:{source}/p=1/other.parquet",
                           f"file:{target}/p=1/other.parquet")])
    assert (target / "p=1" / "other.parquet").read_bytes() == b"other.parquet" * 10
    folders.delete_all([f"file:{target}/p=1/a.parquet", f"file:{target}/p=1/b.parquet"])
    assert sorted(p.name for p in (target / "p=1").iterdir()) == \
        ["half.parquet", "other.parquet"]
    assert not (source / "p=1").exists() or not list((source / "p=1").iterdir())
    # A partition value's escape is escaped once more in a Spark file path.
    uris = ["file:/x/p=a%252Fb/f.parquet", "file:/y/a%20b/z.parquet"]
    paths = folders.from_uris(uris)
    assert paths == ["file:/x/p=a%2Fb/f.parquet", "file:/y/a b/z.parquet"]
    # And back, as the index names a file the publication moved in.
    assert folders.to_uris(paths) == uris
    assert folders.to_uris([f"file://{target}/p=1/other.parquet"]) == \
        [f"file:{target}/p=1/other.parquet"]
