"""The adapter's import graph stays acyclic (``tests/harness/imports.py``, issue 48's measure)."""

from __future__ import annotations

from pathlib import Path

from tests.harness.imports import Module, cycles, read_modules


def test_the_cycle_finder_names_modules_that_import_each_other() -> None:
    def module(name: str, *imports: str) -> Module:
        return Module(name, Path(name), 1, set(imports))

    modules = {m.name: m for m in (module("a", "b"), module("b", "c"), module("c", "a"),
                                   module("d", "a"), module("e"))}
    assert cycles(modules) == [["a", "b", "c"]]
    modules["c"].top_imports.clear()
    modules["c"].function_imports.append("a")  # an import inside a function counts too
    assert cycles(modules) == [["a", "b", "c"]]


def test_neither_the_package_nor_bench_has_an_import_cycle() -> None:
    package = read_modules(["dbt/adapters/zspark"])
    assert "dbt.adapters.zspark.reach.base" in package
    assert cycles(package) == []
    assert cycles(read_modules(["bench", "dbt/adapters/zspark"])) == []


def test_the_adapter_is_a_facade_over_small_modules() -> None:
    """One package base class at most, a dozen modules at the top, none over 600 lines,
    few imports inside functions, and every ``@available`` method short."""
    import ast

    from tests.harness.imports import REPO, adapter_chain

    package = read_modules(["dbt/adapters/zspark"])
    assert len(adapter_chain()) <= 1
    assert len([m for m in package.values() if m.name.count(".") == 3]) <= 12
    assert max(m.lines for m in package.values()) <= 600
    assert sum(len(m.function_imports) for m in package.values()) <= 10
    tree = ast.parse((REPO / "dbt/adapters/zspark/impl.py").read_text())
    available = [node for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)
                 and any(ast.unparse(d) == "available" for d in node.decorator_list)]
    assert len(available) > 30
    assert max(node.end_lineno - node.lineno + 1 for node in available) <= 25  # type: ignore[operator]
