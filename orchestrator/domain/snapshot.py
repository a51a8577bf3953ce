"""The planner's inputs: what the tracker, the pull requests, the store and the workers say.

These are plain frozen values, independent of any GitHub client library; the
GitHub gateway and the store fill them once per tick.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum

from orchestrator.domain.agent_files.errors import ResultError
from orchestrator.domain.agent_files.fix_summary import FixStatus, FixSummary
from orchestrator.domain.agent_files.questions import BlockedQuestion, PRDescription
from orchestrator.domain.agent_files.review import Review
from orchestrator.domain.phases import Phase, WaitingReason
from orchestrator.domain.workpad import WorkpadRecord


@dataclass(frozen=True, order=True, slots=True)
class IssueRef:
    """An issue by repository (``owner/name``) and number."""

    repo: str
    number: int

    def __str__(self) -> str:
        return f"{self.repo}#{self.number}"


@dataclass(frozen=True, slots=True)
class Actor:
    """A GitHub account as the gates need to see it."""

    login: str
    is_bot: bool = False
    # Write, maintain or admin permission on the repository.
    can_write: bool = False


class LabelAction(StrEnum):
    """Whether a label event added or removed the label."""

    ADDED = "added"
    REMOVED = "removed"


@dataclass(frozen=True, slots=True)
class LabelEvent:
    """One label added to or removed from the issue or its pull request."""

    label: str
    action: LabelAction
    actor: Actor
    at: datetime


@dataclass(frozen=True, slots=True)
class IssueComment:
    """A comment on the issue (used to notice a human's reply to a blocked question)."""

    id: int
    author: Actor
    created_at: datetime


@dataclass(frozen=True, slots=True)
class TrackedIssue:
    """The tracker's facts about one issue."""

    ref: IssueRef
    title: str
    is_open: bool
    labels: frozenset[str]
    created_at: datetime
    tracker_state: str | None = None
    label_events: tuple[LabelEvent, ...] = ()
    comments: tuple[IssueComment, ...] = ()


class OutcomeKind(StrEnum):
    """How an agent turn ended."""

    SUCCEEDED = "succeeded"
    FAILED = "failed"
    TIMED_OUT = "timed_out"
    # No event at all after start: the session never came up.
    START_TIMEOUT = "start_timeout"
    CANCELLED = "cancelled"
    # The turn's commits never reached the remote and are gone (their workspace with them):
    # a failed attempt, re-run from the last pushed state.
    COMMITS_LOST = "commits_lost"
    # The runtime refused to push the turn's commits for what they say (a closing keyword
    # for another issue): a failed attempt, re-run with the reason, the commits kept.
    PUSH_REFUSED = "push_refused"


@dataclass(frozen=True, slots=True)
class TurnCommit:
    """A commit a turn made, with which of the files its review threads are on it changes."""

    sha: str
    paths: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class AgentOutcome:
    """The recorded end of one agent turn, with the HEAD before and after and its result files."""

    run_id: str
    phase: Phase
    kind: OutcomeKind
    started_at: datetime
    finished_at: datetime
    head_before: str | None = None
    head_after: str | None = None
    review: Review | ResultError | None = None
    fix_summary: FixSummary | ResultError | None = None
    blocked: BlockedQuestion | ResultError | None = None
    pr_description: PRDescription | ResultError | None = None
    # Why the result files break the turn's contract (a rework thread left unanswered,
    # "fixed" without a commit, commits without a fix summary); set when the turn is recorded.
    contract_error: str | None = None
    # The review threads the turn was given as work (a rework turn; None: not recorded).
    given_threads: tuple[str, ...] | None = None
    # The commits the turn made, oldest first, each with the thread files it changes
    # (None: not read). A thread's "fixed" claim is believed only on this evidence.
    commits: tuple[TurnCommit, ...] | None = None
    # The heading lines of the repository's pull request template on the base branch.
    pr_template: tuple[str, ...] = ()
    # The turn's commits were thrown away: what asked for the rework was gone when it ended.
    discarded: bool = False
    # Why the agent process failed, in one line (its own last error, or its stderr).
    reason: str | None = None
    # The turn claim it was recorded under (None: recorded without one, or before claims
    # were kept): a replica taking the claim over knows the turn is done from this alone.
    claim_id: int | None = None
    # The visit of the phase the turn ran in: the record's ``phase_since`` when the turn
    # started (None: not known). Compared for equality only, never with a clock: the
    # replica that ran the turn may keep another time than the one that moved the phase.
    visit: datetime | None = None

    @property
    def committed(self) -> bool:
        """Whether the turn left new commits in the workspace."""
        return self.head_after is not None and self.head_after != self.head_before


@dataclass(frozen=True, slots=True)
class ThreadHistoryEntry:
    """A review thread as seen in one fix iteration, with what the agent said about it."""

    iteration: int
    thread_id: str
    path: str | None
    body: str
    status: FixStatus | None = None
    # Who opened the thread (None: recorded before authors were kept).
    author: str | None = None
    author_is_bot: bool = False


@dataclass(frozen=True, slots=True)
class OperatorRequest:
    """An operator's request to leave blocked, to a phase or back where the flow was."""

    requested_at: datetime
    to_phase: Phase | None = None


@dataclass(frozen=True, slots=True)
class HeadSighting:
    """When the runtime first saw a pull request head, on GitHub's clock.

    ``since`` is the pull request's ``updatedAt`` in the first read that showed
    ``sha``: GitHub moved it when the head was pushed, so it is never earlier
    than the push. An approval label counts for the head only when it was added
    strictly later, which keeps an approval given on an older head from covering
    code pushed after it, whoever pushed it.
    """

    sha: str
    since: datetime


@dataclass(frozen=True, slots=True)
class StoredRecord:
    """The store's row for an issue: the working copy of the flow state."""

    phase: Phase
    phase_since: datetime
    workpad: WorkpadRecord = field(default_factory=WorkpadRecord)
    rework_cycles: int = 0
    waiting_reason: WaitingReason | None = None
    # Where the flow was before it became blocked, to return there.
    resume_phase: Phase | None = None
    retry_due_at: datetime | None = None
    # Consecutive failed turns in the current phase.
    attempt: int = 0
    last_outcome: AgentOutcome | None = None
    operator_request: OperatorRequest | None = None
    thread_history: tuple[ThreadHistoryEntry, ...] = ()
    # Idempotency keys of this issue's side effects the outbox marked done.
    completed_effects: frozenset[str] = frozenset()
    # The record as last written to the workpad comment (None: never written).
    mirrored_workpad: WorkpadRecord | None = None
    # The pull request head the runtime saw last, and since when (kept in the database only:
    # it authorizes approvals, so it is never read back from the editable workpad comment).
    head_seen: HeadSighting | None = None
    # The pull request body as the runtime last wrote it (None: not known), so that
    # people's edits since are recognised and kept.
    pr_body: str | None = None


class PRStatus(StrEnum):
    """The pull request's own state."""

    OPEN = "open"
    CLOSED = "closed"
    MERGED = "merged"


@dataclass(frozen=True, slots=True)
class ChecksSummary:
    """The checks reported on one head commit, by name."""

    head_sha: str
    passed: frozenset[str] = frozenset()
    failing: frozenset[str] = frozenset()
    pending: frozenset[str] = frozenset()

    @property
    def reported(self) -> frozenset[str]:
        """Every check name reported on this head."""
        return self.passed | self.failing | self.pending


class ReviewVerdict(StrEnum):
    """The state of a submitted pull request review."""

    APPROVED = "approved"
    CHANGES_REQUESTED = "changes_requested"
    COMMENTED = "commented"
    DISMISSED = "dismissed"


@dataclass(frozen=True, slots=True)
class PRReview:
    """A submitted review on the pull request, on a given commit."""

    author: Actor
    verdict: ReviewVerdict
    commit_sha: str
    submitted_at: datetime


@dataclass(frozen=True, slots=True)
class ThreadComment:
    """One comment of a review thread, in the order it was posted."""

    author: Actor
    body: str
    created_at: datetime


@dataclass(frozen=True, slots=True)
class ReviewThread:
    """An unresolved (or resolved) review thread on the pull request."""

    id: str
    author: Actor
    body: str
    created_at: datetime
    path: str | None = None
    is_resolved: bool = False
    is_outdated: bool = False
    last_comment_at: datetime | None = None
    last_comment_author: Actor | None = None
    line: int | None = None
    diff_hunk: str | None = None
    # Every comment, the first one included (empty when the source did not say).
    comments: tuple[ThreadComment, ...] = ()


@dataclass(frozen=True, slots=True)
class PullRequest:
    """The state of the issue's pull request as last inspected."""

    number: int
    url: str
    head_sha: str
    status: PRStatus = PRStatus.OPEN
    # True mergeable, False conflicting, None not computed yet.
    mergeable: bool | None = None
    checks: ChecksSummary | None = None
    reviews: tuple[PRReview, ...] = ()
    threads: tuple[ReviewThread, ...] = ()
    labels: frozenset[str] = frozenset()
    label_events: tuple[LabelEvent, ...] = ()
    merge_commit_sha: str | None = None
    head_branch: str | None = None
    # GitHub's updatedAt of the pull request when it was read (None: not reported).
    updated_at: datetime | None = None
    # Lists a decision depends on that could not be read to the end, or whose
    # pieces disagree ("checks", "reviews", "threads"): the gates fail closed on them.
    incomplete: frozenset[str] = frozenset()
    is_draft: bool = False
    # GitHub's mergeStateStatus (BLOCKED while branch protection is not satisfied, ...).
    merge_state: str | None = None
    # GitHub's node id of the pull request (for GraphQL mutations such as leaving draft).
    node_id: str | None = None


@dataclass(frozen=True, slots=True)
class RunningAgent:
    """An agent turn in progress."""

    issue: IssueRef
    phase: Phase
    run_id: str
    started_at: datetime
    last_event_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class KillSwitches:
    """The switches that stop side effects: repo-wide labels and the local sentinel file."""

    local_file_active: bool = False
    # Every repository is stopped (for example a single-repo deployment's stop label).
    repo_wide_active: bool = False
    # Repositories stopped one by one, by an open issue carrying the repo stop label.
    stopped_repos: frozenset[str] = frozenset()

    def covers_repo(self, repo: str) -> bool:
        """Whether a switch stops every side effect in this repository."""
        return self.local_file_active or self.repo_wide_active or repo in self.stopped_repos


@dataclass(frozen=True, slots=True)
class IssueSnapshot:
    """Everything known about one tracked issue."""

    issue: TrackedIssue
    record: StoredRecord | None = None
    pr: PullRequest | None = None

    @property
    def ref(self) -> IssueRef:
        """The issue's reference."""
        return self.issue.ref


@dataclass(frozen=True, slots=True)
class Snapshot:
    """One tick's view of the world, the single input of the planner with the policy."""

    now: datetime
    issues: tuple[IssueSnapshot, ...] = ()
    running: tuple[RunningAgent, ...] = ()
    kill_switches: KillSwitches = field(default_factory=KillSwitches)
    # The daemon's own login: its labels, reviews and comments never count as a human's.
    self_login: str | None = None
