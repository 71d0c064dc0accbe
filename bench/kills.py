"""Random SIGKILLs of a clustered incremental model's runs, each followed by the next.

A soak of the crash-safe write protocols (``swap.py``, ``table_versions.py``): round
after round, one of an append, a merge, a full re-clustering or a full refresh of a
clustered incremental model is started as its own `dbt` process and killed with SIGKILL
(its Spark driver with it) at a random moment, or left to finish; the next round's run
repairs what it left first. Every few rounds, and at the end, a plain `dbt build` checks
the rows against the source (count and checksum), the index against the table's files
and `zspark_scan` against the plain filter. Prints, per round, what ran, when it was
killed, the last step it logged and what the next run repaired.

    python -m bench.kills --rounds 20            # an embedded session
    python -m bench.kills --rounds 20 --thrift   # a local Spark Thrift Server
    python -m bench.kills --rounds 20 --strategy insert_overwrite   # overwrites, not appends
    python -m bench.kills --rounds 10 --format delta --strategy table   # Delta rebuilds
    python -m bench.kills --rounds 12 --s3 --kill-window 30 100   # the warehouse on S3
    python -m bench.kills --s3 --every-step      # a kill at each named step, on S3

The test suite runs the same project with a kill at each named step
(``tests/functional/test_kills.py``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from bench.common import RESULTS, Progress
from dbt.adapters.zspark.core.stop_points import WRITE_GATE
from dbt.adapters.zspark.reach.session import jvm_jar
from dbt.adapters.zspark.reach.session.object_stores import s3a_jars, s3a_settings, with_jars
from tests.harness.dbt_launcher import Launched, launcher
from tests.harness.servers import BUCKET, S3_KEYS, own_metastore, s3_server, thrift_server

SCHEMA = "zspark_kill"
MODEL = "killed"
#: What the run after a kill at each step repairs: the versions' names (and an append's
#: batch), or only the index (when it is read: incremental runs); nothing once the
#: index is written.
REPAIRED_NAMES = {"build:written", "swap:begin", "swap:previous_renamed",
                  "swap:next_renamed", "rewrite:written", "rewrite:checked",
                  "append:written", "append:publishing", "overwrite:written",
                  "overwrite:set_aside", "overwrite:publishing", "recluster:publishing",
                  "recluster:deleting"}
ROWS = "select id, cast(id % 13 as int) as a, concat('s', cast(id % 37 as string)) as s"

MODELS = {
    "append": f"""
        {{{{ config(materialized='incremental', incremental_strategy='append',
                    file_format='FILE_FORMAT', hilbert_by=['a', 's'], file_count=6,
                    zspark_recluster=var('recluster', true),
                    zspark_recluster_runs=var('recluster_runs', 4)) }}}}
        {ROWS} from range(0, {{{{ var('stop') }}}})
        {{% if is_incremental() %}}
          where id > (select coalesce(max(id), -1) from {{{{ this }}}})
        {{% endif %}}
    """,
    # Each run rewrites the last partition it finds and adds the new ones.
    "insert_overwrite": f"""
        {{{{ config(materialized='incremental', incremental_strategy='insert_overwrite',
                    file_format='FILE_FORMAT', partition_by=['b'], hilbert_by=['a', 's'],
                    file_count=6) }}}}
        {ROWS}, cast(id div 1000 as int) as b from range(0, {{{{ var('stop') }}}})
        {{% if is_incremental() %}}
          where id >= (select coalesce(max(b), 0) * 1000 from {{{{ this }}}})
        {{% endif %}}
    """,
    # Each run rebuilds the table (of ``file_format``: Delta and Iceberg replace it in one
    # commit of the format); enough files that its write takes several waves of tasks.
    "table": f"""
        {{{{ config(materialized='table', file_format='FILE_FORMAT',
                    hilbert_by=['a', 's'], file_count=12) }}}}
        {ROWS} from range(0, {{{{ var('stop') }}}})
    """,
}

INDEX_TEST = "tests/index_lists_the_files.sql"
FILES = {
    "dbt_project.yml": """
        name: zspark_kills
        version: "1.0"
        config-version: 2
        profile: zspark_kills
        flags:
          send_anonymous_usage_stats: false
    """,
    "tests/rows_exact.sql": f"""
        select * from
          (select count(*) as c, coalesce(sum(hash(id, a, s)), 0) as h
           from {{{{ ref('{MODEL}') }}}}) t
          cross join
          (select count(*) as c, coalesce(sum(hash(id, a, s)), 0) as h
           from ({ROWS} from range(0, {{{{ var('stop') }}}}))) e
        where t.c != e.c or t.h != e.h
    """,
    # The files holding rows, as the index and as Spark's scan list them (a file of no
    # rows, such as the empty first task of an append landed as written, has no row
    # for `_metadata` to name).
    INDEX_TEST: f"""
        with i as (select file_path from {{{{ ref('{MODEL}') }}}}__zindex
                   where row_group is null and row_count > 0),
             f as (select distinct _metadata.file_path as file_path
                   from {{{{ ref('{MODEL}') }}}})
        select * from i full outer join f on i.file_path = f.file_path
        where i.file_path is null or f.file_path is null
    """,
    "tests/scan_equals_filter.sql": f"""
        select * from
          (select count(*) as c, coalesce(sum(hash(id)), 0) as h
           from {{{{ zspark_scan(ref('{MODEL}'), "a = 3 and s >= 's2'") }}}} z) z
          cross join
          (select count(*) as c, coalesce(sum(hash(id)), 0) as h
           from {{{{ ref('{MODEL}') }}}} where a = 3 and s >= 's2') p
        where z.c != p.c or z.h != p.h
    """,
}


class WriteGate:
    """A folder through which a test holds a run's Spark write at its first data file
    (``stop_points.py``), to kill it there whatever the machine's load. A run's JVM reads
    :attr:`environment` when it starts; the gate is closed before a command and opened
    once it is killed."""

    def __init__(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.folder = folder
        self.environment = {WRITE_GATE: str(folder)}

    def close(self) -> None:
        """The next data file created is held, its path written to ``held``."""
        _expect(jvm_jar.ensure_jar() is not None,
                f"holding a write needs zspark's file system: {jvm_jar.MISSING}")
        (self.folder / "held").unlink(missing_ok=True)
        (self.folder / "hold").touch()

    def kill_when_held(self, group: int, running: Callable[[], bool],
                       timeout: float = 600) -> Path | None:
        """Process group ``group`` killed (SIGKILL) once its write is held, or once it
        ended or ``timeout`` passed; the gate opened. The held data file (None if none)."""
        marker = self.folder / "held"
        try:
            self.wait_until_held(running, timeout)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(group, signal.SIGKILL)
            return Path(marker.read_text()) if marker.exists() else None
        finally:
            self.open()
            marker.unlink(missing_ok=True)

    def wait_until_held(self, running: Callable[[], bool],
                        timeout: float = 600) -> Path | None:
        """The data file a write is held at, once held (None: the run ended first, or
        ``timeout`` passed)."""
        marker = self.folder / "held"
        deadline = time.monotonic() + timeout
        while not marker.exists() and running() and time.monotonic() < deadline:
            time.sleep(0.02)
        return Path(marker.read_text()) if marker.exists() else None

    def open(self) -> None:
        """A held write goes on; later ones are not held."""
        (self.folder / "hold").unlink(missing_ok=True)


def _expect(holds: bool, problem: str) -> None:
    if not holds:
        raise AssertionError(problem)


class KilledProject:
    """The killed model's dbt project: an embedded session of its own (its own metastore:
    a session's Derby metastore admits one process at a time), a Thrift server
    (``thrift_port``) or a Spark Connect server (``connect_port``).
    ``strategy``: the model appends (re-clustering as its policy says), or overwrites the
    partitions its rows fall in (in a schema of its own, so both share a server).
    ``schema``: another schema (other projects on the same server). ``file_format``:
    the table model's format (``strategy`` table), its session set up by ``table_format``
    (the format's own statistics are its index: no index test). ``settings``: more of
    the session's Spark settings (a warehouse on S3: :func:`s3_warehouse`)."""

    def __init__(self, root: Path, thrift_port: int | None = None,
                 strategy: str = "append", schema: str | None = None,
                 file_format: str = "parquet",
                 settings: dict[str, str] | None = None,
                 connect_port: int | None = None) -> None:
        self.root = root
        self.stop = 0
        self.last_kill = ""
        self.file_format = file_format
        self.strategy = strategy
        self.schema = schema or (SCHEMA if strategy == "append" else f"{SCHEMA}_{strategy}")
        self.warehouse = root / "session" / "warehouse" / f"{self.schema}.db"
        files = {**FILES, f"models/{MODEL}.sql":
                 MODELS[strategy].replace("FILE_FORMAT", file_format)}
        if file_format != "parquet":
            del files[INDEX_TEST]
        self.tests = len(files) - 2  # besides dbt_project.yml and the model
        for relative, text in files.items():
            path = root / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(textwrap.dedent(text).lstrip())
        table_format = [] if file_format == "parquet" else [f"table_format: {file_format}"]
        connection = (["method: thrift", "host: 127.0.0.1", f"port: {thrift_port}",
                       "user: dbt"] if thrift_port else
                      ["method: connect", f"host: sc://127.0.0.1:{connect_port}"]
                      if connect_port else
                      ["method: session", f"session_dir: {root / 'session'}", *table_format,
                       "server_side_parameters:", '  spark.master: "local[2]"',
                       '  spark.sql.shuffle.partitions: "4"', "  spark.driver.memory: 1g",
                       *(f"  {key}: {json.dumps(value)}"
                         for key, value in (settings or {}).items())])
        profile = ["zspark_kills:", "  target: dev", "  outputs:", "    dev:",
                   "      type: zspark", f"      schema: {self.schema}",
                   *(f"      {line}" for line in connection)]
        (root / "profiles.yml").write_text("\n".join(profile) + "\n")

    def start(self, *args: str, **environment: str) -> Launched:
        """A dbt process leading its own process group (its Spark driver is in it), with
        ``environment`` added to this one's; forked by the launcher (``dbt_launcher.py``),
        which imported dbt once."""
        env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1",
               **environment}
        return launcher().start([*args, "--project-dir", str(self.root),
                                 "--profiles-dir", str(self.root)], self.root, env)

    def dbt(self, *args: str, stop_at: str = "", kill_after: float | None = None,
            ) -> subprocess.CompletedProcess[str]:
        """A dbt process run to its end, or killed with its group after ``kill_after``
        seconds or at the step ``stop_at``."""
        process = self.start(*args, ZSPARK_STOP_AT=stop_at)
        try:
            output, _ = process.communicate(timeout=kill_after or 600)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            output, _ = process.communicate()
        return subprocess.CompletedProcess(process.args, process.wait(), output, "")

    def build(self, stop: int) -> str:
        """A plain `dbt build` up to row ``stop``: recovery, the model, and its tests."""
        result = self.dbt("build", "--vars", f"{{stop: {stop}}}")
        _expect(result.returncode == 0 and f"PASS={self.tests + 1}" in result.stdout,
                f"`dbt build` up to {stop} did not pass:\n{result.stdout[-6000:]}")
        self.check_repair(result.stdout)
        self.stop = stop
        return result.stdout

    def killed_while_writing(self, *args: str) -> tuple[str, Path]:
        """A run killed (SIGKILL, its group) while its write is held at its first data file
        in the table's folder (:class:`WriteGate`): begun, its commit not come. Returns its
        output and that file."""
        gate = WriteGate(self.root / "write_gate")
        gate.close()
        process = self.start(*args, **gate.environment)
        begun = gate.kill_when_held(process.pid, lambda: process.poll() is None)
        output, _ = process.communicate()
        table = self.warehouse / MODEL
        if begun is None or table not in begun.parents or \
                process.returncode != -signal.SIGKILL:
            raise AssertionError(f"not killed while writing into {table} (held at {begun}):"
                                 f"\n{output[-6000:]}")
        self.last_kill = "writing"
        return output, begun

    def killed(self, stop_at: str, *args: str) -> str:
        """A run killed at ``stop_at``: it must die there (SIGKILL), not fail before, and
        it must first have repaired what the kill before it left."""
        result = self.dbt(*(args or ("run", "--vars", f"{{stop: {self.stop + 300}}}")),
                          stop_at=stop_at)
        _expect(result.returncode == -signal.SIGKILL,
                f"not killed at {stop_at}:\n{result.stdout[-6000:]}")
        self.check_repair(result.stdout)
        self.last_kill = stop_at
        return result.stdout

    def check_repair(self, log: str) -> None:
        """After a kill that left names to repair, the next run says it repaired them."""
        if self.last_kill in REPAIRED_NAMES:
            _expect(f"zspark: {MODEL}: recovered" in log,
                    f"nothing repaired after a kill at {self.last_kill}:\n{log[-4000:]}")
        self.last_kill = ""

    def recluster(self, full: bool = False) -> tuple[str, ...]:
        relation = f"{self.schema}.{MODEL}"
        return ("run-operation", "zspark_recluster", "--args",
                f"{{relation: {relation}, full: {str(full).lower()}}}")



