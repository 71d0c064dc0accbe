"""The thin install as README.md gives it (its section "A thin install"): Connect's
pure-Python client in place of pyspark, the plugin installed without its dependencies."""

from __future__ import annotations

import shlex
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"
SECTION = "### A thin install"
#: The placeholder the README's last command installs the plugin from.
PLUGIN_PATH = "/path/to/dbt-zspark"


def readme_commands(readme: str | None = None) -> list[list[str]]:
    """The shell commands of the section's first ``bash`` block, each split into words
    (lines continued by a backslash joined)."""
    text = README.read_text() if readme is None else readme
    if SECTION not in text:
        raise ValueError(f"README.md has no section {SECTION!r}")
    block = text.split(SECTION, 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    return [shlex.split(line) for line in block.replace("\\\n", " ").splitlines()
            if line.strip()]
