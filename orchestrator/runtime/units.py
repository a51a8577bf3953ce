"""The repositories one daemon polls: a unit per repository, and how the set is found.

Each repository the policy names (``tracker.repo``, ``tracker.repos``) or that
opts in under a GitHub App (``tracker.repo_opt_in_label``: the repositories of
the App's installation carrying a label of that name) is a :class:`Unit`: the
policy's view of that repository and its own parts (issue feed, sweep, gate,
turn runner; its poll lease is ``poll:<owner/name>``). The units share the
daemon's database, worker pool, claimer, kill switches, HTTP cache and the one
credential with its rate budget (one per installation under an App).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import quote

from orchestrator.agent import RepoSource
from orchestrator.github.errors import GitHubError
from orchestrator.logs import get_logger
from orchestrator.runtime.assembly import Parts
from orchestrator.runtime.claimer import RepoWork
from orchestrator.runtime.wiring import GitHubAccess, PolicyView, policy_repos

log = get_logger(__name__)


class DiscoveryError(RuntimeError):
    """The installation's repositories could not be read; the message says which call failed."""


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


def opted_in(github: GitHubAccess, label: str) -> tuple[str, ...]:
    """The installation's repositories (not archived) that have the label ``label``.

    One list of the installation's repositories, then one read of the label per
    repository. Raises :class:`DiscoveryError` when the list cannot be read.
    """
    client = github.client
    try:
        listed = client.paginate("/installation/repositories", key="repositories")
    except GitHubError as error:
        raise DiscoveryError(f"cannot list the App installation's repositories: {error}") from None
    found: list[str] = []
    for entry in listed:
        name = entry.get("full_name") if isinstance(entry, dict) else None
        if not isinstance(name, str) or entry.get("archived"):
            continue
        try:
            client.request("GET", f"/repos/{name}/labels/{quote(label, safe='')}")
        except GitHubError as error:
            if error.status != 404:
                log.warning("repo_opt_in_unread", repo=name, label=label, error=str(error))
            continue
        found.append(name)
    return tuple(sorted(found, key=str.lower))


def tracked_repos(view: PolicyView, discovered: Iterable[str] = ()) -> tuple[str, ...]:
    """The policy's named repositories, then the discovered ones it does not name."""
    named = list(policy_repos(view.policy))
    seen = {repo.lower() for repo in named}
    for repo in discovered:
        if repo.lower() not in seen:
            named.append(repo)
            seen.add(repo.lower())
    return tuple(named)
