"""A ``dbt run``, then the same model built again in the same process.

    python -m bench.rebuild MODEL run -s lineorder_profile MODEL --project-dir ... --vars ...

The first build runs in a fresh JVM and pays its warm-up: loading the classes of Spark's
writer, compiling them and the query's generated code. The second runs in the JVM that
has just built the same model, as every build does on a long-running Spark (a Thrift
server, a cluster's application, a session that builds many models): the figure a
pipeline's daily rebuild sees. dbt's own output goes to stdout as from the CLI; the last
line is ``zspark-bench-rebuild {"seconds": [first, again]}`` (each the model's
``execution_time``). Exits non-zero if either run fails.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any

MARK = "zspark-bench-rebuild "


def again_args(args: Sequence[str], model: str) -> list[str]:
    """``args`` with the selection narrowed to ``model`` (its warm-up model left out)."""
    narrowed: list[str] = []
    in_selection = False
    for arg in args:
        if arg in ("-s", "--select"):
            narrowed += [arg, model]
            in_selection = True
        elif in_selection and not arg.startswith("-"):
            continue
        else:
            in_selection = False
            narrowed.append(arg)
    return narrowed


def model_seconds(result: Any, model: str) -> float:
    """The model's ``execution_time`` in a dbtRunner result."""
    for node in result.result:
        if node.node.name == model:
            return float(node.execution_time)
    raise RuntimeError(f"{model} was not built: {result.exception}")


def build_twice(model: str, args: Sequence[str]) -> list[float]:
    """``args`` run, then ``model`` alone again, by one dbtRunner: each build's seconds."""
    from dbt.cli.main import dbtRunner

    runner = dbtRunner()  # one process: dbt-spark's session mode keeps its Spark session
    seconds = []
    for run_args in (list(args), again_args(args, model)):
        result = runner.invoke(run_args)
        if not result.success:
            raise RuntimeError(f"dbt {' '.join(run_args)} failed: {result.exception}")
        seconds.append(model_seconds(result, model))
    return seconds


def main(argv: Sequence[str] | None = None) -> None:
    model, *args = list(sys.argv[1:] if argv is None else argv)
    try:
        seconds = build_twice(model, args)
    except RuntimeError as failed:
        raise SystemExit(str(failed)) from None
    print(MARK + json.dumps({"seconds": seconds}), flush=True)


if __name__ == "__main__":
    main()
