"""Pull requests of the emulated GitHub: creation, branch heads, merges, mergeability."""

from __future__ import annotations

from orchestrator.sim.errors import Unprocessable
from orchestrator.sim.records import Issue, PullRequest, Repo, make_node_id
from orchestrator.sim.state_reviews import ReviewsState


class PullsState(ReviewsState):
    """Pull requests following their head branch, merged or not, and whether they can merge."""

    # ------------------------------------------------------------------ pulls

    def create_pull(
        self,
        repo: Repo,
        author: str,
        title: str,
        *,
        head: str,
        base: str,
        body: str | None = None,
        draft: bool = False,
    ) -> tuple[Issue, PullRequest]:
        """Open a pull request from branch ``head`` into ``base``; both must exist and differ."""
        with self.lock:
            head_sha = repo.branches.get(head)
            if head_sha is None:
                raise Unprocessable.field("PullRequest", "head", message=f"no branch {head!r}")
            if base not in repo.branches:
                raise Unprocessable.field("PullRequest", "base", message=f"no branch {base!r}")
            if head_sha == repo.branches[base]:
                raise Unprocessable(
                    "Validation Failed",
                    errors=[
                        {
                            "resource": "PullRequest",
                            "code": "custom",
                            "message": f"No commits between {base} and {head}",
                        }
                    ],
                )
            for pr in repo.pulls.values():
                if (
                    pr.head_ref == head
                    and pr.base_ref == base
                    and repo.issues[pr.number].state == "open"
                ):
                    raise Unprocessable(
                        "Validation Failed",
                        errors=[
                            {
                                "resource": "PullRequest",
                                "code": "custom",
                                "message": (
                                    f"A pull request already exists for {repo.owner}:{head}."
                                ),
                            }
                        ],
                    )
            issue = self.create_issue(repo, author, title, body=body)
            issue.is_pull = True
            ident = self.new_id()
            pr = PullRequest(
                number=issue.number,
                id=ident,
                node_id=make_node_id("PullRequest", ident),
                head_ref=head,
                base_ref=base,
                head_sha=head_sha,
                draft=draft,
            )
            repo.pulls[issue.number] = pr
            self._touch()
            return issue, pr

    def update_pull(
        self,
        repo: Repo,
        number: int,
        actor: str,
        *,
        title: str | None = None,
        body: str | None = None,
        state: str | None = None,
        base: str | None = None,
    ) -> PullRequest:
        """Change a pull request's title, body, state or base branch."""
        with self.lock:
            pr = self.pull(repo, number)
            if base is not None:
                if base not in repo.branches:
                    raise Unprocessable.field("PullRequest", "base", message=f"no branch {base!r}")
                pr.base_ref = base
                pr.mergeable_cache = None
            self.update_issue(repo, number, actor, title=title, body=body, state=state)
            return pr

    def set_branch(self, repo: Repo, branch: str, sha: str | None) -> None:
        """Record a branch head as seen in the bare repository (None: deleted).

        Open pull requests whose head is that branch follow it.
        """
        with self.lock:
            if sha is None:
                repo.branches.pop(branch, None)
            else:
                repo.branches[branch] = sha
                for pr in repo.pulls.values():
                    if pr.head_ref == branch and repo.issues[pr.number].state == "open":
                        pr.head_sha = sha
            repo.pushed_at = self.now()
            self._touch()

    def record_merge(self, repo: Repo, number: int, actor: str, merge_sha: str) -> PullRequest:
        """Mark a pull request merged by ``actor`` with ``merge_sha`` on its base, and close it."""
        with self.lock:
            pr = self.pull(repo, number)
            issue = self.issue(repo, number)
            account = self.user(actor)
            now = self.now()
            pr.merged = True
            pr.merged_at = now
            pr.merged_by = account.login
            pr.merge_commit_sha = merge_sha
            issue.state = "closed"
            issue.state_reason = None
            issue.closed_at = now
            issue.closed_by = account.login
            issue.updated_at = now
            self._event(repo, issue, "merged", account.login, commit_id=merge_sha)
            self._event(repo, issue, "closed", account.login, commit_id=merge_sha)
            self._touch()
            return pr

    def set_mergeable_override(self, repo: Repo, number: int, value: bool | None) -> None:
        """Force a pull request (un)mergeable, or hand the answer back to git with None."""
        with self.lock:
            self.pull(repo, number).mergeable_override = value
            self._touch()

    def mergeable(self, repo: Repo, pr: PullRequest) -> bool | None:
        """Whether the head merges cleanly into the base (override first, then git)."""
        with self.lock:
            if pr.merged or repo.issues[pr.number].state == "closed":
                return None
            if pr.mergeable_override is not None:
                return pr.mergeable_override
            base_sha = repo.branches.get(pr.base_ref)
            if base_sha is None:
                return False
            prefix = f"{base_sha}:{pr.head_sha}:"
            if pr.mergeable_cache and pr.mergeable_cache.startswith(prefix):
                return pr.mergeable_cache.endswith(":1")
            if self.mergeability_probe is None:
                return True
            result = self.mergeability_probe(repo, base_sha, pr.head_sha)
            if result is not None:
                pr.mergeable_cache = prefix + ("1" if result else "0")
            return result

    def mergeable_state(self, repo: Repo, pr: PullRequest) -> str:
        """GitHub's ``mergeable_state``: clean, dirty, blocked, unstable, draft or unknown."""
        with self.lock:
            mergeable = self.mergeable(repo, pr)
            if mergeable is None:
                return "unknown"
            if not mergeable:
                return "dirty"
            if pr.draft:
                return "draft"
            if repo.require_review and self.review_decision(repo, pr) != "APPROVED":
                return "blocked"
            rollup = self.rollup_state(repo, pr.head_sha)
            if rollup in ("FAILURE", "ERROR"):
                return "unstable"
            if rollup == "PENDING":
                return "blocked"
            return "clean"
