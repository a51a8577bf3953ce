"""How the daemon's parts are made: the store it opens, the parts of a tick, the checks before.

Each function takes what it needs and returns the part, so the daemon itself
only composes them (and start-up errors come back as :class:`AssemblyError`,
one line naming what is wrong and what to do).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from orchestrator.agent import RepoSource
from orchestrator.effects.gate import SideEffectGate
from orchestrator.effects.issue_writes import GitHubIssueWrites, IssueWrites
from orchestrator.effects.linear_writes import LinearIssueWrites
from orchestrator.effects.switches import SwitchBoard
from orchestrator.effects.writes import GitHubWrites
from orchestrator.github.accounting import Accounting
from orchestrator.github.credentials import TokenProvider
from orchestrator.github.errors import GitHubError, RateLimited
from orchestrator.github.retry import RetryPolicy
from orchestrator.logs import get_logger, redact_text
from orchestrator.store.database import Database
from orchestrator.store.outage import DatabaseHealth
from orchestrator.store.records import RecordStore
from orchestrator.tick.cycle import Tick
from orchestrator.tick.execute import Executor
from orchestrator.tick.gather import SnapshotBuilder
from orchestrator.tracker.base import IssueTracker
from orchestrator.turns.claimer import TurnClaimer
from orchestrator.turns.pool import WorkerPool
from orchestrator.turns.runner import TurnRunner
from orchestrator.wiring.access import GitHubAccess, linear_issues, tracker_settings
from orchestrator.wiring.agents import AgentWiring
from orchestrator.wiring.credentials import credential_key
from orchestrator.wiring.policy_view import PolicyView
from orchestrator.workflow.flow import github_endpoint, github_web_base

log = get_logger(__name__)


class AssemblyError(RuntimeError):
    """A part could not be made; the message says why and what to do."""


@dataclass
class Parts:
    """One repository's parts, rebuilt when the GitHub access changes (a new endpoint or
    token); the claimer is the daemon's own, the same in every repository's parts."""

    github: GitHubAccess
    builder: SnapshotBuilder
    gate: SideEffectGate
    turns: TurnRunner
    claimer: TurnClaimer
    tick: Tick


@dataclass(frozen=True)
class Shared:
    """What every part of one daemon shares, whichever repository it serves."""

    db: Database
    records: RecordStore
    switches: SwitchBoard
    pool: WorkerPool
    accounting: Accounting
    health: DatabaseHealth
    replica_id: str
    clock: Callable[[], datetime]


def github_access(
    shared: Shared,
    view: PolicyView,
    *,
    credentials: TokenProvider,
    retry: RetryPolicy | None,
    issues: IssueTracker | None = None,
) -> GitHubAccess:
    """GitHub for ``view``'s repository, through the daemon's one credential, cache and
    accounting; its issues are ``issues`` when tracked elsewhere, else the repository's."""
    policy = view.policy
    return GitHubAccess(
        endpoint=github_endpoint(policy),
        credentials=credentials,
        credential_key=credential_key(policy),
        cache=shared.db.http_cache,
        accounting=shared.accounting,
        tracker=tracker_settings(policy, view.flow, view.repo),
        retry=retry,
        issues=issues,
    )


def tracked_github(
    shared: Shared, view: PolicyView, *, credentials: TokenProvider, retry: RetryPolicy | None
) -> tuple[GitHubAccess, IssueWrites]:
    """GitHub for ``view``'s repository with its issue tracker, and what that tracker
    changes in the writes: the one place that picks the tracker's adapter."""
    if view.linear:
        linear = linear_issues(view.policy, view.flow, shared.accounting)
        github = github_access(shared, view, credentials=credentials, retry=retry, issues=linear)
        return github, LinearIssueWrites(github, linear)
    github = github_access(shared, view, credentials=credentials, retry=retry)
    return github, GitHubIssueWrites(github)


def build_parts(
    shared: Shared,
    view: PolicyView,
    *,
    credentials: TokenProvider,
    agents: Callable[[], AgentWiring],
    repo_source: Callable[[], RepoSource],
    claimer: TurnClaimer,
    retry: RetryPolicy | None,
) -> Parts:
    """The GitHub access and everything a tick and a turn use, for ``view``'s repository
    (the claimer is the daemon's, shared by its repositories)."""
    github, issue_writes = tracked_github(shared, view, credentials=credentials, retry=retry)
    builder = SnapshotBuilder(github, shared.records, shared.switches)
    writes = GitHubWrites(github, issue_writes, agents, repo_source)
    gate = SideEffectGate(
        db=shared.db,
        records=shared.records,
        switches=shared.switches,
        writes=writes,
        github=github,
        clock=shared.clock,
    )
    turns = TurnRunner(
        db=shared.db,
        records=shared.records,
        github=github,
        gate=gate,
        switches=shared.switches,
        pool=shared.pool,
        replica_id=shared.replica_id,
        clock=shared.clock,
        health=shared.health,
    )
    executor = Executor(records=shared.records, gate=gate, claimer=claimer, clock=shared.clock)
    tick = Tick(builder=builder, executor=executor, claimer=claimer)
    return Parts(github=github, builder=builder, gate=gate, turns=turns, claimer=claimer, tick=tick)


def preflight(github: GitHubAccess, view: PolicyView) -> RepoSource | None:
    """Check the token and the repository; where to clone from, when GitHub says.

    Raises :class:`AssemblyError` when the check fails and the policy requires it
    (``rollout.preflight_required``); otherwise the failure is logged.
    """
    try:
        login = github.login
        data = github.gateway.repository(view.repo)
    except (GitHubError, RateLimited) as error:
        if view.policy.rollout.preflight_required:
            endpoint = redact_text(github_endpoint(view.policy))
            raise AssemblyError(
                f"preflight: cannot read {view.repo} at {endpoint} with the tracker's "
                f"credential: {error}"
            ) from None
        log.warning("preflight_failed", error=str(error))
        return None
    clone_url = str((data or {}).get("clone_url") or "")
    log.info("preflight_passed", login=login, repo=view.repo, clone_url=clone_url)
    return github.repo_source(clone_url) if clone_url else None


def guess_clone_url(view: PolicyView) -> str:
    """The repository's clone URL, from the tracker's endpoint (when preflight did not say)."""
    return f"{web_base(view)}/{view.repo}.git"


def web_base(view: PolicyView) -> str:
    """Where GitHub's web pages are, for the dashboard's links and clone URLs."""
    return github_web_base(view.policy)
