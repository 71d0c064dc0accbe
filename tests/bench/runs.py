"""The benchmarks the suite checks (tests/bench), started as soon as the suite is collected
and run beside the other tests: most of their time is single-threaded (a JVM and dbt
starting, one driver planning), so on two cores they fill the gaps the other tests leave
rather than adding their own ten minutes at the end."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
#: Per benchmark: the file it writes and its command (``{dir}``: its own folder).
COMMANDS = {
    "run": ("BENCHMARKS.md", ["bench.run", "--quick"]),
    "pipeline": ("pipeline.json", ["bench.pipeline", "--rows", "20000", "--variants",
                                   "uniform", "--runs", "1", "--base-files", "20"]),
    "balanced": ("balanced.json", ["bench.balanced", "--rows", "20000", "--files", "40",
                                   "--variants", "uniform", "--probes", "100",
                                   "--one-process", "--img-dir", "{dir}/img"]),
    "keys": ("keys.json", ["bench.keys", "--rows", "5000", "--repeat", "1"]),
}


@dataclass
class BenchRun:
    """A benchmark started in its own process; ``wait`` gives its output file."""

    process: subprocess.Popen[bytes]
    log: Path
    out: Path

    def wait(self) -> Path:
        self.process.wait(timeout=2400)
        tail = "\n".join(self.log.read_text(errors="replace").splitlines()[-40:])
        assert self.process.returncode == 0, tail
        return self.out

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


#: Where tests/conftest.py keeps the runs it started, for tests/bench.
BENCH_RUNS = pytest.StashKey[dict[str, BenchRun]]()


def start_bench_runs(root: Path) -> dict[str, BenchRun]:
    """Every benchmark at once, each on its own small table and metastore under ``root``."""
    env = {**os.environ, "ZSPARK_DRIVER_MEMORY": "2g", "PYSPARK_PYTHON": sys.executable}
    runs = {}
    for name, (out_name, args) in COMMANDS.items():
        folder = root / name
        folder.mkdir(parents=True)
        session = [] if name == "keys" else ["--session-dir", str(folder / "session")]
        log = folder / "log.txt"
        with log.open("wb") as sink:
            process = subprocess.Popen(
                [sys.executable, "-m", *(a.format(dir=folder) for a in args), *session,
                 "--out", str(folder / out_name)],
                cwd=REPO, env=env, stdout=sink, stderr=subprocess.STDOUT)
        runs[name] = BenchRun(process, log, folder / out_name)
    return runs
