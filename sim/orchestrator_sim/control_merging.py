"""The control API client's steps for the rules a merge meets: branch protection, rulesets,
merge settings, teams (code owners), deployments, and the people who update a pull
request's branch, queue it or set it to auto-merge (`orchestrator_sim.control_rules`)."""

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

    def set_merge_settings(
        self,
        repo: str,
        *,
        allow_merge_commit: bool | None = None,
        allow_squash_merge: bool | None = None,
        allow_rebase_merge: bool | None = None,
        allow_auto_merge: bool | None = None,
        merge_group_checks: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        """Change a repository's merge settings; those left None keep their value.

        The ``allow_*_merge`` settings say which merge methods it accepts (one must
        stay allowed), ``allow_auto_merge`` whether auto-merge may be enabled, and
        ``merge_group_checks`` what the emulated CI reports on each merge group
        (check name to conclusion or pending status). The answer is every setting.
        """
        given = {
            "allow_merge_commit": allow_merge_commit,
            "allow_squash_merge": allow_squash_merge,
            "allow_rebase_merge": allow_rebase_merge,
            "allow_auto_merge": allow_auto_merge,
            "merge_group_checks": merge_group_checks,
        }
        body = {name: value for name, value in given.items() if value is not None}
        result: dict[str, Any] = self.request("PATCH", f"{self._repo(repo)}/merge-settings", body)
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

    def create_ruleset(
        self,
        repo: str,
        name: str,
        rules: list[dict[str, Any]],
        *,
        include: list[str] | None = None,
        exclude: list[str] | None = None,
        enforcement: str = "active",
        bypass_actors: list[dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        """Add a branch ruleset (rules in GitHub's REST shape; missing parameters take
        GitHub's defaults); it targets the default branch unless ``include`` says otherwise."""
        body = {
            "name": name,
            "target": "branch",
            "enforcement": enforcement,
            "conditions": {
                "ref_name": {"include": include or ["~DEFAULT_BRANCH"], "exclude": exclude or []}
            },
            "rules": rules,
            "bypass_actors": bypass_actors or [],
        }
        result: dict[str, Any] = self.request("POST", f"{self._repo(repo)}/rulesets", body)
        return result

    def rulesets(self, repo: str) -> list[dict[str, Any]]:
        return list(self.request("GET", f"{self._repo(repo)}/rulesets")["rulesets"])

    def delete_ruleset(self, repo: str, ruleset_id: int) -> None:
        self.request("DELETE", f"{self._repo(repo)}/rulesets/{ruleset_id}")

    def merge_queue(self, repo: str, branch: str | None = None) -> list[dict[str, Any]]:
        """The entries of a base's merge queue, first to merge first."""
        path = f"{self._repo(repo)}/merge-queue"
        if branch is not None:
            path += f"?branch={quote(branch)}"
        return list(self.request("GET", path)["entries"])

    def enqueue(
        self, repo: str, number: int, *, as_user: str, sha: str | None = None, jump: bool = False
    ) -> dict[str, Any]:
        """Add a pull request to its base's merge queue as someone."""
        body = {"as": as_user, "sha": sha, "jump": jump}
        result: dict[str, Any] = self.request(
            "POST", f"{self._repo(repo)}/pulls/{number}/queue", body
        )
        return result

    def dequeue(self, repo: str, number: int, *, as_user: str) -> None:
        self.request("DELETE", f"{self._repo(repo)}/pulls/{number}/queue", {"as": as_user})

    def enable_auto_merge(
        self, repo: str, number: int, *, as_user: str, method: str = "merge"
    ) -> dict[str, Any]:
        """Set auto-merge as someone; ``queued`` in the answer when it went to the queue."""
        body = {"as": as_user, "method": method}
        result: dict[str, Any] = self.request(
            "PUT", f"{self._repo(repo)}/pulls/{number}/auto-merge", body
        )
        return result

    def disable_auto_merge(self, repo: str, number: int, *, as_user: str) -> None:
        self.request("DELETE", f"{self._repo(repo)}/pulls/{number}/auto-merge", {"as": as_user})
