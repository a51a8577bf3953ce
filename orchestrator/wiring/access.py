"""GitHub for one repository: per-thread clients sharing one ETag cache, accounting and
login, its issue feed, and the issue tracker beside it (the port: GitHub Issues or Linear).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from datetime import datetime

from orchestrator.agent import (
    RepoSource,
)
from orchestrator.domain.policy import FlowPolicy
from orchestrator.domain.snapshot import Actor
from orchestrator.github.accounting import Accounting
from orchestrator.github.client import EtagCache, GitHubClient
from orchestrator.github.credentials import TokenProvider
from orchestrator.github.feed import IssueFeed
from orchestrator.github.gateway import GitHubGateway
from orchestrator.github.prstate import PRStatePoller
from orchestrator.github.retry import RetryPolicy
from orchestrator.tracker.base import IssueTracker, TrackerSettings
from orchestrator.tracker.github_issues import GitHubIssuesTracker, issue_feed
from orchestrator.tracker.linear import LinearScope, LinearTracker
from orchestrator.tracker.linear_bridge import LinearIssues
from orchestrator.tracker.linear_client import LinearClient
from orchestrator.wiring.policy_view import WiringError, is_linear, policy_repo
from orchestrator.workflow.schema import Policy, TrackerKind


def tracker_settings(policy: Policy, flow: FlowPolicy, repo: str | None = None) -> TrackerSettings:
    """The tracker's settings for ``repo`` (default: the policy's first repository);
    candidates must also carry the ownership label."""
    tracker = policy.tracker
    if is_linear(policy):
        # GitHub's side: the repository only (its issues are no candidates).
        return TrackerSettings(repo=policy_repo(policy))
    return TrackerSettings(
        repo=repo if repo is not None else policy_repo(policy),
        required_labels=frozenset(tracker.required_labels) | {flow.ownership_label},
        state_labels=dict(tracker.state_labels),
        active_states=frozenset(tracker.active_states),
        terminal_states=frozenset(tracker.terminal_states),
    )


def linear_tracker(policy: Policy, accounting: Accounting | None = None) -> LinearTracker:
    """The Linear tracker the policy names (kind linear): its key, scope and kill switches."""
    tracker = policy.tracker
    if tracker.kind is not TrackerKind.LINEAR:
        raise WiringError(f"tracker.kind: expected linear, got {tracker.kind.value}")
    if not tracker.api_key:
        raise WiringError("tracker.api_key: the Linear tracker needs an API key")
    try:
        client = LinearClient(tracker.endpoint, tracker.api_key, accounting=accounting)
        scope = LinearScope(
            team_key=tracker.team_key,
            project_slug=tracker.project_slug,
            kill_switch_label=policy.rollout.kill_switch_label,
            repo_kill_switch_label=policy.rollout.repo_kill_switch_label,
        )
    except ValueError as error:
        raise WiringError(str(error)) from None
    settings = TrackerSettings(
        repo=tracker.repo or "",
        required_labels=frozenset(tracker.required_labels),
        active_states=frozenset(tracker.active_states),
        terminal_states=frozenset(tracker.terminal_states),
    )
    return LinearTracker(client, settings, scope)


def linear_issues(
    policy: Policy, flow: FlowPolicy, accounting: Accounting | None = None
) -> LinearIssues:
    """The policy's Linear issues keyed on its GitHub repository; every issue in the tracked
    scope is the daemon's (it carries the ownership label as far as the gates see)."""
    try:
        return LinearIssues(
            linear_tracker(policy, accounting),
            policy_repo(policy),
            ownership_label=flow.ownership_label,
        )
    except ValueError as error:
        raise WiringError(str(error)) from None


@dataclass
class _ThreadClients:
    client: GitHubClient
    gateway: GitHubGateway


class GitHubAccess:
    """GitHub for the daemon: one client per thread, shared cache, accounting and login,
    and the issue tracker of the repository (its own issues unless another is given)."""

    def __init__(
        self,
        *,
        endpoint: str,
        credentials: TokenProvider,
        credential_key: tuple[object, ...],
        cache: EtagCache,
        accounting: Accounting,
        tracker: TrackerSettings,
        retry: RetryPolicy | None = None,
        issues: IssueTracker | None = None,
    ) -> None:
        self.endpoint = endpoint
        self.retry = retry
        self.credentials = credentials
        self.credential_key = credential_key
        self.cache = cache
        self.accounting = accounting
        self.tracker_settings = tracker
        self.repo = tracker.repo
        self._local = threading.local()
        self._login: str | None = None
        self._login_lock = threading.Lock()
        # One incremental view of the repository's issues. When the issues are tracked
        # elsewhere it keeps the carriers of the watched labels alone (the pull requests'
        # labels, the repository's stop label), and the access brings it up to date.
        self.tracker: IssueTracker
        if issues is None:
            self.feed = issue_feed(tracker)
            self.tracker = GitHubIssuesTracker(lambda: self.gateway, tracker, self, self.feed)
        else:
            self.feed = IssueFeed(tracker.repo, required_labels=frozenset(), candidates=False)
            self.tracker = issues
        self._feed_is_tracker = issues is None

    def same_as(self, endpoint: str, key: tuple[object, ...], tracker: TrackerSettings) -> bool:
        """Whether this access already matches these settings (no rebuild on reload)."""
        return (
            endpoint == self.endpoint
            and key == self.credential_key
            and tracker == self.tracker_settings
        )

    def _clients(self) -> _ThreadClients:
        found: _ThreadClients | None = getattr(self._local, "clients", None)
        if found is None:
            client = GitHubClient(
                self.endpoint,
                self.credentials,
                cache=self.cache,
                accounting=self.accounting,
                retry=self.retry,
            )
            found = _ThreadClients(client, GitHubGateway(client))
            self._local.clients = found
        return found

    @property
    def client(self) -> GitHubClient:
        return self._clients().client

    @property
    def gateway(self) -> GitHubGateway:
        return self._clients().gateway

    def refresh_feed(self) -> None:
        """Bring the repository's feed up to date when the tracker does not read it (issues
        tracked elsewhere): it still holds the pull requests' labels and the stop label."""
        if not self._feed_is_tracker:
            self.feed.refresh(self.client)

    @property
    def login(self) -> str:
        """The daemon's own login, asked once: an App's bot as REST spells it
        (``slug[bot]``, from ``GET /app``), else the token's user (``GET /user``)."""
        with self._login_lock:
            if self._login is None:
                self._login = self.client.login
            return self._login

    def actor(self, login: str, user_type: str | None = None) -> Actor:
        """A GitHub account as the gates see it: bot or not, and whether it may write."""
        return self.gateway.actor(self.repo, login, user_type, self.login)

    def poller(self) -> PRStatePoller:
        return PRStatePoller(self.client, self.cache, self.actor)

    def repo_source(self, clone_url: str) -> RepoSource:
        """Where git clones, fetches and pushes: every command asks the provider for a token."""
        return RepoSource(clone_url, token=self.credentials)


def parse_time(value: object) -> datetime:
    """A GitHub timestamp (``2026-01-01T00:00:00Z``) as an aware datetime."""
    return datetime.fromisoformat(str(value).replace("Z", "+00:00"))
