"""The flat catalogue of settings derived from the schema: one entry per dotted key.

The loader walks this catalogue to read the file, the environment and the
command line; ``orchestrator validate`` and the docs use it to list every key.
"""

from __future__ import annotations

import dataclasses
import difflib
import types
import typing
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from functools import cache
from pathlib import Path
from typing import Any

from orchestrator.workflow.schema import Policy


class Kind(StrEnum):
    """The shape of a setting's value."""

    BOOL = "bool"
    INT = "int"
    STR = "str"
    PATH = "path"
    ENUM = "enum"
    LIST = "list"
    MAP = "map"


@dataclass(frozen=True)
class ValueType:
    """The type of a setting's value, as the loader needs it."""

    kind: Kind
    optional: bool = False
    enum: type[StrEnum] | None = None
    item: ValueType | None = None
    key: ValueType | None = None
    # A list whose items may repeat (command-line arguments): no duplicate check.
    repeats: bool = False


@dataclass(frozen=True)
class SettingSpec:
    """One key of the policy: its dotted path, type, default, limits and documentation."""

    path: str
    type: ValueType
    default: object
    doc: str
    minimum: int | None
    maximum: int | None
    secret: bool
    shell: bool
    sensitive: bool

    @property
    def section(self) -> str:
        return self.path.split(".", 1)[0]

    @property
    def name(self) -> str:
        return self.path.rsplit(".", 1)[-1]

    @property
    def env_name(self) -> str:
        """The ``ORCHESTRATOR_*`` environment variable that overrides this key."""
        return "ORCHESTRATOR_" + self.path.upper().replace(".", "__")


def _value_type(hint: Any) -> ValueType:
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (types.UnionType, typing.Union):
        inner = [a for a in args if a is not type(None)]
        if len(inner) != 1:
            raise TypeError(f"unsupported union {hint!r}")
        return dataclasses.replace(_value_type(inner[0]), optional=True)
    if origin is tuple:
        return ValueType(Kind.LIST, item=_value_type(args[0]))
    if origin is not None and isinstance(origin, type) and issubclass(origin, Mapping):
        return ValueType(Kind.MAP, key=_value_type(args[0]), item=_value_type(args[1]))
    if hint is bool:
        return ValueType(Kind.BOOL)
    if hint is int:
        return ValueType(Kind.INT)
    if hint is str:
        return ValueType(Kind.STR)
    if hint is Path:
        return ValueType(Kind.PATH)
    if isinstance(hint, type) and issubclass(hint, StrEnum):
        return ValueType(Kind.ENUM, enum=hint)
    raise TypeError(f"unsupported setting type {hint!r}")


def _default_of(f: dataclasses.Field[Any]) -> object:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    raise TypeError(f"setting {f.name} has no default")


def _walk(cls: type[Any], prefix: str) -> Iterable[SettingSpec]:
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        path = f"{prefix}{f.name}"
        if f.metadata.get("section"):
            yield from _walk(hints[f.name], path + ".")
            continue
        value_type = _value_type(hints[f.name])
        if f.metadata.get("repeats"):
            value_type = dataclasses.replace(value_type, repeats=True)
        yield SettingSpec(
            path=path,
            type=value_type,
            default=_default_of(f),
            doc=str(f.metadata["doc"]),
            minimum=f.metadata.get("minimum"),
            maximum=f.metadata.get("maximum"),
            secret=bool(f.metadata.get("secret")),
            shell=bool(f.metadata.get("shell")),
            sensitive=bool(f.metadata.get("sensitive")),
        )


@cache
def settings() -> Mapping[str, SettingSpec]:
    """Every setting by dotted path, in schema order."""
    return types.MappingProxyType({spec.path: spec for spec in _walk(Policy, "")})


@cache
def groups() -> Mapping[str, tuple[str, ...]]:
    """Every group of keys ("" is the top level, then sections and nested groups) -> key names."""
    found: dict[str, list[str]] = {"": []}
    for path in settings():
        parts = path.split(".")
        for depth in range(len(parts)):
            parent = ".".join(parts[:depth])
            names = found.setdefault(parent, [])
            if parts[depth] not in names:
                names.append(parts[depth])
    return types.MappingProxyType({k: tuple(v) for k, v in found.items()})


@cache
def section_docs() -> Mapping[str, str]:
    """The documentation of every group of settings, by dotted path."""
    docs: dict[str, str] = {}

    def visit(cls: type[Any], prefix: str) -> None:
        hints = typing.get_type_hints(cls)
        for f in dataclasses.fields(cls):
            if f.metadata.get("section"):
                docs[prefix + f.name] = str(f.metadata["doc"])
                visit(hints[f.name], prefix + f.name + ".")

    visit(Policy, "")
    return types.MappingProxyType(docs)


def edit_distance(a: str, b: str) -> int:
    """Edits (insert, delete, replace, swap two neighbours) that turn ``a`` into ``b``."""
    previous2: list[int] = []
    previous = list(range(len(b) + 1))
    for i, char_a in enumerate(a, start=1):
        current = [i] + [0] * len(b)
        for j, char_b in enumerate(b, start=1):
            cost = 0 if char_a == char_b else 1
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
            if i > 1 and j > 1 and char_a == b[j - 2] and a[i - 2] == char_b:
                current[j] = min(current[j], previous2[j - 2] + 1)
        previous2, previous = previous, current
    return previous[-1]


def _looks_like(word: str, choice: str) -> bool:
    # A typo, not a different word: few edits for the length, and mostly the same letters.
    # (`worker` is not a misspelt `workspace`, nor `max_retries` a misspelt `max_turns`.)
    if len(word) >= 4 and choice.startswith(word):
        return True  # cut short: `interval` for `interval_ms`, `Merge` for `Merging`
    limit = max(1, min(len(word), len(choice)) // 4)
    similar = difflib.SequenceMatcher(None, word, choice).ratio() >= 0.75
    return edit_distance(word, choice) <= limit and similar


def suggestion(word: str, choices: Iterable[str]) -> str:
    """``"; did you mean 'x'?"`` for the closest choice that looks like a typo of it, or ``""``."""
    candidates = [c for c in choices if _looks_like(word, c)]
    if not candidates:
        return ""
    best = min(candidates, key=lambda c: (edit_distance(word, c), c))
    return f"; did you mean '{best}'?"
