"""One policy version as the daemon uses it, per repository, and which repositories it names."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from orchestrator.domain.policy import FlowPolicy
from orchestrator.github.retry import RetryPolicy
from orchestrator.workflow import Workflow, flow_policy
from orchestrator.workflow.schema import Policy, TrackerKind


class WiringError(Exception):
    """The policy cannot drive the daemon (names the setting to change)."""


def policy_repos(policy: Policy) -> tuple[str, ...]:
    """The repositories the policy names: ``tracker.repo``, then ``tracker.repos`` (each once).

    Empty when only ``tracker.repo_opt_in_label`` says which (found on GitHub).
    """
    tracker = policy.tracker
    if tracker.kind is TrackerKind.LINEAR:
        return (policy_repo(policy),)
    named = [tracker.repo] if tracker.repo else []
    seen = {name.lower() for name in named}
    for repo in tracker.repos:
        if repo.lower() not in seen:
            named.append(repo)
            seen.add(repo.lower())
    if not named and tracker.repo_opt_in_label is None:
        policy_repo(policy)  # raises the error naming the setting
    return tuple(named)


def policy_repo(policy: Policy) -> str:
    """The repository the daemon's credential is found from: ``tracker.repo``, else the first
    of ``tracker.repos``."""
    repo = policy.tracker.repo or next(iter(policy.tracker.repos), None)
    if policy.tracker.kind is TrackerKind.LINEAR:
        if not repo:
            raise WiringError(
                "tracker.repo: kind linear needs the GitHub repository the pull requests go to"
            )
        return repo
    if policy.tracker.kind is not TrackerKind.GITHUB or not repo:
        raise WiringError(
            "tracker.kind: the daemon needs a github tracker with tracker.repo set "
            f"(kind is {policy.tracker.kind.value})"
        )
    return repo


def github_retry(policy: Policy) -> RetryPolicy:
    """How GitHub API calls that failed transiently are tried again (``tracker.retry``)."""
    retry = policy.tracker.retry
    return RetryPolicy(
        max_attempts=retry.max_attempts,
        base_delay_s=retry.base_delay_ms / 1000,
        max_delay_s=retry.max_delay_ms / 1000,
    )


def is_linear(policy: Policy) -> bool:
    """Whether the policy's issues live in Linear (the code and pull requests on GitHub)."""
    return policy.tracker.kind is TrackerKind.LINEAR


@dataclass(frozen=True)
class PolicyView:
    """One policy version as the runtime uses it."""

    workflow: Workflow
    flow: FlowPolicy
    repo: str

    @property
    def policy(self) -> Policy:
        return self.workflow.policy

    @property
    def interval_s(self) -> float:
        return self.policy.polling.interval_ms / 1000

    @property
    def kill_switch_file(self) -> Path:
        return Path(self.policy.rollout.kill_switch_file)

    @classmethod
    def of(cls, workflow: Workflow, repo: str | None = None) -> PolicyView:
        """The view of ``repo`` (default: the policy's first repository)."""
        policy = workflow.policy
        return cls(workflow=workflow, flow=flow_policy(policy), repo=repo or policy_repo(policy))

    def of_repo(self, repo: str) -> PolicyView:
        """The same policy version, for another of its repositories."""
        return replace(self, repo=repo)

    @property
    def linear(self) -> bool:
        """Whether the issues live in Linear."""
        return is_linear(self.policy)


def first_view(workflow: Workflow) -> PolicyView:
    """The policy's view of its first named repository (of none, when only
    ``tracker.repo_opt_in_label`` says which: the daemon finds them on GitHub)."""
    repos = policy_repos(workflow.policy)
    if repos:
        return PolicyView.of(workflow, repos[0])
    return PolicyView(workflow=workflow, flow=flow_policy(workflow.policy), repo="")
