"""The issue tracker port: what the runtime needs from a tracker, whichever it is.

Adapters: GitHub Issues (:mod:`orchestrator.tracker.github_issues`), Linear
(:mod:`orchestrator.tracker.linear_bridge`) and an in-memory one
(:mod:`orchestrator.tracker.memory`) that honours the whole port.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from orchestrator.domain.actions import SideEffect
from orchestrator.domain.policy import FlowPolicy
from orchestrator.domain.record_updates import EffectResult
from orchestrator.domain.snapshot import IssueRef, ThreadComment, TrackedIssue

# The tracker state of a closed issue, whatever labels it still carries.
CLOSED_STATE = "Done"


@dataclass(frozen=True)
class TrackerSettings:
    """The tracker part of the policy, as the adapters need it."""

    repo: str
    required_labels: frozenset[str] = frozenset()
    # Tracker state (Todo, In Progress, ...) -> the label that represents it.
    state_labels: Mapping[str, str] = field(default_factory=dict)
    active_states: frozenset[str] = frozenset(
        {"Todo", "In Progress", "In Review", "Rework", "Merging"}
    )
    terminal_states: frozenset[str] = frozenset({"Done"})
    # The state of an open issue that carries no state label.
    default_state: str = "Todo"

    def state_of(self, labels: Iterable[str]) -> str:
        """The tracker state an issue with these labels is in."""
        by_label = {label: state for state, label in self.state_labels.items()}
        states = [by_label[label] for label in labels if label in by_label]
        return sorted(states)[0] if states else self.default_state

    def shown_state(self, labels: Iterable[str], is_open: bool) -> str:
        """The tracker state an issue shows: its state label while open, Done once closed."""
        return self.state_of(labels) if is_open else CLOSED_STATE

    def is_candidate(self, issue: TrackedIssue) -> bool:
        return (
            issue.is_open
            and self.required_labels <= issue.labels
            and (issue.tracker_state or self.default_state) in self.active_states
        )


class TrackerError(Exception):
    """A tracker refused a call, or the call failed on the way (the message says which)."""

    @property
    def summary(self) -> str:
        """One line for an effect's failure, naming the tracker."""
        return str(self)


@dataclass(frozen=True)
class IssueFacts:
    """What a turn's prompt shows of one issue, as its tracker has it."""

    identifier: str
    title: str
    body: str
    url: str
    id: str
    created_at: str | None = None
    updated_at: str | None = None


@dataclass(frozen=True)
class OwnComment:
    """A comment the daemon's own account wrote on an issue."""

    id: str
    body: str
    # GitHub's node id, to ask who last edited it; None where only a comment's author
    # can edit it (Linear), so its text is the daemon's own.
    node_id: str | None = None


@dataclass(frozen=True)
class DetailsAsk:
    """What one poll wants to know of an issue beyond its facts."""

    flow: FlowPolicy
    # Who may approve in the tracker (``tracker.approvers``).
    approvers: tuple[str, ...] = ()
    # Who added each approval label the issue carries (a human's approval by label).
    approval: bool = False
    # People's comments, while the issue waits for a reply to its question since then.
    replies_since: datetime | None = None


class IssueTracker(Protocol):
    """Where the issues come from, and where their side of the work is written.

    The runtime keys every issue by ``IssueRef(repo, number)``, ``repo`` being the
    GitHub repository of the code; an adapter maps that to its own issues. The
    GitHub repository's own issues are always read with its pull requests (the
    repository stop label, the pull requests' labels); an adapter adds what its
    tracker holds beyond them. Reads and writes raise :class:`TrackerError` (or the
    GitHub client's errors for the GitHub adapter) when the tracker refuses.
    """

    settings: TrackerSettings

    # -- the poll -----------------------------------------------------------

    def fetch_candidates(self) -> list[TrackedIssue]:
        """Open issues with the required labels in an active state."""

    def refresh_by_ids(self, refs: Iterable[IssueRef]) -> dict[IssueRef, TrackedIssue]:
        """The current facts of these issues (closed ones included; missing ones left out)."""

    def changes(self) -> set[int]:
        """The numbers of tracked issues that moved since the last call, beyond what the
        GitHub repository's feed shows."""

    def repo_stopped(self, *, fresh: bool = False) -> bool:
        """Whether an open issue of the tracker, beyond the GitHub repository's own issues,
        carries the repository stop label: as last polled, or read now with ``fresh``."""

    def with_details(self, issue: TrackedIssue, ask: DetailsAsk) -> TrackedIssue:
        """``issue`` with what ``ask`` wants: who added each approval label it shows, and
        people's comments since the question. Unreadable details are left out (logged):
        no evidence, no approval."""

    def forget_except(self, live: set[IssueRef]) -> None:
        """Drop what is remembered of issues no longer tracked."""

    # -- one issue, read now ---------------------------------------------------

    def labels_now(self, ref: IssueRef) -> frozenset[str]:
        """The issue's labels read now (the kill switch right before a write)."""

    def facts(self, ref: IssueRef) -> IssueFacts:
        """What the prompt shows of the issue."""

    def thread(self, ref: IssueRef, since: datetime) -> tuple[ThreadComment, ...]:
        """Comments on the issue by others than the daemon, at least those after ``since``."""

    def own_workpads(self, ref: IssueRef) -> list[OwnComment]:
        """Every workpad comment the daemon's account wrote on the issue, oldest first
        (more than one is for a person to sort out)."""

    def confirm(self, effect: SideEffect) -> EffectResult | None:
        """The result of a write to the issue if the tracker shows it happened (after a
        crash); None when it cannot be confirmed (it is planned again)."""

    # -- writes -------------------------------------------------------------

    def set_tracker_state(self, ref: IssueRef, state: str) -> None:
        """Move the issue to ``state`` (replacing any other state)."""

    def upsert_workpad(self, ref: IssueRef, marker: str, body: str) -> EffectResult:
        """Write the issue's workpad comment (found before one is created)."""

    def upsert_comment(self, ref: IssueRef, marker: str, body: str) -> EffectResult:
        """Write the daemon's comment found by its hidden ``marker``, once."""

    def close(
        self, ref: IssueRef, *, reason: str, state: str, keep: frozenset[str] = frozenset()
    ) -> EffectResult:
        """Show the issue in ``state`` and close it (``reason``: GitHub's state reason);
        ``keep`` names labels the move leaves on the issue (approval labels)."""
