"""Branch protection and merge settings of the emulated GitHub: the rules a merge meets.

A protected branch can require check runs or commit statuses by name to pass
on the head (on a head that contains the base's tip, with ``strict``), a
number of approving reviews from accounts with write access, code owners'
approvals, an approval of the last push by someone else, resolved
conversations, successful deployments and a linear history; it can dismiss
approvals when the head moves and hold administrators to the same rules. The
repository's settings say which merge methods it accepts, whether auto-merge
may be enabled and what the emulated CI reports on merge groups (both for
`orchestrator_sim.state_queue`). This layer keeps the rules and counts reviews;
`orchestrator_sim.state_requirements` tells which rule a merge breaks.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypedDict, Unpack

from orchestrator_sim.errors import NotFound, Unprocessable
from orchestrator_sim.records import BranchProtection, PullRequest, Repo, Review
from orchestrator_sim.state_deployments import DeploymentsState

PROTECTION_DOCS = "https://docs.github.com/articles/about-protected-branches"

_DECISIVE = ("APPROVED", "CHANGES_REQUESTED", "DISMISSED")

# The repository settings that allow each merge method, as GET /repos/{o}/{r} shows them.
MERGE_SETTINGS = {
    "merge": "allow_merge_commit",
    "squash": "allow_squash_merge",
    "rebase": "allow_rebase_merge",
}
# Every setting `ProtectionState.set_merge_settings` takes.
MERGE_SETTING_NAMES = (*MERGE_SETTINGS.values(), "allow_auto_merge", "merge_group_checks")
_METHOD_REFUSALS = {
    "merge": "Merge commits are not allowed on this repository.",
    "squash": "Squash merges are not allowed on this repository.",
    "rebase": "Rebase merges are not allowed on this repository.",
}


class MergeSettings(TypedDict):
    """A repository's merge settings: the merge methods it accepts, whether auto-merge may
    be enabled, and the check runs the emulated CI reports on each merge group."""

    allow_merge_commit: bool
    allow_squash_merge: bool
    allow_rebase_merge: bool
    allow_auto_merge: bool
    merge_group_checks: dict[str, str]


class ProtectionOptions(TypedDict, total=False):
    """The rules `ProtectionState.protect_branch` takes: `BranchProtection`'s fields."""

    required_checks: list[str]
    required_approvals: int
    dismiss_stale_reviews: bool
    enforce_admins: bool
    strict: bool
    required_linear_history: bool
    require_last_push_approval: bool
    require_code_owner_reviews: bool
    required_conversation_resolution: bool
    required_deployments: list[str]


