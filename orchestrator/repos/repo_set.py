"""The repositories one daemon polls, each with its own parts, kept in step with the policy.

Each tracked repository (:mod:`orchestrator.repos.discovery`) is a :class:`Unit`:
the policy's view of that repository and its own parts (issue feed, sweep,
gate, turn runner; its poll lease is ``poll:<owner/name>``). The units share
the daemon's database, worker pool, claimer, kill switches, HTTP cache and the
one credential with its rate budget (one per installation under an App).

:meth:`RepoSet.refresh` is the reload step the poll job runs before a tick: a
changed policy (the file, or SIGHUP) or a due discovery of opted-in
repositories keeps the parts whose GitHub access is unchanged, makes those of
new repositories and lets go of the rest.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from orchestrator.agent import RepoSource, SettingsError
from orchestrator.github.credentials import TokenProvider
from orchestrator.github.errors import RateLimited
from orchestrator.logs import get_logger
from orchestrator.repos.cluster import ClusterRole
from orchestrator.repos.discovery import DiscoveryError, opted_in, tracked_repos
from orchestrator.repos.parts import (
    AssemblyError,
    Parts,
    Shared,
    build_parts,
    github_access,
    guess_clone_url,
    preflight,
)
from orchestrator.turns.claimer import RepoWork, TurnClaimer
from orchestrator.wiring.access import tracker_settings
from orchestrator.wiring.agents import AgentWiring, agent_wiring_key, build_agent_wiring
from orchestrator.wiring.containment import log_sandbox
from orchestrator.wiring.credentials import agent_secrets, credential_key, policy_credentials
from orchestrator.wiring.policy_view import PolicyView, WiringError, first_view, github_retry
from orchestrator.workflow import PolicySource, Workflow
from orchestrator.workflow.flow import github_endpoint
from orchestrator.workflow.source import ReloadOutcome

log = get_logger(__name__)


@dataclass
class Unit:
    """One repository the daemon polls: the policy's view of it and the parts that serve it."""

    view: PolicyView
    parts: Parts
    # Where workspaces clone it from (preflight's answer, else guessed when first needed).
    source: RepoSource | None = None
    # How many of its turn claims had ended at the last look (a change asks for a tick).
    finished_claims: int = 0

    @property
    def repo(self) -> str:
        return self.view.repo

    def work(self, source: RepoSource) -> RepoWork:
        return RepoWork(view=self.view, source=source, turns=self.parts.turns)


