"""The value types of the policy schema: the choices a key may take, and the field metadata.

:mod:`orchestrator.workflow.schema` builds its dataclasses from these and
re-exports them; the loader reads the metadata through the catalogue.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from types import MappingProxyType

# ``merge.approval_source`` takes the domain's own choices.
from orchestrator.domain.policy import ApprovalSource

__all__ = [
    "AgentPermissions",
    "AgentPreset",
    "AgentSandbox",
    "ApprovalSource",
    "ClosedPrPolicy",
    "MergeMode",
    "ReviewCommentMode",
    "ReviewOutputFormat",
    "TrackerAuth",
    "TrackerKind",
    "meta",
]


class TrackerKind(StrEnum):
    """Which issue tracker the daemon reads: GitHub Issues, or Linear (code stays on GitHub)."""

    GITHUB = "github"
    LINEAR = "linear"


class TrackerAuth(StrEnum):
    """How the daemon authenticates to GitHub: a token, or as a GitHub App installation."""

    TOKEN = "token"
    APP = "app"


class AgentPreset(StrEnum):
    """Which coding agent runs a turn and how its events are read."""

    CODEX = "codex"
    CODEX_APP_SERVER = "codex-app-server"
    CLAUDE = "claude"
    PI = "pi"
    COMMAND = "command"


class AgentSandbox(StrEnum):
    """The OS sandbox of agent and hook commands (``agent.sandbox``)."""

    AUTO = "auto"
    BWRAP = "bwrap"
    NONE = "none"


class AgentPermissions(StrEnum):
    """What a preset's command line lets the agent CLI do (``agent.permissions``)."""

    # Edit files, run commands and commit in its workspace: the narrowest flags that allow it.
    WORKSPACE = "workspace"
    # The CLI's own "no checks" mode (still inside the product's sandbox when there is one).
    FULL = "full"


class ClosedPrPolicy(StrEnum):
    """What to do when the issue's pull request was closed without merging."""

    NEW_BRANCH = "new_branch"
    REOPEN = "reopen"
    STOP = "stop"


class ReviewCommentMode(StrEnum):
    """How the self-review reaches the pull request."""

    OFF = "off"
    CREATE = "create"
    UPSERT = "upsert"


class ReviewOutputFormat(StrEnum):
    """The format of ``.orchestrator/review.md``."""

    STRUCTURED_MARKDOWN_V1 = "structured_markdown_v1"


class MergeMode(StrEnum):
    """Whether the runtime merges pull requests itself once every gate passes."""

    DISABLED = "disabled"
    AUTO = "auto"


def meta(
    *,
    doc: str,
    minimum: int | None = None,
    maximum: int | None = None,
    secret: bool = False,
    sensitive: bool = False,
    shell_text: bool = False,
    section: bool = False,
    repeats: bool = False,
) -> Mapping[str, object]:
    """The metadata of a schema field: its documentation, limits and handling.

    ``secret`` values are never printed, never given to the prompt and are
    registered for log redaction; ``sensitive`` values that come from a
    ``$VAR`` reference are shown only by the variable's name, redacted from
    logs and kept from the prompt; ``shell_text`` values are shell code, so
    ``$VAR`` in them is left for the shell to expand; ``section`` marks a
    nested group of settings; ``repeats`` lets a list hold the same item twice
    (command-line arguments such as ``-c a -c b``).
    """
    return MappingProxyType(
        {
            "doc": doc,
            "minimum": minimum,
            "maximum": maximum,
            "secret": secret,
            "sensitive": sensitive,
            "shell": shell_text,
            "section": section,
            "repeats": repeats,
        }
    )
