"""Review requests, reviews, review threads and their comments of the emulated GitHub."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from orchestrator_sim.errors import NotFound, Unprocessable
from orchestrator_sim.records import (
    REVIEW_STATES,
    PullRequest,
    Repo,
    Review,
    ReviewComment,
    ReviewThread,
    make_node_id,
    parse_node_id,
)
from orchestrator_sim.state_checks import ChecksState
from orchestrator_sim.state_core import unique_names


class LineNotInDiff(Unprocessable):
    """An inline comment on a line the pull request's diff does not show: GitHub's 422."""

    MESSAGE = "pull_request_review_thread.line must be part of the diff"

    def __init__(self) -> None:
        super().__init__(
            "Validation Failed",
            errors=[
                {
                    "resource": "PullRequestReviewComment",
                    "code": "custom",
                    "field": "pull_request_review_thread.line",
                    "message": self.MESSAGE,
                }
            ],
        )


@dataclass(frozen=True, slots=True)
class InlineComment:
    """An inline comment submitted with a review: it opens a new review thread."""

    path: str
    line: int
    body: str
    side: str = "RIGHT"
    diff_hunk: str | None = None


class ReviewsState(ChecksState):
    """Requested reviewers, submitted reviews and the threads their inline comments open."""

    # ---------------------------------------------------------------- reviews

    def request_reviewers(
        self, repo: Repo, number: int, actor: str, logins: Iterable[str]
    ) -> PullRequest:
        """Ask users for a review; the author cannot be asked (422), as on GitHub."""
        with self.lock:
            pr = self.pull(repo, number)
            issue = self.issue(repo, number)
            account = self.user(actor)
            for login in unique_names(logins):
                reviewer = self.user(login)
                if reviewer.login.lower() == issue.author.lower():
                    raise Unprocessable(
                        "Review cannot be requested from pull request author.",
                        errors=[
                            {"resource": "PullRequest", "code": "custom", "field": "reviewers"}
                        ],
                    )
                if reviewer.login not in pr.requested_reviewers:
                    pr.requested_reviewers.append(reviewer.login)
                    self._event(
                        repo,
                        issue,
                        "review_requested",
                        account.login,
                        requested_reviewer=reviewer.login,
                    )
            issue.updated_at = self.now()
            self._touch()
            return pr

    def remove_requested_reviewers(
        self, repo: Repo, number: int, actor: str, logins: Iterable[str]
    ) -> PullRequest:
        with self.lock:
            pr = self.pull(repo, number)
            issue = self.issue(repo, number)
            account = self.user(actor)
            for login in unique_names(logins):
                for present in list(pr.requested_reviewers):
                    if present.lower() == self.login_key(login):
                        pr.requested_reviewers.remove(present)
                        self._event(
                            repo,
                            issue,
                            "review_request_removed",
                            account.login,
                            requested_reviewer=present,
                        )
            issue.updated_at = self.now()
            self._touch()
            return pr

    def submit_review(
        self,
        repo: Repo,
        number: int,
        author: str,
        state: str,
        *,
        body: str = "",
        commit_id: str | None = None,
        comments: Iterable[InlineComment] = (),
    ) -> Review:
        """Submit a review on the head (or ``commit_id``); each inline comment opens a thread.

        A review clears the author's pending review request, as on GitHub.
        """
        if state not in REVIEW_STATES or state in ("PENDING", "DISMISSED"):
            raise Unprocessable.field("PullRequestReview", "event", message=f"bad state {state!r}")
        inline = list(comments)
        if state in ("CHANGES_REQUESTED", "COMMENTED") and not body and not inline:
            raise Unprocessable.field(
                "PullRequestReview", "body", "missing_field", f"{state} needs a body"
            )
        with self.lock:
            pr = self.pull(repo, number)
            issue = self.issue(repo, number)
            account = self.user(author)
            if pr.merged or issue.state == "closed":
                raise Unprocessable.field("PullRequestReview", "pull_request", message="closed")
            if (
                state in ("APPROVED", "CHANGES_REQUESTED")
                and account.login.lower() == issue.author.lower()
            ):
                raise Unprocessable(
                    "Can not approve or request changes on your own pull request",
                    errors=[{"resource": "PullRequestReview", "code": "custom", "field": "event"}],
                )
            ident = self.new_id()
            now = self.now()
            review = Review(
                id=ident,
                node_id=make_node_id("PullRequestReview", ident),
                pull_number=number,
                author=account.login,
                state=state,
                body=body,
                commit_id=commit_id or pr.head_sha,
                submitted_at=now,
            )
            # Every inline comment is checked before anything is recorded: all or nothing.
            anchors = [self._anchor(repo, pr, item, review.commit_id) for item in inline]
            repo.reviews[ident] = review
            self.index(repo).add_review(review)
            for item, anchor in zip(inline, anchors, strict=True):
                self._open_thread(repo, pr, account.login, item, anchor, review=review)
            for present in list(pr.requested_reviewers):
                if present.lower() == account.login.lower():
                    pr.requested_reviewers.remove(present)
            issue.updated_at = now
            self._touch()
            return review

    def _anchor(
        self, repo: Repo, pr: PullRequest, item: InlineComment, commit_id: str
    ) -> tuple[str, int | None]:
        """The diff hunk an inline comment quotes and its line on the head (None: outdated).

        422 when the comment is malformed or its line is not part of the diff.
        """
        if not item.path or item.line < 1 or not item.body:
            raise Unprocessable.field(
                "PullRequestReviewComment",
                "path",
                message="inline comments need path, line >= 1, body",
            )
        if item.side not in ("LEFT", "RIGHT"):
            raise Unprocessable.field("PullRequestReviewComment", "side", message="LEFT or RIGHT")
        hunk = item.diff_hunk
        line: int | None = item.line
        base_sha = repo.branches.get(pr.base_ref)
        if hunk is None and self.git is not None and base_sha is not None:
            hunk = self.git.diff_hunk(
                repo, base_sha, commit_id, item.path, item.line, side=item.side
            )
            if hunk is None:
                raise LineNotInDiff()
            if commit_id != pr.head_sha and item.side == "RIGHT":
                line = self.git.moved_line(repo, commit_id, pr.head_sha, item.path, item.line)
        return hunk or f"@@ -{item.line},1 +{item.line},1 @@", line

    def _open_thread(
        self,
        repo: Repo,
        pr: PullRequest,
        author: str,
        item: InlineComment,
        anchor: tuple[str, int | None],
        *,
        review: Review,
    ) -> ReviewComment:
        hunk, line = anchor
        thread_ident = self.new_id()
        thread = ReviewThread(
            id=thread_ident,
            node_id=make_node_id("PullRequestReviewThread", thread_ident),
            pull_number=pr.number,
            path=item.path,
            line=line if line is not None else item.line,
            side=item.side,
            diff_hunk=hunk,
            commit_id=review.commit_id,
            original_line=item.line,
            outdated=line is None,
        )
        repo.threads[thread_ident] = thread
        self.index(repo).add_thread(thread)
        return self._add_thread_comment(repo, thread, author, item.body, review.id)

    def _add_thread_comment(
        self, repo: Repo, thread: ReviewThread, author: str, body: str, review_id: int | None
    ) -> ReviewComment:
        ident = self.new_id()
        now = self.now()
        pr = repo.pulls[thread.pull_number]
        first = thread.comment_ids[0] if thread.comment_ids else None
        comment = ReviewComment(
            id=ident,
            node_id=make_node_id("PullRequestReviewComment", ident),
            pull_number=thread.pull_number,
            thread_id=thread.id,
            author=author,
            body=body,
            path=thread.path,
            line=thread.line,
            side=thread.side,
            commit_id=pr.head_sha,
            original_commit_id=thread.commit_id,
            diff_hunk=thread.diff_hunk,
            created_at=now,
            updated_at=now,
            review_id=review_id,
            in_reply_to_id=first,
        )
        repo.review_comments[ident] = comment
        self.index(repo).add_review_comment(comment)
        thread.comment_ids.append(ident)
        repo.issues[thread.pull_number].updated_at = now
        return comment

    def add_review_comment(
        self,
        repo: Repo,
        number: int,
        author: str,
        item: InlineComment,
        commit_id: str | None = None,
    ) -> ReviewComment:
        """A stand-alone inline comment (a single-comment COMMENTED review) opening a thread."""
        with self.lock:
            pr = self.pull(repo, number)
            account = self.user(author)
            anchor = self._anchor(repo, pr, item, commit_id or pr.head_sha)
            ident = self.new_id()
            review = Review(
                id=ident,
                node_id=make_node_id("PullRequestReview", ident),
                pull_number=number,
                author=account.login,
                state="COMMENTED",
                body="",
                commit_id=commit_id or pr.head_sha,
                submitted_at=self.now(),
            )
            repo.reviews[ident] = review
            self.index(repo).add_review(review)
            comment = self._open_thread(repo, pr, account.login, item, anchor, review=review)
            self._touch()
            return comment

    def reply_to_comment(
        self, repo: Repo, number: int, author: str, in_reply_to: int, body: str
    ) -> ReviewComment:
        """Reply in the thread of review comment ``in_reply_to`` (any comment of the thread)."""
        with self.lock:
            target = repo.review_comments.get(in_reply_to)
            if target is None or target.pull_number != number:
                raise NotFound(f"review comment {in_reply_to}")
            return self.reply_to_thread(repo, target.thread_id, author, body)

    def reply_to_thread(self, repo: Repo, thread_id: int, author: str, body: str) -> ReviewComment:
        """Append a reply to a review thread."""
        if not body:
            raise Unprocessable.field("PullRequestReviewComment", "body", "missing_field")
        with self.lock:
            thread = self.thread(repo, thread_id)
            account = self.user(author)
            comment = self._add_thread_comment(repo, thread, account.login, body, None)
            self._touch()
            return comment

    def thread(self, repo: Repo, thread_id: int) -> ReviewThread:
        return self._lookup(repo.threads, thread_id, f"review thread {thread_id}")

    def resolve_thread(
        self, repo: Repo, thread_id: int, actor: str, resolved: bool = True
    ) -> ReviewThread:
        """Mark a review thread resolved by ``actor`` (or unresolved)."""
        with self.lock:
            thread = self.thread(repo, thread_id)
            account = self.user(actor)
            thread.resolved = resolved
            thread.resolved_by = account.login if resolved else None
            # Whether GitHub moves the pull request's updated_at when a thread is
            # resolved is not documented: the stricter reading, it does not (a reader
            # learns of it only by reading the threads again).
            self._touch()
            return thread

    def find_thread_by_node_id(self, node_id: str) -> tuple[Repo, ReviewThread] | None:
        """The repository and review thread a GraphQL node id names, if any."""
        parsed = parse_node_id(node_id)
        if parsed is None or parsed[0] != "PullRequestReviewThread":
            return None
        with self.lock:
            for repo in self.repos.values():
                thread = repo.threads.get(parsed[1])
                if thread is not None:
                    return repo, thread
            return None

    def pull_reviews(self, repo: Repo, number: int) -> list[Review]:
        """The reviews of one pull request, oldest first."""
        with self.lock:
            return list(self.index(repo).reviews_by_pull.get(number, ()))

    def pull_threads(self, repo: Repo, number: int) -> list[ReviewThread]:
        """The review threads of one pull request, oldest first."""
        with self.lock:
            return list(self.index(repo).threads_by_pull.get(number, ()))

    def pull_review_comments(self, repo: Repo, number: int) -> list[ReviewComment]:
        """The review comments of one pull request, oldest first."""
        with self.lock:
            return list(self.index(repo).review_comments_by_pull.get(number, ()))

    def review_decision(self, repo: Repo, pr: PullRequest) -> str | None:
        """GitHub's reviewDecision from each reviewer's latest decisive review.

        CHANGES_REQUESTED wins over APPROVED; with neither it is REVIEW_REQUIRED
        (or None when the repository does not require reviews).
        """
        with self.lock:
            latest: dict[str, str] = {}
            for review in self.pull_reviews(repo, pr.number):
                if review.state in ("APPROVED", "CHANGES_REQUESTED", "DISMISSED"):
                    latest[review.author.lower()] = review.state
            decisions = set(latest.values())
            if "CHANGES_REQUESTED" in decisions:
                return "CHANGES_REQUESTED"
            if "APPROVED" in decisions:
                return "APPROVED"
            return "REVIEW_REQUIRED" if repo.require_review else None
