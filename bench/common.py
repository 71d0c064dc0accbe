"""Shared pieces of the benchmark: paths, the Python Spark session, dbt calls, progress."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

REPO = Path(__file__).resolve().parent.parent
#: Where each benchmark writes its figures (BENCHMARKS.md is drawn from them).
RESULTS = REPO / "bench" / "results"
PROJECT_DIR = REPO / "integration_tests"
DEFAULT_SESSION_DIR = PROJECT_DIR / ".zspark"
SOURCE_SCHEMA = "ssb"
SOURCE_TABLE = "lineorder_flat"
TARGET_SCHEMA = "zspark_it"
CLUSTER_COLUMNS = ("s_city", "c_city", "p_brand")
# Seed 002's four layouts, plus Z-order keyed on the values' own bits (curve_method='direct'),
# the "Interleaved Index" the seed argues against before introducing boundaries.
LAYOUTS = ("random", "linear", "z_direct", "z", "hilbert")
# Seed 002's three point queries use these literals.
SEED_LITERALS = {"s_city": "UNITED KI143", "c_city": "UNITED KI158", "p_brand": "MFGR#053072348"}
# Seed 002's published skip ratios (%), per layout and column.
SEED_SKIP = {
    "random": {"s_city": 0.0, "c_city": 0.0, "p_brand": 0.0},
    "linear": {"s_city": 99.9, "c_city": 0.0, "p_brand": 0.0},
    "z": {"s_city": 81.4, "c_city": 83.6, "p_brand": 86.5},
    "hilbert": {"s_city": 85.5, "c_city": 86.9, "p_brand": 88.3},
}
SEED_ROWS = 533_363_833
#: The pipeline benchmarks' shape (``bench.pipeline``, ``bench.format_pipeline``): a base of
#: this share of the orders, then ``RUNS`` appends of ``STEP_SHARE`` each.
BASE_SHARE, STEP_SHARE, RUNS, BASE_FILES = 0.5, 0.05, 10, 500
SEED_FILES = 1000


def model_name(layout: str) -> str:
    return f"lineorder_{layout}"


def seed_query(table: str, column: str, value: str | None = None) -> str:
    """Seed 002's query text for one filter column, over ``table`` (a name or a subquery)."""
    literal = SEED_LITERALS[column] if value is None else value
    return (
        f"select {column}, d_year, sum(lo_revenue) as lo_revenue from {table} "
        f"where {column} = '{literal}' group by {column}, d_year "
        f"order by d_year asc, lo_revenue desc"
    )


class Progress:
    """One line per step, prefixed with the time since the run started."""

    def __init__(self) -> None:
        self.start = time.monotonic()

    def __call__(self, message: str) -> None:
        print(f"[{time.monotonic() - self.start:7.1f}s] {message}", flush=True)


def write_format_project(root: Path, name: str, session_dir: Path, schema: str,
                         table_format: str | None, models: dict[str, str],
                         settings: dict[str, str] | None = None) -> None:
    """A dbt project ``name`` whose profile is an embedded session writing
    ``table_format`` (None: ``settings`` enable a format themselves; its driver memory from
    ``ZSPARK_DRIVER_MEMORY``, 6g by default, and ``settings``), with a warm-up model that
    reads the source table once and ``models`` (file name under models/ -> text,
    dedented)."""
    driver_memory = os.environ.get("ZSPARK_DRIVER_MEMORY", "6g")
    more = "".join(f"\n                    {key}: {value}"
                   for key, value in (settings or {}).items())
    files = {
        "dbt_project.yml": f"""
            name: {name}
            version: "1.0"
            config-version: 2
            profile: {name}
            flags:
              send_anonymous_usage_stats: false
        """,
        "profiles.yml": f"""
            {name}:
              target: dev
              outputs:
                dev:
                  type: zspark
                  method: session
                  schema: {schema}
                  session_dir: {session_dir}
                  {f"table_format: {table_format}" if table_format else ""}
                  server_side_parameters:
                    spark.driver.memory: {driver_memory}{more}
        """,
        "models/warmup.sql": f"""
            {{{{ config(materialized='table') }}}}
            select count(*) as n, sum(lo_revenue) as revenue from {SOURCE_SCHEMA}.{SOURCE_TABLE}
        """,
        **{f"models/{file}": text for file, text in models.items()}}
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())


