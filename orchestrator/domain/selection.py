"""Which issues go first: the priority labels' rank, then the oldest issue.

The rank also gives the prompt its ``issue.priority``. Label names compare as
GitHub compares them, without regard to case.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from orchestrator.domain.labels import fold, folded
from orchestrator.domain.policy import FlowPolicy
from orchestrator.domain.snapshot import IssueSnapshot

OrderKey = tuple[int, datetime, str, int]


def priority_rank(labels: Iterable[str], policy: FlowPolicy) -> int:
    """0 for the most urgent priority label; issues without one rank after all others."""
    present = folded(labels)
    for rank, label in enumerate(policy.priority_labels):
        if fold(label) in present:
            return rank
    return len(policy.priority_labels)


def issue_priority(labels: Iterable[str], policy: FlowPolicy) -> int | None:
    """The prompt's ``issue.priority`` (Symphony's): 1 for the most urgent priority
    label, 2 for the next, ...; None without one."""
    rank = priority_rank(labels, policy)
    return rank + 1 if rank < len(policy.priority_labels) else None


def candidate_order(item: IssueSnapshot, policy: FlowPolicy) -> OrderKey:
    """Sort key: priority label, then oldest, then number."""
    issue = item.issue
    return (
        priority_rank(issue.labels, policy),
        issue.created_at,
        issue.ref.repo,
        issue.ref.number,
    )
