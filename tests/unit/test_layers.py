"""The package's layers, read statically from its imports (``tests/harness/imports.py``): ``core/``
imports nothing above it, the formats and the services reach Spark through no reach's own
module, and each reach leans only on the ones below it: the server's (SQL alone) on no
other, the DataFrame session's (``reach/frames``) not on the embedded session's."""

from __future__ import annotations

from pathlib import Path

from tests.harness.imports import Module, read_modules

PACKAGE = "dbt.adapters.zspark."
#: What the services may import of ``reach/``: the interface, the choice of a reach, and
#: the warehouse's folders as either reach sees them.
REACH_INTERFACE = {"reach.base", "reach.choice", "reach.folders"}


def layer(module: str) -> str:
    """A module's layer: its package under ``dbt.adapters.zspark`` (``reach.session``
    and ``reach.server`` are layers of their own), or the module itself at the top."""
    parts = module.removeprefix(PACKAGE).split(".")
    return ".".join(parts[:2]) if parts[0] == "reach" and len(parts) > 2 else parts[0]


def broken_rules(modules: dict[str, Module]) -> list[str]:
    """Every import that breaks a layer rule, as ``importer -> imported: rule``."""
    broken = []
    for name, module in sorted(modules.items()):
        source = layer(name)
        for imported in sorted(module.top_imports | set(module.function_imports)):
            if not imported.startswith(PACKAGE):
                continue
            target = layer(imported)
            inner = imported.removeprefix(PACKAGE)
            rule = None
            if source == "core" and target != "core":
                rule = "core/ imports nothing above it"
            elif source in ("formats", "services", "versions", "skipping", "advice",
                            "layouts") and target.startswith("reach") \
                    and not any(inner == r or inner.startswith(r + ".")
                                for r in REACH_INTERFACE):
                rule = f"{source}/ reaches Spark through the reach interface alone"
            elif source == "reach.server" and target in ("reach.session", "reach.frames"):
                rule = "the server's reach does not import the session's"
            elif source == "reach.frames" and target == "reach.session":
                rule = "the DataFrame reach runs on any session: it imports no JVM seam"
            if rule:
                broken.append(f"{name} -> {imported}: {rule}")
    return broken


def test_the_layer_rules_name_an_import_that_breaks_them() -> None:
    def module(name: str, *imports: str) -> Module:
        return Module(PACKAGE + name, Path(name), 1, {PACKAGE + i for i in imports})

    modules = {m.name: m for m in (
        module("core.planning", "layouts", "core.sql_text"),
        module("formats.delta", "reach.session.jvm", "formats.base"),
        module("services.builds", "reach.base", "reach.session.seeds"),
        module("reach.server.reach", "reach.session.clustering", "reach.base"),
        module("reach.frames.reach", "reach.session.jvm", "reach.server.reach"),
        module("reach.session.reach", "reach.base", "formats"),
    )}
    assert broken_rules(modules) == [
        f"{PACKAGE}core.planning -> {PACKAGE}layouts: core/ imports nothing above it",
        f"{PACKAGE}formats.delta -> {PACKAGE}reach.session.jvm: formats/ reaches Spark "
        "through the reach interface alone",
        f"{PACKAGE}reach.frames.reach -> {PACKAGE}reach.session.jvm: the DataFrame reach "
        "runs on any session: it imports no JVM seam",
        f"{PACKAGE}reach.server.reach -> {PACKAGE}reach.session.clustering: the server's "
        "reach does not import the session's",
        f"{PACKAGE}services.builds -> {PACKAGE}reach.session.seeds: services/ reaches "
        "Spark through the reach interface alone",
    ]


def test_the_package_keeps_its_layers() -> None:
    modules = read_modules(["dbt/adapters/zspark"])
    assert f"{PACKAGE}formats.delta" in modules
    assert broken_rules(modules) == []
