"""A small Python client for the emulator's control API, one method per scenario step.

It uses only the standard library so the demo can drive an emulator without
extra dependencies. Refusals raise `ControlRequestError` with the server's message.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from orchestrator_sim.control_http import ControlRequestError
from orchestrator_sim.control_merging import MergeRulesControl

__all__ = ["ControlClient", "ControlRequestError"]


class ControlClient(MergeRulesControl):
    """Drives one emulator's ``/_control`` API at ``base_url`` (protection, rulesets, merge
    settings, the merge queue and auto-merge: `MergeRulesControl`)."""

    # --------------------------------------------------------------- accounts

    def create_user(
        self,
        login: str,
        token: str | None = None,
        *,
        bot: bool = False,
        name: str | None = None,
        email: str | None = None,
    ) -> dict[str, Any]:
        body = {"login": login, "token": token, "bot": bot, "name": name, "email": email}
        result: dict[str, Any] = self.request("POST", "/users", body)
        return result

    def create_repo(
        self,
        repo: str,
        files: dict[str, str] | None = None,
        *,
        permissions: dict[str, str] | None = None,
        default_branch: str = "main",
        private: bool = False,
        require_review: bool = True,
    ) -> dict[str, Any]:
        owner, _, name = repo.partition("/")
        body = {
            "owner": owner,
            "name": name,
            "files": files,
            "permissions": permissions or {},
            "default_branch": default_branch,
            "private": private,
            "require_review": require_review,
        }
        result: dict[str, Any] = self.request("POST", "/repos", body)
        return result

    def repo_info(self, repo: str) -> dict[str, Any]:
        result: dict[str, Any] = self.request("GET", self._repo(repo))
        return result

    def set_permission(self, repo: str, login: str, permission: str | None) -> None:
        self.request(
            "PUT", f"{self._repo(repo)}/permissions/{quote(login)}", {"permission": permission}
        )

    # ----------------------------------------------------------------- issues

    def create_issue(
        self,
        repo: str,
        title: str,
        *,
        as_user: str,
        body: str | None = None,
        labels: list[str] | None = None,
    ) -> int:
        payload = {"as": as_user, "title": title, "body": body, "labels": labels or []}
        return int(self.request("POST", f"{self._repo(repo)}/issues", payload)["number"])

    def seed(
        self,
        repo: str,
        count: int,
        *,
        as_user: str,
        labels: list[str] | None = None,
        title: str | None = None,
        body: str | None = None,
        pulls: dict[str, Any] | None = None,
    ) -> list[dict[str, Any]]:
        """Open ``count`` issues in one call (``{issue}`` in ``title`` is each one's number).

        With ``pulls`` (``as``, ``base``, a ``branch`` name with ``{issue}``,
        ``body`` with ``{issue}``, ``check_run`` {name, status, conclusion},
        ``review`` {as, state, body}) each issue is followed by an open pull
        request from its own branch whose body says ``Closes #N`` unless ``body``
        says otherwise. One item per issue: ``issue``, and with pull
        requests ``pull``, ``branch`` and ``head_sha``.
        """
        payload = {
            "as": as_user,
            "count": count,
            "labels": labels or [],
            "title": title,
            "body": body,
            "pulls": pulls,
        }
        return list(self.request("POST", f"{self._repo(repo)}/seed", payload)["items"])

    def update_issue(self, repo: str, number: int, *, as_user: str, **fields: Any) -> None:
        self.request("PATCH", f"{self._repo(repo)}/issues/{number}", {"as": as_user, **fields})

    def add_labels(self, repo: str, number: int, labels: list[str], *, as_user: str) -> list[str]:
        path = f"{self._repo(repo)}/issues/{number}/labels"
        return list(self.request("POST", path, {"as": as_user, "labels": labels})["labels"])

    def remove_label(self, repo: str, number: int, label: str, *, as_user: str) -> list[str]:
        path = f"{self._repo(repo)}/issues/{number}/labels/{quote(label, safe='')}"
        return list(self.request("DELETE", path, {"as": as_user})["labels"])

    def comment(self, repo: str, number: int, body: str, *, as_user: str) -> int:
        path = f"{self._repo(repo)}/issues/{number}/comments"
        return int(self.request("POST", path, {"as": as_user, "body": body})["id"])

    def edit_comment(self, repo: str, comment_id: int, body: str, *, as_user: str) -> None:
        """Replace a conversation comment's body as someone (they become its editor)."""
        path = f"{self._repo(repo)}/comments/{comment_id}"
        self.request("PATCH", path, {"as": as_user, "body": body})

    # ------------------------------------------------------------------ pulls

    def create_pull(
        self,
        repo: str,
        title: str,
        head: str,
        *,
        as_user: str,
        base: str | None = None,
        draft: bool = False,
    ) -> int:
        body = {"as": as_user, "title": title, "head": head, "base": base, "draft": draft}
        return int(self.request("POST", f"{self._repo(repo)}/pulls", body)["number"])

    def review(
        self,
        repo: str,
        number: int,
        state: str,
        *,
        as_user: str,
        body: str = "",
        comments: list[dict[str, Any]] | None = None,
        commit_id: str | None = None,
    ) -> dict[str, Any]:
        """Submit a review (APPROVED, CHANGES_REQUESTED, COMMENTED);
        inline comments open threads."""
        payload = {
            "as": as_user,
            "state": state,
            "body": body,
            "comments": comments or [],
            "commit_id": commit_id,
        }
        result: dict[str, Any] = self.request(
            "POST", f"{self._repo(repo)}/pulls/{number}/reviews", payload
        )
        return result

    def reply_thread(self, repo: str, thread_id: int, body: str, *, as_user: str) -> int:
        path = f"{self._repo(repo)}/threads/{thread_id}/replies"
        return int(self.request("POST", path, {"as": as_user, "body": body})["id"])

    def resolve_thread(
        self, repo: str, thread_id: int, *, as_user: str, resolved: bool = True
    ) -> None:
        path = f"{self._repo(repo)}/threads/{thread_id}/resolve"
        self.request("POST", path, {"as": as_user, "resolved": resolved})

    def set_mergeable(self, repo: str, number: int, mergeable: bool | None) -> None:
        """Force a pull request (un)mergeable; None lets git decide again."""
        path = f"{self._repo(repo)}/pulls/{number}/mergeable"
        self.request("PUT", path, {"mergeable": mergeable})

    def merge(self, repo: str, number: int, *, as_user: str, method: str = "merge") -> str:
        path = f"{self._repo(repo)}/pulls/{number}/merge"
        return str(self.request("POST", path, {"as": as_user, "method": method})["sha"])

    # ------------------------------------------------------------- git and CI

    def push(
        self,
        repo: str,
        branch: str,
        files: Mapping[str, str | None],
        *,
        as_user: str,
        message: str = "Update files",
        start: str | None = None,
        author_date: str | None = None,
        committer_date: str | None = None,
    ) -> str:
        """Commit files on a branch as someone (None deletes a file); return the new SHA.

        ``author_date`` / ``committer_date`` (ISO 8601) date the commit other than now.
        """
        payload = {
            "as": as_user,
            "branch": branch,
            "files": dict(files),
            "message": message,
            "start": start,
            "author_date": author_date,
            "committer_date": committer_date,
        }
        return str(self.request("POST", f"{self._repo(repo)}/commits", payload)["sha"])

    def set_mergeability_delay(self, seconds: float) -> None:
        """How long (emulator clock) mergeability stays unknown after a head or base moves."""
        self.request("PUT", "/mergeability", {"seconds": seconds})

    def check_run(
        self,
        repo: str,
        *,
        sha: str | None = None,
        ref: str | None = None,
        name: str = "ci",
        status: str = "completed",
        conclusion: str | None = None,
        title: str | None = None,
        summary: str | None = None,
        text: str | None = None,
        annotations: list[dict[str, Any]] | None = None,
        log: str | None = None,
        run_id: int | None = None,
    ) -> dict[str, Any]:
        """Create or update (``run_id``) a check run on a SHA or ref."""
        payload = {
            "sha": sha,
            "ref": ref,
            "name": name,
            "status": status,
            "conclusion": conclusion,
            "title": title,
            "summary": summary,
            "text": text,
            "annotations": annotations or [],
            "log": log,
            "id": run_id,
        }
        result: dict[str, Any] = self.request("POST", f"{self._repo(repo)}/check-runs", payload)
        return result

    def status(
        self,
        repo: str,
        state: str,
        *,
        as_user: str,
        sha: str | None = None,
        ref: str | None = None,
        context: str = "default",
        description: str | None = None,
    ) -> int:
        payload = {
            "as": as_user,
            "sha": sha,
            "ref": ref,
            "state": state,
            "context": context,
            "description": description,
        }
        return int(self.request("POST", f"{self._repo(repo)}/statuses", payload)["id"])

    # ---------------------------------------------------------------- limits

    def set_rate_limit(
        self,
        *,
        login: str | None = None,
        resource: str = "core",
        limit: int | None = None,
        remaining: int | None = None,
        reset: int | None = None,
        reset_in: int | None = None,
    ) -> Any:
        payload = {
            "login": login,
            "resource": resource,
            "limit": limit,
            "remaining": remaining,
            "reset": reset,
            "reset_in": reset_in,
        }
        return self.request("PUT", "/rate-limit", payload)

    def set_secondary_limit(
        self,
        *,
        per_minute: int | None = None,
        concurrency: int | None = None,
        status: int = 403,
        retry_after: int = 60,
    ) -> None:
        payload = {
            "per_minute": per_minute,
            "concurrency": concurrency,
            "status": status,
            "retry_after": retry_after,
        }
        self.request("PUT", "/secondary-limit", payload)

    def add_fault(self, **rule: Any) -> dict[str, Any]:
        """Add a fault rule (path, action, method, status, probability, count, latency_ms ...)."""
        result: dict[str, Any] = self.request("POST", "/faults", rule)
        return result

    def faults(self) -> list[dict[str, Any]]:
        return list(self.request("GET", "/faults")["rules"])

    def clear_faults(self, seed: int | None = None) -> None:
        self.request("DELETE", "/faults", {"seed": seed})

    # -------------------------------------------------------------- counters

    def counters(self) -> dict[str, Any]:
        result: dict[str, Any] = self.request("GET", "/counters")
        return result

    def writes(self) -> list[dict[str, Any]]:
        return list(self.request("GET", "/writes")["writes"])

    def reset_counters(self) -> None:
        self.request("DELETE", "/counters")

    # ------------------------------------------------------------------- Apps

    def create_app(
        self,
        slug: str,
        *,
        owner: str,
        name: str | None = None,
        permissions: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        """Register an App; the answer's ``private_key`` (PEM) is shown this once."""
        body = {"slug": slug, "owner": owner, "name": name, "permissions": permissions}
        result: dict[str, Any] = self.request("POST", "/apps", body)
        return result

    def install_app(self, slug: str, repositories: list[str]) -> dict[str, Any]:
        """Install the App on these repositories; the answer's ``id`` is the installation's."""
        result: dict[str, Any] = self.request(
            "POST", f"/apps/{quote(slug)}/installations", {"repositories": repositories}
        )
        return result

    def expire_app_tokens(self, app: str | None = None, *, age_s: float | None = None) -> int:
        """End installation tokens now (or age them by ``age_s``); how many were changed."""
        result = self.request("POST", "/app-tokens/expire", {"app": app, "age_s": age_s})
        return int(result["expired"])
