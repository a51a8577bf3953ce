"""The distribution holds the daemon only: the benchmarks stay out of the wheel and its imports."""

from __future__ import annotations

import ast
import tomllib
from collections.abc import Iterator
from fnmatch import fnmatchcase
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = "benchmarks"


def _imported_modules(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """(line, module) for every import statement and ``import_module("...")`` call."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.lineno, node.module
        elif isinstance(node, ast.Call) and node.args:
            called = node.func
            name = called.attr if isinstance(called, ast.Attribute) else getattr(called, "id", "")
            first = node.args[0]
            if (
                name in {"import_module", "__import__"}
                and isinstance(first, ast.Constant)
                and isinstance(first.value, str)
            ):
                yield node.lineno, first.value


def _is_benchmarks(module: str) -> bool:
    return module == BENCHMARKS or module.startswith(f"{BENCHMARKS}.")


def test_no_product_module_imports_the_benchmarks() -> None:
    offenders = [
        f"{path.relative_to(ROOT)}:{line}: imports {module}"
        for path in sorted((ROOT / "orchestrator").rglob("*.py"))
        for line, module in _imported_modules(ast.parse(path.read_text(), str(path)))
        if _is_benchmarks(module)
    ]
    assert offenders == []


def test_the_scan_sees_each_way_of_importing_the_benchmarks() -> None:
    source = (
        "import benchmarks.scale\n"
        "from benchmarks import store\n"
        "import importlib\n"
        "importlib.import_module('benchmarks.planner')\n"
        "from benchmarks_other import x\n"
        "from . import benchmarks\n"
    )
    found = [module for _, module in _imported_modules(ast.parse(source)) if _is_benchmarks(module)]
    assert found == ["benchmarks.scale", "benchmarks", "benchmarks.planner"]


def test_the_wheel_leaves_the_benchmarks_out() -> None:
    # setuptools matches packages.find's patterns with fnmatchcase on dotted names.
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    find = setuptools["packages"]["find"]
    include, exclude = find.get("include", ["*"]), find.get("exclude", [])

    def shipped(name: str) -> bool:
        return any(fnmatchcase(name, p) for p in include) and not any(
            fnmatchcase(name, p) for p in exclude
        )

    assert shipped("orchestrator")
    assert (ROOT / BENCHMARKS / "__init__.py").is_file()
    names = [BENCHMARKS, *(f"{BENCHMARKS}.{p.stem}" for p in (ROOT / BENCHMARKS).glob("*.py"))]
    assert [name for name in names if shipped(name)] == []
    data_files = [src for sources in setuptools["data-files"].values() for src in sources]
    assert [src for src in data_files if src.startswith(f"{BENCHMARKS}/")] == []
