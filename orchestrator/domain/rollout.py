"""The rollout mode in effect for one issue: the policy's mode, lowered (never raised) by labels.

A mode label (``rollout.observe_label``, ``rollout.mutate_label``) on the issue
or on its pull request lowers the mode for that issue alone: ``orchestrator:mutate``
on an issue under an observe policy leaves it in observe. The planner decides
with this mode and the side-effect gate refuses what it does not allow, both
through :func:`effective_mode`. Label names compare as GitHub compares them,
without regard to case.
"""

from __future__ import annotations

from collections.abc import Iterable

from orchestrator.domain.labels import has_label
from orchestrator.domain.phases import RolloutMode
from orchestrator.domain.policy import FlowPolicy
from orchestrator.domain.snapshot import IssueSnapshot


def effective_mode(policy: FlowPolicy, *labels: Iterable[str]) -> RolloutMode:
    """The policy's mode lowered by every mode label found in any of ``labels``."""
    mode = policy.rollout_mode
    for label, lowered in policy.mode_labels.items():
        if any(has_label(found, label) for found in labels):
            mode = mode.lowered_to(lowered)
    return mode


def issue_mode(item: IssueSnapshot, policy: FlowPolicy) -> RolloutMode:
    """The mode of one issue, lowered by the labels of the issue and of its pull request."""
    if item.pr is None:
        return effective_mode(policy, item.issue.labels)
    return effective_mode(policy, item.issue.labels, item.pr.labels)
