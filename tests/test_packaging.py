"""The distribution holds the daemon only: the benchmarks and the emulator stay out of its
wheel and its imports; the emulator ships as its own distribution (sim/)."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from collections.abc import Iterator
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = "benchmarks"
EMULATOR = "orchestrator_sim"
# What the daemon's wheel is built from: pyproject.toml's packages, README and data-files,
# with the emulator's folder beside them as in a checkout.
SOURCES = ("pyproject.toml", "README.md", "orchestrator", "migrations", "workflows", "sim")
# A "module:attribute" or dotted module name in a string: a lazy import.
_MODULE_STRING = re.compile(r"[A-Za-z_][\w.]*(:[A-Za-z_][\w.]*)?")


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


def _named_modules(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """(line, module) for every string that is a "module:attribute" or dotted name."""
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and _MODULE_STRING.fullmatch(node.value)
        ):
            yield node.lineno, node.value.partition(":")[0]


def _is_benchmarks(module: str) -> bool:
    return module == BENCHMARKS or module.startswith(f"{BENCHMARKS}.")


def _is_emulator(module: str) -> bool:
    return module == EMULATOR or module.startswith(f"{EMULATOR}.")


def _daemon_modules() -> Iterator[tuple[Path, ast.AST]]:
    for path in sorted((ROOT / "orchestrator").rglob("*.py")):
        yield path, ast.parse(path.read_text(), str(path))


def test_no_product_module_imports_the_benchmarks() -> None:
    offenders = [
        f"{path.relative_to(ROOT)}:{line}: imports {module}"
        for path, tree in _daemon_modules()
        for line, module in _imported_modules(tree)
        if _is_benchmarks(module)
    ]
    assert offenders == []


def test_no_daemon_module_imports_or_names_the_emulator() -> None:
    offenders = [
        f"{path.relative_to(ROOT)}:{line}: {how} {module}"
        for path, tree in _daemon_modules()
        for how, found in (("imports", _imported_modules(tree)), ("names", _named_modules(tree)))
        for line, module in found
        if _is_emulator(module)
    ]
    assert offenders == []


def _requirement_name(requirement: str) -> str:
    name = re.split(r"[\s\[<>=!~;]", requirement, maxsplit=1)[0]
    return re.sub(r"[-_.]+", "-", name).lower()


def test_every_library_the_daemon_imports_is_one_of_its_dependencies() -> None:
    """A production install has only [project].dependencies: a module the daemon imports
    from elsewhere (a dev extra) would fail there with ModuleNotFoundError."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    declared = {_requirement_name(r) for r in project["dependencies"]}
    distributions = importlib.metadata.packages_distributions()
    missing: list[str] = []
    for path, tree in _daemon_modules():
        for line, module in _imported_modules(tree):
            top = module.partition(".")[0]
            if top in sys.stdlib_module_names or top in {"orchestrator", "__future__"}:
                continue
            owners = {_requirement_name(d) for d in distributions.get(top, [top])}
            if owners.isdisjoint(declared):
                missing.append(f"{path.relative_to(ROOT)}:{line}: {module} ({', '.join(owners)})")
    assert not missing, "imported but not a dependency of the daemon:\n" + "\n".join(missing)


def test_the_scan_sees_each_way_of_reaching_the_emulator() -> None:
    source = (
        "import orchestrator_sim.testing\n"
        "from orchestrator_sim.demo import run\n"
        "importlib.import_module('orchestrator_sim.agent')\n"
        "LAZY = {'sim': 'orchestrator_sim.cli:sim'}\n"
        "import orchestrator.sim_budget\n"
        '"""Answered by the emulator (`orchestrator_sim.linear`)."""\n'
    )
    tree = ast.parse(source)
    imported = [module for _, module in _imported_modules(tree) if _is_emulator(module)]
    named = [module for _, module in _named_modules(tree) if _is_emulator(module)]
    assert imported == [
        "orchestrator_sim.testing",
        "orchestrator_sim.demo",
        "orchestrator_sim.agent",
    ]
    assert named == ["orchestrator_sim.agent", "orchestrator_sim.cli"]


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


