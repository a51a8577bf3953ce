"""Which repositories the policy tracks: those it names, and those that opt in.

A repository is tracked when the policy names it (``tracker.repo``,
``tracker.repos``) or, under a GitHub App, when it is one of the installation's
repositories carrying the label ``tracker.repo_opt_in_label``.
"""

from __future__ import annotations

from collections.abc import Iterable

from orchestrator.github.errors import GitHubError
from orchestrator.logs import get_logger
from orchestrator.wiring.access import GitHubAccess
from orchestrator.wiring.policy_view import PolicyView, policy_repos

log = get_logger(__name__)


class DiscoveryError(RuntimeError):
    """The installation's repositories could not be read; the message says which call failed."""


def opted_in(github: GitHubAccess, label: str) -> tuple[str, ...]:
    """The installation's repositories (not archived) that have the label ``label``.

    One list of the installation's repositories, then one read of the label per
    repository. Raises :class:`DiscoveryError` when the list cannot be read.
    """
    gateway = github.gateway
    try:
        listed = gateway.installation_repositories()
    except GitHubError as error:
        raise DiscoveryError(f"cannot list the App installation's repositories: {error}") from None
    found: list[str] = []
    for entry in listed:
        name = entry.get("full_name") if isinstance(entry, dict) else None
        if not isinstance(name, str) or entry.get("archived"):
            continue
        try:
            labelled = gateway.has_label(name, label)
        except GitHubError as error:
            log.warning("repo_opt_in_unread", repo=name, label=label, error=str(error))
            continue
        if labelled:
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
