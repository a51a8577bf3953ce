"""The emulated Linear workspace's records: users, teams, states, issues and what hangs off them.

Records are plain dataclasses the emulator's snapshot module can write and read
back (only str, int, bool, lists, dicts and nested records). Attribute names
are the snake_case of Linear's GraphQL fields, so the executor's default
resolver finds ``createdAt`` as ``created_at``. Timestamps are kept as Linear
prints them: ISO 8601 in UTC with milliseconds and a ``Z``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime

# Linear's workflow state types, in the order a team's board shows them.
STATE_TYPES = ("triage", "backlog", "unstarted", "started", "completed", "canceled")

# The states a new team gets when the control API is given none (Linear's defaults).
DEFAULT_STATES = (
    ("Backlog", "backlog"),
    ("Todo", "unstarted"),
    ("In Progress", "started"),
    ("In Review", "started"),
    ("Done", "completed"),
    ("Canceled", "canceled"),
)

PRIORITY_LABELS = ("No priority", "Urgent", "High", "Medium", "Low")

_SLUG_LIMIT = 50


def linear_time(moment: datetime) -> str:
    """Linear's timestamp format: ``2026-01-01T00:00:00.000Z``."""
    text = moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")
    return text[:-3] + "Z"


def slugify(text: str, limit: int = _SLUG_LIMIT) -> str:
    """Lower-case words joined by ``-``, cut at ``limit`` characters (branch names, slug ids)."""
    slug = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return slug[:limit].rstrip("-")


@dataclass(slots=True)
class LinearUser:
    """A workspace member; ``api_key`` is sent bare, ``oauth_token`` with ``Bearer``.

    ``guest`` members see a subset of teams, ``admin`` ones administer the
    workspace, and an ``app`` user is an integration acting under its own name
    (Linear's ``User.guest``, ``User.admin`` and ``User.app``); ``active`` is
    false once the account is suspended.
    """

    id: str
    name: str
    display_name: str
    email: str
    created_at: str
    updated_at: str
    active: bool = True
    api_key: str | None = None
    oauth_token: str | None = None
    # The user's git handle: Linear prefixes suggested branch names with it.
    git_username: str | None = None
    guest: bool = False
    admin: bool = False
    app: bool = False


@dataclass(slots=True)
class Team:
    """A team: its ``key`` prefixes issue identifiers (``ENG-12``)."""

    id: str
    key: str
    name: str
    created_at: str
    updated_at: str
    last_number: int = 0


@dataclass(slots=True)
class WorkflowState:
    """One column of a team's workflow; ``type`` is one of `STATE_TYPES`."""

    id: str
    team_id: str
    name: str
    type: str
    position: int
    color: str
    created_at: str
    updated_at: str


@dataclass(slots=True)
class Project:
    """A project issues can belong to; ``slug_id`` is the short id in its URL."""

    id: str
    name: str
    slug_id: str
    created_at: str
    updated_at: str


@dataclass(slots=True)
class IssueLabel:
    """A label, of one team (``team_id``) or of the whole workspace (None)."""

    id: str
    name: str
    color: str
    created_at: str
    updated_at: str
    team_id: str | None = None


@dataclass(slots=True)
class Comment:
    """A comment on an issue; ``edited_at`` is set when its body changes."""

    id: str
    issue_id: str
    user_id: str
    body: str
    created_at: str
    updated_at: str
    edited_at: str | None = None


@dataclass(slots=True)
class Attachment:
    """A link on an issue; its ``url`` is unique per issue, as on Linear."""

    id: str
    issue_id: str
    url: str
    title: str
    created_at: str
    updated_at: str
    subtitle: str | None = None
    icon_url: str | None = None
    # The attachment's metadata object, kept as JSON text (any JSON object).
    metadata_json: str = "{}"
    creator_id: str | None = None


@dataclass(slots=True)
class IssueRelation:
    """``issue_id`` relates to ``related_issue_id``; type ``blocks`` means it blocks it."""

    id: str
    type: str
    issue_id: str
    related_issue_id: str
    created_at: str
    updated_at: str


@dataclass(slots=True)
class LinearIssue:
    """An issue of a team; ``identifier`` is the team key and ``number`` (``ENG-12``)."""

    id: str
    team_id: str
    number: int
    identifier: str
    title: str
    state_id: str
    created_at: str
    updated_at: str
    description: str | None = None
    priority: int = 0
    project_id: str | None = None
    assignee_id: str | None = None
    creator_id: str | None = None
    label_ids: list[str] = field(default_factory=list)
    archived_at: str | None = None


@dataclass(slots=True)
class IssueHistory:
    """One change of an issue's state or labels, and who made it (Linear's ``IssueHistory``).

    ``actor_id`` is None for a change no user made (an automation, an integration).
    """

    id: str
    issue_id: str
    created_at: str
    updated_at: str
    actor_id: str | None = None
    from_state_id: str | None = None
    to_state_id: str | None = None
    added_label_ids: list[str] = field(default_factory=list)
    removed_label_ids: list[str] = field(default_factory=list)