def _setuptools(project: Path) -> dict[str, Any]:
    """The [tool.setuptools] table of a project's pyproject.toml."""
    table: dict[str, Any] = tomllib.loads((project / "pyproject.toml").read_text())["tool"][
        "setuptools"
    ]
    return table


def _shipped(project: Path, name: str) -> bool:
    """Whether setuptools' packages.find (fnmatchcase on dotted names) takes ``name``."""
    find = _setuptools(project)["packages"]["find"]
    include, exclude = find.get("include", ["*"]), find.get("exclude", [])
    return any(fnmatchcase(name, p) for p in include) and not any(
        fnmatchcase(name, p) for p in exclude
    )


def test_the_wheel_leaves_the_benchmarks_out() -> None:
    assert _shipped(ROOT, "orchestrator")
    assert (ROOT / BENCHMARKS / "__init__.py").is_file()
    names = [BENCHMARKS, *(f"{BENCHMARKS}.{p.stem}" for p in (ROOT / BENCHMARKS).glob("*.py"))]
    assert [name for name in names if _shipped(ROOT, name)] == []
    data_files = [src for sources in _setuptools(ROOT)["data-files"].values() for src in sources]
    assert [src for src in data_files if src.startswith(f"{BENCHMARKS}/")] == []


def test_the_two_distributions_take_disjoint_packages() -> None:
    # A pattern like "orchestrator*" would take the emulator into the daemon's wheel.
    emulator = ROOT / "sim"
    for name in ("orchestrator", "orchestrator.cli", "orchestrator.github.queries"):
        assert _shipped(ROOT, name) and not _shipped(emulator, name), name
    for name in (EMULATOR, f"{EMULATOR}.demo", f"{EMULATOR}.linear", "orchestrator_simulator"):
        assert not _shipped(ROOT, name), name
    assert _shipped(emulator, EMULATOR) and _shipped(emulator, f"{EMULATOR}.demo")
    assert (emulator / EMULATOR / "__init__.py").is_file()
    assert not (ROOT / EMULATOR).exists()


def _build_wheel(project: Path, out: Path) -> list[str]:
    """The file names in the wheel pip builds from ``project``."""
    command = ["pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation"]
    built = subprocess.run(
        [sys.executable, "-m", *command, "--wheel-dir", str(out), str(project)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert built.returncode == 0, built.stderr
    (wheel,) = out.glob("*.whl")
    with zipfile.ZipFile(wheel) as archive:
        return archive.namelist()


@pytest.mark.slow
def test_the_built_wheels_split_the_daemon_from_the_emulator(tmp_path: Path) -> None:
    source = tmp_path / "checkout"
    source.mkdir()
    for name in SOURCES:
        if (ROOT / name).is_dir():
            ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", "build")
            shutil.copytree(ROOT / name, source / name, ignore=ignore)
        else:
            shutil.copy2(ROOT / name, source / name)

    daemon = _build_wheel(source, tmp_path / "daemon")
    assert {name.split("/")[0] for name in daemon} == {
        "orchestrator",
        "orchestrator-0.1.0.dist-info",
        "orchestrator-0.1.0.data",
    }
    assert "orchestrator/cli.py" in daemon and "orchestrator/py.typed" in daemon
    assert [name for name in daemon if EMULATOR in name or "/sim/" in name] == []

    emulator = _build_wheel(source / "sim", tmp_path / "emulator")
    assert {name.split("/")[0] for name in emulator} == {
        EMULATOR,
        "orchestrator_sim-0.1.0.dist-info",
    }
    for packaged in ("py.typed", "testing.py", "demo/run.py", "linear/schema.graphql"):
        assert f"{EMULATOR}/{packaged}" in emulator, packaged
