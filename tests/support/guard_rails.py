"""Guard rails on the code's shape that only tighten: module sizes and ruff's ceilings.

Two checks, both read from ``.ci/guard-rails.toml``:

- **Module sizes.** A Python module longer than the limit (450 lines) fails,
  unless the allow-list names it with a ceiling and a reason ("generated",
  "data" or "to split"). A listed module may not grow past its ceiling, and an
  entry whose module shrank to the limit or disappeared fails until it is
  removed, so the list only shrinks.
- **Ruff's ceilings.** pyproject.toml's ``max-complexity`` (C901) and
  ``max-args`` (PLR0913) equal the values recorded in the guard-rails file: a
  raised one fails, a lowered one asks for the record to be lowered too. The
  two rules stay selected, and only the listed per-file patterns ignore them.

``make lint`` and ``make test`` run it from the repository root:
``python -m tests.support.guard_rails``. It prints one line per problem and
exits 1 when there is any.
"""

from __future__ import annotations

import os
import sys
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CONFIG = Path(".ci/guard-rails.toml")
PYPROJECT = Path("pyproject.toml")
REASONS = frozenset({"generated", "data", "to split"})
# ruff's option (under [tool.ruff.lint]) and the rule it bounds, per recorded ceiling.
CEILINGS = {
    "max-complexity": ("mccabe", "C901"),
    "max-args": ("pylint", "PLR0913"),
}


class ConfigError(Exception):
    """The guard-rails file is malformed; the message names the file and the key."""


@dataclass(frozen=True)
class Allowance:
    """A module allowed over the limit, up to ``ceiling`` lines, for ``reason``."""

    ceiling: int
    reason: str


@dataclass(frozen=True)
class SizeRules:
    """The size limit, what to skip, and the allow-list, as read from the guard-rails file."""

    limit: int
    exclude: tuple[str, ...]
    allow: Mapping[str, Allowance]


@dataclass(frozen=True)
class GuardRails:
    """The whole guard-rails file: size rules and ruff's recorded ceilings."""

    sizes: SizeRules
    ceilings: Mapping[str, int]
    per_file_ignores: tuple[str, ...]