def session_env(session_dir: Path) -> dict[str, str]:
    """Environment for dbt and Spark subprocesses: the project's profile reads these."""
    env = dict(os.environ)
    env["ZSPARK_SESSION_DIR"] = str(session_dir)
    env["ZSPARK_SCHEMA"] = TARGET_SCHEMA
    env.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    # Python UDF workers must run this interpreter (the venv), not `python3` from PATH.
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    env.setdefault("DBT_SEND_ANONYMOUS_USAGE_STATS", "false")
    # dbt's artifacts and logs beside the session, so benchmarks on different session
    # dirs can run at once without reading each other's run_results.json.
    env["DBT_TARGET_PATH"] = str(dbt_target(session_dir))
    env["DBT_LOG_PATH"] = str(dbt_target(session_dir) / "logs")
    # One file, never rolled over: a run's debug lines are read back from where it began.
    env["DBT_LOG_FILE_MAX_BYTES"] = "0"
    return env


def dbt_target(session_dir: Path) -> Path:
    """dbt's target directory (run_results.json, compiled SQL) for a session dir."""
    return session_dir / "dbt-target"


def spark_session(session_dir: Path, app: str = "zspark-bench",
                  metastore: bool = True) -> SparkSession:
    """A Python Spark session on the same warehouse and metastore as the dbt profile.

    Derby lets one process hold the metastore at a time: call this only while no dbt
    process runs, and never in a process that must hand the metastore back (use a
    subprocess instead). ``metastore=False`` leaves the catalog out: such a session reads
    tables by path and runs beside a process that holds the metastore.
    """
    os.environ.update({k: v for k, v in session_env(session_dir).items()
                       if k in ("SPARK_LOCAL_IP", "PYSPARK_PYTHON")})
    from pyspark.sql import SparkSession

    from dbt.adapters.zspark.connections import session_defaults

    builder = SparkSession.builder.appName(app).master("local[2]")
    if metastore:
        builder = builder.enableHiveSupport()
    for key, value in session_defaults(str(session_dir)).items():
        builder = builder.config(key, value)
    builder = builder.config("spark.driver.memory", os.environ.get("ZSPARK_DRIVER_MEMORY", "6g"))
    return builder.getOrCreate()


@contextmanager
def query_session(session_dir: Path, app: str, layouts: Iterable[str]) -> Iterator[SparkSession]:
    """A Python Spark session for timing queries, stopped on exit. One full pass over every
    layout's table first: JIT and page cache then favour none of them."""
    spark = spark_session(session_dir, app)
    spark.sparkContext.setLogLevel("ERROR")
    try:
        for layout in layouts:
            spark.sql(f"select count(*), sum(lo_revenue) from {TARGET_SCHEMA}."
                      f"{model_name(layout)}").collect()
        yield spark
    finally:
        spark.stop()


def table_dir(session_dir: Path, schema: str, table: str) -> Path:
    """A table's folder in the session's warehouse: the version a zspark build wrote last
    (each in a folder of its own under ``<table>__zspark_versions``), or a managed
    table's own folder."""
    folder = session_dir / "warehouse" / f"{schema}.db"
    versions = sorted((folder / f"{table}__zspark_versions").glob("*"))
    return versions[-1] if versions else folder / table


def data_files(directory: Path) -> list[Path]:
    """The Parquet data files of a table directory (Spark's markers and hidden files left out)."""
    return sorted(
        p for p in directory.rglob("*.parquet")
        if not any(part.startswith(("_", ".")) for part in p.relative_to(directory).parts)
    )


class PeakMemory:
    """Peak resident memory of a process and its descendants (dbt, its JVM, the JVM's
    Python workers), from each process's own high-water mark (VmHWM) polled in /proc.

    Processes the JVM forks to run a command (Hadoop's ``chmod`` on a local disk) share
    its pages for a moment and would count it twice: they are left out.
    """

    TRANSIENT = ("chmod", "jspawnhelper", "sh", "bash")

    def __init__(self, pid: int, every: float = 0.25) -> None:
        self.pid, self.every = pid, every
        self._peaks: dict[int, tuple[str, int]] = {}
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()

    @property
    def tree_bytes(self) -> int:
        """The sum of every process's own peak (they need not peak at once: an upper bound)."""
        return sum(peak for _, peak in self._peaks.values())

    @property
    def root_bytes(self) -> int:
        """The peak of the process itself (dbt's Python, without its JVM and workers)."""
        return self._peaks.get(self.pid, ("", 0))[1]

    @property
    def jvm_bytes(self) -> int:
        """The Spark driver's peak (in local mode the executors live in the same JVM)."""
        return max((peak for name, peak in self._peaks.values() if name == "java"), default=0)

    def stop(self) -> None:
        self._done.set()
        self._thread.join()

    def _poll(self) -> None:
        while not self._done.is_set():
            parents: dict[int, int] = {}
            names: dict[int, str] = {}
            for entry in Path("/proc").iterdir():
                if not entry.name.isdigit():
                    continue
                try:
                    stat = (entry / "stat").read_text()
                except OSError:
                    continue
                # The command name is parenthesised and may hold spaces.
                pid = int(entry.name)
                names[pid] = stat[stat.index("(") + 1:stat.rindex(")")]
                parents[pid] = int(stat[stat.rindex(")") + 2:].split()[1])
            tree = {self.pid}
            grew = True
            while grew:
                found = {pid for pid, parent in parents.items() if parent in tree} - tree
                tree |= found
                grew = bool(found)
            for pid in tree:
                name = names.get(pid, "")
                if name in self.TRANSIENT or (name == "java" and
                                              names.get(parents.get(pid, 0)) == "java"):
                    continue
                peak = _high_water_mark(pid)
                if peak:
                    self._peaks[pid] = (name, max(peak, self._peaks.get(pid, ("", 0))[1]))
            self._done.wait(self.every)


