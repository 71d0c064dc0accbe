"""What the benchmarks share about building layouts: one ``dbt run`` of a layout's model
(cold, or again in a warm JVM), the build's step split from the adapter's log line, seed
002's queries compiled by dbt, and the machine a run measured on."""

from __future__ import annotations

import json
import os
import platform
import subprocess
from collections.abc import Sequence
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any

from bench.common import LAYOUTS, Progress, dbt_target, model_name, model_times, run_dbt
from bench.rebuild import MARK as REBUILD_MARK

#: Where dbt compiles the project's analyses, under its target directory.
COMPILED_ANALYSES = Path("compiled", "zspark_integration_tests", "analyses")
QUERY_MARK = "-- zspark-bench:"


def machine_info() -> dict[str, Any]:
    memory = 0
    with open("/proc/meminfo") as meminfo:
        for line in meminfo:
            if line.startswith("MemTotal:"):
                memory = int(line.split()[1]) * 1024
    java = subprocess.run(["java", "-version"], capture_output=True, text=True, check=False)
    versions = {}
    for package in ("pyspark", "dbt-core", "dbt-spark", "dbt-zspark", "deltalake", "pyarrow"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = "-"
    return {
        # Other processes on a 2-core machine move the timings: keep the load with them.
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "cores": os.cpu_count(),
        "memory_gib": round(memory / 2**30, 1),
        "cpu": _cpu_model(),
        "os": platform.platform(),
        "python": platform.python_version(),
        "java": (java.stderr.splitlines() or ["?"])[0],
        "versions": versions,
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    }


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "?"


def compiled_queries(session_dir: Path,
                     analysis: str = "seed002_queries.sql") -> dict[tuple[str, str], str]:
    """(model, column) -> SQL, split out of the compiled analysis."""
    queries = {}
    text = (dbt_target(session_dir) / COMPILED_ANALYSES / analysis).read_text()
    for block in text.split(QUERY_MARK)[1:]:
        head, _, body = block.partition("\n")
        model, column = head.split()
        queries[(model, column)] = body.strip().rstrip(";").strip()
    return queries


def build_layout(layout: str, session_dir: Path, log: Progress,
                 variables: dict[str, Any], rebuild: bool = False) -> dict[str, Any]:
    """One ``dbt run`` of a layout's model after ``lineorder_profile`` (which pays Spark's
    warm-up): its execution_time, step split, wall time and peak memory. With ``rebuild``
    the model is built again in the same process (bench.rebuild): ``warm`` holds that
    build's time and split, the cost of a rebuild on a long-running Spark."""
    model = model_name(layout)
    output: list[str] = []
    memory: dict[str, int] = {}
    runner = ("bench.rebuild", model) if rebuild else ("dbt.cli.main",)
    wall = run_dbt(["run", "-s", "lineorder_profile", model], session_dir, log, variables,
                   lines=output, memory=memory, runner=runner)
    steps = build_steps(output, model)
    if not rebuild:
        return {"seconds": model_times(session_dir)[model], "steps": steps,
                "dbt_wall_seconds": wall, **memory}
    first, again = rebuild_seconds(output)
    warm_steps = build_steps_all(output, model)[1:]
    return {"seconds": first, "steps": steps,
            "warm": {"seconds": again, "steps": warm_steps[-1] if warm_steps else {}},
            "dbt_wall_seconds": wall, **memory}


def rebuild_seconds(output: Sequence[str]) -> tuple[float, float]:
    """The first and the repeated build's seconds from bench.rebuild's last line."""
    line = next(line for line in reversed(output) if line.startswith(REBUILD_MARK))
    first, again = json.loads(line[len(REBUILD_MARK):])["seconds"]
    return float(first), float(again)


def build_layouts(session_dir: Path, log: Progress, variables: dict[str, Any],
                  repetitions: int) -> dict[str, dict[str, Any]]:
    """Build each layout in its own process, so none inherits another's warm JVM or
    Python workers, then once more in the same process (a warm JVM); the median of
    ``repetitions`` first builds is reported, and the last run's warm build."""
    builds: dict[str, dict[str, Any]] = {}
    for layout in LAYOUTS:
        runs = [build_layout(layout, session_dir, log, variables, rebuild=True)
                for _ in range(repetitions)]
        seconds = sorted(run["seconds"] for run in runs)
        steps: dict[str, float] = next(
            (run["steps"] for run in reversed(runs) if run["steps"]), {})
        builds[layout] = {**runs[-1], "seconds": seconds[len(seconds) // 2],
                          "all_seconds": seconds, "steps": steps}
        log(f"{model_name(layout)}: built in {builds[layout]['seconds']:.1f}s, again in "
            f"{builds[layout]['warm']['seconds']:.1f}s (dbt execution_time)")
    linear, warm_linear = builds["linear"]["seconds"], builds["linear"]["warm"]["seconds"]
    for build in builds.values():
        build["ratio_to_linear"] = build["seconds"] / linear if linear else float("nan")
        build["warm"]["ratio_to_linear"] = (build["warm"]["seconds"] / warm_linear
                                            if warm_linear else float("nan"))
    return builds


def build_steps(output: Sequence[str], model: str) -> dict[str, float]:
    """Seconds per build step from the adapter's log line ("seconds: sample 1.2, ...")."""
    splits = build_steps_all(output, model)
    return splits[0] if splits else {}


def build_steps_all(output: Sequence[str], model: str) -> list[dict[str, float]]:
    """The step split of every build of ``model`` in ``output``, in order."""
    splits = []
    for line in output:
        if f"zspark: {model}:" in line and "seconds: " in line:
            pairs = line.rsplit("seconds: ", 1)[1].split(", ")
            splits.append({name: float(value) for name, value in (p.split() for p in pairs)})
    return splits
