"""Raw values from each layer of precedence: the file's front matter, the environment, flags.

Each layer gives, per dotted key, the raw value and where it came from. Keys
that match no setting are errors with a did-you-mean suggestion, in every layer:
a typo in an override must not be silently ignored. The file's keys of
Symphony's dialect are read by :mod:`orchestrator.workflow.import_symphony` instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from orchestrator.workflow.catalog import groups, settings, suggestion
from orchestrator.workflow.coerce import describe
from orchestrator.workflow.document import Document, Position
from orchestrator.workflow.import_symphony.keys import lookup
from orchestrator.workflow.import_symphony.reading import Reading, read_foreign
from orchestrator.workflow.problems import Location, Problem
from orchestrator.workflow.provenance import Origin, OriginKind, env_location, flag_location

ENV_PREFIX = "ORCHESTRATOR_"
ENV_SEPARATOR = "__"


@dataclass(frozen=True)
class RawValue:
    """A value as a layer gave it, before conversion; ``textual`` when it arrived as text."""

    value: object
    origin: Origin
    textual: bool


Layer = dict[str, RawValue]


def file_location(source: str, position: Position | None) -> Location:
    if position is None:
        return Location(source)
    return Location(source, position.line, position.column)


def enclosing_location(
    path: str, locations: Mapping[str, Location], fallback: Location
) -> Location:
    """The position of the nearest enclosing section of ``path`` written in the file.

    A problem with a default value is shown at its section (``agent:``) when
    the file has that section, else at the file itself.
    """
    parts = path.split(".")
    for depth in range(len(parts) - 1, 0, -1):
        parent = ".".join(parts[:depth])
        if parent in locations:
            return locations[parent]
    return fallback


def from_document(document: Document, source: str) -> tuple[Layer, list[Problem]]:
    """The settings written in the front matter."""
    layer, problems, _ = read_document(document, source)
    return layer, problems


def read_document(document: Document, source: str) -> tuple[Layer, list[Problem], Reading]:
    """The front matter's settings, its problems, and how its Symphony-dialect keys were read."""
    layer: Layer = {}
    problems: list[Problem] = []
    written: list[tuple[str, object]] = []
    if document.config is not None:
        _walk_group(document, source, "", document.config, into=(layer, problems), foreign=written)
    # Symphony's and pi-symphony's keys: read as ours where they have an equivalent.
    native = {path: raw.value for path, raw in layer.items()}
    reading = read_foreign(document, source, written, native)
    for mapped in reading.mapped:
        origin = Origin(OriginKind.FILE, mapped.location)
        layer[mapped.target] = RawValue(mapped.value, origin, textual=False)
    problems += reading.problems
    return layer, problems, reading


def _walk_group(
    document: Document,
    source: str,
    prefix: str,
    data: Mapping[str, object],
    *,
    into: tuple[Layer, list[Problem]],
    foreign: list[tuple[str, object]],
) -> None:
    layer, problems = into
    known = groups()
    names = known.get(prefix, ())
    specs = settings()
    for key, value in data.items():
        path = f"{prefix}.{key}" if prefix else key
        where = file_location(source, document.positions.get(path))
        if key not in names and lookup(path) is not None:
            foreign.append((path, value))
            continue
        if key not in names:
            what = "unknown section" if not prefix else "unknown key"
            problems.append(Problem(where, path, what + suggestion(key, names)))
            continue
        if path in specs:
            origin = Origin(OriginKind.FILE, where)
            layer[path] = RawValue(value, origin, textual=False)
            continue
        if value is None:
            # An empty section (`agent:` with everything commented out) keeps its defaults.
            continue
        if not isinstance(value, dict):
            problems.append(
                Problem(where, path, f"expected a mapping of settings, got {describe(value)}")
            )
            continue
        _walk_group(document, source, path, value, into=into, foreign=foreign)


def env_path(name: str) -> str | None:
    """The dotted key an ``ORCHESTRATOR_SECTION__KEY`` variable names, or None."""
    if not name.startswith(ENV_PREFIX):
        return None
    rest = name[len(ENV_PREFIX) :]
    if ENV_SEPARATOR not in rest:
        return None
    return rest.lower().replace(ENV_SEPARATOR, ".")


def from_environment(env: Mapping[str, str]) -> tuple[Layer, list[Problem]]:
    """Overrides named ``ORCHESTRATOR_<SECTION>__<KEY>`` (``__`` between each level)."""
    layer: Layer = {}
    problems: list[Problem] = []
    specs = settings()
    for name in sorted(env):
        path = env_path(name)
        if path is None:
            continue
        where = env_location(name)
        if path not in specs:
            problems.append(Problem(where, path, "unknown setting" + suggestion(path, specs)))
            continue
        layer[path] = RawValue(env[name], Origin(OriginKind.ENV, where), textual=True)
    return layer, problems


def from_flags(flags: Mapping[str, object]) -> tuple[Layer, list[Problem]]:
    """Command-line overrides by dotted key; string values are parsed like environment text."""
    layer: Layer = {}
    problems: list[Problem] = []
    specs = settings()
    where = flag_location()
    for path, value in flags.items():
        if path not in specs:
            problems.append(Problem(where, path, "unknown setting" + suggestion(path, specs)))
            continue
        layer[path] = RawValue(
            value, Origin(OriginKind.FLAG, where), textual=isinstance(value, str)
        )
    return layer, problems
