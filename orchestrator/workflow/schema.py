"""The policy schema: every section and key of WORKFLOW.md as frozen, typed dataclasses.

Defaults live here and nowhere else. Each key carries its documentation and its
limits in the field metadata, which the loader, ``orchestrator validate`` and
the reference in docs/workflow.md all read.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from orchestrator.domain.agent_files.review import Severity as FindingSeverity
from orchestrator.domain.phases import PHASE_CLASS, Phase, PhaseClass, RolloutMode
from orchestrator.domain.policy import MergeMethod, ReviewActOn
from orchestrator.workflow.schema_types import (
    AgentPermissions,
    AgentPreset,
    AgentSandbox,
    ApprovalSource,
    ClosedPrPolicy,
    MergeMode,
    ReviewCommentMode,
    ReviewOutputFormat,
    TrackerAuth,
    TrackerKind,
    meta,
)

__all__ = [
    "AgentPermissions",
    "AgentPreset",
    "AgentSandbox",
    "AgentSettings",
    "ApprovalSource",
    "ClosedPrPolicy",
    "DatabaseSettings",
    "FindingSeverity",
    "HooksSettings",
    "MergeMethod",
    "MergeMode",
    "MergeSettings",
    "OrchestrationSettings",
    "OwnershipSettings",
    "Phase",
    "Policy",
    "PollingSettings",
    "PrSettings",
    "ReviewActOn",
    "ReviewCommentMode",
    "ReviewOutputFormat",
    "ReviewSettings",
    "RolloutMode",
    "RolloutSettings",
    "ServerSettings",
    "TrackerAuth",
    "TrackerKind",
    "TrackerSettings",
    "WorkspaceSettings",
    "meta",
]

# One place for the daemon's own state when the operator does not choose one.
STATE_DIR = "~/.local/state/orchestrator"
# How long running turns may finish when the daemon stops (agent.shutdown_grace_ms).
DEFAULT_SHUTDOWN_GRACE_MS = 30_000
# The web server's connection cap and request-head deadline (server.max_connections,
# server.header_timeout_ms): a quarter of the usual 1,024 descriptors, and ten seconds.
DEFAULT_MAX_CONNECTIONS = 256
DEFAULT_HEADER_TIMEOUT_MS = 10_000


def _frozen(items: Mapping[Any, Any]) -> Mapping[Any, Any]:
    return MappingProxyType(dict(items))


_DEFAULT_STATE_LABELS = {
    "Todo": "state:todo",
    "In Progress": "state:in-progress",
    "In Review": "state:in-review",
    "Merging": "state:merging",
    "Rework": "state:rework",
    "Blocked": "state:blocked",
}

DEFAULT_PASSIVE_PHASES: tuple[Phase, ...] = tuple(
    p for p, c in PHASE_CLASS.items() if c is PhaseClass.PASSIVE
)


@dataclass(frozen=True)
class TrackerSettings:
    """Where issues come from and how tracker states show on them."""

    kind: TrackerKind = field(
        default=TrackerKind.GITHUB,
        metadata=meta(
            doc="Issue tracker: `github`, `linear` (issues in Linear, code and pull requests "
            "on GitHub in `tracker.repo`), or `memory` (in-process, for tests)."
        ),
    )
    repo: str | None = field(
        default=None,
        metadata=meta(
            doc="The repository as `owner/name`. Kind `github`: required unless `tracker.repos` "
            "or `tracker.repo_opt_in_label` names the repositories; with kind `linear`, the "
            "GitHub repository the pull requests go to."
        ),
    )
    repos: tuple[str, ...] = field(
        default=(),
        metadata=meta(
            doc="Kind `github`: several repositories as `owner/name`, each polled with its own "
            "feed, poll lease and repository-wide stop label, all through the one credential "
            "(every one must be readable with it: under `tracker.auth: app`, installed in the "
            "App's installation). Instead of, or together with, `tracker.repo`."
        ),
    )
    repo_opt_in_label: str | None = field(
        default=None,
        metadata=meta(
            doc="Kind `github` with `tracker.auth: app`: track every repository of the App's "
            "installation that has a label of this name (a repository opts in by creating "
            "it), besides `tracker.repo` and `tracker.repos`; read at start, at a reload and "
            "every `tracker.repo_discovery_interval_ms`."
        ),
    )
    repo_discovery_interval_ms: int = field(
        default=300_000,
        metadata=meta(
            doc="How often the installation's repositories are read again for "
            "`tracker.repo_opt_in_label` (at least 60000)."
        ),
    )
    endpoint: str = field(
        default="https://api.github.com",
        metadata=meta(
            doc="The tracker's API URL. Kind `github`: the GitHub API base URL (GitHub Enterprise: "
            "`https://HOST/api/v3`; the emulator's URL in tests and the demo). Kind `linear`: "
            "the GraphQL URL, `https://api.linear.app/graphql` when not set."
        ),
    )
    github_endpoint: str = field(
        default="https://api.github.com",
        metadata=meta(
            doc="Kind `linear`: the GitHub API base URL of `tracker.repo`, where the branches "
            "and pull requests go (GitHub Enterprise: `https://HOST/api/v3`). Kind `github` "
            "uses `tracker.endpoint`."
        ),
    )
    auth: TrackerAuth = field(
        default=TrackerAuth.TOKEN,
        metadata=meta(
            doc="How the daemon authenticates: `token` (`tracker.token`), or `app` (as a GitHub "
            "App installation: `tracker.app_id` and `tracker.private_key_file`)."
        ),
    )
    token: str | None = field(
        default="$GITHUB_TOKEN",
        metadata=meta(
            doc="The GitHub token, normally a `$VAR` reference. Never printed, never logged, "
            "never given to the agent. Ignored for kind `memory` and for `auth: app`.",
            secret=True,
        ),
    )
    api_key: str | None = field(
        default="$LINEAR_API_KEY",
        metadata=meta(
            doc="Kind `linear`: the Linear API key, normally a `$VAR` reference. Never printed, "
            "never logged, never given to the agent. Ignored for the other kinds.",
            secret=True,
        ),
    )
    project_slug: str | None = field(
        default=None,
        metadata=meta(
            doc="Kind `linear`: the project's slug (the end of its URL, "
            "`https://linear.app/ORG/project/NAME-SLUG`). This or `team_key` is required."
        ),
    )
    team_key: str | None = field(
        default=None,
        metadata=meta(
            doc="Kind `linear`: the team's key (the prefix of its issue identifiers, `ENG` of "
            "`ENG-12`). This or `project_slug` is required; with both, the project narrows the "
            "team."
        ),
    )
    app_id: int | None = field(
        default=None,
        metadata=meta(
            doc="For `auth: app`: the GitHub App's id (its settings page shows it).", minimum=1
        ),
    )
    private_key_file: str | None = field(
        default=None,
        metadata=meta(
            doc="For `auth: app`: the App's private key, a PEM file (a relative path is relative "
            "to the policy file's directory), or a `$VAR` holding the PEM itself. Never printed.",
            sensitive=True,
        ),
    )
    installation_id: int | None = field(
        default=None,
        metadata=meta(
            doc="For `auth: app`: the installation to act as; unset, it is found from "
            "`tracker.repo` (`GET /repos/{owner}/{repo}/installation`).",
            minimum=1,
        ),
    )
    required_labels: tuple[str, ...] = field(
        default=(), metadata=meta(doc="Only issues carrying all of these labels are candidates.")
    )
    approvers: tuple[str, ...] = field(
        default=(),
        metadata=meta(
            doc="Kind `linear`: the only Linear users (emails or user ids, without regard to "
            "case; never names, which each user chooses) whose move to an approval state or "
            "approval label approves a merge. Empty: any active member who is not a guest, not "
            "an app user and not the API key's own user."
        ),
    )
    active_states: tuple[str, ...] = field(
        default=("Todo", "In Progress", "In Review", "Merging", "Rework", "Blocked"),
        metadata=meta(doc="Tracker states of issues the daemon tracks."),
    )
    terminal_states: tuple[str, ...] = field(
        default=("Done",),
        metadata=meta(doc="Tracker states that end the flow (on GitHub: the issue is closed)."),
    )
    state_labels: Mapping[str, str] = field(
        default_factory=lambda: _frozen(_DEFAULT_STATE_LABELS),
        metadata=meta(
            doc="Tracker state -> the GitHub label that shows it (kind `github`; Linear has "
            "states of its own)."
        ),
    )


@dataclass(frozen=True)
class PollingSettings:
    """How often the daemon ticks."""

    interval_ms: int = field(
        default=30_000,
        metadata=meta(doc="Time between two ticks.", minimum=100, maximum=86_400_000),
    )


@dataclass(frozen=True)
class WorkspaceSettings:
    """Where the per-issue git workspaces live."""

    root: Path = field(
        default=Path(f"{STATE_DIR}/workspaces"),
        metadata=meta(
            doc="Directory holding one workspace per issue. `~` is expanded; a relative path is "
            "relative to the policy file's directory."
        ),
    )


@dataclass(frozen=True)
class HooksSettings:
    """Shell snippets run in the workspace at fixed moments (with `bash -lc`)."""

    after_create: str | None = field(
        default=None,
        metadata=meta(
            doc="After a workspace is created, in the checked-out repository; failure aborts "
            "creation.",
            shell_text=True,
        ),
    )
    before_run: str | None = field(
        default=None,
        metadata=meta(doc="Before each agent turn; failure aborts the attempt.", shell_text=True),
    )
    after_run: str | None = field(
        default=None,
        metadata=meta(doc="After each agent turn; failure is logged and ignored.", shell_text=True),
    )
    before_remove: str | None = field(
        default=None,
        metadata=meta(
            doc="Before a workspace is removed; failure is logged and ignored.", shell_text=True
        ),
    )
    after_create_in_empty_dir: bool = field(
        default=False,
        metadata=meta(
            doc="Run `after_create` first, in the new workspace's empty folder, as Symphony "
            "does (it may `git clone ... .`); the runtime then checks the issue's branch out "
            "around what it made, with a `.git` of its own making."
        ),
    )
    timeout_ms: int = field(
        default=60_000,
        metadata=meta(doc="Time limit of each hook.", minimum=1_000, maximum=3_600_000),
    )


@dataclass(frozen=True)
class AgentSettings:
    """Which coding agent runs, how many at once, and its watchdogs."""

    preset: AgentPreset = field(
        default=AgentPreset.CODEX,
        metadata=meta(
            doc="Agent preset: `codex`, `codex-app-server`, `claude`, `pi` or `command`."
        ),
    )
    command: str | None = field(
        default=None,
        metadata=meta(
            doc="For preset `command`: the whole shell command (required). For preset "
            "`codex-app-server`: the whole command that starts the server (default "
            "`codex app-server`, as Symphony's `codex.command`). For the other presets: "
            "replaces the program name (for example an absolute path to `codex`).",
            shell_text=True,
        ),
    )
    extra_args: tuple[str, ...] = field(
        default=(),
        metadata=meta(
            doc="Flags appended to the preset's command line (presets `codex`, "
            "`codex-app-server`, `claude`, `pi`), "
            "before the prompt and the resume arguments.",
            repeats=True,
        ),
    )
    permissions: AgentPermissions = field(
        default=AgentPermissions.WORKSPACE,
        metadata=meta(
            doc="What the preset lets the agent CLI do: `workspace` (edit, run commands and "
            "commit in its workspace) or `full` (the CLI's own no-checks mode). Mapped to each "
            "CLI's flags in docs/agent.md."
        ),
    )
    max_concurrent_agents: int = field(
        default=10,
        metadata=meta(
            doc="Agent turns running at once, all phases together.", minimum=1, maximum=1_000
        ),
    )
    max_concurrent_agents_by_phase: Mapping[Phase, int] = field(
        default_factory=lambda: _frozen({}),
        metadata=meta(
            doc="Per active phase limit (phase -> count; 0 pauses that phase).",
            minimum=0,
            maximum=1_000,
        ),
    )
    max_turns: int = field(
        default=20, metadata=meta(doc="Agent turns per phase visit.", minimum=1, maximum=1_000)
    )
    max_retry_backoff_ms: int = field(
        default=300_000,
        metadata=meta(
            doc="Cap of the failure retry delay `min(10 s * 2^(n-1), cap)`.",
            minimum=1_000,
            maximum=86_400_000,
        ),
    )
    first_event_timeout_ms: int = field(
        default=0,
        metadata=meta(
            doc="No event at all since start for this long ends the turn as a session start "
            "timeout (0 = off).",
            minimum=0,
            maximum=86_400_000,
        ),
    )
    stall_timeout_ms: int = field(
        default=300_000,
        metadata=meta(
            doc="No event for this long ends the turn as stalled (0 = off).",
            minimum=0,
            maximum=86_400_000,
        ),
    )
    turn_timeout_ms: int = field(
        default=3_600_000,
        metadata=meta(doc="Limit of one whole turn.", minimum=1_000, maximum=86_400_000),
    )
    shutdown_grace_ms: int = field(
        default=DEFAULT_SHUTDOWN_GRACE_MS,
        metadata=meta(
            doc="When the daemon stops (SIGTERM), how long running turns may finish before they "
            "are cancelled; `orchestrator run --grace-seconds` overrides it. A stop takes up to "
            "15 s more: keep systemd's `TimeoutStopSec` and compose's `stop_grace_period` above "
            "that.",
            minimum=0,
            maximum=3_600_000,
        ),
    )
    env: Mapping[str, str] = field(
        default_factory=lambda: _frozen({}),
        metadata=meta(
            doc="Extra environment for the agent (values may be `$VAR` references). GitHub "
            "credentials are refused.",
            sensitive=True,
        ),
    )
    sandbox: AgentSandbox = field(
        default=AgentSandbox.AUTO,
        metadata=meta(
            doc="OS sandbox of agent and hook commands: `auto` (bubblewrap when it works here, "
            "checked at start-up), `bwrap` (bubblewrap, or refuse to start) or `none`."
        ),
    )
    allow_unsandboxed: bool = field(
        default=False,
        metadata=meta(
            doc="With `sandbox: auto` in rollout mode `merge`: run agents without a sandbox when "
            "bubblewrap does not work here, instead of refusing to start. Shown as a warning."
        ),
    )
    home: Path | None = field(
        default=None,
        metadata=meta(
            doc="The agents' `$HOME`, writable in the sandbox, for CLIs that keep their login "
            "there (codex, claude). `null`: a scratch home per issue under the daemon's state "
            "directory (mode 0700). `~` is expanded; a relative path is relative to the policy "
            "file's directory."
        ),
    )


@dataclass(frozen=True)
class OwnershipSettings:
    """How the daemon recognises the issues it owns."""

    required_label: str = field(
        default="orchestrator",
        metadata=meta(doc="Label an issue must carry for the daemon to act on it."),
    )
    required_workpad_marker: str = field(
        default="## Orchestrator Workpad",
        metadata=meta(doc="Markdown heading that identifies the workpad comment."),
    )


@dataclass(frozen=True)
class OrchestrationSettings:
    """The flow of phases: where it starts, what waits, and its limits."""

    default_phase: Phase = field(
        default=Phase.IMPLEMENTING,
        metadata=meta(doc="Phase of a newly owned issue (an agent phase)."),
    )
    passive_phases: tuple[Phase, ...] = field(
        default=DEFAULT_PASSIVE_PHASES,
        metadata=meta(
            doc="Phases that only re-poll and are never continuation-retried. Must contain "
            "waiting_for_checks, waiting_for_human and blocked; may add ready_to_merge."
        ),
    )
    max_rework_cycles: int = field(
        default=3,
        metadata=meta(
            doc="Rework entries allowed before the issue is blocked (rework_limit_exceeded).",
            minimum=0,
            maximum=100,
        ),
    )
    max_failed_attempts: int = field(
        default=5,
        metadata=meta(
            doc="Consecutive failed turns in one phase before the issue asks a human.",
            minimum=1,
            maximum=100,
        ),
    )
    priority_labels: tuple[str, ...] = field(
        default=("priority:critical", "priority:high", "priority:medium", "priority:low"),
        metadata=meta(
            doc="Most urgent first; candidates with one of these labels go before the others."
        ),
    )
    ownership: OwnershipSettings = field(
        default_factory=OwnershipSettings,
        metadata=meta(doc="How owned issues are recognised.", section=True),
    )


@dataclass(frozen=True)
class RolloutSettings:
    """What side effects are allowed at all, and the kill switches."""

    mode: RolloutMode = field(
        default=RolloutMode.OBSERVE,
        metadata=meta(
            doc="`observe` (read and report only), `mutate` (everything but merge) or `merge`."
        ),
    )
    observe_label: str = field(
        default="orchestrator:observe",
        metadata=meta(doc="Issue label that lowers that issue to observe."),
    )
    mutate_label: str = field(
        default="orchestrator:mutate",
        metadata=meta(doc="Issue label that lowers that issue to at most mutate."),
    )
    kill_switch_label: str = field(
        default="orchestrator:stop",
        metadata=meta(doc="Issue or PR label that stops every side effect for it."),
    )
    repo_kill_switch_label: str = field(
        default="orchestrator:stop-all",
        metadata=meta(
            doc="An open issue carrying this label stops every side effect in the repository."
        ),
    )
    kill_switch_file: Path = field(
        default=Path(f"{STATE_DIR}/STOP"),
        metadata=meta(
            doc="While this local file exists, no side effect happens. `~` is expanded; a "
            "relative path is relative to the policy file's directory."
        ),
    )
    preflight_required: bool = field(
        default=True,
        metadata=meta(
            doc="Run the preflight checks (token scopes, labels, repository) before acting."
        ),
    )


@dataclass(frozen=True)
class PrSettings:
    """How pull requests are opened and kept up to date."""

    auto_create: bool = field(
        default=True, metadata=meta(doc="Open the pull request after the first push.")
    )
    base_branch: str = field(default="main", metadata=meta(doc="Branch pull requests target."))
    branch_prefix: str = field(
        default="orchestrator/", metadata=meta(doc="Prefix of the branches the daemon creates.")
    )
    reuse_branch_pr: bool = field(
        default=True,
        metadata=meta(doc="Adopt an open pull request that already exists for the branch."),
    )
    closed_pr_policy: ClosedPrPolicy = field(
        default=ClosedPrPolicy.NEW_BRANCH,
        metadata=meta(
            doc="When the PR was closed unmerged: `new_branch`, `reopen` or `stop` (block)."
        ),
    )
    required_labels: tuple[str, ...] = field(
        default=(), metadata=meta(doc="Labels added to every pull request.")
    )
    reviewers: tuple[str, ...] = field(
        default=(), metadata=meta(doc="Reviewers (logins) asked again after a rework turn.")
    )
    closes_issue: bool = field(
        default=True, metadata=meta(doc="Write `Closes #N` in the pull request body.")
    )
    review_comment_mode: ReviewCommentMode = field(
        default=ReviewCommentMode.UPSERT,
        metadata=meta(doc="`upsert` one review comment per PR, `create` one per review, or `off`."),
    )
    review_comment_marker: str | None = field(
        default="<!-- orchestrator-review -->",
        metadata=meta(
            doc="Hidden marker that finds the review comment again (needed by `upsert`)."
        ),
    )
    update_description: bool = field(
        default=True,
        metadata=meta(doc="Update the PR body from `.orchestrator/pr-description.md` after fixes."),
    )
    draft: bool = field(default=False, metadata=meta(doc="Open pull requests as drafts."))


@dataclass(frozen=True)
class ReviewSettings:
    """The bounded self-review of each head."""

    enabled: bool = field(
        default=True, metadata=meta(doc="Run a self-review before a head may merge.")
    )
    output_format: ReviewOutputFormat = field(
        default=ReviewOutputFormat.STRUCTURED_MARKDOWN_V1,
        metadata=meta(doc="Format of `.orchestrator/review.md`."),
    )
    max_passes: int = field(
        default=2, metadata=meta(doc="Review passes per head lineage.", minimum=1, maximum=10)
    )
    fix_consideration_severities: tuple[FindingSeverity, ...] = field(
        default=(FindingSeverity.P0, FindingSeverity.P1),
        metadata=meta(doc="Finding severities (P0..P3) that get a fix pass."),
    )
    bounce_threshold: int = field(
        default=2,
        metadata=meta(
            doc="Times a bot's fixed request may come back before it goes to a human.",
            minimum=1,
            maximum=20,
        ),
    )
    act_on: ReviewActOn = field(
        default=ReviewActOn.WRITERS,
        metadata=meta(
            doc="Whose review threads start a rework and are given to the agent as work: "
            "`writers` (humans with write permission) or `anyone` (readers and other bots "
            "too). Other threads reach the agent only as context marked untrusted."
        ),
    )


@dataclass(frozen=True)
class MergeSettings:
    """When and how the runtime merges."""

    mode: MergeMode = field(
        default=MergeMode.DISABLED,
        metadata=meta(
            doc="`auto`: the runtime merges once every gate passes (needs rollout mode merge); "
            "`disabled`: a human merges and the runtime only confirms."
        ),
    )
    method: MergeMethod = field(
        default=MergeMethod.SQUASH,
        metadata=meta(
            doc="`merge`, `squash` or `rebase`. A squash says the cleaned pull request body; "
            "with `merge` or `rebase` (and with `mode: disabled`) the agent's commits land as "
            "they are, so a push whose commits would close another issue is refused."
        ),
    )
    require_green_checks: bool = field(
        default=True, metadata=meta(doc="Checks on the current head must pass.")
    )
    required_checks: tuple[str, ...] = field(
        default=(), metadata=meta(doc="Check names that must pass (empty: every reported check).")
    )
    require_head_match: bool = field(
        default=True,
        metadata=meta(
            doc="Merge only the reviewed head SHA. Must stay true; present so the file can say so."
        ),
    )
    require_human_approval: bool = field(
        default=True, metadata=meta(doc="A human must approve the merge.")
    )
    approval_states: tuple[str, ...] = field(
        default=("Merging",),
        metadata=meta(
            doc="Tracker states a human sets to approve a merge (on GitHub, their state "
            "labels; with kind `linear`, the Linear workflow states)."
        ),
    )
    approval_source: ApprovalSource = field(
        default=ApprovalSource.LABEL,
        metadata=meta(
            doc="Approval from the state `label` (with kind `linear`: the approval state or "
            "label a trusted Linear user set, read from the issue's history), an approving "
            "`review`, or `either`."
        ),
    )
    approval_label: str | None = field(
        default=None,
        metadata=meta(
            doc="An extra label that means approval (besides the approval states' labels); with "
            "kind `linear`, a label on the Linear issue."
        ),
    )
    completion_state: str = field(
        default="Done",
        metadata=meta(doc="Tracker state set after the merge is confirmed (a terminal state)."),
    )


@dataclass(frozen=True)
class ServerSettings:
    """The dashboard, JSON API and metrics endpoint."""

    host: str = field(default="127.0.0.1", metadata=meta(doc="Listen address."))
    port: int = field(
        default=8080,
        metadata=meta(doc="Listen port (0 picks a free one).", minimum=0, maximum=65_535),
    )
    token: str | None = field(
        default=None,
        metadata=meta(
            doc="Bearer token for the operator API's write actions (a `$VAR` reference).",
            secret=True,
        ),
    )
    metrics_token: str | None = field(
        default=None,
        metadata=meta(
            doc="Bearer token `/metrics` also accepts, for Prometheus (a `$VAR` reference).",
            secret=True,
        ),
    )
    allowed_hosts: tuple[str, ...] = field(
        default=(),
        metadata=meta(
            doc="Host names the server answers besides its listen address "
            "(the names a browser or proxy uses to reach it).",
        ),
    )
    max_connections: int = field(
        default=DEFAULT_MAX_CONNECTIONS,
        metadata=meta(
            doc="Connections the server holds at once. A new one beyond it closes the oldest "
            "connection that is not in a request (or, when every one is, itself); at most a "
            "quarter of the daemon's descriptor limit, the rest is kept for its own work.",
            minimum=4,
            maximum=1_000_000,
        ),
    )
    header_timeout_ms: int = field(
        default=DEFAULT_HEADER_TIMEOUT_MS,
        metadata=meta(
            doc="A connection that has not sent a whole request head for this long (since it "
            "opened, or since its last answer) is closed.",
            minimum=100,
            maximum=600_000,
        ),
    )


@dataclass(frozen=True)
class DatabaseSettings:
    """The working store."""

    url: str = field(
        default=f"sqlite:///{STATE_DIR}/orchestrator.db",
        metadata=meta(
            doc="SQLAlchemy URL: `sqlite:///PATH` (embedded; `~` and relative paths as for files) "
            "or `postgresql+psycopg://...` (best as a `$VAR` reference). A password in it is "
            "never printed.",
            sensitive=True,
        ),
    )


@dataclass(frozen=True)
class Policy:
    """The whole, validated policy of one WORKFLOW.md (without its prompt)."""

    tracker: TrackerSettings = field(
        default_factory=TrackerSettings, metadata=meta(doc="The issue tracker.", section=True)
    )
    polling: PollingSettings = field(
        default_factory=PollingSettings, metadata=meta(doc="The tick.", section=True)
    )
    workspace: WorkspaceSettings = field(
        default_factory=WorkspaceSettings, metadata=meta(doc="Per-issue workspaces.", section=True)
    )
    hooks: HooksSettings = field(
        default_factory=HooksSettings, metadata=meta(doc="Workspace hooks.", section=True)
    )
    agent: AgentSettings = field(
        default_factory=AgentSettings, metadata=meta(doc="The coding agent.", section=True)
    )
    orchestration: OrchestrationSettings = field(
        default_factory=OrchestrationSettings, metadata=meta(doc="The flow.", section=True)
    )
    rollout: RolloutSettings = field(
        default_factory=RolloutSettings,
        metadata=meta(doc="Rollout mode and kill switches.", section=True),
    )
    pr: PrSettings = field(
        default_factory=PrSettings, metadata=meta(doc="Pull requests.", section=True)
    )
    review: ReviewSettings = field(
        default_factory=ReviewSettings, metadata=meta(doc="Self-review.", section=True)
    )
    merge: MergeSettings = field(
        default_factory=MergeSettings, metadata=meta(doc="Merging.", section=True)
    )
    server: ServerSettings = field(
        default_factory=ServerSettings, metadata=meta(doc="Dashboard and API.", section=True)
    )
    database: DatabaseSettings = field(
        default_factory=DatabaseSettings, metadata=meta(doc="The database.", section=True)
    )
