"""Branch protection of the emulated GitHub: what a merge into a protected branch needs.

A protected branch can require check runs or commit statuses by name to pass
on the head, a number of approving reviews from accounts with write access,
dismiss approvals when the head moves, and hold administrators to the same
rules. The refusals carry GitHub's own messages.
"""

from __future__ import annotations

from collections.abc import Iterable

from orchestrator_sim.errors import NotFound, Unprocessable
from orchestrator_sim.records import BranchProtection, PullRequest, Repo, Review
from orchestrator_sim.state_reviews import ReviewsState

PROTECTION_DOCS = "https://docs.github.com/articles/about-protected-branches"

# Check-run conclusions that satisfy a required check, as on GitHub.
_PASSING_CONCLUSIONS = frozenset({"success", "neutral", "skipped"})
_DECISIVE = ("APPROVED", "CHANGES_REQUESTED", "DISMISSED")


class ProtectionState(ReviewsState):
    """Protection rules per branch, and the first rule a pull request's merge breaks."""

    def protect_branch(
        self,
        repo: Repo,
        branch: str,
        *,
        required_checks: Iterable[str] = (),
        required_approvals: int = 0,
        dismiss_stale_reviews: bool = False,
        enforce_admins: bool = False,
    ) -> BranchProtection:
        """Protect ``branch`` (replacing earlier rules); it must exist."""
        checks = [str(name) for name in required_checks]
        if required_approvals < 0 or required_approvals > 6:
            raise Unprocessable.field(
                "Protection",
                "required_approving_review_count",
                message="required_approving_review_count must be between 0 and 6",
            )
        with self.lock:
            if branch not in repo.branches:
                raise NotFound(f"branch {branch}")
            rules = BranchProtection(
                required_checks=checks,
                required_approvals=required_approvals,
                dismiss_stale_reviews=dismiss_stale_reviews,
                enforce_admins=enforce_admins,
            )
            repo.protections[branch] = rules
            self._touch()
            return rules

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

    def writer_approvals(self, repo: Repo, number: int) -> int:
        """Approving reviews that count for protection: one per reviewer with write access."""
        with self.lock:
            return sum(
                1
                for review in self.latest_decisive_reviews(repo, number).values()
                if review.state == "APPROVED" and self.has_permission(repo, review.author, "write")
            )

    def writer_requested_changes(self, repo: Repo, number: int) -> bool:
        """Whether a reviewer with write access has an outstanding change request."""
        with self.lock:
            return any(
                review.state == "CHANGES_REQUESTED"
                and self.has_permission(repo, review.author, "write")
                for review in self.latest_decisive_reviews(repo, number).values()
            )

    def review_decision(self, repo: Repo, pr: PullRequest) -> str | None:
        """GitHub's reviewDecision; with protection, approvals count only from writers and
        only once the required number is reached."""
        rules = self.protection(repo, pr.base_ref)
        if rules is None or rules.required_approvals == 0:
            return super().review_decision(repo, pr)
        with self.lock:
            if self.writer_requested_changes(repo, pr.number):
                return "CHANGES_REQUESTED"
            if self.writer_approvals(repo, pr.number) >= rules.required_approvals:
                return "APPROVED"
            return "REVIEW_REQUIRED"

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

    # -------------------------------------------------------------- checks

    def _check_problem(self, repo: Repo, sha: str, name: str) -> str | None:
        """``expected`` or ``failing`` for a required check on ``sha``, None when it passed."""
        runs = [r for r in self.check_runs_for(repo, sha) if r.name == name]
        statuses = [s for s in self.latest_statuses(repo, sha) if s.context == name]
        if not runs and not statuses:
            return "expected"
        failed = any(
            r.status == "completed" and r.conclusion not in _PASSING_CONCLUSIONS for r in runs
        ) or any(s.state in ("failure", "error") for s in statuses)
        if failed:
            return "failing"
        if any(r.status != "completed" for r in runs) or any(
            s.state == "pending" for s in statuses
        ):
            return "expected"
        return None

    def protection_problem(
        self, repo: Repo, pr: PullRequest, actor: str | None = None
    ) -> str | None:
        """GitHub's message for the first protection rule the merge breaks, None when none.

        With ``actor``, an administrator passes unless the rules enforce admins.
        """
        with self.lock:
            rules = repo.protections.get(pr.base_ref)
            if rules is None:
                return None
            if (
                actor is not None
                and not rules.enforce_admins
                and self.has_permission(repo, actor, "admin")
            ):
                return None
            if rules.required_approvals > 0:
                if self.writer_requested_changes(repo, pr.number):
                    return "Changes have been requested."
                if self.writer_approvals(repo, pr.number) < rules.required_approvals:
                    count = rules.required_approvals
                    reviews = "approving review is" if count == 1 else "approving reviews are"
                    return f"At least {count} {reviews} required by reviewers with write access."
            problems = [
                (name, problem)
                for name in rules.required_checks
                if (problem := self._check_problem(repo, pr.head_sha, name)) is not None
            ]
            failing = [name for name, problem in problems if problem == "failing"]
            if failing:
                return f'Required status check "{failing[0]}" is failing.'
            if len(problems) == 1:
                return f'Required status check "{problems[0][0]}" is expected.'
            if problems:
                total = len(rules.required_checks)
                return f"{len(problems)} of {total} required status checks are expected."
            return None
