"""WORKFLOW.md: the operator's policy (YAML front matter) and prompt (Liquid body).

The loader turns the file into a frozen, validated :class:`Policy` with a
strict :class:`PromptTemplate`; every effective value remembers where it came
from (flag, environment, file or default). :class:`PolicySource` re-reads the
file at tick boundaries and keeps the last good policy when an edit is invalid.
"""

from orchestrator.workflow.flow import flow_policy
from orchestrator.workflow.loader import (
    Workflow,
    WorkflowCheck,
    check_text,
    check_workflow,
    load_workflow,
)
from orchestrator.workflow.problems import (
    Location,
    PolicyError,
    Problem,
    PromptRenderError,
    Severity,
    WorkflowError,
)
from orchestrator.workflow.prompt import PromptIssue, PromptTemplate, PromptWorkspace
from orchestrator.workflow.provenance import Origin, OriginKind
from orchestrator.workflow.schema import Policy
from orchestrator.workflow.source import PolicySource, ReloadFailure, ReloadOutcome

__all__ = [
    "Location",
    "Origin",
    "OriginKind",
    "Policy",
    "PolicyError",
    "PolicySource",
    "Problem",
    "PromptIssue",
    "PromptRenderError",
    "PromptTemplate",
    "PromptWorkspace",
    "ReloadFailure",
    "ReloadOutcome",
    "Severity",
    "Workflow",
    "WorkflowCheck",
    "WorkflowError",
    "check_text",
    "check_workflow",
    "flow_policy",
    "load_workflow",
]
