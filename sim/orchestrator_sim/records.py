"""The records the emulator keeps: accounts, repositories and what lives in them.

Records are plain dataclasses holding only JSON-friendly values (strings,
integers, booleans, lists and dicts of them, other records), so a whole state
can be saved and loaded as JSON. Timestamps are GitHub-style strings
(``2026-01-01T00:00:00Z``), which also sort correctly as text. People are
referred to by login; labels on an issue by name.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field

from orchestrator_sim.records_rules import AutoMergeRequest, QueueEntry, Ruleset

# GitHub's repository permission levels, weakest first.
PERMISSION_LEVELS: tuple[str, ...] = ("read", "triage", "write", "maintain", "admin")

REVIEW_STATES = frozenset({"APPROVED", "CHANGES_REQUESTED", "COMMENTED", "DISMISSED", "PENDING"})
CHECK_STATUSES = frozenset(
    {"queued", "in_progress", "completed", "waiting", "requested", "pending"}
)
CHECK_CONCLUSIONS = frozenset(
    {
        "success",
        "failure",
        "neutral",
        "cancelled",
        "skipped",
        "timed_out",
        "action_required",
    }
)
STATUS_STATES = frozenset({"error", "failure", "pending", "success"})
DEPLOYMENT_STATES = frozenset(
    {"error", "failure", "inactive", "in_progress", "queued", "pending", "success"}
)
ANNOTATION_LEVELS = frozenset({"notice", "warning", "failure"})

# What REST appends to a bot account's login (``renovate[bot]``); GraphQL shows the bare name.
BOT_SUFFIX = "[bot]"


def make_node_id(kind: str, number: int) -> str:
    """A global node id in GitHub's legacy shape: base64 of ``0<len>:<Kind><id>``."""
    raw = f"0{len(kind)}:{kind}{number}".encode()
    return base64.b64encode(raw).decode("ascii")


def parse_node_id(node_id: str) -> tuple[str, int] | None:
    """The (kind, id) inside a node id made by `make_node_id`, or None if it is not one."""
    try:
        raw = base64.b64decode(node_id.encode("ascii"), validate=True).decode("ascii")
        size, rest = raw.split(":", 1)
        length = int(size)
        kind, number = rest[:length], rest[length:]
        if len(kind) != length or not kind.isalpha():
            return None
        return kind, int(number)
    except ValueError:
        return None


@dataclass(slots=True)
class User:
    """An account: a person, the product's bot, or an organization that owns repositories.

    ``token`` authenticates the account (each login has at most one token);
    organizations have none and cannot call the API. An organization's
    ``teams`` map each team slug to its members' logins.
    """

    id: int
    login: str
    node_id: str
    token: str | None = None
    bot: bool = False
    organization: bool = False
    name: str | None = None
    email: str | None = None
    created_at: str = ""
    teams: dict[str, list[str]] = field(default_factory=dict)

    @property
    def type(self) -> str:
        """GitHub's account type: ``User``, ``Bot`` or ``Organization``."""
        if self.organization:
            return "Organization"
        return "Bot" if self.bot else "User"

    @property
    def rest_login(self) -> str:
        """The login as REST shows it: a bot's carries GitHub's ``[bot]`` suffix.

        ``login`` itself is the bare name, which is how GraphQL shows a bot.
        """
        return f"{self.login}{BOT_SUFFIX}" if self.bot else self.login


@dataclass(slots=True)
class Label:
    """A repository label; issues refer to it by name (matched case-insensitively)."""

    id: int
    node_id: str
    name: str
    color: str = "ededed"
    description: str | None = None
    default: bool = False


@dataclass(slots=True)
class IssueComment:
    """A conversation comment on an issue or a pull request.

    ``editor`` and ``last_edited_at`` name who changed the body last and when
    (None while it was never edited).
    """

    id: int
    node_id: str
    issue_number: int
    author: str
    body: str
    created_at: str
    updated_at: str
    editor: str | None = None
    last_edited_at: str | None = None


@dataclass(slots=True)
class IssueEvent:
    """One entry of an issue's event log (``labeled``, ``unlabeled``, ``closed``, ``merged`` ...).

    ``label`` / ``label_color`` are set for label events, ``commit_id`` for
    closing and merge events, ``requested_reviewer`` for review-request events,
    ``rename_from`` / ``rename_to`` for ``renamed``.
    """

    id: int
    node_id: str
    issue_number: int
    event: str
    actor: str
    created_at: str
    label: str | None = None
    label_color: str | None = None
    commit_id: str | None = None
    requested_reviewer: str | None = None
    rename_from: str | None = None
    rename_to: str | None = None


