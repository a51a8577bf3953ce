"""The ``tracker`` section of the policy: where issues come from and how states show on them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from orchestrator.workflow.schema_types import TrackerAuth, TrackerKind, meta

_DEFAULT_STATE_LABELS = {
    "Todo": "state:todo",
    "In Progress": "state:in-progress",
    "In Review": "state:in-review",
    "Merging": "state:merging",
    "Rework": "state:rework",
    "Blocked": "state:blocked",
}


@dataclass(frozen=True)
class RetrySettings:
    """How a GitHub API call that failed on the way is tried again."""

    max_attempts: int = field(
        default=4,
        metadata=meta(
            doc="Attempts of a GitHub API call that failed transiently (a 5xx answer, a lost "
            "connection, a secondary rate limit), the first included; 1 never tries again. A "
            "create GitHub may have applied (a 5xx or a lost connection) is never sent again.",
            minimum=1,
            maximum=10,
        ),
    )
    base_delay_ms: int = field(
        default=500,
        metadata=meta(
            doc="The wait before the second attempt; it doubles before each further one, up to "
            "`tracker.retry.max_delay_ms`. A secondary rate limit's `Retry-After` is waited "
            "as asked when it is 60 s or less (longer, the call fails).",
            minimum=1,
            maximum=60_000,
        ),
    )
    max_delay_ms: int = field(
        default=8_000,
        metadata=meta(
            doc="The longest wait between two attempts (a `Retry-After` aside).",
            minimum=1,
            maximum=300_000,
        ),
    )


@dataclass(frozen=True)
class TrackerSettings:
    """Where issues come from and how tracker states show on them."""

    kind: TrackerKind = field(
        default=TrackerKind.GITHUB,
        metadata=meta(
            doc="Issue tracker: `github`, or `linear` (issues in Linear, code and pull requests "
            "on GitHub in `tracker.repo`)."
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
            "never given to the agent. Ignored for `auth: app`.",
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
        default_factory=lambda: MappingProxyType(dict(_DEFAULT_STATE_LABELS)),
        metadata=meta(
            doc="Tracker state -> the GitHub label that shows it (kind `github`; Linear has "
            "states of its own)."
        ),
    )
    retry: RetrySettings = field(
        default_factory=RetrySettings,
        metadata=meta(
            doc="Transient failures of GitHub API calls (with kind `linear`, those of the "
            "pull requests).",
            section=True,
        ),
    )
