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
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.common import RESULTS, Progress
from dbt.adapters.zspark.reach.session.object_stores import s3a_jars, s3a_settings, with_jars
from tests.harness.kills import MODELS, KilledProject, expect
from tests.harness.servers import BUCKET, S3_KEYS, own_metastore, s3_server, thrift_server

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
                    expect(done.returncode == 0, f"an append failed:\n{done.stdout[-6000:]}")
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
            expect(killed or result.returncode == 0,
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
    expect(bool(jars), "hadoop-aws and the AWS SDK bundle missing: `make setup` fetches them")
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