class ProtectionState(DeploymentsState):
    """Protection rules per branch, merge settings per repository, and review counts."""

    def protect_branch(
        self, repo: Repo, branch: str, **options: Unpack[ProtectionOptions]
    ) -> BranchProtection:
        """Protect ``branch`` (replacing earlier rules); it must exist.

        Unnamed rules are off. ``strict`` needs at least one required check, as
        GitHub's setting needs status checks to be required.
        """
        rules = BranchProtection(**options)
        rules.required_checks = [str(name) for name in rules.required_checks]
        rules.required_deployments = [str(name) for name in rules.required_deployments]
        if rules.required_approvals < 0 or rules.required_approvals > 6:
            raise Unprocessable.field(
                "Protection",
                "required_approving_review_count",
                message="required_approving_review_count must be between 0 and 6",
            )
        if rules.strict and not rules.required_checks:
            raise Unprocessable.field(
                "Protection",
                "required_status_checks",
                message="strict needs at least one required status check",
            )
        with self.lock:
            if branch not in repo.branches:
                raise NotFound(f"branch {branch}")
            repo.protections[branch] = rules
            self._touch()
            return rules

    def merge_settings(self, repo: Repo) -> MergeSettings:
        """The repository's merge settings, by name."""
        with self.lock:
            return MergeSettings(
                allow_merge_commit=repo.allow_merge_commit,
                allow_squash_merge=repo.allow_squash_merge,
                allow_rebase_merge=repo.allow_rebase_merge,
                allow_auto_merge=repo.allow_auto_merge,
                merge_group_checks=dict(repo.merge_group_checks),
            )

    def method_refusal(self, repo: Repo, pr: PullRequest, method: str) -> str | None:
        """GitHub's refusal of merge method ``method`` here, None when it is allowed.

        A base branch that requires a linear history refuses merge commits too,
        whatever the repository allows.
        """
        with self.lock:
            rules = repo.protections.get(pr.base_ref)
            linear = rules is not None and rules.required_linear_history
            if not getattr(repo, MERGE_SETTINGS[method]) or (method == "merge" and linear):
                return _METHOD_REFUSALS[method]
            return None

    def set_merge_settings(
        self,
        repo: Repo,
        *,
        allow_merge_commit: bool | None = None,
        allow_squash_merge: bool | None = None,
        allow_rebase_merge: bool | None = None,
        allow_auto_merge: bool | None = None,
        merge_group_checks: Mapping[str, str] | None = None,
    ) -> MergeSettings:
        """Change the settings given (None keeps one); one merge method must stay allowed.

        ``merge_group_checks`` replaces what the emulated CI reports on merge groups
        (check name to conclusion or pending status).
        """
        methods = {
            "allow_merge_commit": allow_merge_commit,
            "allow_squash_merge": allow_squash_merge,
            "allow_rebase_merge": allow_rebase_merge,
        }
        with self.lock:
            allowed = {
                name: getattr(repo, name) if value is None else value
                for name, value in methods.items()
            }
            if not any(allowed.values()):
                # GitHub's settings page insists on at least one merge method.
                raise Unprocessable.field(
                    "Repository", "allow_merge_commit", message="at least one merge method"
                )
            for name, value in allowed.items():
                setattr(repo, name, value)
            if allow_auto_merge is not None:
                repo.allow_auto_merge = allow_auto_merge
            if merge_group_checks is not None:
                repo.merge_group_checks = dict(merge_group_checks)
            self._touch()
            return self.merge_settings(repo)

    def unprotect_branch(self, repo: Repo, branch: str) -> None:
        """Remove a branch's protection; NotFound when it had none."""
        with self.lock:
            if repo.protections.pop(branch, None) is None:
                raise NotFound(f"protection of {branch}")
            self._touch()

    def protection(self, repo: Repo, branch: str) -> BranchProtection | None:
        """The rules of ``branch``, or None when it is not protected."""
        with self.lock:
            return repo.protections.get(branch)

    # ------------------------------------------------------------- reviews

    def latest_decisive_reviews(self, repo: Repo, number: int) -> dict[str, Review]:
        """Each reviewer's latest approval, change request or dismissal, by login key."""
        with self.lock:
            latest: dict[str, Review] = {}
            for review in sorted(self.pull_reviews(repo, number), key=lambda r: r.id):
                if review.state in _DECISIVE:
                    latest[review.author.lower()] = review
            return latest

    def writer_approval_reviews(self, repo: Repo, number: int) -> list[Review]:
        """The approvals that count for protection: each reviewer's latest decisive review,
        when it approves and the reviewer has write access."""
        with self.lock:
            return [
                review
                for review in self.latest_decisive_reviews(repo, number).values()
                if review.state == "APPROVED" and self.has_permission(repo, review.author, "write")
            ]

    def writer_approvals(self, repo: Repo, number: int) -> int:
        """Approving reviews that count for protection: one per reviewer with write access."""
        return len(self.writer_approval_reviews(repo, number))

    def writer_requested_changes(self, repo: Repo, number: int) -> bool:
        """Whether a reviewer with write access has an outstanding change request."""
        with self.lock:
            return any(
                review.state == "CHANGES_REQUESTED"
                and self.has_permission(repo, review.author, "write")
                for review in self.latest_decisive_reviews(repo, number).values()
            )

    def dismiss_stale_approvals(self, repo: Repo, pr: PullRequest, actor: str) -> list[Review]:
        """Dismiss approvals given on another head, when the base branch asks for it."""
        rules = self.protection(repo, pr.base_ref)
        if rules is None or not rules.dismiss_stale_reviews:
            return []
        return self.dismiss_approvals_of_other_heads(repo, pr, actor)

    def dismiss_approvals_of_other_heads(
        self, repo: Repo, pr: PullRequest, actor: str
    ) -> list[Review]:
        """Dismiss every approval given on another head than the pull request's own."""
        with self.lock:
            dismissed = []
            issue = self.issue(repo, pr.number)
            for review in self.pull_reviews(repo, pr.number):
                if review.state == "APPROVED" and review.commit_id != pr.head_sha:
                    review.state = "DISMISSED"
                    dismissed.append(review)
                    self._event(repo, issue, "review_dismissed", actor)
            if dismissed:
                self._touch()
            return dismissed
