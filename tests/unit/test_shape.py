"""The adapter's import graph stays acyclic (``bench.shape``, issue 48's measure)."""

from __future__ import annotations

from pathlib import Path

from bench.shape import Module, cycles, read_modules


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
