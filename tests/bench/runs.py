"""The benchmarks the suite checks (tests/bench), started as soon as the suite is collected
(by its first worker) and run beside the other tests: most of their time is
single-threaded (a JVM and dbt starting, one driver planning), so they fill the gaps the
other tests leave rather than adding their own ten minutes at the end."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
#: Per benchmark: the file it writes and its command (``{dir}``: its own folder).
COMMANDS = {
    "run": ("BENCHMARKS.md", ["bench.run", "--quick", "--one-process"]),
    "pipeline": ("pipeline.json", ["bench.pipeline", "--rows", "20000", "--variants",
                                   "uniform", "--runs", "1", "--base-files", "20",
                                   "--one-process"]),
    "balanced": ("balanced.json", ["bench.balanced", "--rows", "20000", "--files", "40",
                                   "--variants", "uniform", "--probes", "100",
                                   "--one-process", "--img-dir", "{dir}/img"]),
    "keys": ("keys.json", ["bench.keys", "--rows", "5000", "--repeat", "1"]),
    "sort_series": ("sort-series.json", ["bench.sort_series", "--sizes", "20000:4",
                                         "--formats", "parquet"]),
    "sort_series_one_process": ("sort-series.json", [
        "bench.sort_series", "--sizes", "20000:4", "--formats", "delta", "--one-process"]),
}


@dataclass
class BenchRun:
    """A benchmark started in a process of its own, which writes its exit status to
    ``status`` when it ends: a test in any worker of the suite can wait for it."""

    name: str
    folder: Path
    out: Path

    @property
    def log(self) -> Path:
        return self.folder / "log.txt"

    @property
    def status(self) -> Path:
        return self.folder / "status"

    def wait(self) -> Path:
        deadline = time.monotonic() + 2400
        while not self.status.exists():
            assert time.monotonic() < deadline, f"benchmark {self.name} still running"
            time.sleep(1)
        tail = "\n".join(self.log.read_text(errors="replace").splitlines()[-40:])
        assert self.status.read_text().strip() == "0", tail
        return self.out


#: Where tests/conftest.py keeps the folder of this suite's benchmark runs.
BENCH_ROOT = pytest.StashKey[Path]()
#: The benchmark processes this test process started (to stop them when interrupted).
BENCH_PROCESSES = pytest.StashKey[list[subprocess.Popen[bytes]]]()


def bench_runs(root: Path) -> dict[str, BenchRun]:
    """The runs under ``root``, started by whichever test process started them."""
    return {name: BenchRun(name, root / name, root / name / out_name)
            for name, (out_name, _) in COMMANDS.items()}


def start_bench_runs(root: Path) -> list[subprocess.Popen[bytes]]:
    """Every benchmark at once, each on its own small table and metastore under ``root``;
    a shell around each writes its exit status."""
    env = {**os.environ, "ZSPARK_DRIVER_MEMORY": "2g", "PYSPARK_PYTHON": sys.executable}
    processes = []
    for name, run in bench_runs(root).items():
        run.folder.mkdir(parents=True)
        _, args = COMMANDS[name]
        session = [] if name == "keys" else ["--session-dir", str(run.folder / "session")]
        command = [sys.executable, "-m", *(a.format(dir=run.folder) for a in args), *session,
                   "--out", str(run.out)]
        with run.log.open("wb") as sink:
            processes.append(subprocess.Popen(
                ["sh", "-c", '"$@"; echo $? > "$0"', str(run.status), *command],
                cwd=REPO, env=env, stdout=sink, stderr=subprocess.STDOUT,
                start_new_session=True))
    return processes