#: The zspark log lines that say what a run repaired, and what a run was doing.
REPAIRED = re.compile(r"zspark: killed: (recovered .*|the index .* rebuilding it)")
STEP = re.compile(r"zspark: killed: (.*)")


def last_step(project: KilledProject) -> str:
    """The last zspark line the latest run wrote to dbt's log file (where a kill landed,
    roughly: the console leaves out debug and some info lines)."""
    log = (project.root / "logs" / "dbt.log").read_text(errors="replace")
    latest = log.rsplit("Running with dbt", 1)[-1]
    steps = [m.group(1) for m in STEP.finditer(latest)]
    return steps[-1][:100] if steps else "(before any zspark step: Spark starting)"


def soak(project: KilledProject, rounds: int, seed: int, check_every: int,
         progress: Progress, window: tuple[float, float] = (8, 40)) -> dict[str, Any]:
    chance = random.Random(seed)
    project.build(2000)
    repairs: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    killed = checks = 0
    for number in range(1, rounds + 1):
        kind = ("rebuild" if project.strategy == "table" else
                chance.choice(["append", "append", "merge", "full", "refresh"]))
        args = {"append": ("run", "--vars", f"{{stop: {project.stop + 300 * number}}}"),
                "rebuild": ("run", "--vars", f"{{stop: {project.stop + 300 * number}}}"),
                "merge": project.recluster(),
                "full": project.recluster(full=True),
                "refresh": ("run", "--full-refresh", "--vars",
                            f"{{stop: {project.stop}}}")}[kind]
        after = chance.uniform(*window)
        result = project.dbt(*args, kill_after=after)
        was_killed = result.returncode == -signal.SIGKILL
        if not was_killed and result.returncode != 0:
            raise SystemExit(f"round {number}: {kind} failed:\n{result.stdout[-6000:]}")
        killed += was_killed
        kinds[kind] += 1
        found = [m.group(1)[:120] for m in REPAIRED.finditer(result.stdout)]
        repairs.update(line.split(":")[0] if line.startswith("recovered") else "index rebuilt"
                       for line in found)
        progress(f"round {number}: {kind} " + (f"killed after {after:.1f} s, last step: "
                                             f"{last_step(project)}" if was_killed
                                             else "finished")
                 + ("; it repaired first: " + " | ".join(found) if found else ""))
        if number % check_every == 0 or number == rounds:
            project.build(project.stop + 300 * (number + 1))
            checks += 1
            checked = "index, " if project.file_format == "parquet" else ""
            progress(f"checked: rows, {checked}scan exact at {project.stop} rows")
    return {"rounds": rounds, "killed": killed, "checks": checks, "runs": dict(kinds),
            "repairs": dict(repairs)}


