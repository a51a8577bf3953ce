"""What the runtime reads on GitHub: issues, comments, people, branches, the repository.

Every read the daemon makes goes through here (or :mod:`orchestrator.github.feed`
and :mod:`orchestrator.github.prstate` for the bulk reads of a poll), so the
cache, the accounting and the retries apply to each. Issue reads are
conditional: an unchanged issue costs a free 304.
"""

from __future__ import annotations

import threading
import time
from datetime import datetime
from typing import Any
from urllib.parse import quote

from orchestrator.domain.accounts import is_bot_login, same_account
from orchestrator.domain.snapshot import Actor
from orchestrator.github.client import GitHubClient
from orchestrator.github.errors import GitHubError, Problem, RateLimited
from orchestrator.github.outcomes import ApprovalActor

WRITE_PERMISSIONS = frozenset({"admin", "maintain", "write"})
PERMISSION_TTL_S = 600.0


class GitHubReads:
    """The reads of one GitHub endpoint (the gateway adds the writes)."""

    def __init__(self, client: GitHubClient) -> None:
        self.client = client
        self._permissions: dict[tuple[str, str], tuple[float, str]] = {}
        self._lock = threading.Lock()

    # -- the repository ---------------------------------------------------

    def repository(self, repo: str) -> dict[str, Any]:
        """The repository as REST shows it (its clone URL, default branch, ...)."""
        return dict(self.client.request("GET", f"/repos/{repo}").data or {})

    def installation_repositories(self) -> list[dict[str, Any]]:
        """The repositories an App installation may act on."""
        return list(self.client.paginate("/installation/repositories", key="repositories"))

    def has_label(self, repo: str, label: str) -> bool:
        """Whether the repository defines the label ``label``."""
        try:
            self.client.request("GET", f"/repos/{repo}/labels/{quote(label, safe='')}")
        except GitHubError as error:
            if error.status == 404:
                return False
            raise
        return True

    def ref_head(self, repo: str, branch: str) -> str | None:
        """The commit the ref ``heads/branch`` points at (None: no such ref)."""
        try:
            data = self.client.request("GET", f"/repos/{repo}/git/ref/heads/{branch}").data
        except GitHubError as error:
            if error.status == 404:
                return None
            raise
        sha = ((data or {}).get("object") or {}).get("sha")
        return sha if isinstance(sha, str) else None

    def branch_head(self, repo: str, branch: str) -> str | None:
        """The commit ``branch`` points at on GitHub; None when there is no such branch."""
        try:
            data = self.client.request("GET", f"/repos/{repo}/branches/{branch}").data
        except GitHubError as error:
            if error.status == 404:
                return None
            raise
        commit = data.get("commit") if isinstance(data, dict) else None
        sha = commit.get("sha") if isinstance(commit, dict) else None
        return sha if isinstance(sha, str) else None

    # -- issues ------------------------------------------------------------

    def issue(self, repo: str, number: int) -> dict[str, Any]:
        """An issue or pull request as the issues API shows it, read now (conditionally)."""
        return dict(
            self.client.request("GET", f"/repos/{repo}/issues/{number}", conditional=True).data
            or {}
        )

    def issue_comments(self, repo: str, number: int) -> list[dict[str, Any]]:
        """Every comment on an issue or pull request's conversation, oldest first."""
        return list(
            self.client.paginate(f"/repos/{repo}/issues/{number}/comments", conditional=True)
        )

    def open_issues_labelled(self, repo: str, label: str) -> list[dict[str, Any]]:
        """The open issues and pull requests that carry ``label``, read now."""
        return list(
            self.client.paginate(
                f"/repos/{repo}/issues",
                params={"state": "open", "labels": label},
                conditional=True,
            )
        )

    # -- people ------------------------------------------------------------

    def permission(self, repo: str, login: str, *, fresh: bool = False) -> str:
        """The user's permission on the repository (cached for a few minutes unless ``fresh``)."""
        key = (repo, login)
        with self._lock:
            cached = self._permissions.get(key)
        if not fresh and cached is not None and time.monotonic() - cached[0] < PERMISSION_TTL_S:
            return cached[1]
        try:
            data = self.client.request(
                "GET", f"/repos/{repo}/collaborators/{login}/permission", conditional=True
            ).data
            permission = str(data.get("permission") or "none")
        except GitHubError as error:
            if error.status not in (403, 404):
                raise
            permission = "none"
        with self._lock:
            self._permissions[key] = (time.monotonic(), permission)
        return permission

    def can_write(self, repo: str, login: str, *, fresh: bool = False) -> bool:
        return self.permission(repo, login, fresh=fresh) in WRITE_PERMISSIONS

    def actor(self, repo: str, login: str, user_type: str | None, self_login: str) -> Actor:
        """An account as the gates see it: a bot (``self_login`` is the daemon's), or a
        person who may write on ``repo`` or not (not, when that cannot be read)."""
        if is_bot_login(login, user_type) or same_account(login, self_login):
            return Actor(login=login, is_bot=True, can_write=False)
        try:
            can_write = self.can_write(repo, login)
        except GitHubError:
            can_write = False
        return Actor(login=login, is_bot=False, can_write=can_write)

    def issue_labels(self, repo: str, number: int) -> frozenset[str]:
        """The labels of an issue or pull request, read now."""
        return frozenset(str(label["name"]) for label in self.issue(repo, number).get("labels", []))

    def approval_actor(self, repo: str, number: int, label: str) -> ApprovalActor | Problem | None:
        """Who added ``label`` most recently (if it is on the issue), and whether it counts."""
        try:
            events = self.client.paginate(f"/repos/{repo}/issues/{number}/events", conditional=True)
            added = [
                e
                for e in events
                if e.get("event") == "labeled" and (e.get("label") or {}).get("name") == label
            ]
            if not added:
                return None
            last = added[-1]
            removed_after = any(
                e.get("event") == "unlabeled"
                and (e.get("label") or {}).get("name") == label
                and int(e["id"]) > int(last["id"])
                for e in events
            )
            if removed_after:
                return None
            actor = last.get("actor") or {}
            login = str(actor.get("login", ""))
            bot = is_bot_login(login, actor.get("type")) or same_account(login, self.client.login)
            return ApprovalActor(
                login=login,
                is_bot=bot,
                can_write=(not bot) and self.can_write(repo, login),
                at=datetime.fromisoformat(str(last["created_at"]).replace("Z", "+00:00")),
            )
        except (GitHubError, RateLimited) as problem:
            return problem

    def comment_editor(self, node_id: str) -> str | Problem | None:
        """Who last edited an issue comment (its GraphQL node id); None when never edited."""
        from orchestrator.github.queries import comment_editor_request

        request = comment_editor_request(node_id)
        try:
            data = self.client.graphql(request.query, dict(request.variables))
        except (GitHubError, RateLimited) as problem:
            return problem
        node = data.get("node") or {}
        if node.get("id") != node_id:
            return GitHubError("POST /graphql node", 404, "the comment was not found", False)
        if not node.get("lastEditedAt"):
            return None
        editor = node.get("editor") or {}
        return str(editor.get("login") or "ghost")
