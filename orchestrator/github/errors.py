"""Outcomes of GitHub calls that did not succeed, as values.

``RateLimited`` and ``GitHubError`` are exceptions inside the client so any
depth of call can stop at once, and plain values at the helpers' boundary:
every runtime helper returns them instead of raising. Neither ever holds a
token: messages are redacted when built.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from orchestrator.logs import redact_text


@dataclass(frozen=True)
class RateLimited(Exception):
    """The primary hourly budget of ``resource`` is spent until ``reset_at``."""

    resource: str
    reset_at: datetime
    route: str

    def __str__(self) -> str:
        return f"GitHub {self.resource} budget spent on {self.route}; resets at {self.reset_at}"


@dataclass(frozen=True)
class GitHubError(Exception):
    """GitHub answered ``status`` on ``route`` (``METHOD /path``), or the call failed."""

    route: str
    status: int
    message: str
    # Whether trying again later may succeed (5xx, secondary limits, network).
    retryable: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "message", redact_text(self.message)[:2000])

    def __str__(self) -> str:
        return f"{self.route}: HTTP {self.status}: {self.message}"


Problem = RateLimited | GitHubError