class RepoSet:
    """The repositories polled now, their parts, and the agent wiring they share."""

    def __init__(
        self,
        source: PolicySource,
        shared: Shared,
        *,
        view: PolicyView,
        credentials: TokenProvider,
        claimer: TurnClaimer,
        cluster: ClusterRole,
        db_url: str,
        env: Mapping[str, str] | None,
    ) -> None:
        self.source = source
        self.shared = shared
        self.claimer = claimer
        self.cluster = cluster
        self._db_url = db_url
        self._env = env
        self.view = view
        self.credentials = credentials
        # Told the new polling interval when a reload changes it (the scheduler's job).
        self.on_interval: Callable[[float], object] | None = None
        self.agents: AgentWiring
        self._agents_key: tuple[object, ...] | None = None
        # The repositories polled, in the policy's order (the first is ``view``'s).
        self.units: dict[str, Unit] = {}
        # When the App installation's repositories were last read (tracker.repo_opt_in_label).
        self._discovered: tuple[str, ...] = ()
        self._discovered_at: float | None = None
        self.reload_errors = 0

    def open(self) -> None:
        """The agents' wiring and every tracked repository's parts, checked against GitHub.

        Raises what makes the daemon refuse to start (settings, wiring, preflight,
        discovery, the rate limit).
        """
        self._build_agents(self.source.current)
        repos = self._find_repos(self.view)
        self.view = self.view.of_repo(repos[0])
        self.units = {repo: self._unit(self.view.of_repo(repo)) for repo in repos}

    # ------------------------------------------------------------------ reads

    @property
    def first(self) -> Unit:
        return next(iter(self.units.values()))

    def repo_source(self, repo: str | None = None) -> RepoSource:
        """Where workspaces clone ``repo`` (default: the first) from (the token as a header
        only)."""
        unit = self.units[repo] if repo is not None else self.first
        if unit.source is None:
            unit.source = unit.parts.github.repo_source(guess_clone_url(unit.view))
        return unit.source

    def work_for(self, repo: str) -> RepoWork | None:
        """What a turn of ``repo`` needs (None: the repository is no longer polled)."""
        unit = self.units.get(repo)
        return unit.work(self.repo_source(repo)) if unit is not None else None

    def catching_up(self) -> bool:
        """Whether some repository's first reads are still paced (not all read yet)."""
        return any(
            c.left for unit in self.units.values() for c in unit.parts.builder.catching_up.values()
        )

    # ---------------------------------------------------------------- refresh

    def refresh(self) -> bool:
        """Apply a changed policy, or a due discovery; True when a new policy was applied."""
        outcome = self.source.refresh()
        if outcome is ReloadOutcome.REJECTED:
            self.reload_errors += 1
        if outcome is not ReloadOutcome.APPLIED:
            if self._discovery_due():
                self._apply_units(self.view)
            return False
        workflow = self.source.current
        try:
            view = first_view(workflow)
            key = credential_key(workflow.policy)
            self._build_agents(workflow)
            credentials = (
                self.credentials
                if key == self.first.parts.github.credential_key
                else policy_credentials(workflow.policy)
            )
        except (WiringError, SettingsError) as error:
            log.error("policy_not_applied", error=str(error))
            return False
        previous = self.view
        self.credentials = credentials
        self.shared.switches.kill_switch_file = view.kill_switch_file
        self.shared.pool.resize(workflow.policy.agent.max_concurrent_agents)
        self._apply_units(view)
        if self.view.interval_s != previous.interval_s and self.on_interval is not None:
            self.on_interval(self.view.interval_s)
        log.info(
            "policy_reload",
            digest=workflow.digest[:12],
            rollout_mode=self.view.flow.rollout_mode.value,
            repos=list(self.units),
        )
        return True

    def _discovery_due(self) -> bool:
        tracker = self.view.policy.tracker
        if not tracker.repo_opt_in_label or self._discovered_at is None:
            return False
        elapsed = time.monotonic() - self._discovered_at
        return elapsed >= tracker.repo_discovery_interval_ms / 1000

    def _apply_units(self, view: PolicyView) -> None:
        """Poll the repositories ``view``'s policy names now: keep the parts of those whose
        GitHub access (endpoint, credential, tracker settings, retries) is unchanged, make
        those of the others, let go of the rest.

        A repository whose parts cannot be made (preflight refused it) is left out
        with an error line and tried again at the next reload or discovery; one
        the daemon already polled keeps its parts.
        """
        try:
            repos = self._find_repos(view)
        except (DiscoveryError, RateLimited, WiringError) as error:
            # The installation could not be read: the repositories polled so far stay.
            self._discovered_at = time.monotonic()
            log.error("repos_not_discovered", error=str(error))
            repos = tracked_repos(view, self._discovered) or tuple(self.units)
        policy = view.policy
        endpoint, key = github_endpoint(policy), credential_key(policy)
        retry = github_retry(policy)
        units: dict[str, Unit] = {}
        for repo in repos:
            repo_view = view.of_repo(repo)
            unit = self.units.get(repo)
            tracker = tracker_settings(policy, repo_view.flow, repo)
            if (
                unit is not None
                and unit.parts.github.same_as(endpoint, key, tracker)
                and unit.parts.github.retry == retry
            ):
                unit.view = repo_view
                units[repo] = unit
                continue
            try:
                units[repo] = self._unit(repo_view)
            except AssemblyError as error:
                log.error("repo_not_polled", repo=repo, error=str(error))
                if unit is not None:
                    units[repo] = unit
        if not units:
            log.error("policy_not_applied", error="no repository could be polled")
            return
        for repo in self.units.keys() - units.keys():
            self.cluster.drop(repo)
            log.info("repo_dropped", repo=repo)
        for repo in units.keys() - self.units.keys():
            units[repo].finished_claims = self.shared.db.claims.finished_count(repo)
            log.info("repo_added", repo=repo)
        self.units = units
        self.view = self.first.view

    # ------------------------------------------------------------------ parts

    def _unit(self, view: PolicyView) -> Unit:
        """The parts of ``view``'s repository, checked against GitHub (preflight)."""
        unit = Unit(view, self._build_parts(view))
        unit.source = preflight(unit.parts.github, view)
        return unit

    def _build_parts(self, view: PolicyView) -> Parts:
        repo = view.repo
        return build_parts(
            self.shared,
            view,
            credentials=self.credentials,
            agents=lambda: self.agents,
            repo_source=lambda: self.repo_source(repo),
            claimer=self.claimer,
            retry=github_retry(view.policy),
        )

    def _find_repos(self, view: PolicyView) -> tuple[str, ...]:
        """The repositories to poll: those the policy names, and the App installation's that
        carry ``tracker.repo_opt_in_label`` (read again every discovery interval)."""
        label = view.policy.tracker.repo_opt_in_label
        if label:
            access = github_access(
                self.shared, view, credentials=self.credentials, retry=github_retry(view.policy)
            )
            self._discovered = opted_in(access, label)
            self._discovered_at = time.monotonic()
            log.info("repos_discovered", label=label, repos=list(self._discovered))
        repos = tracked_repos(view, self._discovered if label else ())
        if not repos:
            raise WiringError(
                f"tracker.repo_opt_in_label: no repository of the App's installation has the "
                f"label {label!r}; create it in a repository to track that repository, or name "
                "one in tracker.repos"
            )
        return repos

    def _build_agents(self, workflow: Workflow) -> None:
        policy = workflow.policy
        key = agent_wiring_key(policy)
        if key == self._agents_key:
            return
        self.agents = build_agent_wiring(
            policy,
            secrets=agent_secrets(policy),
            on_event=self.shared.pool.on_event,
            db_url=self._db_url,
            env=self._env,
        )
        self._agents_key = key
        if self.agents.sandbox is not None:
            log_sandbox(self.agents.sandbox)
