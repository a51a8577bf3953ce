"""Pull requests of the emulated GitHub: creation, branch heads, merges, mergeability.

Mergeability is lazy, as on GitHub: after a pull request opens or its head or
base moves, ``mergeable`` is unknown for ``mergeability_delay`` seconds of the
clock, then settles. A push to the head makes the pull request's review
threads on changed lines outdated, moves the others with their lines, and
(when the base branch's protection asks) dismisses approvals of older heads.
"""

from __future__ import annotations

from datetime import datetime

from orchestrator_sim.clock import parse_time
from orchestrator_sim.errors import Unprocessable
from orchestrator_sim.gitstore import CommitInfo
from orchestrator_sim.records import Issue, PullRequest, Repo, make_node_id, parse_node_id
from orchestrator_sim.state_requirements import RequirementsState


class PullsState(RequirementsState):
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
            for pr in self.index(repo).pulls_by_head_ref.get(head, {}).values():
                if pr.base_ref == base and repo.issues[pr.number].state == "open":
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
                mergeability_since=self.precise_now(),
            )
            repo.pulls[issue.number] = pr
            self.index(repo).add_pull(pr)
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
                if base != pr.base_ref:
                    old_base, pr.base_ref = pr.base_ref, base
                    self.index(repo).base_moved(pr, old_base)
                    pr.mergeable_cache = None
                    pr.mergeability_since = self.precise_now()
            self.update_issue(repo, number, actor, title=title, body=body, state=state)
            return pr

    def set_branch(
        self, repo: Repo, branch: str, sha: str | None, actor: str | None = None
    ) -> None:
        """Record a branch head as seen in the bare repository (None: deleted).

        Open pull requests whose head is that branch follow it (a push updates
        them, outdates threads on changed lines, and may dismiss approvals);
        those whose head or base moved must have their mergeability worked
        out again. ``actor`` is who pushed, when known: the branch's last pusher.
        """
        with self.lock:
            old = repo.branches.get(branch)
            if sha is None:
                repo.branches.pop(branch, None)
                repo.pushers.pop(branch, None)
            else:
                repo.branches[branch] = sha
                if sha != old and actor is not None:
                    repo.pushers[branch] = self.login_key(actor)
                elif sha != old:
                    # Moved by someone unknown: no earlier pusher may stand for them.
                    repo.pushers.pop(branch, None)
            if sha != old:
                since = self.precise_now()
                index = self.index(repo)
                for pr in index.pulls_by_base_ref.get(branch, {}).values():
                    if repo.issues[pr.number].state == "open":
                        pr.mergeability_since = since
                for pr in list(index.pulls_by_head_ref.get(branch, {}).values()):
                    if repo.issues[pr.number].state != "open":
                        continue
                    if sha is not None and sha != pr.head_sha:
                        self._follow_head(repo, pr, sha, actor)
                        pr.mergeability_since = since
            repo.pushed_at = self.now()
            self._touch()

    def _follow_head(self, repo: Repo, pr: PullRequest, sha: str, actor: str | None) -> None:
        old = pr.head_sha
        self._move_head(repo, pr, sha)
        issue = repo.issues[pr.number]
        issue.updated_at = self.now()
        for thread in self.pull_threads(repo, pr.number):
            if thread.outdated or thread.side != "RIGHT" or thread.line is None:
                continue
            moved = (
                self.git.moved_line(repo, old, sha, thread.path, thread.line)
                if self.git is not None
                else thread.line
            )
            if thread.original_line is None:
                thread.original_line = thread.line
            if moved is None:
                thread.outdated = True
                continue
            thread.line = moved
            for comment_id in thread.comment_ids:
                comment = repo.review_comments.get(comment_id)
                if comment is not None:
                    comment.commit_id = sha
                    comment.line = moved
        self.dismiss_stale_approvals(repo, pr, actor or issue.author)

    def pull_commits(self, repo: Repo, pr: PullRequest) -> list[CommitInfo]:
        """The pull request's commits ordered as GitHub lists them: by author date, ties in
        branch order (so the newest-dated commit need not be the head)."""
        if self.git is None:
            return []
        with self.lock:
            base = pr.merged_base_sha if pr.merged else repo.branches.get(pr.base_ref)
            head = pr.head_sha
        if base is None:
            return []
        infos = self.git.commits(repo, base, head)
        order = {info.sha: index for index, info in enumerate(infos)}
        return sorted(infos, key=lambda info: (parse_time(info.author_date), order[info.sha]))

    def record_merge(
        self,
        repo: Repo,
        number: int,
        actor: str,
        merge_sha: str,
        base_sha: str | None = None,
    ) -> PullRequest:
        """Mark a pull request merged by ``actor`` with ``merge_sha`` on its base (which was
        at ``base_sha`` before), and close it."""
        with self.lock:
            pr = self.pull(repo, number)
            pr.merged_base_sha = base_sha
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
            self.index(repo).state_changed(issue)
            self._event(repo, issue, "merged", account.login, commit_id=merge_sha)
            self._event(repo, issue, "closed", account.login, commit_id=merge_sha)
            self._touch()
            return pr

    def mark_ready_for_review(self, repo: Repo, number: int, actor: str) -> PullRequest:
        """Take a pull request out of draft (a ``ready_for_review`` event); no-op when it is not
        a draft."""
        with self.lock:
            pr = self.pull(repo, number)
            issue = self.issue(repo, number)
            account = self.user(actor)
            if pr.draft:
                pr.draft = False
                issue.updated_at = self.now()
                self._event(repo, issue, "ready_for_review", account.login)
                self._touch()
            return pr

    def find_pull_by_node_id(self, node_id: str) -> tuple[Repo, PullRequest] | None:
        """The repository and pull request a GraphQL node id names, if any."""
        parsed = parse_node_id(node_id)
        if parsed is None or parsed[0] != "PullRequest":
            return None
        with self.lock:
            for repo in self.repos.values():
                pr = self.index(repo).pulls_by_id.get(parsed[1])
                if pr is not None:
                    return repo, pr
            return None

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
            if not self.mergeability_settled(pr):
                return None
            prefix = f"{base_sha}:{pr.head_sha}:"
            if pr.mergeable_cache and pr.mergeable_cache.startswith(prefix):
                return pr.mergeable_cache.endswith(":1")
            if self.git is None:
                return True
            result = self.git.merges_cleanly(repo, base_sha, pr.head_sha)
            if result is not None:
                pr.mergeable_cache = prefix + ("1" if result else "0")
            return result

    def mergeability_settled(self, pr: PullRequest) -> bool:
        """Whether ``mergeability_delay`` has passed since the head or base last moved."""
        if pr.mergeability_since is None or self.mergeability_delay <= 0:
            return True
        elapsed = self.clock() - datetime.fromisoformat(pr.mergeability_since)
        return elapsed.total_seconds() >= self.mergeability_delay

    def mergeable_state(self, repo: Repo, pr: PullRequest) -> str:
        """GitHub's ``mergeable_state``: clean, dirty, blocked, behind, unstable, draft or
        unknown."""
        with self.lock:
            mergeable = self.mergeable(repo, pr)
            if mergeable is None:
                return "unknown"
            if not mergeable:
                return "dirty"
            if pr.draft:
                return "draft"
            # Only branch protection blocks a merge; a review decision alone does not.
            blocker = self.merge_blocker(repo, pr)
            if blocker is not None:
                return blocker.state
            rollup = self.rollup_state(repo, pr.head_sha)
            if rollup in ("FAILURE", "ERROR"):
                return "unstable"
            if rollup == "PENDING":
                return "blocked"
            return "clean"
