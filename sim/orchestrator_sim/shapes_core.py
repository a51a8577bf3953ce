"""GitHub's REST JSON shapes for accounts, repositories and labels: the base of `Shapes`.

One shapes object renders records for one request: it knows the server's base
URL (so every ``url`` and ``html_url`` points back at the emulator) and reads
the state, so callers hold ``state.lock`` while rendering. Shapes carry every
property GitHub's OpenAPI description marks as required.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from orchestrator_sim.emulator import Emulator
from orchestrator_sim.records import (
    Label,
    Repo,
    User,
)

# Repository URL properties GitHub lists, as (key, suffix after the repository URL).
_REPO_URLS: tuple[tuple[str, str], ...] = (
    ("archive_url", "/{archive_format}{/ref}"),
    ("assignees_url", "/assignees{/user}"),
    ("blobs_url", "/git/blobs{/sha}"),
    ("branches_url", "/branches{/branch}"),
    ("collaborators_url", "/collaborators{/collaborator}"),
    ("comments_url", "/comments{/number}"),
    ("commits_url", "/commits{/sha}"),
    ("compare_url", "/compare/{base}...{head}"),
    ("contents_url", "/contents/{+path}"),
    ("contributors_url", "/contributors"),
    ("deployments_url", "/deployments"),
    ("downloads_url", "/downloads"),
    ("events_url", "/events"),
    ("forks_url", "/forks"),
    ("git_commits_url", "/git/commits{/sha}"),
    ("git_refs_url", "/git/refs{/sha}"),
    ("git_tags_url", "/git/tags{/sha}"),
    ("hooks_url", "/hooks"),
    ("issue_comment_url", "/issues/comments{/number}"),
    ("issue_events_url", "/issues/events{/number}"),
    ("issues_url", "/issues{/number}"),
    ("keys_url", "/keys{/key_id}"),
    ("labels_url", "/labels{/name}"),
    ("languages_url", "/languages"),
    ("merges_url", "/merges"),
    ("milestones_url", "/milestones{/number}"),
    ("notifications_url", "/notifications{?since,all,participating}"),
    ("pulls_url", "/pulls{/number}"),
    ("releases_url", "/releases{/id}"),
    ("stargazers_url", "/stargazers"),
    ("statuses_url", "/statuses/{sha}"),
    ("subscribers_url", "/subscribers"),
    ("subscription_url", "/subscription"),
    ("tags_url", "/tags"),
    ("teams_url", "/teams"),
    ("trees_url", "/git/trees{/sha}"),
)

_ROLE_TO_PERMISSION = {
    "admin": "admin",
    "maintain": "write",
    "write": "write",
    "triage": "read",
    "read": "read",
}


class ShapesCore:
    """URLs, accounts, repositories and labels as GitHub's JSON (base URL ``base``).

    Within one request (one object, rendered under the state's lock) an account,
    a label or a repository is rendered once and the same object reused: a page of
    100 issues names the same few people and labels over and over.
    """

    def __init__(self, emulator: Emulator, base: str) -> None:
        self.emulator = emulator
        self.state = emulator.state
        self.base = base.rstrip("/")
        self._rendered: dict[tuple[str, int, str | None], dict[str, Any]] = {}

    # ------------------------------------------------------------------ urls

    def repo_url(self, repo: Repo) -> str:
        return f"{self.base}/repos/{repo.owner}/{repo.name}"

    def repo_html(self, repo: Repo) -> str:
        return f"{self.base}/{repo.owner}/{repo.name}"

    # ---------------------------------------------------------------- people

    def user(self, user: User | str | None) -> dict[str, Any] | None:
        """A simple-user object (None for an unknown login)."""
        if user is None:
            return None
        if isinstance(user, str):
            found = self.state.find_user(user)
            if found is None:
                return None
            user = found
        key = ("user", user.id, user.login)
        rendered = self._rendered.get(key)
        if rendered is None:
            rendered = self._rendered[key] = self._render_user(user)
        return rendered

    def _render_user(self, user: User) -> dict[str, Any]:
        login = user.rest_login
        url = f"{self.base}/users/{login}"
        return {
            "login": login,
            "id": user.id,
            "node_id": user.node_id,
            "avatar_url": f"{self.base}/avatars/u/{user.id}?v=4",
            "gravatar_id": "",
            "url": url,
            "html_url": f"{self.base}/{'apps/' + user.login if user.bot else login}",
            "followers_url": f"{url}/followers",
            "following_url": f"{url}/following{{/other_user}}",
            "gists_url": f"{url}/gists{{/gist_id}}",
            "starred_url": f"{url}/starred{{/owner}}{{/repo}}",
            "subscriptions_url": f"{url}/subscriptions",
            "organizations_url": f"{url}/orgs",
            "repos_url": f"{url}/repos",
            "events_url": f"{url}/events{{/privacy}}",
            "received_events_url": f"{url}/received_events",
            "type": user.type,
            "user_view_type": "public",
            "site_admin": False,
        }

    def _known_user(self, user: User | str) -> dict[str, Any]:
        rendered = self.user(user)
        if rendered is None:
            raise KeyError(f"unknown account {user}")
        return rendered

    def account(self, user: User, *, private: bool) -> dict[str, Any]:
        """``GET /user`` (private) or ``GET /users/{login}`` (public) for one account."""
        owned = [r for r in self.state.repos.values() if r.owner.lower() == user.login.lower()]
        body = {
            **self._known_user(user),
            "name": user.name,
            "company": None,
            "blog": "",
            "location": None,
            "email": user.email,
            "hireable": None,
            "bio": None,
            "twitter_username": None,
            "public_repos": sum(1 for r in owned if not r.private),
            "public_gists": 0,
            "followers": 0,
            "following": 0,
            "created_at": user.created_at,
            "updated_at": user.created_at,
        }
        if private:
            body.update(
                {
                    "private_gists": 0,
                    "total_private_repos": sum(1 for r in owned if r.private),
                    "owned_private_repos": sum(1 for r in owned if r.private),
                    "disk_usage": 0,
                    "collaborators": 0,
                    "two_factor_authentication": True,
                }
            )
        return body

    def association(self, repo: Repo, login: str) -> str:
        """GitHub's author_association of ``login`` in ``repo``."""
        if login.lower() == repo.owner.lower():
            return "OWNER"
        if login.lower() in repo.permissions:
            return "COLLABORATOR"
        return "NONE"

    # ----------------------------------------------------------- repositories

    def repo(self, repo: Repo, viewer: User | None = None) -> dict[str, Any]:
        """A full-repository object (also satisfies the shorter repository shapes)."""
        key = ("repo", repo.id, viewer.login if viewer is not None else None)
        rendered = self._rendered.get(key)
        if rendered is None:
            rendered = self._rendered[key] = self._render_repo(repo, viewer)
        return rendered

    def _render_repo(self, repo: Repo, viewer: User | None) -> dict[str, Any]:
        url = self.repo_url(repo)
        html = self.repo_html(repo)
        open_issues = len(self.state.index(repo).open_numbers)
        body: dict[str, Any] = {
            "id": repo.id,
            "node_id": repo.node_id,
            "name": repo.name,
            "full_name": repo.full_name,
            "private": repo.private,
            "owner": self._known_user(repo.owner),
            "html_url": html,
            "description": repo.description,
            "fork": False,
            "url": url,
        }
        for key, suffix in _REPO_URLS:
            body[key] = url + suffix
        body.update(
            {
                "created_at": repo.created_at,
                "updated_at": repo.updated_at,
                "pushed_at": repo.pushed_at,
                "git_url": f"{html}.git",
                "ssh_url": f"{html}.git",
                "clone_url": f"{html}.git",
                "svn_url": html,
                "homepage": None,
                "size": 0,
                "stargazers_count": 0,
                "watchers_count": 0,
                "language": None,
                "has_issues": True,
                "has_projects": False,
                "has_downloads": True,
                "has_wiki": False,
                "has_pages": False,
                "has_discussions": False,
                "forks_count": 0,
                "mirror_url": None,
                "archived": False,
                "disabled": False,
                "open_issues_count": open_issues,
                "license": None,
                "allow_forking": True,
                "is_template": False,
                "web_commit_signoff_required": False,
                "topics": [],
                "visibility": "private" if repo.private else "public",
                "forks": 0,
                "open_issues": open_issues,
                "watchers": 0,
                "default_branch": repo.default_branch,
                "network_count": 0,
                "subscribers_count": 0,
                "allow_merge_commit": repo.allow_merge_commit,
                "allow_squash_merge": repo.allow_squash_merge,
                "allow_rebase_merge": repo.allow_rebase_merge,
                "allow_auto_merge": repo.allow_auto_merge,
                "delete_branch_on_merge": False,
            }
        )
        if viewer is not None:
            body["permissions"] = self.permission_flags(repo, viewer.login)
        return body

    def permission_flags(self, repo: Repo, login: str) -> dict[str, bool]:
        levels = ("read", "triage", "write", "maintain", "admin")
        flags = {}
        for level, key in zip(levels, ("pull", "triage", "push", "maintain", "admin"), strict=True):
            flags[key] = self.state.has_permission(repo, login, level)
        return flags

    def minimal_repo(self, repo: Repo) -> dict[str, Any]:
        return self.repo(repo)

    def collaborator_permission(self, repo: Repo, user: User) -> dict[str, Any]:
        role = self.state.permission(repo, user.login)
        return {
            "permission": _ROLE_TO_PERMISSION.get(role or "", "none"),
            "role_name": role or "none",
            "user": {
                **self._known_user(user),
                "permissions": self.permission_flags(repo, user.login),
                "role_name": role or "none",
            },
        }

    # ----------------------------------------------------------------- labels

    def label(self, repo: Repo, label: Label) -> dict[str, Any]:
        key = ("label", label.id, repo.full_name)
        rendered = self._rendered.get(key)
        if rendered is None:
            rendered = self._rendered[key] = self._render_label(repo, label)
        return rendered

    def _render_label(self, repo: Repo, label: Label) -> dict[str, Any]:
        return {
            "id": label.id,
            "node_id": label.node_id,
            "url": f"{self.repo_url(repo)}/labels/{quote(label.name, safe='')}",
            "name": label.name,
            "color": label.color,
            "default": label.default,
            "description": label.description,
        }