#: ``--every-step``: the runs of a walk and the named steps (``stop_points.py``) each is
#: killed at, one kill per run, so every step of the protocols the model's runs go
#: through is a kill's moment. A step a run does not reach lets it finish (reported).
WALK = {
    "append": (
        ("refresh", ("build:written", "swap:begin", "swap:previous_renamed",
                     "swap:next_renamed", "swap:previous_dropped", "index:published")),
        ("append", ("append:written", "append:publishing", "append:inserted",
                    "append:indexed", "index:published")),
        ("merge", ("recluster:publishing", "recluster:deleting", "index:published")),
        ("full", ("rewrite:written", "rewrite:checked", "swap:previous_renamed",
                  "index:published")),
    ),
    "insert_overwrite": (
        ("overwrite", ("overwrite:written", "overwrite:set_aside", "overwrite:publishing",
                       "index:published")),
    ),
}


def walk(project: KilledProject, progress: Progress) -> dict[str, Any]:
    """Each run of :data:`WALK` killed (SIGKILL, dbt and its driver) at its step, then a
    plain `dbt build` that repairs what it left, runs the model and checks rows, index
    and scan (:meth:`KilledProject.build`)."""
    project.build(2000)
    outcomes = []
    for kind, steps in WALK[project.strategy]:
        for step in steps:
            if kind == "merge":  # two pending runs for the merge to rewrite
                for _ in range(2):
                    done = project.dbt("run", "--vars",
                                       f"{{stop: {project.stop + 300}, recluster: false}}")
                    _expect(done.returncode == 0, f"an append failed:\n{done.stdout[-6000:]}")
                    project.stop += 300
            args = {"refresh": ("run", "--full-refresh", "--vars", f"{{stop: {project.stop}}}"),
                    "append": ("run", "--vars",
                               f"{{stop: {project.stop + 300}, recluster: false}}"),
                    "overwrite": ("run", "--vars", f"{{stop: {project.stop + 300}}}"),
                    "merge": project.recluster(),
                    "full": project.recluster(full=True)}[kind]
            started = time.monotonic()
            result = project.dbt(*args, stop_at=step)
            killed = result.returncode == -signal.SIGKILL
            _expect(killed or result.returncode == 0,
                    f"{kind} failed before {step}:\n{result.stdout[-6000:]}")
            project.last_kill = step if killed else ""
            project.build(project.stop + 600)
            outcomes.append({"run": kind, "step": step, "killed": killed,
                             "seconds": round(time.monotonic() - started, 1)})
            progress(f"{kind} {'killed at' if killed else 'never reached'} {step}; the "
                     f"next build repaired it and found rows, index and scan exact")
    return {"walk": outcomes, "killed": sum(o["killed"] for o in outcomes),
            "steps": len(outcomes)}


