"""Lookups over one repository's records, so a read costs the item's own data.

The records stay where snapshots save them, in the repository's dicts; a
`RepoIndex` files them a second time by what the reads ask for: check runs
and statuses by commit, reviews, threads and review comments by pull request,
conversation comments and events by issue, pull requests by branch, head
commit and id, issue numbers by label and by state. The state layers keep it
current on every change (`orchestrator_sim.state_core.StateCore.index`);
`RepoIndex.of` builds it from the records (after a snapshot loads, and in the
tests that prove the two never disagree). Lists keep creation order, which is
the order the records' dicts hold them in.
"""

from __future__ import annotations

from orchestrator_sim.records import (
    CheckRun,
    CommitStatus,
    Issue,
    IssueComment,
    IssueEvent,
    PullRequest,
    Repo,
    Review,
    ReviewComment,
    ReviewThread,
)


class RepoIndex:
    """Every record of ``repo`` filed by the keys the emulator's reads look them up by."""

    def __init__(self, repo: Repo) -> None:
        self.repo = repo
        self.issues_by_id: dict[int, Issue] = {}
        self.open_numbers: set[int] = set()
        self.numbers_by_label: dict[str, set[int]] = {}
        self.pulls_by_id: dict[int, PullRequest] = {}
        self.pulls_by_head_ref: dict[str, dict[int, PullRequest]] = {}
        self.pulls_by_base_ref: dict[str, dict[int, PullRequest]] = {}
        self.pulls_by_head_sha: dict[str, dict[int, PullRequest]] = {}
        self.comments_by_issue: dict[int, dict[int, IssueComment]] = {}
        self.events_by_issue: dict[int, list[IssueEvent]] = {}
        self.reviews_by_pull: dict[int, list[Review]] = {}
        self.threads_by_pull: dict[int, list[ReviewThread]] = {}
        self.review_comments_by_pull: dict[int, list[ReviewComment]] = {}
        self.check_runs_by_sha: dict[str, list[CheckRun]] = {}
        self.check_runs_by_job: dict[int, CheckRun] = {}
        self.statuses_by_sha: dict[str, list[CommitStatus]] = {}

    @classmethod
    def of(cls, repo: Repo) -> RepoIndex:
        """The index of ``repo`` built from its records."""
        index = cls(repo)
        for issue in repo.issues.values():
            index.add_issue(issue)
        for pr in repo.pulls.values():
            index.add_pull(pr)
        for comment in repo.comments.values():
            index.add_comment(comment)
        for event in repo.events:
            index.add_event(event)
        for review in repo.reviews.values():
            index.add_review(review)
        for thread in repo.threads.values():
            index.add_thread(thread)
        for review_comment in repo.review_comments.values():
            index.add_review_comment(review_comment)
        for run in repo.check_runs.values():
            index.add_check_run(run)
        for status in repo.statuses:
            index.add_status(status)
        return index

    # ----------------------------------------------------------------- issues

    def add_issue(self, issue: Issue) -> None:
        """File a new issue (or pull request's issue half) with its labels and state."""
        self.issues_by_id[issue.id] = issue
        for name in issue.labels:
            self.label_added(issue.number, name)
        self.state_changed(issue)

    def state_changed(self, issue: Issue) -> None:
        """Follow an issue that was closed, reopened or merged."""
        if issue.state == "open":
            self.open_numbers.add(issue.number)
        else:
            self.open_numbers.discard(issue.number)

    def label_added(self, number: int, name: str) -> None:
        self.numbers_by_label.setdefault(name.lower(), set()).add(number)

    def label_removed(self, number: int, name: str) -> None:
        numbers = self.numbers_by_label.get(name.lower())
        if numbers is not None:
            numbers.discard(number)

    def labelled(self, names: list[str]) -> set[int] | None:
        """Numbers of the issues carrying every label of ``names`` (None: no label asked)."""
        if not names:
            return None
        sets = sorted((self.numbers_by_label.get(n.lower(), set()) for n in names), key=len)
        return set(sets[0]).intersection(*sets[1:])

    # ------------------------------------------------------------------ pulls

    def add_pull(self, pr: PullRequest) -> None:
        self.pulls_by_id[pr.id] = pr
        self.pulls_by_head_ref.setdefault(pr.head_ref, {})[pr.number] = pr
        self.pulls_by_base_ref.setdefault(pr.base_ref, {})[pr.number] = pr
        self.pulls_by_head_sha.setdefault(pr.head_sha, {})[pr.number] = pr

    def head_moved(self, pr: PullRequest, old_sha: str) -> None:
        """Follow a pull request whose ``head_sha`` changed from ``old_sha``."""
        _move(self.pulls_by_head_sha, old_sha, pr.head_sha, pr)

    def base_moved(self, pr: PullRequest, old_base: str) -> None:
        """Follow a pull request whose ``base_ref`` changed from ``old_base``."""
        _move(self.pulls_by_base_ref, old_base, pr.base_ref, pr)

    def pulls_on(self, head: str | None, base: str | None) -> list[PullRequest]:
        """Pull requests from branch ``head`` and into ``base`` (each None: any), by number."""
        if head:
            found = self.pulls_by_head_ref.get(head, {})
        elif base:
            found = self.pulls_by_base_ref.get(base, {})
        else:
            return sorted(self.pulls_by_id.values(), key=lambda pr: pr.number)
        return [pr for _, pr in sorted(found.items()) if not base or pr.base_ref == base]

    def pulls_with_head(self, sha: str) -> list[PullRequest]:
        """Pull requests whose head is the commit ``sha``, by number."""
        found = self.pulls_by_head_sha.get(sha, {})
        return [found[number] for number in sorted(found)]

    # -------------------------------------------------------- comments, events

    def add_comment(self, comment: IssueComment) -> None:
        self.comments_by_issue.setdefault(comment.issue_number, {})[comment.id] = comment

    def remove_comment(self, comment: IssueComment) -> None:
        self.comments_by_issue.get(comment.issue_number, {}).pop(comment.id, None)

    def add_event(self, event: IssueEvent) -> None:
        self.events_by_issue.setdefault(event.issue_number, []).append(event)

    # ---------------------------------------------------------------- reviews

    def add_review(self, review: Review) -> None:
        self.reviews_by_pull.setdefault(review.pull_number, []).append(review)

    def add_thread(self, thread: ReviewThread) -> None:
        self.threads_by_pull.setdefault(thread.pull_number, []).append(thread)

    def add_review_comment(self, comment: ReviewComment) -> None:
        self.review_comments_by_pull.setdefault(comment.pull_number, []).append(comment)

    # ----------------------------------------------------------------- checks

    def add_check_run(self, run: CheckRun) -> None:
        self.check_runs_by_sha.setdefault(run.head_sha, []).append(run)
        self.check_runs_by_job[run.job_id] = run

    def add_status(self, status: CommitStatus) -> None:
        self.statuses_by_sha.setdefault(status.sha, []).append(status)

    def knows_commit(self, sha: str) -> bool:
        """Whether a check run or a commit status was reported on ``sha``."""
        return bool(self.check_runs_by_sha.get(sha) or self.statuses_by_sha.get(sha))


def _move(table: dict[str, dict[int, PullRequest]], old: str, new: str, pr: PullRequest) -> None:
    if old == new:
        return
    bucket = table.get(old)
    if bucket is not None:
        bucket.pop(pr.number, None)
        if not bucket:
            del table[old]
    table.setdefault(new, {})[pr.number] = pr
