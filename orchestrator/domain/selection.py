"""Which issues go first, and the rollout mode that applies to each one."""

from __future__ import annotations

from datetime import datetime

from orchestrator.domain.phases import RolloutMode
from orchestrator.domain.policy import FlowPolicy
from orchestrator.domain.snapshot import IssueSnapshot

OrderKey = tuple[int, datetime, str, int]


def priority_rank(labels: frozenset[str], policy: FlowPolicy) -> int:
    """0 for the most urgent priority label; issues without one rank after all others."""
    for rank, label in enumerate(policy.priority_labels):
        if label in labels:
            return rank
    return len(policy.priority_labels)


def candidate_order(item: IssueSnapshot, policy: FlowPolicy) -> OrderKey:
    """Sort key: priority label, then oldest, then number."""
    issue = item.issue
    return (
        priority_rank(issue.labels, policy),
        issue.created_at,
        issue.ref.repo,
        issue.ref.number,
    )


def effective_mode(item: IssueSnapshot, policy: FlowPolicy) -> RolloutMode:
    """The policy's rollout mode, lowered (never raised) by mode labels on the issue or PR."""
    mode = policy.rollout_mode
    if not policy.mode_labels:
        return mode
    labels = item.issue.labels
    pr_labels = item.pr.labels if item.pr is not None else frozenset()
    for label, lowered in policy.mode_labels.items():
        if label in labels or label in pr_labels:
            mode = mode.lowered_to(lowered)
    return mode