@dataclass(slots=True)
class Issue:
    """An issue, or the issue half of a pull request (``is_pull``); both share one number line."""

    number: int
    id: int
    node_id: str
    title: str
    author: str
    created_at: str
    updated_at: str
    body: str | None = None
    state: str = "open"
    state_reason: str | None = None
    labels: list[str] = field(default_factory=list)
    assignees: list[str] = field(default_factory=list)
    closed_at: str | None = None
    closed_by: str | None = None
    locked: bool = False
    is_pull: bool = False


@dataclass(slots=True)
class PullRequest:
    """The pull-request half of an issue number: branches, merge state, review requests.

    ``head_sha`` follows the head branch while the pull request is open.
    ``mergeable_override`` forces mergeability (None: compute it from git);
    ``mergeable_cache`` remembers the last computed answer as
    ``"<base sha>:<head sha>:<0|1>"``; ``mergeability_since`` is when GitHub
    would have started computing it again (the pull request was opened, or
    its head or base moved), as an ISO time with microseconds.
    ``merged_base_sha`` is the base head the pull request was merged onto,
    so its commits can still be listed after the merge.
    """

    number: int
    id: int
    node_id: str
    head_ref: str
    base_ref: str
    head_sha: str
    draft: bool = False
    merged: bool = False
    merged_at: str | None = None
    merged_by: str | None = None
    merge_commit_sha: str | None = None
    requested_reviewers: list[str] = field(default_factory=list)
    mergeable_override: bool | None = None
    mergeable_cache: str | None = None
    maintainer_can_modify: bool = False
    mergeability_since: str | None = None
    merged_base_sha: str | None = None


@dataclass(slots=True)
class Review:
    """A submitted pull-request review: its state and the head commit it was made on."""

    id: int
    node_id: str
    pull_number: int
    author: str
    state: str
    body: str
    commit_id: str
    submitted_at: str


@dataclass(slots=True)
class ReviewComment:
    """An inline (diff) comment; every one belongs to exactly one review thread.

    ``in_reply_to_id`` is the first comment of the thread for replies, None
    for the comment that opened it.
    """

    id: int
    node_id: str
    pull_number: int
    thread_id: int
    author: str
    body: str
    path: str
    line: int | None
    side: str
    commit_id: str
    original_commit_id: str
    diff_hunk: str
    created_at: str
    updated_at: str
    review_id: int | None = None
    in_reply_to_id: int | None = None


@dataclass(slots=True)
class ReviewThread:
    """A review thread: a file position plus its comments in order, and whether it is resolved.

    ``line`` is where the thread sits on the current head; ``original_line``
    where it was opened (None in snapshots made before it was recorded: then
    ``line``). A push that changes the lines under it makes it ``outdated``.
    """

    id: int
    node_id: str
    pull_number: int
    path: str
    line: int | None
    side: str
    diff_hunk: str
    commit_id: str
    comment_ids: list[int] = field(default_factory=list)
    resolved: bool = False
    resolved_by: str | None = None
    outdated: bool = False
    original_line: int | None = None


@dataclass(slots=True)
class CheckAnnotation:
    """One annotation of a check run (a file range with a level and a message)."""

    path: str
    start_line: int
    end_line: int
    annotation_level: str
    message: str
    title: str | None = None
    raw_details: str | None = None
    start_column: int | None = None
    end_column: int | None = None


@dataclass(slots=True)
class CheckRun:
    """A check run on a commit, tied to a CI job (``job_id``) whose log text it carries."""

    id: int
    node_id: str
    head_sha: str
    name: str
    status: str
    job_id: int
    conclusion: str | None = None
    started_at: str | None = None
    completed_at: str | None = None
    output_title: str | None = None
    output_summary: str | None = None
    output_text: str | None = None
    annotations: list[CheckAnnotation] = field(default_factory=list)
    log: str = ""
    external_id: str | None = None
    details_url: str | None = None
    app_slug: str = "github-actions"


@dataclass(slots=True)
class CommitStatus:
    """A commit status (the older statuses API): a state per context on a SHA."""

    id: int
    node_id: str
    sha: str
    state: str
    context: str
    creator: str
    created_at: str
    updated_at: str
    description: str | None = None
    target_url: str | None = None


