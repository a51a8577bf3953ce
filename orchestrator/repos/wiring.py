"""Wiring from the policy: GitHub access, the tracker, the agent runner and the domain's FlowPolicy.

Everything the daemon builds from WORKFLOW.md is built here, once per policy
version. GitHub clients are per thread (PyGithub's connection object is not
safe to share between threads) but share one ETag cache and one accounting.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path

from orchestrator.agent import (
    AgentEnvironment,
    AgentPreset,
    AgentRunner,
    AgentSettings,
    HookSettings,
    RepoSource,
    WorkspaceManager,
    WorkspaceSettings,
)
from orchestrator.agent.events import AgentEvent
from orchestrator.agent.registry import REGISTRY_DIR, ProcessRegistry
from orchestrator.agent.settings import AgentPermissions
from orchestrator.domain.accounts import is_bot_login, same_account
from orchestrator.domain.policy import FlowPolicy
from orchestrator.domain.snapshot import Actor
from orchestrator.github.accounting import Accounting
from orchestrator.github.client import EtagCache, GitHubClient
from orchestrator.github.credentials import AppInstallationTokens, StaticToken, TokenProvider
from orchestrator.github.errors import GitHubError
from orchestrator.github.feed import IssueFeed
from orchestrator.github.gateway import GitHubGateway
from orchestrator.github.prstate import PRStatePoller
from orchestrator.github.retry import RetryPolicy
from orchestrator.repos.containment import (
    SandboxDecision,
    SandboxRefused,
    decide,
    probe_for,
    sandbox_settings,
    state_directory,
)
from orchestrator.tracker.base import TrackerSettings
from orchestrator.tracker.github_issues import GitHubIssuesTracker, issue_feed
from orchestrator.tracker.linear import LinearScope, LinearTracker
from orchestrator.tracker.linear_bridge import LinearIssues
from orchestrator.tracker.linear_client import LinearClient
from orchestrator.workflow import Workflow, flow_policy
from orchestrator.workflow.app_key import AppKeyError, is_inline_pem, read_private_key
from orchestrator.workflow.flow import github_endpoint as github_endpoint  # noqa: PLC0414 (re-export)
from orchestrator.workflow.schema import Policy, TrackerAuth, TrackerKind


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


def is_linear(policy: Policy) -> bool:
    """Whether the policy's issues live in Linear (the code and pull requests on GitHub)."""
    return policy.tracker.kind is TrackerKind.LINEAR


def credential_key(policy: Policy) -> tuple[object, ...]:
    """What the daemon's GitHub credential is made of: a change builds a new one."""
    tracker = policy.tracker
    # With kind linear, Linear's side too: a change of key or scope builds the access anew.
    linear: tuple[object, ...] = (
        (
            tracker.endpoint,
            tracker.api_key,
            tracker.team_key,
            tracker.project_slug,
            tracker.required_labels,
            tracker.active_states,
            tracker.terminal_states,
        )
        if is_linear(policy)
        else ()
    )
    if tracker.auth is TrackerAuth.APP:
        return ("app", tracker.app_id, tracker.private_key_file, tracker.installation_id, *linear)
    return ("token", tracker.token, *linear)


def policy_credentials(policy: Policy) -> TokenProvider:
    """The daemon's GitHub credential: the token, or the App's installation tokens.

    Neither the token nor the key is ever logged: the token is registered with
    the redactor, and every installation token as it is issued.
    """
    tracker = policy.tracker
    if tracker.auth is TrackerAuth.APP:
        if tracker.app_id is None or not tracker.private_key_file:
            raise WiringError("tracker.auth: app needs tracker.app_id and tracker.private_key_file")
        try:
            private_key = read_private_key(tracker.private_key_file)
        except AppKeyError as error:
            raise WiringError(f"tracker.private_key_file: {error}") from None
        return AppInstallationTokens(
            endpoint=github_endpoint(policy),
            app_id=tracker.app_id,
            private_key=private_key,
            repo=policy_repo(policy) if tracker.installation_id is None else "",
            installation_id=tracker.installation_id,
        )
    if not tracker.token:
        raise WiringError("tracker.token: the daemon needs a GitHub token")
    return StaticToken(tracker.token)


