"""A Delta table's live files replayed from its ``_delta_log`` by Spark SQL alone, for a
reach with no JVM of its own (thrift, Connect): the latest complete checkpoint's ``add``
rows, then each later commit's ``add`` and ``remove`` actions, the latest action per
path winning, as Delta's own snapshot does. It reads a checkpoint and a few commits
(a status and one read per log file), not the table's rows.

The files it reads are named, not found by listing the log (which keeps 30 days of
commits; a listing's status of each is a request): the latest version from the table's
history, the newest complete checkpoint among the recent versions' (``_last_checkpoint``
is a hidden file to Spark's readers), the commits between; one listing confirms each is
there. It replays only what it can replay exactly: a table using a reader feature that
changes what an action means (deletion vectors, column mapping, v2 checkpoints), a
checkpoint without the statistics' JSON, a log missing a file the replay needs: for each
the caller reads the rows instead.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from dbt.adapters.zspark.core.sql_text import sql_string

#: Reader features under which an action's path or statistics mean something a plain
#: replay does not see: a file's deletion vector (rows gone, the key is path plus
#: vector), physical column names in the statistics, checkpoints in sidecar files.
UNREPLAYED_FEATURES = ("deletionVectors", "columnMapping", "v2Checkpoint")
_CHECKPOINT = re.compile(r"^(\d{20})\.checkpoint\.parquet$")
_CHECKPOINT_PART = re.compile(r"^(\d{20})\.checkpoint\.(\d{10})\.(\d{10})\.parquet$")
#: Checkpoints are looked for among the last 100 to 200 versions first (Delta writes one
#: every 10 commits by default), then among all the log keeps.
RECENT = 100
#: Characters a Hadoop path pattern reads as a glob: a location holding one is not replayed.
_GLOB = re.compile(r"[*?\[\]{}\\]")
#: The actions a commit's line may hold that the replay reads.
ACTION_SCHEMA = ("struct<add: struct<path: string, partitionValues: map<string, string>, "
                 "size: bigint, modificationTime: bigint, stats: string>, "
                 "remove: struct<path: string>>")


@dataclass(frozen=True)
class LogFiles:
    """The log files a snapshot is replayed from: a checkpoint's parts (none before the
    first checkpoint) and every commit after it, up to ``version``."""

    version: int
    checkpoint_version: int | None
    checkpoint: tuple[str, ...]
    commits: tuple[str, ...]


def replayable(properties: Mapping[str, str], location: str) -> bool:
    """Whether a table with these properties, at ``location``, is replayed exactly.

    >>> replayable({"delta.minReaderVersion": "1"}, "s3a://b/t")
    True
    >>> replayable({"delta.feature.deletionVectors": "supported"}, "s3a://b/t")
    False
    >>> replayable({"delta.columnMapping.mode": "name"}, "s3a://b/t")
    False
    >>> replayable({}, "s3a://b/t[1]")
    False
    """
    if any(f"delta.feature.{feature}" in properties for feature in UNREPLAYED_FEATURES):
        return False
    if properties.get("delta.columnMapping.mode", "none").lower() != "none":
        return False
    if properties.get("delta.checkpoint.writeStatsAsJson", "true").lower() == "false":
        return False
    return not _GLOB.search(location)


def checkpoints_sql(location: str, latest: int, recent: bool = True) -> str:
    """The names of a log's checkpoint files, and of its commit ``latest`` (so that the
    pattern always matches a file): with ``recent``, only the checkpoints of the last
    100 to 200 versions, each a status to read (a log keeps 30 days of them).

    >>> print(checkpoints_sql("s3a://b/t", 1234))  # doctest: +NORMALIZE_WHITESPACE
    select regexp_extract(path, '([^/]+)$', 1) from binaryFile.`s3a://b/t/_delta_log/{000000000000000012*.checkpoint*.parquet,000000000000000011*.checkpoint*.parquet,00000000000000001234.json}`
    """
    if recent:
        hundreds = latest // RECENT
        prefixes = [f"{h:018d}*" for h in (hundreds, hundreds - 1) if h >= 0]
    else:
        prefixes = ["*"]
    patterns = [f"{prefix}.checkpoint*.parquet" for prefix in prefixes]
    return _names_sql(location, [*patterns, f"{latest:020d}.json"])


def newest_checkpoint(names: Iterable[str], latest: int) -> tuple[int, tuple[str, ...]] | None:
    """The newest checkpoint at or before ``latest`` whose every part is among ``names``:
    its version and files.

    >>> newest_checkpoint(["00000000000000000004.checkpoint.0000000001.0000000002.parquet",
    ...                    "00000000000000000002.checkpoint.parquet"], 5)  # 4 lacks a part
    (2, ('00000000000000000002.checkpoint.parquet',))
    >>> newest_checkpoint(["00000000000000000005.json"], 5) is None
    True
    """
    checkpoints: dict[int, tuple[str, ...]] = {}
    parts: dict[tuple[int, int], dict[int, str]] = {}
    for name in names:
        if found := _CHECKPOINT.match(name):
            checkpoints[int(found[1])] = (name,)
        elif found := _CHECKPOINT_PART.match(name):
            parts.setdefault((int(found[1]), int(found[3])), {})[int(found[2])] = name
    for (version, total), listed in parts.items():
        if set(listed) == set(range(1, total + 1)):
            checkpoints.setdefault(version, tuple(listed[p] for p in sorted(listed)))
    complete = [v for v in checkpoints if v <= latest]
    return (max(complete), checkpoints[max(complete)]) if complete else None


def planned_log_files(latest: int, checkpoint: tuple[int, tuple[str, ...]] | None
                      ) -> LogFiles:
    """The files to replay version ``latest`` from: a checkpoint (its version and files;
    None: every commit from 0) and every commit after it.

    >>> planned_log_files(1, None).commits
    ('00000000000000000000.json', '00000000000000000001.json')
    >>> [name[17:] for name in planned_log_files(5, (3, ("c",))).commits]
    ['004.json', '005.json']
    """
    if checkpoint is None:
        return LogFiles(latest, None, (), tuple(f"{v:020d}.json" for v in range(latest + 1)))
    version, files = checkpoint
    return LogFiles(latest, version, files,
                    tuple(f"{v:020d}.json" for v in range(version + 1, latest + 1)))


def listed_sql(location: str, log: LogFiles) -> str:
    """The names, of the files a replay reads, that the log folder holds: one listing of
    it, and a status of each file named (not a read).

    >>> print(listed_sql("s3a://b/t", planned_log_files(1, None)))
    select regexp_extract(path, '([^/]+)$', 1) from binaryFile.`s3a://b/t/_delta_log/{00000000000000000000.json,00000000000000000001.json}`
    """
    return _names_sql(location, log.checkpoint + log.commits)


def replayed_adds_sql(location: str, log: LogFiles) -> str:
    """The live files' ``add`` actions (path, size, modificationTime, partitionValues,
    stats), one row per file: the checkpoint's adds at its version, then every commit's
    adds and removes; a path's latest action wins (a remove takes it out). A commit line
    that is not valid JSON fails the query.

    >>> log = LogFiles(3, 2, ("00000000000000000002.checkpoint.parquet",),
    ...                ("00000000000000000003.json",))
    >>> print(replayed_adds_sql("s3a://b/t", log))  # doctest: +NORMALIZE_WHITESPACE +ELLIPSIS
    select path, size, modificationTime, partitionValues, stats from (select *,
    row_number() over (partition by path order by version desc, is_add desc) as zspark_latest
    from (select add.path as path, add.size as size, add.modificationTime as modificationTime,
    add.partitionValues as partitionValues, add.stats as stats, cast(2 as bigint) as version,
    true as is_add from parquet.`s3a://b/t/_delta_log/00000000000000000002.checkpoint.parquet`
    where add is not null union all select coalesce(action.add.path, action.remove.path)...
    from text.`s3a://b/t/_delta_log/00000000000000000003.json`) zspark_commits
    where action.add is not null or action.remove is not null) zspark_actions) zspark_replayed
    where zspark_latest = 1 and is_add
    """
    folder = log_folder(location)
    branches = []
    if log.checkpoint:
        branches.append(
            "select add.path as path, add.size as size, add.modificationTime as "
            "modificationTime, add.partitionValues as partitionValues, add.stats as stats, "
            f"cast({log.checkpoint_version} as bigint) as version, true as is_add "
            f"from parquet.`{folder}/{_one_pattern(log.checkpoint)}` where add is not null")
    if log.commits:
        parsed = f"from_json(value, {sql_string(ACTION_SCHEMA)}, map('mode', 'FAILFAST'))"
        branches.append(
            "select coalesce(action.add.path, action.remove.path) as path, action.add.size "
            "as size, action.add.modificationTime as modificationTime, "
            "action.add.partitionValues as partitionValues, action.add.stats as stats, "
            "version, action.add is not null as is_add "
            f"from (select {parsed} as action, "
            "cast(substr(_metadata.file_name, 1, 20) as bigint) as version "
            f"from text.`{folder}/{_one_pattern(log.commits)}`) zspark_commits "
            "where action.add is not null or action.remove is not null")
    return ("select path, size, modificationTime, partitionValues, stats from (select *, "
            "row_number() over (partition by path order by version desc, is_add desc) "
            f"as zspark_latest from ({' union all '.join(branches)}) zspark_actions) "
            "zspark_replayed where zspark_latest = 1 and is_add")


def partition_columns(described: Sequence[tuple[object, ...]]) -> list[str]:
    """The partition columns a ``describe table`` lists.

    >>> partition_columns([("a", "int", None), ("# Partition Information", "", ""),
    ...                    ("# col_name", "data_type", "comment"), ("p", "int", None),
    ...                    ("", "", ""), ("Location", "s3a://b/t", "")])
    ['p']
    """
    names = [str(row[0]) for row in described]
    if "# Partition Information" not in names:
        return []
    found = []
    for name in names[names.index("# Partition Information") + 1:]:
        if not name or (name.startswith("#") and name != "# col_name"):
            break
        if name != "# col_name":
            found.append(name)
    return found


def log_folder(location: str) -> str:
    """A table's ``_delta_log`` folder, as a path between backticks."""
    return (location.rstrip("/") + "/_delta_log").replace("`", "``")


def _names_sql(location: str, patterns: Sequence[str]) -> str:
    """The names of the log's files that ``patterns`` match (a status each, no read)."""
    return (f"select regexp_extract(path, '([^/]+)$', 1) from binaryFile."
            f"`{log_folder(location)}/{_one_pattern(patterns)}`")


def _one_pattern(names: Sequence[str]) -> str:
    """One path pattern naming exactly these files of a folder."""
    return names[0] if len(names) == 1 else "{" + ",".join(names) + "}"
