"""Rules of the ``merge`` section: head match, approval states and what merges unattended."""

from __future__ import annotations

from collections.abc import Iterator

from orchestrator.domain.phases import RolloutMode
from orchestrator.workflow.catalog import suggestion
from orchestrator.workflow.problems import Problem
from orchestrator.workflow.rules.context import RuleContext
from orchestrator.workflow.schema import ApprovalSource, MergeMode, TrackerKind


def check_merge(ctx: RuleContext) -> Iterator[Problem]:
    """Merges only reviewed heads, with approvals that can be given."""
    policy = ctx.policy
    merge = policy.merge
    tracker = policy.tracker
    if not merge.require_head_match:
        yield ctx.error(
            "merge.require_head_match",
            "must stay true: merging without the expected head SHA could merge a commit "
            "nobody reviewed",
        )
    by_label = merge.approval_source in (ApprovalSource.LABEL, ApprovalSource.EITHER)
    if (
        merge.require_human_approval
        and by_label
        and not merge.approval_states
        and merge.approval_label is None
    ):
        yield ctx.error(
            "merge.approval_states",
            f"merge.require_human_approval with approval_source {merge.approval_source} needs "
            "at least one approval state (or merge.approval_label)",
        )
    for index, state in enumerate(merge.approval_states):
        path = f"merge.approval_states[{index}]"
        if state not in tracker.active_states:
            yield ctx.error(
                path,
                f"'{state}' is not in tracker.active_states"
                + suggestion(state, tracker.active_states),
            )
        elif (
            by_label
            and tracker.kind is not TrackerKind.LINEAR
            and state not in tracker.state_labels
        ):
            yield ctx.error(path, f"'{state}' has no label in tracker.state_labels")
    if merge.completion_state not in tracker.terminal_states:
        yield ctx.error(
            "merge.completion_state",
            f"'{merge.completion_state}' is not in tracker.terminal_states"
            + suggestion(merge.completion_state, tracker.terminal_states),
        )
    if merge.mode is MergeMode.AUTO and policy.rollout.mode is not RolloutMode.MERGE:
        yield ctx.warning(
            "merge.mode",
            f"merge disabled by rollout mode: merge.mode is auto but rollout.mode is "
            f"{policy.rollout.mode}, so nothing is merged until rollout.mode is merge",
        )
    if merge.mode is MergeMode.AUTO and not merge.require_green_checks:
        yield ctx.warning("merge.require_green_checks", "is false: heads merge with failing checks")
    if merge.mode is MergeMode.AUTO and not policy.review.enabled:
        yield ctx.warning("review.enabled", "is false: heads merge without a self-review")
