"""What every policy rule is given: the policy under check and where its keys were written."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from orchestrator.workflow.catalog import settings
from orchestrator.workflow.layers import enclosing_location
from orchestrator.workflow.problems import Location, Problem, Severity
from orchestrator.workflow.provenance import Origin, OriginKind
from orchestrator.workflow.schema import Policy


@dataclass(frozen=True)
class RuleContext:
    """The policy under check and how to locate any of its keys for a message."""

    policy: Policy
    origins: Mapping[str, Origin]
    locations: Mapping[str, Location]
    default_location: Location

    def at(self, path: str) -> Location:
        """Where the value at ``path`` (a key, list item or mapping entry) was given."""
        base = _setting_path(path)
        origin = self.origins.get(base)
        if origin is not None and origin.kind is OriginKind.FILE:
            return self.locations.get(path, origin.location)
        if origin is not None and origin.kind is not OriginKind.DEFAULT:
            return origin.location
        return enclosing_location(base, self.locations, self.default_location)

    def error(self, path: str, message: str) -> Problem:
        return Problem(self.at(path), path, message)

    def warning(self, path: str, message: str) -> Problem:
        return Problem(self.at(path), path, message, Severity.WARNING)


def _setting_path(path: str) -> str:
    specs = settings()
    current = path
    while current and current not in specs:
        cut = max(current.rfind("."), current.rfind("["))
        if cut <= 0:
            break
        current = current[:cut]
    return current


Rule = Callable[[RuleContext], Iterator[Problem]]
