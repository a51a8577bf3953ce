"""How one operator hook ended: which of the four moments it ran at, and its result.

Plain values with no dependencies, so that :class:`~orchestrator.agent.errors.HookFailed`
can carry a result without the error module importing the hook runner.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class HookName(StrEnum):
    """The four moments a hook can run at."""

    AFTER_CREATE = "after_create"
    BEFORE_RUN = "before_run"
    AFTER_RUN = "after_run"
    BEFORE_REMOVE = "before_remove"

    @property
    def aborts_on_failure(self) -> bool:
        return self in (HookName.AFTER_CREATE, HookName.BEFORE_RUN)


@dataclass(frozen=True)
class HookResult:
    """How one hook ended, with its output truncated for the log."""

    name: HookName
    exit_code: int | None
    timed_out: bool
    cancelled: bool
    output: str
    duration_s: float

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out and not self.cancelled

    def describe(self) -> str:
        """A short phrase for messages: 'timed out', 'exited with code 3', ..."""
        if self.timed_out:
            return "timed out"
        if self.cancelled:
            return "was cancelled"
        if self.exit_code is not None and self.exit_code < 0:
            return f"was killed by signal {-self.exit_code}"
        return f"exited with code {self.exit_code}"
