"""Where each effective setting came from: a flag, an environment override, the file, a default."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from orchestrator.workflow.problems import Location

COMMAND_LINE = "command line"


class OriginKind(StrEnum):
    """The layers of precedence, strongest first."""

    FLAG = "flag"
    ENV = "env"
    FILE = "file"
    DEFAULT = "default"


# Strongest first: a flag beats an environment override, which beats the file.
PRECEDENCE: tuple[OriginKind, ...] = (
    OriginKind.FLAG,
    OriginKind.ENV,
    OriginKind.FILE,
    OriginKind.DEFAULT,
)


@dataclass(frozen=True)
class Origin:
    """The layer an effective value came from and where exactly (file position, variable)."""

    kind: OriginKind
    location: Location
    # The ``$VAR`` references the value was read through, if any.
    variables: tuple[str, ...] = ()

    def __str__(self) -> str:
        if self.kind is OriginKind.FILE:
            text = f"file {self.location}"
        elif self.kind is OriginKind.ENV:
            text = str(self.location)
        else:
            text = self.kind.value
        if self.variables:
            text += " via " + ", ".join(f"${name}" for name in self.variables)
        return text


def env_location(name: str) -> Location:
    """The location of a value given by the environment variable ``name``."""
    return Location(f"env {name}")


def flag_location() -> Location:
    """The location of a value given on the command line."""
    return Location(COMMAND_LINE)
