"""Build the typed :class:`~orchestrator.workflow.schema.Policy` from the layers of precedence.

For every setting the strongest layer that gives it wins (flag > environment >
file > default); its raw value is converted to the setting's type and its
origin is remembered. Conversion problems are located at the winning value.
"""

from __future__ import annotations

import dataclasses
import os
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from types import MappingProxyType
from typing import Any

from orchestrator.state_home import expand_path
from orchestrator.workflow.app_key import key_file_absolute
from orchestrator.workflow.catalog import SettingSpec, settings
from orchestrator.workflow.coerce import Conversion, ConversionError, convert
from orchestrator.workflow.layers import Layer, enclosing_location
from orchestrator.workflow.problems import Location, Problem
from orchestrator.workflow.provenance import Origin, OriginKind
from orchestrator.workflow.schema import Policy, TrackerAuth, TrackerKind


@dataclass(frozen=True)
class Built:
    """The outcome of building: the policy (None on errors), origins, references and problems."""

    policy: Policy | None
    values: Mapping[str, object]
    origins: Mapping[str, Origin]
    references: Mapping[str, tuple[str, ...]]
    problems: tuple[Problem, ...]


def _as_raw(default: object) -> object:
    # Defaults are typed; give them the raw shape the converter reads from YAML.
    if isinstance(default, StrEnum):
        return default.value
    if isinstance(default, Path):
        return str(default)
    if isinstance(default, tuple):
        return [_as_raw(item) for item in default]
    if isinstance(default, Mapping):
        return {str(_as_raw(k)): _as_raw(v) for k, v in default.items()}
    return default


def _problem_location(origin: Origin, path: str, positions: Mapping[str, Location]) -> Location:
    if origin.kind is OriginKind.FILE:
        return positions.get(path, origin.location)
    if origin.kind is OriginKind.DEFAULT:
        return enclosing_location(path, positions, origin.location)
    return origin.location


def sqlite_absolute(url: str, base_dir: Path) -> str:
    """A ``sqlite:///PATH`` URL with ``PATH`` expanded and made absolute against ``base_dir``."""
    prefix = "sqlite:///"
    if not url.startswith(prefix):
        return url
    rest = url[len(prefix) :]
    path, sep, query = rest.partition("?")
    if not path or path == ":memory:":
        return url
    expanded = Path(expand_path(path))
    if not expanded.is_absolute():
        expanded = base_dir / expanded
    return f"{prefix}{os.path.normpath(expanded)}{sep}{query}"


def build_policy(
    layers: Sequence[Layer],
    *,
    env: Mapping[str, str],
    base_dir: Path,
    default_location: Location,
    item_locations: Mapping[str, Location],
) -> Built:
    """Merge ``layers`` (strongest first) over the defaults and convert every value.

    ``item_locations`` locates file values inside lists and mappings
    (``pr.required_labels[1]``) so a bad item is reported where it is written.
    """
    values: dict[str, object] = {}
    origins: dict[str, Origin] = {}
    references: dict[str, tuple[str, ...]] = {}
    problems: list[Problem] = []
    for path, spec in settings().items():
        winner = next((layer[path] for layer in layers if path in layer), None)
        if winner is None:
            origin = Origin(OriginKind.DEFAULT, default_location)
            raw, textual = _as_raw(spec.default), False
        else:
            origin, raw, textual = winner.origin, winner.value, winner.textual
        if _unused(spec, values, origin):
            values[path], origins[path] = None, origin
            continue
        conversion = Conversion(spec, env, base_dir, textual)
        try:
            value = convert(conversion, raw)
        except ConversionError as exc:
            where = _problem_location(origin, path + exc.subpath, item_locations)
            key = path + exc.subpath
            suffix = " (the default)" if origin.kind is OriginKind.DEFAULT else ""
            problems.append(Problem(where, key, exc.message + suffix))
            continue
        if path == "database.url" and isinstance(value, str):
            value = sqlite_absolute(value, base_dir)
        if path == "tracker.endpoint" and origin.kind is OriginKind.DEFAULT:
            value = _default_endpoint(values.get("tracker.kind"), value)
        if path == "tracker.private_key_file" and isinstance(value, str):
            value = key_file_absolute(value, base_dir)
        for sub, variables in conversion.references.items():
            references[path + sub] = variables
        values[path] = value
        origins[path] = dataclasses.replace(origin, variables=conversion.references.get("", ()))
    policy = None if problems else _assemble(Policy, "", values)
    return Built(
        policy=policy,
        values=MappingProxyType(values),
        origins=MappingProxyType(origins),
        references=MappingProxyType(references),
        problems=tuple(problems),
    )


LINEAR_ENDPOINT = "https://api.linear.app/graphql"


def _default_endpoint(kind: object, value: object) -> object:
    # One key names the tracker's API; its default depends on the tracker.
    return LINEAR_ENDPOINT if kind is TrackerKind.LINEAR else value


def _unused(spec: SettingSpec, values: Mapping[str, object], origin: Origin) -> bool:
    # A daemon running as a GitHub App needs no token: do not insist on
    # $GITHUB_TOKEN for it; nor on $LINEAR_API_KEY for a tracker other than Linear.
    if origin.kind is not OriginKind.DEFAULT:
        return False
    kind = values.get("tracker.kind")
    if spec.path == "tracker.token":
        return values.get("tracker.auth") is TrackerAuth.APP
    if spec.path == "tracker.api_key":
        return kind is not TrackerKind.LINEAR
    return False


def _assemble(cls: type[Any], prefix: str, values: Mapping[str, object]) -> Any:
    hints = typing.get_type_hints(cls)
    kwargs: dict[str, object] = {}
    for f in dataclasses.fields(cls):
        path = prefix + f.name
        if f.metadata.get("section"):
            kwargs[f.name] = _assemble(hints[f.name], path + ".", values)
        else:
            kwargs[f.name] = values[path]
    return cls(**kwargs)
