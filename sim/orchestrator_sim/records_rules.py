"""The records of repository rulesets, the merge queue and auto-merge.

Like `orchestrator_sim.records`, they hold only JSON-friendly values so a
state snapshot can save and load them. A `Ruleset` targets branches by name
patterns and carries rules in GitHub's REST spelling (``type`` plus
``parameters``); a `QueueEntry` is one pull request waiting in a base branch's
merge queue, with the merge group the queue built for it; an
`AutoMergeRequest` is a pull request set to merge once its base's rules pass.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# The values a rule parameter can take (GitHub's richer ones are not modelled).
RuleParameter = str | int | bool | list[str]

ENFORCEMENTS = ("active", "evaluate", "disabled")
BYPASS_ACTOR_TYPES = (
    "Integration",
    "OrganizationAdmin",
    "RepositoryRole",
    "Team",
    "DeployKey",
    "User",
)
BYPASS_MODES = ("always", "pull_request", "exempt")

# GitHub's built-in repository roles as bypass actors (``actor_type: RepositoryRole``).
REPOSITORY_ROLE_IDS = {1: "read", 2: "maintain", 3: "triage", 4: "write", 5: "admin"}

# GitHub's MergeQueueEntryState values.
QUEUE_STATES = ("QUEUED", "AWAITING_CHECKS", "MERGEABLE", "UNMERGEABLE", "LOCKED")

# The account GitHub's merge queue merges as.
MERGE_QUEUE_BOT = "github-merge-queue"


@dataclass(slots=True)
class RulesetRule:
    """One rule of a ruleset: its GitHub ``type`` and ``parameters`` (validated on creation)."""

    type: str
    parameters: dict[str, RuleParameter] = field(default_factory=dict)


@dataclass(slots=True)
class BypassActor:
    """Who may pass a ruleset: ``actor_type`` and ``actor_id`` as GitHub names them.

    ``bypass_mode`` ``always`` passes pushes and merges, ``pull_request`` only
    merges of pull requests, ``exempt`` skips the rules altogether.
    """

    actor_type: str
    actor_id: int | None = None
    bypass_mode: str = "always"


@dataclass(slots=True)
class Ruleset:
    """A repository ruleset on branches.

    ``include`` and ``exclude`` are ``ref_name`` conditions (``refs/heads/...``
    patterns, ``~DEFAULT_BRANCH``, ``~ALL``); ``enforcement`` is ``active``
    (enforced), ``evaluate`` (reported, never enforced) or ``disabled``.
    """

    id: int
    node_id: str
    name: str
    enforcement: str
    created_at: str
    updated_at: str
    target: str = "branch"
    include: list[str] = field(default_factory=list)
    exclude: list[str] = field(default_factory=list)
    rules: list[RulesetRule] = field(default_factory=list)
    bypass_actors: list[BypassActor] = field(default_factory=list)


@dataclass(slots=True)
class QueueEntry:
    """A pull request in the merge queue of ``base_ref``.

    ``head_sha`` is the head it was queued with (a push removes it);
    ``group_ref`` / ``group_sha`` the merge group built for it (None while
    queued beyond the build limit) on top of ``group_parent`` (the base head, or
    the group of the entry ahead); ``built_at`` when the group was built, which
    starts the check response timeout.
    """

    id: int
    node_id: str
    number: int
    base_ref: str
    head_sha: str
    enqueuer: str
    enqueued_at: str
    jump: bool = False
    state: str = "QUEUED"
    group_ref: str | None = None
    group_sha: str | None = None
    group_parent: str | None = None
    built_at: str | None = None


@dataclass(slots=True)
class AutoMergeRequest:
    """Auto-merge set on pull request ``number``: the method and message to merge with.

    ``head_sha`` is the head it was enabled on.
    """

    number: int
    enabled_by: str
    enabled_at: str
    merge_method: str
    head_sha: str
    commit_headline: str | None = None
    commit_body: str | None = None
    author_email: str | None = None
