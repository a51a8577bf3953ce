"""The policy schema: every section and key of WORKFLOW.md as frozen, typed dataclasses.

Defaults live here and nowhere else. Each key carries its documentation and its
limits in the field metadata, which the loader, ``orchestrator validate`` and
the reference in docs/workflow.md all read.

The sections live in the modules of this package (``tracker``, ``agent``,
``flow`` for the phases and GitHub side, ``service`` for how the daemon runs);
this module holds the whole :class:`Policy` and re-exports every public name,
so ``from orchestrator.workflow.schema import X`` names them all.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from orchestrator.domain.agent_files.review import Severity as FindingSeverity
from orchestrator.domain.phases import Phase, RolloutMode
from orchestrator.domain.policy import MergeMethod, ReviewActOn
from orchestrator.workflow.schema.agent import DEFAULT_SHUTDOWN_GRACE_MS, AgentSettings
from orchestrator.workflow.schema.flow import (
    DEFAULT_PASSIVE_PHASES,
    MergeSettings,
    OrchestrationSettings,
    OwnershipSettings,
    PrSettings,
    ReviewSettings,
    RolloutSettings,
)
from orchestrator.workflow.schema.service import (
    DEFAULT_HEADER_TIMEOUT_MS,
    DEFAULT_MAX_CONNECTIONS,
    STATE_DIR,
    DatabaseSettings,
    HooksSettings,
    PollingSettings,
    ServerSettings,
    WorkspaceSettings,
)
from orchestrator.workflow.schema.tracker import RetrySettings, TrackerSettings
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
    "DEFAULT_HEADER_TIMEOUT_MS",
    "DEFAULT_MAX_CONNECTIONS",
    "DEFAULT_PASSIVE_PHASES",
    "DEFAULT_SHUTDOWN_GRACE_MS",
    "STATE_DIR",
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
    "RetrySettings",
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
