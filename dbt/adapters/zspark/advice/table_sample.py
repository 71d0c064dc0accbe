"""The rows an advice scores its candidates on, read from a bounded share of a table.

An incremental ``cluster_by='auto'`` run asks for advice at every run; a sample drawn
from every row would read the whole table each time (100 M rows in 10,000 files: every
file opened, its candidate columns decoded). A Parquet table of more than
:data:`SAMPLE_FILES` files is sampled from that many of its files instead, rows drawn at
random within them: Spark opens only the files named (``_metadata.file_path``).

The files are the first in an order of their paths' hashes, not a draw: the same table
gives the same sample at every run (an unchanged workload must never see its choice
move), and an append only adds the new files that hash into the first ones. Many files
with a few rows each, rather than a few whole files, keep the sample spread over the
table as its files are (each file of a clustered table holds a narrow box of values).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence

from dbt.adapters.zspark.core.sql_text import sql_string

#: Files of a Parquet table an advice's sample reads at most.
SAMPLE_FILES = 1_024
#: The random draw under which a sampled file's rows are kept (seeded: the same rows at
#: every run of an unchanged table).
SAMPLE_SEED = 17


def sampled_files(paths: Sequence[str], limit: int | None = None) -> list[str]:
    """At most ``limit`` (:data:`SAMPLE_FILES`) of ``paths``: all of them when they fit,
    else the first in the order of their hashes (a choice that stays when the table does).

    >>> sampled_files(["a", "b"], 4)
    ['a', 'b']
    >>> len(sampled_files([f"f{i}" for i in range(10)], 3))
    3
    >>> sampled_files([f"f{i}" for i in range(10)], 3) == \\
    ...     sampled_files([f"f{i}" for i in reversed(range(10))], 3)
    True
    """
    limit = SAMPLE_FILES if limit is None else limit
    if len(paths) <= limit:
        return sorted(paths)
    return sorted(sorted(paths, key=_path_hash)[:limit])


def _path_hash(path: str) -> bytes:
    return hashlib.blake2b(path.encode(), digest_size=8).digest()


def files_filter(paths: Sequence[str] | None) -> str:
    """The ``where`` condition that has Spark open only ``paths`` (None: every file)."""
    if paths is None:
        return "true"
    return f"_metadata.file_path in ({', '.join(sql_string(p) for p in paths)})"


def count_sql(table: str, paths: Sequence[str] | None) -> str:
    """The rows of ``paths`` of ``table`` (every file for None)."""
    return f"select count(*) from {table} where {files_filter(paths)}"


def sample_sql(table: str, inputs: Mapping[str, str], paths: Sequence[str] | None,
               rows: int, wanted: int) -> str:
    """About ``wanted`` of the ``rows`` rows of ``paths`` of ``table`` (every file for
    None), drawn at random; ``inputs``: each column's value as the key reads it, by name.
    """
    fraction = min(1.0, wanted / max(rows, 1))
    selected = ", ".join(f"{value} as {name}" for name, value in inputs.items())
    return (f"select {selected} from {table} where {files_filter(paths)} "
            f"and rand({SAMPLE_SEED}) < {fraction!r}")


#: Table properties under which a data file holds rows the table no longer has (deletion
#: vectors, merge-on-read deletes) or names its columns otherwise (Delta's column mapping).
_FILES_NOT_ROWS = {"delta.enableDeletionVectors": ("true",),
                   "delta.columnMapping.mode": ("name", "id"),
                   "write.delete.mode": ("merge-on-read",),
                   "write.update.mode": ("merge-on-read",),
                   "write.merge.mode": ("merge-on-read",)}


def data_files_source(properties: Mapping[str, str], paths: Sequence[str]) -> str | None:
    """A scan of a Delta or Iceberg table's data files (``paths``) that opens only those a
    ``_metadata.file_path`` filter names: the files read as Parquet under their common
    folder. None where a file's rows are not the table's rows (see ``_FILES_NOT_ROWS``).

    >>> data_files_source({}, ["s3a://b/t/p=1/a.parquet", "s3a://b/t/p=2/b.parquet"])
    'parquet.`s3a://b/t/`'
    >>> data_files_source({"delta.enableDeletionVectors": "true"}, ["s3a://b/t/a.parquet"])
    """
    if not paths or any(str(properties.get(key, "")).lower() in values
                        for key, values in _FILES_NOT_ROWS.items()):
        return None
    # The common prefix of all is that of the least and the greatest (as strings; not
    # os.path's, which folds the "//" of a URI).
    first, last = min(paths), max(paths)
    shared = next((i for i, (a, b) in enumerate(zip(first, last, strict=False)) if a != b),
                  min(len(first), len(last)))
    folder = first[:shared].rsplit("/", 1)[0] + "/"
    if "://" not in folder and not folder.startswith("/") and ":/" not in folder:
        return None
    return f"parquet.`{folder.replace('`', '``')}`"