def agent_secrets(policy: Policy) -> list[str | None]:
    """Values no agent environment variable may carry: the daemon's GitHub credential
    (the token, or the App's key when a `$VAR` holds it), its Linear key and its API tokens."""
    key = policy.tracker.private_key_file
    inline_key = key if key and is_inline_pem(key) else None
    linear_key = policy.tracker.api_key if is_linear(policy) else None
    return [
        policy.tracker.token,
        inline_key,
        linear_key,
        policy.server.token,
        policy.server.metrics_token,
    ]


def key_folder(policy: Policy) -> Path | None:
    """The folder of the App's key file, which agents must not see (None without one)."""
    key = policy.tracker.private_key_file
    if policy.tracker.auth is not TrackerAuth.APP or not key or is_inline_pem(key):
        return None
    return Path(key).parent


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


def workspace_settings(policy: Policy) -> WorkspaceSettings:
    return WorkspaceSettings(
        root=Path(policy.workspace.root),
        branch_prefix=policy.pr.branch_prefix,
        base_branch=policy.pr.base_branch,
    )


def hook_settings(policy: Policy) -> HookSettings:
    hooks = policy.hooks
    return HookSettings(
        after_create=hooks.after_create,
        before_run=hooks.before_run,
        after_run=hooks.after_run,
        before_remove=hooks.before_remove,
        after_create_in_empty_dir=hooks.after_create_in_empty_dir,
        timeout_ms=hooks.timeout_ms,
    )


def agent_settings(policy: Policy) -> AgentSettings:
    agent = policy.agent
    return AgentSettings(
        preset=AgentPreset(agent.preset.value),
        command=agent.command,
        extra_args=tuple(agent.extra_args),
        permissions=AgentPermissions(agent.permissions.value),
        first_event_timeout_ms=agent.first_event_timeout_ms,
        stall_timeout_ms=agent.stall_timeout_ms,
        turn_timeout_ms=agent.turn_timeout_ms,
        extra_env=dict(agent.env),
    )


def agent_wiring_key(policy: Policy) -> tuple[object, ...]:
    """What the agent runner depends on: a change rebuilds it (running turns keep theirs)."""
    return (
        policy.agent,
        policy.hooks,
        policy.workspace,
        policy.pr.branch_prefix,
        policy.pr.base_branch,
        # The sandbox: what it hides, and whether merge mode may run agents without it.
        policy.rollout.mode,
        policy.rollout.kill_switch_file,
        policy.database.url,
        # The App's key: its folder is hidden from agents, a PEM in a $VAR withheld.
        policy.tracker.private_key_file,
    )


@dataclass(frozen=True)
class AgentWiring:
    """The workspaces and the runner built from one policy version, and their sandbox."""

    workspaces: WorkspaceManager
    runner: AgentRunner
    settings: AgentSettings
    sandbox: SandboxDecision | None = None


