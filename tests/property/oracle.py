"""The merge oracle: what GitHub looked like at each merge, and whether that merge was allowed.

The oracle knows nothing of the product's decisions. It builds its own model
of one pull request from two sources only:

- the events the test applied (pushes, labels, reviews, checks, permissions),
  in the order it applied them, each stamped with the head it was applied on;
- what the emulator reports: the bot's writes in order (the write log), the
  pull request's head and merge state, the labels present, the bot's review
  comment, the check runs of a SHA.

For every merge it checks (``judge``):

1. the merged SHA is the head the model holds at the moment of the merge;
2. checks: on exactly that SHA, at least one check run, the newest run of every
   name completed successfully, none pending or failing (past the 100th too),
   and the emulator's own list of the SHA's runs agrees;
3. a self-review of exactly that SHA was posted by the bot before the merge
   (its review comment carrying ``<!-- orchestrator-review-head: SHA -->``);
4. a valid approval of exactly that SHA: an APPROVED review by a human writer
   whose commit is that SHA, or the approval label present at the merge and
   added by a human writer while that SHA was the head; a writer is a human
   account (not the product's, not another bot) with write access at the merge;
5. no writer's latest decisive review requests changes;
6. no stop label (issue or pull request) and no repository stop label at the
   moment the merge was called.

Besides: at most one merge, and one pull request for the branch.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

WRITE_LEVELS = frozenset({"write", "maintain", "admin"})
PASSING = frozenset({"success"})
REVIEW_HEAD = re.compile(r"<!--\s*orchestrator-review-head:\s*([0-9a-f]{40})\s*-->")
REVIEW_COMMENT_MARKER = "<!-- orchestrator-review-comment -->"


@dataclass
class Run:
    """One check run as the test created it."""

    run_id: int
    name: str
    status: str
    conclusion: str | None = None


@dataclass
class LabelState:
    """One label on the issue or the pull request, with the addition that put it there."""

    present: bool = False
    added_by: str | None = None
    # The pull request head when that addition happened.
    added_on_head: str | None = None


@dataclass
class ReviewRecord:
    author: str
    verdict: str  # APPROVED, CHANGES_REQUESTED, COMMENTED
    commit: str


@dataclass
class Merge:
    """One merge the bot made, as the write log and the pull request show it."""

    merged_head: str
    merge_commit: str | None
    reasons: list[str] = field(default_factory=list)


@dataclass
class Model:
    """The oracle's picture of one pull request, built from applied events and GitHub's reports."""

    repo: str
    issue: int
    pr: int
    bot_login: str
    humans: dict[str, str]  # login -> permission level (the people who may qualify)
    bots: frozenset[str]  # other bot accounts: never approvers
    approval_label: str
    stop_label: str
    repo_stop_label: str
    head: str
    heads: list[str] = field(default_factory=list)
    labels: dict[tuple[str, str], LabelState] = field(default_factory=dict)
    reviews: list[ReviewRecord] = field(default_factory=list)
    runs: dict[str, list[Run]] = field(default_factory=dict)
    self_reviewed: set[str] = field(default_factory=set)
    merges: list[Merge] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.heads.append(self.head)

    # ------------------------------------------------------------ the events

    def place(self, where: str) -> int:
        return self.issue if where == "issue" else self.pr

    def label(self, where: str, name: str) -> LabelState:
        return self.labels.setdefault((where, name), LabelState())

    def label_added(self, where: str, name: str, by: str) -> None:
        state = self.label(where, name)
        if state.present:
            # GitHub records no new event for a label that is already there.
            return
        state.present, state.added_by, state.added_on_head = True, by, self.head

    def label_removed(self, where: str, name: str) -> None:
        self.label(where, name).present = False

    def pushed(self, sha: str) -> None:
        if sha != self.head:
            self.head = sha
            self.heads.append(sha)

    def reviewed(self, author: str, verdict: str, commit: str) -> None:
        self.reviews.append(ReviewRecord(author, verdict, commit))

    def check_created(
        self, sha: str, run_id: int, name: str, status: str, conclusion: str | None
    ) -> None:
        self.runs.setdefault(sha, []).append(Run(run_id, name, status, conclusion))

    def check_updated(self, sha: str, run_id: int, status: str, conclusion: str | None) -> None:
        for run in self.runs.get(sha, []):
            if run.run_id == run_id:
                run.status, run.conclusion = status, conclusion
                return
        raise AssertionError(f"the test updated check run {run_id}, which it never created")

    def open_run(self, sha: str, name: str) -> Run | None:
        """The newest run of ``name`` on ``sha`` if it has not completed."""
        runs = [r for r in self.runs.get(sha, []) if r.name == name]
        return runs[-1] if runs and runs[-1].status != "completed" else None

    def permission(self, login: str, level: str) -> None:
        self.humans[login] = level

    # ------------------------------------------------------ GitHub's reports

    def sync_labels(
        self, where: str, present: set[str], watched: set[str], *, additions_only: bool = False
    ) -> None:
        """Labels the bot added or removed (the test's own changes are already in the model)."""
        for name in watched:
            state = self.label(where, name)
            if state.present and name not in present and not additions_only:
                state.present = False
                self.notes.append(f"the bot removed {name!r} from the {where}")
            elif not state.present and name in present:
                state.present, state.added_by, state.added_on_head = True, self.bot_login, self.head
                self.notes.append(f"the bot added {name!r} to the {where}")

    def saw_review_comment(self, body: str, author: str) -> None:
        if author != self.bot_login or REVIEW_COMMENT_MARKER not in body:
            return
        for sha in REVIEW_HEAD.findall(body):
            self.self_reviewed.add(sha)

    # --------------------------------------------------------------- judging

    def qualifies(self, login: str | None) -> bool:
        """A human with write access now: not the product's account, not another bot."""
        if login is None or login == self.bot_login or login in self.bots:
            return False
        return self.humans.get(login) in WRITE_LEVELS

    def checks_problems(self, sha: str, reported: list[dict[str, Any]] | None) -> list[str]:
        """Why the checks of ``sha`` are not green, by the model and by the emulator's report.

        Green: at least one check run, and the newest run of every name completed
        successfully. ``reported`` is every check run the emulator lists for the SHA
        (all pages); the model must agree with it, or the harness itself is wrong.
        """
        runs = self.runs.get(sha, [])
        newest = {run.name: run for run in runs}
        order = {run.run_id: position for position, run in enumerate(runs, start=1)}
        problems = []
        if not newest:
            problems.append(f"no check run was ever reported on {sha[:12]}")
        not_green = sorted(
            (r for r in newest.values() if r.status != "completed" or r.conclusion not in PASSING),
            key=lambda r: order[r.run_id],
        )
        if not_green:
            listed = ", ".join(
                f"{r.name}={r.conclusion if r.status == 'completed' else r.status} "
                f"(check run #{order[r.run_id]} on the commit)"
                for r in not_green[:5]
            )
            problems.append(f"checks not green on {sha[:12]}: {listed}")
        if reported is not None:
            latest: dict[str, dict[str, Any]] = {}
            for item in sorted(reported, key=lambda r: int(r["id"])):
                latest[str(item["name"])] = item
            emulator_not_green = sorted(
                name
                for name, item in latest.items()
                if item.get("status") != "completed" or item.get("conclusion") not in PASSING
            )
            model_not_green = sorted(r.name for r in not_green)
            if emulator_not_green != model_not_green or set(latest) != set(newest):
                problems.append(
                    f"(harness) the emulator lists other checks on {sha[:12]} than the model: "
                    f"not green {emulator_not_green[:5]} there, {model_not_green[:5]} here"
                )
        return problems

    def approval_problems(self, sha: str) -> list[str]:
        problems = []
        latest: dict[str, ReviewRecord] = {}
        for review in self.reviews:
            if review.verdict in ("APPROVED", "CHANGES_REQUESTED") and self.qualifies(
                review.author
            ):
                latest[review.author] = review
        blocking = sorted(a for a, r in latest.items() if r.verdict == "CHANGES_REQUESTED")
        if blocking:
            problems.append(f"outstanding change request by writer(s) {blocking}")
        by_review = any(
            r.verdict == "APPROVED" and r.commit == sha and self.qualifies(r.author)
            for r in self.reviews
        )
        by_label = any(
            state.present and state.added_on_head == sha and self.qualifies(state.added_by)
            for (_where, name), state in self.labels.items()
            if name == self.approval_label
        )
        if not (by_review or by_label):
            labels = {
                where: (s.present, s.added_by, s.added_on_head and s.added_on_head[:12])
                for (where, name), s in self.labels.items()
                if name == self.approval_label
            }
            approvals = [(r.author, r.commit[:12]) for r in self.reviews if r.verdict == "APPROVED"]
            problems.append(
                f"no valid approval of {sha[:12]}: approving reviews {approvals}, "
                f"approval label (present, added by, on head) {labels}, "
                f"permissions {self.humans}"
            )
        return problems

    def stop_problems(self) -> list[str]:
        set_now = sorted(
            f"{name} on the {where}"
            for (where, name), state in self.labels.items()
            if state.present and name in (self.stop_label, self.repo_stop_label)
        )
        return [f"stop switch set when the merge was called: {set_now}"] if set_now else []

    def judge(
        self,
        merged_head: str,
        merge_commit: str | None,
        reported_checks: list[dict[str, Any]] | None,
    ) -> Merge:
        """Record one merge and every rule it broke."""
        merge = Merge(merged_head=merged_head, merge_commit=merge_commit)
        if self.merges:
            merge.reasons.append(
                f"a second merge (the first merged {self.merges[0].merged_head[:12]})"
            )
        if merged_head != self.head:
            merge.reasons.append(
                f"merged {merged_head[:12]} but the head at the merge was {self.head[:12]}"
            )
        merge.reasons += self.checks_problems(merged_head, reported_checks)
        if merged_head not in self.self_reviewed:
            merge.reasons.append(
                f"no self-review of {merged_head[:12]} was posted before the merge "
                f"(reviewed: {sorted(s[:12] for s in self.self_reviewed)})"
            )
        merge.reasons += self.approval_problems(merged_head)
        merge.reasons += self.stop_problems()
        self.merges.append(merge)
        return merge
