"""The adapter's shape in figures: what issue 48 ("one shape for the adapter") measures.

    python -m bench.shape            # the package and bench

Printed: the adapter class's chain of package base classes, the modules at the package's
top and the longest ones, the function-level imports of the package's own modules, and
the import cycles (strongly connected groups of modules), counting every import that
runs (a module's body or a function's; not those under ``TYPE_CHECKING``).
"""

from __future__ import annotations

import argparse

from tests.harness.imports import adapter_chain, cycles, read_modules


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.parse_args(argv)
    package = read_modules(["dbt/adapters/zspark"])
    top = [m for m in package.values() if m.name.count(".") == 3]
    print(f"ZSparkAdapter's package base classes: {adapter_chain() or 'none'}")
    print(f"modules at the package's top: {len(top)} (of {len(package)})")
    longest = sorted(package.values(), key=lambda m: -m.lines)[:5]
    print("longest modules: " + ", ".join(f"{m.name.rsplit('.', 1)[-1]} {m.lines}"
                                          for m in longest))
    inner = sum(len(m.function_imports) for m in package.values())
    print(f"function-level imports of the package's modules: {inner}")
    for label, roots in (("package", ["dbt/adapters/zspark"]),
                         ("bench", ["bench", "dbt/adapters/zspark"])):
        groups = [g for g in cycles(read_modules(roots))
                  if label == "package" or any(n.startswith("bench.") for n in g)]
        print(f"import cycles in the {label}: {len(groups)}")
        for group in groups:
            print("  " + " <-> ".join(n.rsplit(".", 1)[-1] for n in group))


if __name__ == "__main__":
    main()