def _high_water_mark(pid: int) -> int:
    """Peak resident bytes of a live process (0 once it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


#: Set by a benchmark's ``--one-process``: its dbt commands run in this process (dbtRunner),
#: their Spark session kept from one to the next. The suite's checks of the benchmarks
#: start one JVM instead of one per command; build times then share a warm JVM and no
#: peak memory is measured.
DBT_IN_THIS_PROCESS = False


def _dbt_here(runner: Sequence[str], dbt_args: list[str],
              environment: dict[str, str]) -> tuple[int, str]:
    """A dbt command (or bench.rebuild's two) run by dbtRunner in this process: its return
    code as the CLI's and its console output."""
    from dbt.cli.main import dbtRunner
    from dbt_common.events.functions import capture_stdout_logs, stop_capture_stdout_logs

    from bench.rebuild import MARK, build_twice

    os.environ.update(environment)  # the profile and dbt's target and log paths read them
    console = io.StringIO()
    capture_stdout_logs(console)
    try:
        if runner[0] == "bench.rebuild":
            try:
                seconds = build_twice(runner[1], dbt_args)
            except RuntimeError as failed:
                return 2, console.getvalue() + str(failed)
            return 0, console.getvalue() + MARK + json.dumps({"seconds": seconds}) + "\n"
        result = dbtRunner().invoke(dbt_args)
    finally:
        stop_capture_stdout_logs()
    code = 0 if result.success else 2 if result.exception is not None else 1
    return code, console.getvalue()


def _echo(line: str) -> None:
    """Echo dbt's own per-node start and result lines and the adapter's summaries."""
    if any(tag in line for tag in (" START ", " OK ", " PASS ", " FAIL ", " ERROR ",
                                   "zspark", "skip_coverage", "Completed", "Done.")):
        print("           " + line.strip(), flush=True)


def run_dbt(args: Sequence[str], session_dir: Path, log: Progress,
            variables: dict[str, Any] | None = None, check: bool = True,
            lines: list[str] | None = None, memory: dict[str, int] | None = None,
            env: dict[str, str] | None = None,
            runner: Sequence[str] = ("dbt.cli.main",)) -> float:
    """Run the dbt CLI in the integration project as a subprocess; returns its wall time.

    With ``check=False`` a failing run (e.g. a failed test) is logged, not raised. The
    output's lines are appended to ``lines`` when given; ``memory`` gets the peak resident
    bytes of the dbt process tree and of its JVM. ``env`` adds to the profile's variables.
    ``runner`` is the module (and its leading arguments) given dbt's arguments, e.g.
    ``("bench.rebuild", model)``.

    A subprocess (not dbtRunner) so that its embedded Spark, and with it the derby
    metastore lock, is gone when it returns; in this process under
    :data:`DBT_IN_THIS_PROCESS`.
    """
    command = [sys.executable, "-m", *runner, *args,
               "--project-dir", str(PROJECT_DIR), "--profiles-dir", str(PROJECT_DIR)]
    if variables:
        command += ["--vars", json.dumps(variables)]
    log("dbt " + " ".join(args) + (f" --vars '{json.dumps(variables)}'" if variables else ""))
    started = time.monotonic()
    environment = {**session_env(session_dir), **(env or {})}
    debug_log = Path(environment["DBT_LOG_PATH"]) / "dbt.log"
    log_start = debug_log.stat().st_size if debug_log.exists() else 0
    if DBT_IN_THIS_PROCESS:
        returncode, output = _dbt_here(runner, command[2 + len(runner):], environment)
    else:
        # The repository on the path: a runner may be one of the benchmark's own modules.
        path = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
        process = subprocess.Popen(command, cwd=PROJECT_DIR,
                                   env={**environment, "PYTHONPATH": path},
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        peak = PeakMemory(process.pid)
        streamed = []
        assert process.stdout is not None
        for line in process.stdout:  # shown as it comes: a long run shows its progress
            streamed.append(line)
            _echo(line)
        process.wait()
        output = "".join(streamed)
        peak.stop()
        returncode = process.returncode
        if memory is not None:
            memory.update(tree_bytes=peak.tree_bytes, jvm_bytes=peak.jvm_bytes,
                          python_bytes=peak.root_bytes)
    elapsed = time.monotonic() - started
    if lines is not None:
        lines.extend(output.splitlines())
        lines.extend(adapter_debug_lines(debug_log, log_start))
    if DBT_IN_THIS_PROCESS:
        for line in output.splitlines():
            _echo(line)
    if returncode != 0 and check:
        tail = "\n".join(output.splitlines()[-60:])
        raise RuntimeError(f"dbt {' '.join(args)} failed (exit {returncode}):\n{tail}")
    status = "done" if returncode == 0 else f"exited {returncode}"
    log(f"dbt {args[0]} {status} in {elapsed:.1f}s")
    return elapsed


def adapter_debug_lines(debug_log: Path, start: int) -> list[str]:
    """The adapter's detail lines (step seconds, layout figures) a run wrote to dbt's
    debug log from byte ``start`` on: its console shows one short line per model."""
    if not debug_log.exists():
        return []
    with debug_log.open("rb") as log:
        log.seek(start)
        text = log.read().decode(errors="replace")
    return [line for line in text.splitlines() if "[debug]" in line and "zspark" in line]


def run_results(session_dir: Path) -> dict[str, Any]:
    """The run_results.json of the last dbt command on ``session_dir``."""
    path = dbt_target(session_dir) / "run_results.json"
    return dict(json.loads(path.read_text()))


def model_times(session_dir: Path) -> dict[str, float]:
    """Seconds dbt spent on each model of the last run (``execution_time``)."""
    times = {}
    for result in run_results(session_dir)["results"]:
        unique_id = str(result["unique_id"])
        if unique_id.startswith("model."):
            times[unique_id.rsplit(".", 1)[-1]] = float(result["execution_time"])
    return times


def default_min_skip(files: int) -> float:
    """skip_coverage threshold for a file count: seed 002's 0.8 needs ~1000 files.

    A point query on one of 3 clustering columns can at best skip about 1 - F^(-1/3)
    of F files (0.9 at 1000, 0.78 at 100, 0.63 at 20); real layouts get 5-15 points less.
    """
    if files >= 1000:
        return 0.8
    if files >= 100:
        return 0.6
    return 0.4


def run_module(command: Sequence[str], session_dir: Path) -> subprocess.CompletedProcess[str]:
    """``python -m command...`` in its own process with the session's environment (its
    Spark then releases the metastore on exit); the output's tail in the error if it fails."""
    result = subprocess.run([sys.executable, "-m", *command], cwd=REPO,
                            env=session_env(session_dir), capture_output=True, text=True,
                            check=False)
    if result.returncode != 0:
        tail = "\n".join((result.stdout + result.stderr).splitlines()[-40:])
        raise RuntimeError(f"{command[0]} failed (exit {result.returncode}):\n{tail}")
    return result


def generate_in_subprocess(rows: int, variant: str, session_dir: Path, log: Progress,
                           reuse: bool = True, seed: int = 2) -> float:
    """Run bench.generate in its own process, so its Spark releases the metastore on exit."""
    command = ["bench.generate", "--rows", str(rows), "--variant", variant,
               "--seed", str(seed), "--session-dir", str(session_dir)]
    if reuse:
        command.append("--reuse")
    log(f"generating {rows} rows ({variant}) in {session_dir}")
    started = time.monotonic()
    result = run_module(command, session_dir)
    elapsed = time.monotonic() - started
    kept = "kept the existing table" in result.stdout
    log(f"source table {'kept (same settings)' if kept else 'written'} in {elapsed:.1f}s")
    return elapsed


def layout_files(session_dir: Path, layout: str) -> list[Path]:
    return data_files(table_dir(session_dir, TARGET_SCHEMA, model_name(layout)))


def source_files(session_dir: Path) -> list[Path]:
    return data_files(table_dir(session_dir, SOURCE_SCHEMA, SOURCE_TABLE))
