"""A clustered build over a Thrift server whose JVMs leave methods past 8000 bytes of
bytecode to their interpreter (no ``-XX:-DontCompileHugeMethods``), side by side:

- that server, each keyed write run with ``spark.sql.codegen.hugeMethodLimit=8000``
  (zspark's choice there: ``core/generated_code.py``);
- that server setting the limit itself to 65534 (a server's own value stands), so the
  keys run as before, interpreted;
- a server whose JVMs have the option (zspark's own JVMs' settings).

    python -m bench.server_code --rows 2000000 --files 1000 --reps 2

Seed 002's Hilbert model (the generated lineorder rows, 23 columns), each build a ``dbt
run`` of its own against a fresh server; time is dbt's ``execution_time`` of the model.
Results go to ``bench/results/server-code.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from bench.common import (
    DEFAULT_SESSION_DIR,
    RESULTS,
    Progress,
    generate_in_subprocess,
    model_times,
    run_dbt,
    session_env,
)
from bench.markdown import md_table
from bench.thrift import MODEL, THRIFT_SCHEMA, server_conf
from dbt.adapters.zspark.connections import DRIVER_OPTIONS
from dbt.adapters.zspark.core.generated_code import COMPILE_HUGE_METHODS, HUGE_METHOD_LIMIT
from tests.harness.servers import thrift_server

OUT = RESULTS / "server-code.json"
EXECUTOR_OPTIONS = "spark.executor.extraJavaOptions"


def server_cases(session_dir: Path) -> dict[str, dict[str, str]]:
    """The three servers' settings, by the case's name."""
    own = server_conf(session_dir)
    stock = {**own, DRIVER_OPTIONS: own[DRIVER_OPTIONS].replace(COMPILE_HUGE_METHODS, ""),
             EXECUTOR_OPTIONS: ""}
    return {"no JVM option, zspark's limit": stock,
            "no JVM option, no limit (interpreted)": {**stock, HUGE_METHOD_LIMIT: "65534"},
            "JVM option": own}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--session-dir", type=Path, default=DEFAULT_SESSION_DIR)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    session_dir = args.session_dir.resolve()
    log = Progress()
    generate_in_subprocess(args.rows, "uniform", session_dir, log)
    seconds: dict[str, list[float]] = {}
    for _ in range(args.reps):
        for name, conf in server_cases(session_dir).items():
            with thrift_server(session_dir / "thrift", conf, session_env(session_dir),
                               driver_memory="6g") as port:
                run_dbt(["run", "-s", MODEL, "--target", "thrift"], session_dir, log,
                        {"file_count": args.files},
                        env={"ZSPARK_SCHEMA": THRIFT_SCHEMA, "ZSPARK_THRIFT_PORT": str(port)})
            seconds.setdefault(name, []).append(model_times(session_dir)[MODEL])
            log(f"{name}: {seconds[name][-1]:.1f} s")
    results: dict[str, Any] = {
        "config": {"rows": args.rows, "files": args.files, "reps": args.reps},
        "command": "python -m bench.server_code " + " ".join(
            sys.argv[1:] if argv is None else argv),
        "seconds": seconds}
    for name, times in seconds.items():
        log(f"{name}: " + ", ".join(f"{t:.1f}" for t in times) + " s")
    args.out.write_text(json.dumps(results, indent=1))
    log(f"wrote {args.out}")


def server_code_section(results: dict[str, Any]) -> list[str]:
    """BENCHMARKS.md's table of the three servers' builds."""
    config = results["config"]
    seconds = results["seconds"]
    interpreted = min(seconds["no JVM option, no limit (interpreted)"])
    rows = [[name, ", ".join(f"{t:.1f}" for t in times), f"{min(times) / interpreted:.2f}"]
            for name, times in seconds.items()]
    return [
        "### A Thrift server whose JVMs leave large methods to their interpreter", "",
        f"Produced by `make bench-server-code` (`{results['command']}`): seed 002's Hilbert "
        f"model on {config['rows']:,} rows and {config['files']} files, each build a `dbt run` "
        "against a fresh Thrift server on 127.0.0.1 (2 cores). A keyed write's main generated "
        "method passes the 8000 bytes of bytecode HotSpot compiles; without "
        "`-XX:-DontCompileHugeMethods` zspark runs the write with "
        "`spark.sql.codegen.hugeMethodLimit=8000`, and with the server's own limit (65534) "
        "it leaves the keys to the interpreter, as before.", "",
        *md_table(["server", "seconds", "x interpreted (best)"], rows), ""]


if __name__ == "__main__":
    main()
