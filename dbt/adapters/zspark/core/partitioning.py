"""How a clustered build spreads rows over Spark partitions and files (pure numpy).

A build shuffles once: every row goes to the shuffle partition that owns its key range
(cut points of the key taken from the build's own sample), each partition is sorted by the
key and cut into files of equal row count. Few partitions keep the shuffle cheap; the cut
points sit on file boundaries, so every partition writes a whole number of full files.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeVar

import numpy as np

Cut = TypeVar("Cut")
Test = TypeVar("Test")
Owner = TypeVar("Owner")

#: Shuffle partitions per core: enough to balance tasks, few enough to stay one cheap shuffle.
PARTITIONS_PER_CORE = 4
#: Input bytes one shuffle partition should hold at most.
PARTITION_BYTES = 256 * 1024 * 1024
#: Up to this many files, every file is its own partition: the count is then exact, and
#: the task count still small.
ONE_FILE_PARTITIONS = 64


@dataclass(frozen=True)
class FileSpread:
    """The shuffle partitions of a build and how they are cut into files."""

    partitions: int
    #: Key values at which a new partition starts (``partitions - 1`` of them, ascending).
    cuts: tuple[Any, ...]
    #: Rows per file, when partitions are cut into several files by row count; None when
    #: every partition is one file.
    rows_per_file: int | None
    #: When set, a row's partition is its key shifted right by this many bits (the
    #: balanced layout's group), found without comparing it to every cut point.
    key_shift: int | None = None


def shuffle_partitions(file_count: int, cores: int, input_bytes: int) -> int:
    """Partitions of the build's one shuffle: a few per core, more for big inputs, never
    more than the files wanted; one per file for up to 64 files.

    >>> shuffle_partitions(1000, 2, 10**8), shuffle_partitions(50, 2, 10**8)
    (8, 50)
    """
    if file_count <= ONE_FILE_PARTITIONS:
        return max(1, file_count)
    by_size = math.ceil(max(input_bytes, 0) / PARTITION_BYTES)
    return max(1, min(file_count, max(PARTITIONS_PER_CORE * max(cores, 1), by_size)))


def spread_files(sample_keys: Sequence[Any] | np.ndarray, rows: int, file_count: int,
           partitions: int) -> FileSpread:
    """Cut points that give partition ``j`` the files ``j*F//P .. (j+1)*F//P - 1``.

    ``sample_keys`` are the keys of a uniform sample of the input, in any order.

    >>> s = spread_files(list(range(100)), rows=1000, file_count=10, partitions=5)
    >>> s.cuts, s.rows_per_file
    ((20, 40, 60, 80), 100)
    >>> spread_files(list(range(100)), rows=1000, file_count=4, partitions=4).rows_per_file is None
    True
    """
    keys = sorted(sample_keys)
    rows_per_file = None if partitions >= file_count else max(1, math.ceil(rows / file_count))
    if not keys or partitions <= 1:
        return FileSpread(1 if not keys else partitions, (), rows_per_file)
    cuts = []
    for j in range(1, partitions):
        first_file = j * file_count // partitions
        cuts.append(keys[min(len(keys) - 1, first_file * len(keys) // file_count)])
    return FileSpread(partitions, tuple(cuts), rows_per_file)


def piece_spread(sample_keys: Sequence[Any], rows: int, file_count: int, cores: int,
                 input_bytes: int, table_partitions: int = 1,
                 file_per_partition: bool = False) -> FileSpread:
    """Like :func:`spread_files`, for rows that must come out in at most ``file_count``
    files (pending pieces count against the table's file budget).

    Every shuffle partition ends in a short file, and so does every table partition inside
    it (``table_partitions`` of them, ranges in the same order as the key), so files are cut
    a little longer: at most ``file_count`` files whatever the sample got wrong. Too few
    files to spare that slack, or ``file_per_partition`` (the table fixes its own rows per
    file): one file per partition.

    >>> s = piece_spread(list(range(1000)), rows=100_000, file_count=400, cores=2,
    ...                  input_bytes=10**8)
    >>> s.partitions, s.rows_per_file, s.partitions + 100_000 // s.rows_per_file <= 400
    (8, 256, True)
    >>> s = piece_spread(list(range(100)), 1000, file_count=20, cores=2, input_bytes=0,
    ...                  table_partitions=3)
    >>> s.partitions, s.rows_per_file
    (18, None)
    """
    table_partitions = max(1, table_partitions)
    partitions = shuffle_partitions(file_count, cores, input_bytes)
    short_files = partitions + table_partitions - 1
    if file_per_partition or file_count <= ONE_FILE_PARTITIONS or file_count < 2 * short_files:
        # A partition straddling two table partitions writes two files: one partition
        # fewer per table partition boundary.
        partitions = max(1, file_count - (table_partitions - 1))
        return spread_files(sample_keys, rows, partitions, partitions)
    spread = spread_files(sample_keys, rows, file_count, partitions)
    return replace(spread, rows_per_file=math.ceil(rows / (file_count - short_files)))


def owner_search(cuts: Sequence[Cut], at_or_above: Callable[[Cut], Test],
                 choose: Callable[[Test, Owner, Owner], Owner],
                 partition: Callable[[int], Owner]) -> Owner:
    """The expression that finds a row's shuffle partition: how many cut points sit at or
    below it, found by a binary search over the ascending cuts (a tree of ``choose(test,
    then, otherwise)`` over ``at_or_above(cut)`` tests, ``partition(j)`` at its leaves), so
    each row makes about log2(partitions) comparisons in generated code.

    >>> owner = owner_search([10, 20, 30], lambda cut: (lambda key: key >= cut),
    ...                      lambda test, then, otherwise: (
    ...                          lambda key: then(key) if test(key) else otherwise(key)),
    ...                      lambda j: (lambda key: j))
    >>> [owner(key) for key in (5, 10, 19, 20, 29, 30, 99)]
    [0, 1, 1, 2, 2, 3, 3]
    """
    def search(low: int, high: int) -> Owner:
        if low == high:
            return partition(low)
        # Partition ``middle`` starts at cut ``middle - 1``.
        middle = (low + high + 1) // 2
        return choose(at_or_above(cuts[middle - 1]), search(middle, high),
                      search(low, middle - 1))

    return search(0, len(cuts))
