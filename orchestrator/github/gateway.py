"""The gateway: every write the daemon makes on GitHub, idempotent, over its reads.

Creates are find-or-create (a pull request by head branch, a comment by a
hidden marker), so a crash or a lost response never duplicates anything: an
answer that leaves a create's effect unknown is followed by another look
before any second attempt.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from orchestrator.domain.accounts import same_account
from orchestrator.domain.pr_body import CommitText
from orchestrator.github.errors import GitHubError, Problem, RateLimited
from orchestrator.github.outcomes import (
    CommentAction,
    CommentUpserted,
    HeadMoved,
    Merged,
    NotMergeable,
    PRClosed,
    PRInfo,
    PROpen,
)
from orchestrator.github.reads import GitHubReads
from orchestrator.logs import get_logger, issue_key

log = get_logger(__name__)

CREATE_ATTEMPTS = 3


def carries_marker(body: str, marker: str) -> bool:
    """Whether ``marker`` is the first or the last line of ``body``, where the runtime puts it.

    A marker quoted in the middle of a comment (by the agent's text, a recovery
    note or a human) never makes the comment one of the runtime's own.
    """
    lines = body.replace("\r\n", "\n").strip().split("\n")
    return lines[0].strip() == marker or lines[-1].strip() == marker


class GitHubGateway(GitHubReads):
    """Idempotent reads and writes of one GitHub endpoint, for the runtime."""

    # -- pull requests -------------------------------------------------

    def find_pr(self, repo: str, branch: str) -> list[PRInfo]:
        """Pull requests whose head is ``branch``, newest first (open ones included)."""
        owner = repo.split("/", maxsplit=1)[0]
        items = self.client.paginate(
            f"/repos/{repo}/pulls",
            params={
                "head": f"{owner}:{branch}",
                "state": "all",
                "sort": "created",
                "direction": "desc",
            },
        )
        return [PRInfo.from_rest(item) for item in items if item["head"]["ref"] == branch]

    def find_or_create_pr(
        self,
        repo: str,
        *,
        branch: str,
        base: str,
        title: str,
        body: str,
        draft: bool = False,
        closed_pr_policy: str = "new_branch",
    ) -> PROpen | PRClosed | Problem:
        """Reuse the branch's open pull request, or open one; never a second one."""
        try:
            for _ in range(CREATE_ATTEMPTS):
                existing = self.find_pr(repo, branch)
                open_prs = [pr for pr in existing if pr.is_open]
                if open_prs:
                    return PROpen(open_prs[-1], created=False)
                if existing:
                    return self._closed_branch_pr(repo, existing[0], closed_pr_policy)
                try:
                    response = self.client.request(
                        "POST",
                        f"/repos/{repo}/pulls",
                        body={
                            "title": title,
                            "head": branch,
                            "base": base,
                            "body": body,
                            "draft": draft,
                        },
                    )
                except GitHubError as error:
                    if error.retryable or error.status == 422:
                        # Lost answer or "already exists": look again before anything else.
                        log.warning(
                            "pr_create_uncertain", repo=repo, branch=branch, status=error.status
                        )
                        continue
                    return error
                pr = PRInfo.from_rest(response.data)
                return PROpen(pr, created=True)
            return GitHubError(
                f"POST /repos/{repo}/pulls",
                0,
                f"could not confirm a pull request for {branch}",
                True,
            )
        except (GitHubError, RateLimited) as problem:
            return problem

    def _closed_branch_pr(self, repo: str, pr: PRInfo, policy: str) -> PROpen | PRClosed:
        if policy == "reopen" and not pr.merged:
            response = self.client.request(
                "PATCH", f"/repos/{repo}/pulls/{pr.number}", body={"state": "open"}
            )
            return PROpen(PRInfo.from_rest(response.data), created=False)
        return PRClosed(pr, "stop" if policy == "stop" else "new_branch")

    def get_pr(self, repo: str, number: int) -> PRInfo | Problem:
        try:
            return PRInfo.from_rest(
                self.client.request("GET", f"/repos/{repo}/pulls/{number}", conditional=True).data
            )
        except (GitHubError, RateLimited) as problem:
            return problem

    def update_pr_body(
        self, repo: str, number: int, body: str | Callable[[str], str]
    ) -> bool | Problem:
        """Set the pull request's description; False when it already was that text.

        ``body`` may be a function of the current description (to keep people's edits).
        """
        try:
            current = PRInfo.from_rest(
                self.client.request("GET", f"/repos/{repo}/pulls/{number}").data
            )
            if callable(body):
                body = body(current.body or "")
            if current.body == body:
                return False
            self.client.request("PATCH", f"/repos/{repo}/pulls/{number}", body={"body": body})
            return True
        except (GitHubError, RateLimited) as problem:
            return problem

    def request_review(self, repo: str, number: int, reviewers: Iterable[str]) -> bool | Problem:
        """Ask these users (again) for a review; the bot itself is never asked."""
        wanted = sorted({r for r in reviewers if r and not same_account(r, self.client.login)})
        if not wanted:
            return False
        try:
            self.client.request(
                "POST",
                f"/repos/{repo}/pulls/{number}/requested_reviewers",
                body={"reviewers": wanted},
                idempotent=True,
            )
            return True
        except (GitHubError, RateLimited) as problem:
            return problem

    def merge_if_head_matches(
        self,
        repo: str,
        number: int,
        expected_sha: str,
        method: str = "squash",
        *,
        commit: CommitText | None = None,
    ) -> Merged | HeadMoved | NotMergeable | Problem:
        """Merge only the expected head: GitHub checks ``sha`` atomically (409 if it moved).

        ``commit`` is what the merge commit says (``commit_title`` and ``commit_message``);
        without it GitHub writes its default, which for a squash lists the branch's
        commit messages.
        """
        body: dict[str, Any] = {"sha": expected_sha, "merge_method": method}
        if commit is not None:
            body |= {"commit_title": commit.title, "commit_message": commit.message}
        try:
            response = self.client.request(
                "PUT", f"/repos/{repo}/pulls/{number}/merge", body=body, ok=(200,)
            )
            return Merged(str(response.data["sha"]))
        except GitHubError as error:
            if error.status in (409, 405, 422) or error.retryable:
                # Find out what happened rather than trying again blindly.
                current = self.get_pr(repo, number)
                if isinstance(current, PRInfo):
                    if current.merged:
                        if current.head_sha == expected_sha:
                            return Merged(current.merge_commit_sha or "", already=True)
                        return HeadMoved(expected_sha, current.head_sha)
                    if current.head_sha != expected_sha:
                        return HeadMoved(expected_sha, current.head_sha)
                    if not current.is_open:
                        return NotMergeable("the pull request is closed")
                if error.status in (405, 409, 422):
                    return NotMergeable(error.message or f"HTTP {error.status}")
            return error
        except RateLimited as problem:
            return problem

    # -- comments ------------------------------------------------------

    def upsert_comment(
        self, repo: str, number: int, marker: str, body: str
    ) -> CommentUpserted | Problem:
        """Make the bot's comment carrying ``marker`` read ``body``; create it if missing."""
        if not carries_marker(body, marker):
            raise ValueError("the comment body must start or end with its marker")
        try:
            for _ in range(CREATE_ATTEMPTS):
                mine = self._find_marked_comment(repo, number, marker)
                if mine is not None:
                    if mine["body"] == body:
                        return CommentUpserted(
                            int(mine["id"]), CommentAction.UNCHANGED, str(mine.get("html_url", ""))
                        )
                    response = self.client.request(
                        "PATCH", f"/repos/{repo}/issues/comments/{mine['id']}", body={"body": body}
                    )
                    return CommentUpserted(
                        int(mine["id"]),
                        CommentAction.UPDATED,
                        str(response.data.get("html_url", "")),
                    )
                try:
                    response = self.client.request(
                        "POST", f"/repos/{repo}/issues/{number}/comments", body={"body": body}
                    )
                except GitHubError as error:
                    if error.retryable:
                        log.warning(
                            "comment_create_uncertain", repo=repo, issue=issue_key(repo, number)
                        )
                        continue
                    return error
                return CommentUpserted(
                    int(response.data["id"]),
                    CommentAction.CREATED,
                    str(response.data.get("html_url", "")),
                )
            return GitHubError(
                f"POST /repos/{repo}/issues/{{n}}/comments",
                0,
                "could not confirm the comment",
                True,
            )
        except (GitHubError, RateLimited) as problem:
            return problem

    def _find_marked_comment(self, repo: str, number: int, marker: str) -> dict[str, Any] | None:
        me = self.client.login
        comments = self.client.paginate(f"/repos/{repo}/issues/{number}/comments", conditional=True)
        marked = [
            c
            for c in comments
            if same_account((c.get("user") or {}).get("login"), me)
            and carries_marker(c.get("body") or "", marker)
        ]
        return marked[0] if marked else None

    def post_comment(self, repo: str, number: int, body: str) -> int | Problem:
        """A plain new comment (callers make it idempotent with a marker and upsert_comment)."""
        try:
            response = self.client.request(
                "POST", f"/repos/{repo}/issues/{number}/comments", body={"body": body}
            )
            return int(response.data["id"])
        except (GitHubError, RateLimited) as problem:
            return problem

    # -- issues and labels ----------------------------------------------

    def set_issue_labels(
        self, repo: str, number: int, *, add: Iterable[str] = (), remove: Iterable[str] = ()
    ) -> frozenset[str] | Problem:
        """Add and remove labels (idempotent); returns the labels afterwards."""
        add, remove = set(add), set(remove) - set(add)
        try:
            issue = self.client.request("GET", f"/repos/{repo}/issues/{number}").data
            labels = {label["name"] for label in issue.get("labels", [])}
            missing = sorted(add - labels)
            if missing:
                self.client.request(
                    "POST",
                    f"/repos/{repo}/issues/{number}/labels",
                    body={"labels": missing},
                    idempotent=True,
                )
            for name in sorted(remove & labels):
                try:
                    self.client.request(
                        "DELETE", f"/repos/{repo}/issues/{number}/labels/{name}", ok=(200, 204)
                    )
                except GitHubError as error:
                    if error.status != 404:
                        raise
            return frozenset((labels | add) - remove)
        except (GitHubError, RateLimited) as problem:
            return problem

    def ensure_labels_exist(self, repo: str, labels: dict[str, str]) -> list[str] | Problem:
        """Create the repository labels that are missing (name -> colour); returns created."""
        try:
            existing = {item["name"] for item in self.client.paginate(f"/repos/{repo}/labels")}
            created = []
            for name, color in sorted(labels.items()):
                if name in existing:
                    continue
                try:
                    self.client.request(
                        "POST", f"/repos/{repo}/labels", body={"name": name, "color": color}
                    )
                except GitHubError as error:
                    if error.status != 422:  # 422: it exists already (created meanwhile)
                        raise
                created.append(name)
            return created
        except (GitHubError, RateLimited) as problem:
            return problem

    def close_issue(self, repo: str, number: int, reason: str = "completed") -> bool | Problem:
        """Close the issue with ``state_reason``; False when it was already closed."""
        try:
            issue = self.client.request("GET", f"/repos/{repo}/issues/{number}").data
            if issue.get("state") == "closed":
                return False
            self.client.request(
                "PATCH",
                f"/repos/{repo}/issues/{number}",
                body={"state": "closed", "state_reason": reason},
            )
            return True
        except (GitHubError, RateLimited) as problem:
            return problem

    # -- review threads --------------------------------------------------

    def reply_to_thread(
        self, repo: str, pr_number: int, thread_id: str, body: str, marker: str
    ) -> str | Problem:
        """Reply once: a reply of ours carrying ``marker`` in the thread is not repeated.

        Returns the reply's node id. ``marker`` must be unique to this reply
        (for example the idempotency key in an HTML comment).
        """
        from orchestrator.github.queries import reply_to_thread_request

        if not carries_marker(body, marker):
            raise ValueError("the reply body must end with its marker")
        try:
            existing = self._thread_reply_with_marker(repo, pr_number, thread_id, marker)
            if existing:
                return existing
            request = reply_to_thread_request(thread_id, body)
            try:
                data = self.client.graphql(request.query, dict(request.variables))
            except GitHubError as error:
                if not error.retryable:
                    return error
                existing = self._thread_reply_with_marker(repo, pr_number, thread_id, marker)
                return existing or error
            return str(data["addPullRequestReviewThreadReply"]["comment"]["id"])
        except (GitHubError, RateLimited) as problem:
            return problem

    def _thread_reply_with_marker(
        self, repo: str, pr_number: int, thread_id: str, marker: str
    ) -> str | None:
        """Our reply carrying ``marker`` in the thread, read to its last comment.

        Raises a retryable GitHubError when the thread could not be read to the end:
        a reply that might exist already is not posted again.
        """
        from orchestrator.github.prstate import fetch_states

        node = fetch_states(self.client, repo, [pr_number]).get(pr_number) or {}
        if "threads" in (node.get("incomplete") or []):
            raise GitHubError(
                "POST /graphql addPullRequestReviewThreadReply",
                0,
                "the review threads could not be read to the end; the reply waits",
                True,
            )
        for thread in (node.get("reviewThreads") or {}).get("nodes") or []:
            if thread.get("id") != thread_id:
                continue
            for comment in (thread.get("comments") or {}).get("nodes") or []:
                author = (comment.get("author") or {}).get("login")
                if same_account(author, self.client.login) and carries_marker(
                    comment.get("body") or "", marker
                ):
                    return str(comment["id"])
        return None

    def mark_ready_for_review(self, node_id: str) -> bool | Problem:
        """Take a draft pull request out of draft (harmless when it is not a draft)."""
        from orchestrator.github.queries import mark_ready_request

        request = mark_ready_request(node_id)
        try:
            data = self.client.graphql(request.query, dict(request.variables))
            pull = (data.get("markPullRequestReadyForReview") or {}).get("pullRequest") or {}
            return not bool(pull.get("isDraft"))
        except (GitHubError, RateLimited) as problem:
            return problem

    def resolve_thread(self, thread_id: str) -> bool | Problem:
        """Resolve the thread (resolving a resolved thread is harmless)."""
        from orchestrator.github.queries import resolve_thread_request

        request = resolve_thread_request(thread_id)
        try:
            data = self.client.graphql(request.query, dict(request.variables))
            return bool(data["resolveReviewThread"]["thread"]["isResolved"])
        except (GitHubError, RateLimited) as problem:
            return problem