def load(path: Path) -> GuardRails:
    """Read and validate the guard-rails file; a bad value raises ConfigError naming its key."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise ConfigError(f"{path}: {error}") from None
    sizes = _table(data, "module-sizes", path)
    ruff = _table(data, "ruff", path)
    allow = {
        name: _allowance(entry, f"module-sizes.allow.{name!r}", path)
        for name, entry in _table(sizes, "allow", path, "module-sizes.").items()
    }
    return GuardRails(
        sizes=SizeRules(
            limit=_positive(sizes.get("limit"), "module-sizes.limit", path),
            exclude=_strings(sizes.get("exclude", []), "module-sizes.exclude", path),
            allow=allow,
        ),
        ceilings={
            option: _positive(ruff.get(option), f"ruff.{option}", path) for option in CEILINGS
        },
        per_file_ignores=_strings(ruff.get("per-file-ignores", []), "ruff.per-file-ignores", path),
    )


def module_lengths(root: Path, exclude: tuple[str, ...] = ()) -> Iterator[tuple[str, int]]:
    """(path relative to root, line count) for every ``.py`` file, hidden folders skipped."""
    skipped = set(exclude)
    found = []
    for folder, subfolders, files in os.walk(root):
        relative = Path(folder).relative_to(root)
        # Pruned in place, so os.walk never descends into .venv, .git or the caches.
        subfolders[:] = [
            name
            for name in subfolders
            if not name.startswith(".")
            and name != "__pycache__"
            and (relative / name).as_posix() not in skipped
        ]
        found += [(relative / name).as_posix() for name in files if name.endswith(".py")]
    for name in sorted(found):
        yield name, len((root / name).read_bytes().splitlines())


def size_problems(root: Path, rules: SizeRules, config: Path = CONFIG) -> list[str]:
    """One message per module over its limit or ceiling, and per allow-list entry to remove."""
    problems = []
    seen = set()
    for name, lines in module_lengths(root, rules.exclude):
        seen.add(name)
        allowed = rules.allow.get(name)
        if allowed is None:
            if lines > rules.limit:
                problems.append(
                    f"{name}: {lines} lines, over the {rules.limit}-line limit: split it "
                    f"(generated code or data may be listed in {config} with a reason)"
                )
        elif lines <= rules.limit:
            problems.append(
                f"{name}: {lines} lines, within the {rules.limit}-line limit: "
                f"remove its entry from {config}"
            )
        elif lines > allowed.ceiling:
            problems.append(
                f"{name}: {lines} lines, over its ceiling of {allowed.ceiling} in {config} "
                f"({allowed.reason}): the ceiling only goes down; split the module"
            )
    for name in sorted(set(rules.allow) - seen):
        problems.append(f"{name}: no such module: remove its entry from {config}")
    return problems


def ceiling_problems(
    pyproject: Mapping[str, Any], rails: GuardRails, config: Path = CONFIG
) -> list[str]:
    """One message per ruff ceiling off its record, unset, switched off or ignored."""
    lint = pyproject.get("tool", {}).get("ruff", {}).get("lint", {})
    selected = [*lint.get("select", []), *lint.get("extend-select", [])]
    ignored = lint.get("ignore", [])
    problems = []
    for option, (section, rule) in CEILINGS.items():
        recorded = rails.ceilings[option]
        where = f"{PYPROJECT} [tool.ruff.lint.{section}] {option}"
        configured = lint.get(section, {}).get(option)
        if not isinstance(configured, int):
            problems.append(f"{where} is not set: set it to {recorded}")
        elif configured > recorded:
            problems.append(
                f"{where} = {configured} is above the recorded ceiling of {recorded} in "
                f"{config}: the ceiling only goes down; simplify the code instead"
            )
        elif configured < recorded:
            problems.append(
                f"{where} = {configured} is below the recorded ceiling of {recorded}: "
                f"lower ruff.{option} in {config} to {configured} too, so it stays down"
            )
        if not any(_covers(selector, rule) for selector in selected):
            problems.append(f"{PYPROJECT} [tool.ruff.lint] select does not select {rule}")
        if any(_covers(selector, rule) for selector in ignored):
            problems.append(f"{PYPROJECT} [tool.ruff.lint] ignore switches {rule} off")
        for pattern, rules in lint.get("per-file-ignores", {}).items():
            if pattern not in rails.per_file_ignores and any(_covers(s, rule) for s in rules):
                problems.append(
                    f"{PYPROJECT} [tool.ruff.lint.per-file-ignores] {pattern!r} ignores {rule}; "
                    f"only {', '.join(rails.per_file_ignores) or 'no pattern'} may "
                    f"({config} ruff.per-file-ignores)"
                )
    return problems


def main(root: Path = Path()) -> int:
    """Run both checks from the repository root; print each problem; 1 if there was any."""
    try:
        rails = load(root / CONFIG)
        pyproject = tomllib.loads((root / PYPROJECT).read_text(encoding="utf-8"))
    except (ConfigError, OSError, tomllib.TOMLDecodeError) as error:
        print(f"guard rails: {error}", file=sys.stderr)
        return 1
    problems = size_problems(root, rails.sizes) + ceiling_problems(pyproject, rails)
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        print(f"guard rails: {len(problems)} problem(s)", file=sys.stderr)
        return 1
    print(
        f"guard rails: modules within {rails.sizes.limit} lines or their ceilings "
        f"({len(rails.sizes.allow)} allow-listed); ruff ceilings "
        + ", ".join(f"{option} {value}" for option, value in rails.ceilings.items())
    )
    return 0


def _covers(selector: str, rule: str) -> bool:
    """Whether a ruff rule selector (a code prefix, or ALL) takes in ``rule``."""
    return selector == "ALL" or rule.startswith(selector)


def _table(data: Mapping[str, Any], key: str, path: Path, prefix: str = "") -> dict[str, Any]:
    value = data.get(key)
    if not isinstance(value, dict):
        raise ConfigError(f"{path}: [{prefix}{key}] is missing or not a table")
    return value


def _positive(value: object, key: str, path: Path) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ConfigError(f"{path}: {key} must be a positive integer, not {value!r}")
    return value


def _strings(value: object, key: str, path: Path) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ConfigError(f"{path}: {key} must be a list of strings, not {value!r}")
    return tuple(value)


def _allowance(entry: object, key: str, path: Path) -> Allowance:
    if not isinstance(entry, dict) or set(entry) != {"lines", "reason"}:
        raise ConfigError(f'{path}: {key} must be {{ lines = N, reason = "..." }}')
    reason = entry["reason"]
    if reason not in REASONS:
        raise ConfigError(
            f"{path}: {key} reason {reason!r} is not one of {', '.join(sorted(REASONS))}"
        )
    return Allowance(ceiling=_positive(entry["lines"], f"{key}.lines", path), reason=reason)


if __name__ == "__main__":
    raise SystemExit(main())
