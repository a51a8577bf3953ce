"""The control client's steps for rulesets, merge settings, the merge queue and auto-merge.

A part of `orchestrator_sim.control.ControlClient` (standard library only,
like the rest of the client); the routes are `orchestrator_sim.control_rules`.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote


class RulesControl:
    """Client methods for `orchestrator_sim.control_rules`; `ControlClient` supplies the
    transport (``request``) and the repository path (``_repo``)."""

    def request(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        raise NotImplementedError

    @staticmethod
    def _repo(repo: str) -> str:
        raise NotImplementedError

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

    def merge_settings(
        self,
        repo: str,
        *,
        allow_auto_merge: bool | None = None,
        merge_group_checks: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        """Turn auto-merge on or off for the repository, and set what the emulated CI
        reports on each merge group (check name to conclusion or pending status)."""
        body = {"allow_auto_merge": allow_auto_merge, "merge_group_checks": merge_group_checks}
        result: dict[str, Any] = self.request("PATCH", f"{self._repo(repo)}/merge-settings", body)
        return result

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
