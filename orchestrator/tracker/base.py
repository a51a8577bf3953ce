"""What the runtime needs from an issue tracker, independent of GitHub."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from orchestrator.domain.snapshot import IssueRef, TrackedIssue

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


class Tracker(Protocol):
    """An issue tracker seen by the runtime."""

    settings: TrackerSettings

    def fetch_candidates(self) -> list[TrackedIssue]:
        """Open issues with the required labels in an active state."""

    def refresh_by_ids(self, refs: Iterable[IssueRef]) -> dict[IssueRef, TrackedIssue]:
        """The current facts of these issues (closed ones included; missing ones left out)."""

    def set_tracker_state(self, ref: IssueRef, state: str) -> None:
        """Move the issue to ``state`` (replacing any other state label)."""