@contextlib.contextmanager
def s3_warehouse(home: Path) -> Iterator[dict[str, str]]:
    """A local S3 server (moto's, on 127.0.0.1) for the length of the block, and the
    session settings that put the warehouse in its bucket: s3a's standard settings and
    S3's connector in ``spark.jars`` (``make setup`` fetches it)."""
    jars = s3a_jars()
    _expect(bool(jars), "hadoop-aws and the AWS SDK bundle missing: `make setup` fetches them")
    with s3_server(home) as endpoint:
        yield with_jars({**s3a_settings(endpoint, *S3_KEYS),
                         "spark.sql.warehouse.dir": f"s3a://{BUCKET}/kills"}, jars)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--seed", type=int, default=29)
    parser.add_argument("--check-every", type=int, default=5)
    parser.add_argument("--thrift", action="store_true")
    parser.add_argument("--strategy", choices=sorted(MODELS), default="append",
                        help="the incremental runs' strategy")
    parser.add_argument("--format", choices=["delta", "iceberg"], default=None,
                        help="the model's table format (with --strategy table the runs "
                             "killed are its rebuilds, each one commit of the format)")
    # A session's run, forked from the dbt launcher, takes 8-18 s on 2 cores: a window
    # inside that kills most runs, from Spark's start to the swap.
    parser.add_argument("--kill-window", type=float, nargs=2, default=(3, 20),
                        metavar=("FROM", "TO"),
                        help="seconds after its start a run is killed, drawn between these "
                             "(a run on S3 takes longer: e.g. 30 100)")
    parser.add_argument("--s3", action="store_true",
                        help="the session's warehouse on a local S3 server, reached by s3a")
    parser.add_argument("--every-step", action="store_true",
                        help="instead of random kills, one run killed at each named step "
                             "of the protocols its runs go through, each followed by a "
                             "checking build")
    parser.add_argument("--out", type=Path, default=RESULTS / "kills.json")
    args = parser.parse_args(argv)
    if args.every_step and (args.format or args.strategy not in WALK):
        parser.error(f"--every-step walks Parquet models: --strategy {' or '.join(WALK)}")
    if args.format and args.thrift:
        parser.error("--format: clustered Delta and Iceberg builds run in a session only")
    if args.s3 and args.thrift:
        parser.error("--s3: a session's warehouse (test_object_store runs a Thrift server's)")
    progress = Progress()
    root = Path(tempfile.mkdtemp(prefix="zspark_kills_"))
    with contextlib.ExitStack() as servers:
        if args.thrift:
            env = {**os.environ, "PYSPARK_PYTHON": sys.executable,
                   "SPARK_LOCAL_IP": "127.0.0.1"}
            home = root / "server"
            port = servers.enter_context(thrift_server(home, own_metastore(home), env))
            project = KilledProject(root / "project", port, args.strategy)
        else:
            settings = servers.enter_context(s3_warehouse(root / "s3")) if args.s3 else None
            project = KilledProject(root / "project", strategy=args.strategy,
                                    file_format=args.format or "parquet", settings=settings)
        figures = walk(project, progress) if args.every_step else soak(
            project, args.rounds, args.seed, args.check_every, progress,
            tuple(args.kill_window))
    figures["connection"] = ("thrift" if args.thrift else
                             "session on s3" if args.s3 else "session")
    figures["strategy"] = f"{args.format} {args.strategy}" if args.format else args.strategy
    if not args.every_step:
        figures["kill_window"] = list(args.kill_window)
    figures["date"] = time.strftime("%Y-%m-%d %H:%M")
    progress(json.dumps(figures))
    results = json.loads(args.out.read_text()) if args.out.exists() else {}
    results[figures["connection"] + ("" if figures["strategy"] == "append"
                                     else f" {figures['strategy']}")
            + (" every step" if args.every_step else "")] = figures
    args.out.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