def build_agent_wiring(
    policy: Policy,
    *,
    secrets: list[str | None],
    on_event: Callable[[str, AgentEvent], None],
    db_url: str,
    env: Mapping[str, str] | None = None,
    extra_hidden: Sequence[Path] = (),
) -> AgentWiring:
    """Workspaces and runner for ``policy``, agents and hooks in the sandbox decided here.

    Raises :class:`WiringError` when the policy's sandbox cannot be had on this
    machine (``agent.sandbox: bwrap`` without a working bubblewrap, or
    ``auto`` in rollout mode merge without ``agent.allow_unsandboxed``).

    The runner records its agents' sessions in the state directory; before it
    is handed out, whatever a dead daemon's agents left running there is ended
    (a live daemon's, this one's included, is left alone), so a daemon ends its
    previous life's orphans before its first tick.
    """
    try:
        decision = decide(policy, probe_for(policy.agent.sandbox, env))
    except SandboxRefused as refused:
        raise WiringError(str(refused)) from None
    settings = agent_settings(policy)
    hooks = hook_settings(policy)
    spaces = workspace_settings(policy)
    environment = AgentEnvironment(settings, secrets=secrets)
    workspaces = WorkspaceManager(spaces, hooks, environment)
    sandbox = sandbox_settings(
        policy,
        decision,
        db_url=db_url,
        workspace_root=workspaces.root,
        mirror_root=workspaces.mirrors.root,
        extra_hidden=(*extra_hidden, spaces.logs, *filter(None, [key_folder(policy)])),
        env=env,
    )
    settings = replace(settings, sandbox=sandbox)
    # The manager reads its hook settings at each call: its hooks run in the same sandbox.
    workspaces.hooks = replace(hooks, sandbox=sandbox)
    registry = ProcessRegistry(state_directory(db_url) / REGISTRY_DIR)
    registry.end_orphans()
    runner = AgentRunner(
        settings,
        workspaces.hooks,
        environment,
        log_dir=spaces.logs,
        on_event=on_event,
        registry=registry,
    )
    return AgentWiring(workspaces=workspaces, runner=runner, settings=settings, sandbox=decision)


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


@dataclass
class _ThreadClients:
    client: GitHubClient
    gateway: GitHubGateway
    tracker: GitHubIssuesTracker


class GitHubAccess:
    """GitHub for the daemon: one client per thread, shared cache, accounting and login."""

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
        linear: LinearIssues | None = None,
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
        # One incremental view of the repository's issues, shared by every thread's tracker.
        # With Linear it keeps the carriers of the watched labels alone (the pull requests'
        # labels, the repository's stop label): GitHub's issues are no candidates.
        self.feed = (
            IssueFeed(tracker.repo, required_labels=frozenset(), candidates=False)
            if linear is not None
            else issue_feed(tracker)
        )
        # With kind linear: the issues, their stop labels and the issue-side writes.
        self.linear = linear

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
            gateway = GitHubGateway(client)
            found = _ThreadClients(
                client, gateway, GitHubIssuesTracker(gateway, self.tracker_settings, self.feed)
            )
            self._local.clients = found
        return found

    @property
    def client(self) -> GitHubClient:
        return self._clients().client

    @property
    def gateway(self) -> GitHubGateway:
        return self._clients().gateway

    @property
    def tracker(self) -> GitHubIssuesTracker | LinearIssues:
        """Where the issues come from: Linear's with kind linear, else the repository's."""
        if self.linear is not None:
            return self.linear
        return self._clients().tracker

    def refresh_feed(self) -> None:
        """Bring the repository's feed up to date when no GitHub tracker does (kind linear):
        it still holds the pull requests' labels and the repository's stop label."""
        if self.linear is not None:
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
        bot = is_bot_login(login, user_type) or same_account(login, self.login)
        if bot:
            return Actor(login=login, is_bot=True, can_write=False)
        try:
            can_write = self.gateway.can_write(self.repo, login)
        except GitHubError:
            can_write = False
        return Actor(login=login, is_bot=False, can_write=can_write)

    def poller(self) -> PRStatePoller:
        return PRStatePoller(self.client, self.cache, self.actor)

    def repo_source(self, clone_url: str) -> RepoSource:
        """Where git clones, fetches and pushes: every command asks the provider for a token."""
        return RepoSource(clone_url, token=self.credentials)


def parse_time(value: object) -> datetime:
    """A GitHub timestamp (``2026-01-01T00:00:00Z``) as an aware datetime."""
    return datetime.fromisoformat(str(value).replace("Z", "+00:00"))
