"""The formats benchmark as a pip user runs it: the adapter installed with pip alone from
a clean clone of this checkout's HEAD into a fresh venv (no ``make setup``: no fetched
jars; an empty cache folder, so the first sessions compile zspark's JVM classes and
record its class archives), each format enabled by its own documented settings (its
Maven packages fetched by Spark, its extension and session catalog), zspark's clustered
tables beside the format's own clustering in one run.

    python -m bench.pip_user --formats iceberg --rows 2000000 --files 1000
        # bench/results/formats-pip-user.json

The venv and the clone are kept in ``--work-dir`` (a second run reuses the venv); the
measuring runs from the clone, so that it imports the installed adapter's code as of HEAD.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

from bench.common import REPO, RESULTS, Progress


def pip_venv(work: Path, log: Progress) -> tuple[Path, Path]:
    """A clean clone of HEAD and a fresh venv with it installed by pip (no extras)."""
    clone, venv = work / "clone", work / "venv"
    if clone.exists():
        shutil.rmtree(clone)
    subprocess.run(["git", "clone", "--quiet", str(REPO), str(clone)], check=True)
    if not (venv / "bin" / "python").exists():
        log(f"python -m venv {venv}")
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    log("pip install (the clone, no extras)")
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet",
                    "--force-reinstall", "--no-deps", str(clone)], check=True)
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet",
                    str(clone)], check=True)
    return clone, venv


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--formats", default="iceberg")
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--work-dir", type=Path, default=REPO / ".bench-pip-user")
    parser.add_argument("--out", type=Path, default=RESULTS / "formats-pip-user.json")
    args = parser.parse_args(argv)
    log = Progress()
    work = args.work_dir.resolve()
    work.mkdir(parents=True, exist_ok=True)
    clone, venv = pip_venv(work, log)
    # No jars in the clone: the sessions fetch the formats' packages as a pip user's do.
    assert not (clone / "dbt" / "include" / "zspark" / "jars").exists()
    # An empty cache folder: zspark's JVM classes and class archives made by the first
    # sessions, as on a pip user's machine (not those `make setup` left in ~/.cache).
    cache = work / "cache"
    if cache.exists():
        shutil.rmtree(cache)
    log(f"bench.formats --standard-settings in {venv} (zspark's cache: {cache})")
    subprocess.run([str(venv / "bin" / "python"), "-m", "bench.formats", "--standard-settings",
                    "--formats", args.formats, "--rows", str(args.rows),
                    "--files", str(args.files), "--work-dir", str(work / "formats"),
                    "--out", str(args.out.resolve())], cwd=clone, check=True,
                   env={**os.environ, "XDG_CACHE_HOME": str(cache)})


if __name__ == "__main__":
    main()
