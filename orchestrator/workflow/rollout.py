"""The rollout mode in effect for one issue: the policy's mode, lowered (never raised) by labels."""

from __future__ import annotations

from collections.abc import Iterable

from orchestrator.domain.phases import RolloutMode
from orchestrator.workflow.schema import Policy


def effective_rollout_mode(policy: Policy, labels: Iterable[str]) -> RolloutMode:
    """``rollout.mode`` lowered by the issue's ``rollout.observe_label`` or ``mutate_label``.

    GitHub compares label names without regard to case, and so does this. A
    label can only lower the mode: ``orchestrator:mutate`` on an issue under an
    observe policy leaves it in observe.
    """
    present = {label.casefold() for label in labels}
    rollout = policy.rollout
    mode = rollout.mode
    if rollout.observe_label.casefold() in present:
        mode = mode.lowered_to(RolloutMode.OBSERVE)
    if rollout.mutate_label.casefold() in present:
        mode = mode.lowered_to(RolloutMode.MUTATE)
    return mode