@dataclass(slots=True)
class BranchProtection:
    """The rules a protected branch enforces on merges into it.

    ``required_checks`` names the check runs or commit statuses (by name or
    context) that must pass on the head; ``required_approvals`` counts
    approving reviews from accounts with write access; ``dismiss_stale_reviews``
    dismisses approvals when the head moves; ``enforce_admins`` applies the
    rules to administrators too. ``strict`` asks for a head that contains the
    base's tip; ``required_linear_history`` refuses merge commits;
    ``require_last_push_approval`` an approval from someone other than the
    last pusher; ``require_code_owner_reviews`` one from an owner of each
    changed file (CODEOWNERS); ``required_conversation_resolution`` every review
    thread resolved; ``required_deployments`` names environments the head must
    have been deployed to successfully.
    """

    required_checks: list[str] = field(default_factory=list)
    required_approvals: int = 0
    dismiss_stale_reviews: bool = False
    enforce_admins: bool = False
    strict: bool = False
    required_linear_history: bool = False
    require_last_push_approval: bool = False
    require_code_owner_reviews: bool = False
    required_conversation_resolution: bool = False
    required_deployments: list[str] = field(default_factory=list)


@dataclass(slots=True)
class DeploymentStatus:
    """One state a deployment went through (``success``, ``failure``, ``in_progress`` ...)."""

    id: int
    node_id: str
    state: str
    creator: str
    created_at: str
    description: str | None = None


@dataclass(slots=True)
class Deployment:
    """A deployment of commit ``sha`` to ``environment``; its newest status is its state."""

    id: int
    node_id: str
    sha: str
    ref: str
    environment: str
    creator: str
    created_at: str
    updated_at: str
    description: str | None = None
    statuses: list[DeploymentStatus] = field(default_factory=list)


@dataclass(slots=True)
class Repo:
    """A repository: permissions, labels, issues and pulls, reviews, checks and branch heads.

    ``branches`` maps each branch name to its head SHA as last seen in the bare
    repository; ``permissions`` maps logins to a level in `PERMISSION_LEVELS`
    (the owner is always admin); ``protections`` maps protected branch names to
    their rules; ``pushers`` maps branch names to whoever moved them last. The
    ``allow_*`` settings say which merge methods the repository accepts and
    whether auto-merge may be enabled. Dict keys are ids, numbers or lower-cased
    names. ``rulesets``, ``merge_queue`` (every base's entries, in order),
    ``auto_merges`` (by pull request number) are `orchestrator_sim.records_rules`'s;
    ``merge_group_checks`` are the check runs the emulated CI reports on each
    merge group (name to conclusion).
    """

    id: int
    node_id: str
    owner: str
    name: str
    created_at: str
    updated_at: str
    pushed_at: str
    description: str | None = None
    private: bool = False
    default_branch: str = "main"
    require_review: bool = True
    allow_merge_commit: bool = True
    allow_squash_merge: bool = True
    allow_rebase_merge: bool = True
    allow_auto_merge: bool = False
    next_number: int = 1
    permissions: dict[str, str] = field(default_factory=dict)
    branches: dict[str, str] = field(default_factory=dict)
    labels: dict[str, Label] = field(default_factory=dict)
    issues: dict[int, Issue] = field(default_factory=dict)
    pulls: dict[int, PullRequest] = field(default_factory=dict)
    comments: dict[int, IssueComment] = field(default_factory=dict)
    events: list[IssueEvent] = field(default_factory=list)
    reviews: dict[int, Review] = field(default_factory=dict)
    review_comments: dict[int, ReviewComment] = field(default_factory=dict)
    threads: dict[int, ReviewThread] = field(default_factory=dict)
    check_runs: dict[int, CheckRun] = field(default_factory=dict)
    statuses: list[CommitStatus] = field(default_factory=list)
    protections: dict[str, BranchProtection] = field(default_factory=dict)
    pushers: dict[str, str] = field(default_factory=dict)
    deployments: dict[int, Deployment] = field(default_factory=dict)
    rulesets: dict[int, Ruleset] = field(default_factory=dict)
    merge_queue: list[QueueEntry] = field(default_factory=list)
    auto_merges: dict[int, AutoMergeRequest] = field(default_factory=dict)
    merge_group_checks: dict[str, str] = field(default_factory=dict)

    @property
    def full_name(self) -> str:
        return f"{self.owner}/{self.name}"
