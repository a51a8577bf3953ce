"""Map the operator's :class:`Policy` onto the domain core's :class:`FlowPolicy`.

The pure core (``orchestrator.domain``) reads its own frozen value; this is the
one place that knows how WORKFLOW.md keys correspond to it.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from orchestrator.domain import policy as domain
from orchestrator.domain.phases import RolloutMode
from orchestrator.workflow.schema import MergeMode, Policy, TrackerKind

_MERGE_MODES = {
    MergeMode.AUTO: domain.MergeMode.RUNTIME,
    MergeMode.DISABLED: domain.MergeMode.EXTERNAL,
}


def flow_policy(policy: Policy) -> domain.FlowPolicy:
    """The domain core's view of ``policy``."""
    rollout = policy.rollout
    orchestration = policy.orchestration
    agent = policy.agent
    review = policy.review
    merge = policy.merge
    pr = policy.pr
    return domain.FlowPolicy(
        rollout_mode=rollout.mode,
        mode_labels={
            rollout.observe_label: RolloutMode.OBSERVE,
            rollout.mutate_label: RolloutMode.MUTATE,
        },
        kill_switch_label=rollout.kill_switch_label,
        repo_kill_switch_label=rollout.repo_kill_switch_label,
        ownership_label=orchestration.ownership.required_label,
        workpad_marker=orchestration.ownership.required_workpad_marker,
        default_phase=orchestration.default_phase,
        passive_phases=frozenset(orchestration.passive_phases),
        max_rework_cycles=orchestration.max_rework_cycles,
        max_concurrent_agents=agent.max_concurrent_agents,
        max_concurrent_agents_by_phase=dict(agent.max_concurrent_agents_by_phase),
        max_retry_backoff_ms=agent.max_retry_backoff_ms,
        max_failed_attempts=orchestration.max_failed_attempts,
        review=domain.ReviewPolicy(
            enabled=review.enabled,
            max_passes=review.max_passes,
            fix_consideration_severities=frozenset(review.fix_consideration_severities),
            bounce_threshold=review.bounce_threshold,
            act_on=review.act_on,
        ),
        merge=domain.MergePolicy(
            mode=_MERGE_MODES[merge.mode],
            method=merge.method,
            require_green_checks=merge.require_green_checks,
            required_checks=merge.required_checks,
            require_human_approval=merge.require_human_approval,
            approval_states=merge.approval_states,
            approval_source=merge.approval_source,
            approval_label=merge.approval_label,
        ),
        pr=domain.PRPolicy(
            base_branch=pr.base_branch,
            branch_prefix=pr.branch_prefix,
            draft=pr.draft,
            update_description=pr.update_description,
            reviewers=pr.reviewers,
            closes_issue=pr.closes_issue,
            web_base=github_web_base(policy),
        ),
        state_labels=state_labels(policy),
        priority_labels=orchestration.priority_labels,
    )


def github_endpoint(policy: Policy) -> str:
    """Where the GitHub API of ``tracker.repo`` is: ``tracker.endpoint`` names Linear's for
    kind linear, and ``tracker.github_endpoint`` GitHub's."""
    tracker = policy.tracker
    return tracker.github_endpoint if tracker.kind is TrackerKind.LINEAR else tracker.endpoint


def github_web_base(policy: Policy) -> str:
    """Where GitHub's web pages are, from its API endpoint: ``https://github.com`` for
    ``api.github.com``, the server for an Enterprise server's ``/api/v3``, ``<name>.ghe.com``
    for ``api.<name>.ghe.com``, the endpoint itself otherwise (an emulator)."""
    endpoint = github_endpoint(policy).rstrip("/")
    if endpoint == "https://api.github.com":
        return "https://github.com"
    if endpoint.endswith("/api/v3"):
        return endpoint[: -len("/api/v3")]
    parts = urlsplit(endpoint)
    host = parts.hostname or ""
    if host.startswith("api.") and host.endswith(".ghe.com") and not parts.path.strip("/"):
        return f"{parts.scheme}://{host[len('api.') :]}"
    return endpoint


def state_labels(policy: Policy) -> dict[str, str]:
    """Tracker state -> the label the core sees it as.

    Linear's states are states, not labels: the core still sees the issue's state
    as its label (the tracker shows it), so an approval state with no label of its
    own in ``tracker.state_labels`` gets one, ``state:<its name in lower case>``.
    """
    labels = dict(policy.tracker.state_labels)
    if policy.tracker.kind is TrackerKind.LINEAR:
        for state in policy.merge.approval_states:
            labels.setdefault(state, "state:" + "-".join(state.lower().split()))
    return labels
