"""The package's modules read from their source (no import): each module's imports that
run (a module's body or a function's, not those under ``TYPE_CHECKING``), the import
cycles among them, the adapter class's chain of package base classes. The layer and
shape tests read them (``tests/unit/test_layers.py``, ``test_shape.py``), and
``bench/shape.py`` prints their figures."""


from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGE = "dbt.adapters.zspark"


@dataclass
class Module:
    name: str
    path: Path
    lines: int
    #: Package modules imported by the module's body, and inside its functions.
    top_imports: set[str] = field(default_factory=set)
    function_imports: list[str] = field(default_factory=list)


def _module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported(node: ast.Import | ast.ImportFrom, module: str, is_package: bool,
              known: set[str]) -> set[str]:
    """The modules an import statement names (``from package import module`` names the
    module, not the package; ``from module import name`` the module)."""
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names}
    base = node.module or ""
    if node.level:  # relative: resolved against the importing module's package
        package = module.split(".") if is_package else module.split(".")[:-1]
        package = package[:len(package) - node.level + 1]
        base = ".".join([*package, base] if base else package)
    return {f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base
            for alias in node.names}


def _runtime_imports(tree: ast.Module) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
    """Each import that runs, and whether it is inside a function."""
    def visit(node: ast.AST, in_function: bool) -> Iterator[tuple[ast.Import | ast.ImportFrom,
                                                                  bool]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                yield from (pair for orelse in child.orelse for pair in visit(orelse, in_function))
                continue
            if isinstance(child, ast.Import | ast.ImportFrom):
                yield child, in_function
            inside = in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
            yield from visit(child, inside)

    yield from visit(tree, False)


def read_modules(roots: list[str]) -> dict[str, Module]:
    paths = [path for root in roots for path in sorted((REPO / root).rglob("*.py"))]
    modules = {_module_name(path): Module(_module_name(path), path,
                                          len(path.read_text().splitlines()))
               for path in paths}
    for module in modules.values():
        tree = ast.parse(module.path.read_text())
        is_package = module.path.name == "__init__.py"
        for node, in_function in _runtime_imports(tree):
            names = {name for name in _imported(node, module.name, is_package, set(modules))
                     if name in modules and name != module.name}
            if in_function:
                module.function_imports.extend(sorted(names))
            else:
                module.top_imports |= names
    return modules


def cycles(modules: dict[str, Module]) -> list[list[str]]:
    """The groups of modules that import each other, at any depth (Tarjan's algorithm)."""
    edges = {name: sorted(m.top_imports | set(m.function_imports)) for name, m in modules.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def connect(name: str) -> None:
        index[name] = low[name] = len(index)
        stack.append(name)
        for other in edges[name]:
            if other not in index:
                connect(other)
                low[name] = min(low[name], low[other])
            elif other in stack:
                low[name] = min(low[name], index[other])
        if low[name] == index[name]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == name:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for name in sorted(edges):
        if name not in index:
            connect(name)
    return sorted(found)


def adapter_chain() -> list[str]:
    """The package's classes ``ZSparkAdapter`` inherits from, at any depth."""
    classes: dict[str, list[str]] = {}
    for path in (REPO / "dbt/adapters/zspark").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                classes[node.name] = [ast.unparse(base).rsplit(".", 1)[-1] for base in node.bases]
    ancestors: list[str] = []
    waiting = ["ZSparkAdapter"]
    while waiting:
        for base in classes.get(waiting.pop(0), []):
            if base in classes and base not in ancestors:
                ancestors.append(base)
                waiting.append(base)
    return ancestors
