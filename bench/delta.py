"""The outside reference: delta-rs (``deltalake``) Z-ordering the same rows.

delta-rs has no file-count knob, only ``target_size`` in bytes, and its files come out
smaller than the target (it measures bytes before compression); so the target is tuned
until the file count is within 10 % of the wanted one, each attempt on a fresh copy.
Reported time is that of the final ``z_order`` call alone.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

import pyarrow.dataset as ds


@dataclass
class DeltaBuild:
    path: Path
    files: list[str]
    rows: int
    zorder_seconds: float
    write_seconds: float
    target_size: int
    attempts: list[tuple[int, int, float]]  # (target_size, files, seconds) of every attempt


def _local(uri: str) -> str:
    return unquote(urlparse(uri).path) if uri.startswith("file:") else uri


def zorder_build(source_files: Sequence[str | Path], path: Path, columns: Sequence[str],
                 file_count: int, log: Callable[[str], None], max_attempts: int = 4) -> DeltaBuild:
    from deltalake import DeltaTable, write_deltalake

    table = ds.dataset([str(f) for f in source_files], format="parquet").to_table()
    target = 0
    attempts: list[tuple[int, int, float]] = []
    files: list[str] = []
    seconds = write_seconds = 0.0
    for attempt in range(max_attempts):
        shutil.rmtree(path, ignore_errors=True)
        started = time.monotonic()
        write_deltalake(str(path), table)
        write_seconds = time.monotonic() - started
        written = DeltaTable(str(path))
        if attempt == 0:
            total = sum(os.path.getsize(_local(u)) for u in written.file_uris())
            target = max(1, total // file_count)
        started = time.monotonic()
        written.optimize.z_order(list(columns), target_size=target)
        seconds = time.monotonic() - started
        files = [_local(u) for u in DeltaTable(str(path)).file_uris()]
        attempts.append((target, len(files), seconds))
        log(f"delta-rs z_order target_size={target}: {len(files)} files in {seconds:.1f}s")
        if abs(len(files) - file_count) <= 0.1 * file_count:
            break
        # Files scale about inversely with the target.
        target = max(1, round(target * len(files) / file_count))
    return DeltaBuild(path, sorted(files), table.num_rows, seconds, write_seconds,
                      attempts[-1][0], attempts)
