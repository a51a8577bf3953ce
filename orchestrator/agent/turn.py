"""What the runtime asks of one agent turn, and the one typed answer it gets back."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from pathlib import Path

from orchestrator.agent.events import TokenUsage
from orchestrator.agent.head import HeadSnapshot
from orchestrator.agent.result_files import ResultFile, ResultFiles
from orchestrator.agent.workspace import Workspace
from orchestrator.domain.phases import Phase
from orchestrator.domain.snapshot import AgentOutcome, OutcomeKind


class TurnOutcome(StrEnum):
    """How a turn ended; each watchdog has its own value."""

    COMPLETED = "completed"
    FAILED = "failed"
    SESSION_START_TIMEOUT = "session_start_timeout"
    STALLED = "stalled"
    TURN_TIMEOUT = "turn_timeout"
    CANCELLED = "cancelled"
    INVALID_RESULTS = "invalid_results"
    HOOK_FAILED = "hook_failed"

    @property
    def is_watchdog(self) -> bool:
        return self in (
            TurnOutcome.SESSION_START_TIMEOUT,
            TurnOutcome.STALLED,
            TurnOutcome.TURN_TIMEOUT,
        )


# Bad result files are not a process failure: the domain reads them from the files' errors.
_OUTCOME_KIND = {
    TurnOutcome.COMPLETED: OutcomeKind.SUCCEEDED,
    TurnOutcome.INVALID_RESULTS: OutcomeKind.SUCCEEDED,
    TurnOutcome.FAILED: OutcomeKind.FAILED,
    TurnOutcome.HOOK_FAILED: OutcomeKind.FAILED,
    TurnOutcome.SESSION_START_TIMEOUT: OutcomeKind.START_TIMEOUT,
    TurnOutcome.STALLED: OutcomeKind.TIMED_OUT,
    TurnOutcome.TURN_TIMEOUT: OutcomeKind.TIMED_OUT,
    TurnOutcome.CANCELLED: OutcomeKind.CANCELLED,
}


def new_run_id() -> str:
    """A short random id for one turn (log files, logs, the agent's environment)."""
    return uuid.uuid4().hex[:16]


@dataclass(frozen=True)
class TurnRequest:
    """One turn: which workspace, which prompt, for which phase and attempt.

    ``resume_session_id`` continues the agent's earlier session where the
    preset supports it; ``required_results`` lists files whose absence makes
    the turn fail with ``invalid_results``.
    """

    workspace: Workspace
    prompt: str
    phase: Phase
    attempt: int = 1
    run_id: str = field(default_factory=new_run_id)
    resume_session_id: str | None = None
    required_results: frozenset[ResultFile] = frozenset()
    # Tokens the resumed session's earlier turns already recorded (for agents that
    # report a session's running total).
    usage_baseline: TokenUsage | None = None

    def __post_init__(self) -> None:
        if self.attempt < 1:
            raise ValueError(f"attempt must be 1 or more, got {self.attempt}")


@dataclass(frozen=True)
class TurnResult:
    """Everything the runtime needs to know about a finished turn.

    Times are seconds measured from the start of the agent process;
    ``first_event_after_s`` is None when the agent never emitted an event.
    """

    run_id: str
    phase: Phase
    outcome: TurnOutcome
    message: str
    exit_code: int | None
    started_at: datetime
    finished_at: datetime
    duration_s: float
    events: int
    malformed_lines: int
    first_event_after_s: float | None
    last_event_after_s: float | None
    usage: TokenUsage
    session_id: str | None
    head_before: HeadSnapshot
    head_after: HeadSnapshot
    results: ResultFiles
    stderr_log: Path
    stderr_tail: str
    last_message: str | None
    command: str
    # What the turn cost in US dollars, when the agent reports it.
    cost_usd: float | None = None

    @property
    def succeeded(self) -> bool:
        return self.outcome is TurnOutcome.COMPLETED

    @property
    def committed(self) -> bool:
        """Whether HEAD moved to a new commit during the turn."""
        return self.head_after.sha is not None and self.head_after.sha != self.head_before.sha

    @property
    def new_commits(self) -> int:
        """Commits on HEAD beyond the remote branch (or the base branch when never pushed)."""
        return self.head_after.ahead or 0

    def to_agent_outcome(self) -> AgentOutcome:
        """The domain's record of this turn: its kind, HEADs, and each file or its error."""
        results = self.results
        return AgentOutcome(
            run_id=self.run_id,
            phase=self.phase,
            kind=_OUTCOME_KIND[self.outcome],
            started_at=self.started_at,
            finished_at=self.finished_at,
            head_before=self.head_before.sha,
            head_after=self.head_after.sha,
            review=results.review or results.error_for(ResultFile.REVIEW),
            fix_summary=results.fix_summary or results.error_for(ResultFile.FIX_SUMMARY),
            blocked=results.blocked or results.error_for(ResultFile.BLOCKED),
            pr_description=results.pr_description or results.error_for(ResultFile.PR_DESCRIPTION),
            reason=None if self.succeeded else " ".join(self.message.split())[:500] or None,
        )
