"""The control API client's steps for the rules a merge meets: branch protection, merge
settings, teams (code owners), deployments, and a person updating a pull request's branch."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from orchestrator_sim.control_http import ControlHttp


class MergeRulesControl(ControlHttp):
    """Configures what merges into a repository need, and plays those who satisfy it."""

    def protect(
        self,
        repo: str,
        branch: str,
        *,
        required_checks: list[str] | None = None,
        required_approvals: int = 0,
        dismiss_stale_reviews: bool = False,
        enforce_admins: bool = False,
        **rules: bool | list[str],
    ) -> dict[str, Any]:
        """Protect a branch: required checks by name, approvals from writers, and so on.

        ``rules`` turns on more of them: ``strict``, ``required_linear_history``,
        ``require_last_push_approval``, ``require_code_owner_reviews``,
        ``required_conversation_resolution`` (true or false) and
        ``required_deployments`` (environment names).
        """
        payload = {
            "required_checks": required_checks or [],
            "required_approvals": required_approvals,
            "dismiss_stale_reviews": dismiss_stale_reviews,
            "enforce_admins": enforce_admins,
            **rules,
        }
        path = f"{self._repo(repo)}/branches/{quote(branch, safe='/')}/protection"
        result: dict[str, Any] = self.request("PUT", path, payload)
        return result

    def unprotect(self, repo: str, branch: str) -> None:
        """Remove a branch's protection."""
        self.request("DELETE", f"{self._repo(repo)}/branches/{quote(branch, safe='/')}/protection")

    def set_merge_settings(self, repo: str, **allowed: bool) -> dict[str, bool]:
        """Allow or forbid merge methods: ``allow_merge_commit``, ``allow_squash_merge``,
        ``allow_rebase_merge``; the answer is all three."""
        result: dict[str, bool] = self.request("PATCH", f"{self._repo(repo)}/settings", allowed)
        return result

    def set_team(self, org: str, slug: str, members: list[str] | None) -> list[str]:
        """Make team ``org/slug`` (a code owner as ``@org/slug``) exactly these members;
        None removes it."""
        path = f"/orgs/{quote(org)}/teams/{quote(slug)}"
        return list(self.request("PUT", path, {"members": members})["members"])

    def deploy(
        self,
        repo: str,
        environment: str,
        *,
        as_user: str,
        sha: str | None = None,
        ref: str | None = None,
        state: str = "success",
    ) -> dict[str, Any]:
        """Deploy a commit (``sha`` or ``ref``) to ``environment`` with a first status
        ``state``; the answer carries the deployment's ``id``."""
        payload = {
            "as": as_user,
            "environment": environment,
            "sha": sha,
            "ref": ref,
            "state": state,
        }
        result: dict[str, Any] = self.request("POST", f"{self._repo(repo)}/deployments", payload)
        return result

    def deployment_status(
        self, repo: str, deployment_id: int, state: str, *, as_user: str
    ) -> dict[str, Any]:
        """Give a deployment a new status (``success``, ``failure``, ``in_progress`` ...)."""
        path = f"{self._repo(repo)}/deployments/{deployment_id}/statuses"
        result: dict[str, Any] = self.request("POST", path, {"as": as_user, "state": state})
        return result

    def update_branch(
        self,
        repo: str,
        number: int,
        *,
        as_user: str,
        method: str = "merge",
        expected_head_sha: str | None = None,
    ) -> str:
        """Bring the base into a pull request's head as someone (``merge`` or ``rebase``), as
        GitHub's "Update branch" button does; returns the new head SHA."""
        payload = {"as": as_user, "method": method, "expected_head_sha": expected_head_sha}
        path = f"{self._repo(repo)}/pulls/{number}/update-branch"
        return str(self.request("POST", path, payload)["sha"])
