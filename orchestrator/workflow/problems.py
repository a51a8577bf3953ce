"""Problems found in a policy, as values, and the one exception type that carries them.

A :class:`Problem` says where (file, line, column or the environment variable or
command-line flag), which setting (its dotted key path) and what is wrong; its
``str()`` is the operator message, for example
``WORKFLOW.md:12:3: agent.max_turns: expected an integer, got 'ten'``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum


class Severity(StrEnum):
    """An error makes a policy unusable; a warning is shown but does not stop it."""

    ERROR = "error"
    WARNING = "warning"


@dataclass(frozen=True)
class Location:
    """Where a value came from: a file position, an environment variable or the command line."""

    source: str
    line: int | None = None
    column: int | None = None

    def __str__(self) -> str:
        if self.line is None:
            return self.source
        if self.column is None:
            return f"{self.source}:{self.line}"
        return f"{self.source}:{self.line}:{self.column}"


@dataclass(frozen=True)
class Problem:
    """One located problem with a policy, with the key path of the setting it concerns."""

    location: Location
    key: str | None
    message: str
    severity: Severity = Severity.ERROR

    @property
    def is_error(self) -> bool:
        return self.severity is Severity.ERROR

    def __str__(self) -> str:
        label = "warning: " if self.severity is Severity.WARNING else ""
        if self.key:
            return f"{self.location}: {self.key}: {label}{self.message}"
        return f"{self.location}: {label}{self.message}"


def sort_key(problem: Problem) -> tuple[str, int, int]:
    """Order problems by source, then line and column (unlocated ones first)."""
    loc = problem.location
    return (loc.source, loc.line or 0, loc.column or 0)


class WorkflowError(Exception):
    """Base class of the errors raised by :mod:`orchestrator.workflow`."""


class PolicyError(WorkflowError):
    """A policy file could not be loaded; ``problems`` lists every error found.

    Raised at start-up for a missing or invalid WORKFLOW.md (fatal), and by
    :func:`orchestrator.workflow.load_workflow`. The message is the errors, one
    per line, each naming the file, line, column and key.
    """

    def __init__(self, problems: Iterable[Problem]) -> None:
        self.problems: tuple[Problem, ...] = tuple(p for p in problems if p.is_error)
        super().__init__("\n".join(str(p) for p in self.problems) or "invalid policy")


class PromptRenderError(WorkflowError):
    """The prompt template failed while rendering for a dispatch; the message is located."""

    def __init__(self, location: Location, detail: str) -> None:
        super().__init__(f"{location}: prompt: {detail}")
        self.location = location
        self.detail = detail
