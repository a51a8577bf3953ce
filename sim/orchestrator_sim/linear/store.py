"""The Linear workspace's tables, look-ups and snapshot, under one lock.

`LinearStore` holds every record by id and finds them by the names people use
(a team's key, an issue's identifier, a label's name); `LinearState` adds the
operations that change them. Ids are UUIDs derived from the seed and a
counter, so two emulators with one seed and one script hand out the same ids.
"""

from __future__ import annotations

import hashlib
import itertools
import threading
import uuid
from typing import Any

from orchestrator_sim.clock import Clock
from orchestrator_sim.linear.records import (
    STATE_TYPES,
    Attachment,
    Comment,
    IssueHistory,
    IssueLabel,
    IssueRelation,
    LinearIssue,
    LinearUser,
    Project,
    Team,
    WorkflowState,
    linear_time,
    slugify,
)
from orchestrator_sim.snapshot import from_json, to_json

# Collections of the snapshot, each with the record type it holds.
_TABLES: dict[str, type[Any]] = {
    "users": LinearUser,
    "teams": Team,
    "states": WorkflowState,
    "projects": Project,
    "labels": IssueLabel,
    "issues": LinearIssue,
    "comments": Comment,
    "attachments": Attachment,
    "relations": IssueRelation,
    "history": IssueHistory,
}


class LinearInputError(ValueError):
    """A request named something that does not exist or is not allowed (Linear's INVALID_INPUT)."""


class LinearStore:
    """Every record of one emulated Linear workspace; each public method takes ``lock``."""

    def __init__(
        self, clock: Clock, *, seed: int = 0, url_base: str = "https://linear.app/sim"
    ) -> None:
        self.clock = clock
        self.seed = seed
        self.url_base = url_base
        self.lock = threading.RLock()
        self._counter = itertools.count(1)
        self._last = 0
        self.users: dict[str, LinearUser] = {}
        self.teams: dict[str, Team] = {}
        self.states: dict[str, WorkflowState] = {}
        self.projects: dict[str, Project] = {}
        self.labels: dict[str, IssueLabel] = {}
        self.issues: dict[str, LinearIssue] = {}
        self.comments: dict[str, Comment] = {}
        self.attachments: dict[str, Attachment] = {}
        self.relations: dict[str, IssueRelation] = {}
        self.history: dict[str, IssueHistory] = {}
        self.sync_id = 0

    # ------------------------------------------------------------- basics

    def new_id(self) -> str:
        """The next UUID: a hash of the seed and a counter, formatted as a version-4 UUID."""
        self._last = next(self._counter)
        digest = hashlib.sha256(f"linear:{self.seed}:{self._last}".encode()).digest()
        return str(uuid.UUID(bytes=digest[:16], version=4))

    def now(self) -> str:
        return linear_time(self.clock())

    def _changed(self) -> int:
        self.sync_id += 1
        return self.sync_id

    # ---------------------------------------------------------- look-ups

    def user_for_credentials(self, header: str) -> LinearUser | None:
        """The user of an ``Authorization`` value: a bare API key, or ``Bearer <OAuth token>``."""
        scheme, _, rest = header.strip().partition(" ")
        with self.lock:
            if scheme.lower() == "bearer" and rest.strip():
                token = rest.strip()
                return next((u for u in self.users.values() if u.oauth_token == token), None)
            key = header.strip()
            if not key or " " in key:
                return None
            return next((u for u in self.users.values() if u.api_key == key), None)

    def user(self, ref: str) -> LinearUser:
        """A user by id, email or display name, in that order: a display name is each
        user's to choose and may read like another user's email."""
        wanted = ref.lower()
        with self.lock:
            found = (
                self.users.get(ref)
                or next((u for u in self.users.values() if u.email.lower() == wanted), None)
                or next((u for u in self.users.values() if u.display_name.lower() == wanted), None)
            )
        if found is None:
            raise LinearInputError(f"no user {ref!r}")
        return found

    def team(self, ref: str) -> Team:
        """A team by id or key."""
        with self.lock:
            found = self.teams.get(ref) or next(
                (t for t in self.teams.values() if t.key.lower() == ref.lower()), None
            )
        if found is None:
            raise LinearInputError(f"no team {ref!r}")
        return found

    def issue(self, ref: str) -> LinearIssue:
        """An issue by id or identifier (``ENG-12``), as Linear's ``issue(id:)`` takes either."""
        with self.lock:
            found = self.issues.get(ref) or next(
                (i for i in self.issues.values() if i.identifier.lower() == ref.lower()), None
            )
        if found is None:
            raise LinearInputError(f"no issue {ref!r}")
        return found

    def team_states(self, team_id: str) -> list[WorkflowState]:
        with self.lock:
            states = [s for s in self.states.values() if s.team_id == team_id]
        return sorted(states, key=lambda s: (STATE_TYPES.index(s.type), s.position))

    def state_of(self, team: Team, ref: str) -> WorkflowState:
        """A team's workflow state by id or (case-insensitive) name."""
        for state in self.team_states(team.id):
            if ref in (state.id,) or state.name.lower() == ref.lower():
                return state
        raise LinearInputError(f"team {team.key} has no workflow state {ref!r}")

    def project(self, ref: str) -> Project:
        """A project by id, slug id or name."""
        with self.lock:
            found = self.projects.get(ref) or next(
                (
                    p
                    for p in self.projects.values()
                    if ref in (p.slug_id,) or p.name.lower() == ref.lower()
                ),
                None,
            )
        if found is None:
            raise LinearInputError(f"no project {ref!r}")
        return found

    def label(self, ref: str, team_id: str | None = None) -> IssueLabel:
        """A label by id, or by name among the team's and the workspace's labels."""
        with self.lock:
            if ref in self.labels:
                return self.labels[ref]
            for found in self.labels.values():
                if found.name.lower() == ref.lower() and found.team_id in (None, team_id):
                    return found
        raise LinearInputError(f"no label {ref!r}")

    def branch_name(self, issue: LinearIssue, viewer: LinearUser | None) -> str:
        """Linear's suggested branch: ``<git user>/eng-12-title-words``, or without the prefix."""
        name = f"{issue.identifier.lower()}-{slugify(issue.title)}".rstrip("-")
        if viewer is not None and viewer.git_username:
            return f"{viewer.git_username}/{name}"
        return name

    def issue_url(self, issue: LinearIssue) -> str:
        return f"{self.url_base}/issue/{issue.identifier}/{slugify(issue.title)}"

    # ------------------------------------------------------------ snapshot

    def to_json(self) -> dict[str, Any]:
        """The workspace as JSON-ready data (keys included: snapshots are secrets)."""
        with self.lock:
            data: dict[str, Any] = {"schema": 1, "seed": self.seed, "last_id": self._last}
            data["sync_id"] = self.sync_id
            for name in _TABLES:
                data[name] = [to_json(r) for r in getattr(self, name).values()]
            return data

    def load_json(self, data: dict[str, Any]) -> None:
        """Replace the workspace with a `to_json` snapshot; bad data changes nothing."""
        if not isinstance(data, dict) or data.get("schema") != 1:
            raise ValueError("linear snapshot: expected schema 1")
        tables = {
            name: {
                r.id: r
                for r in (
                    from_json(kind, item, f"{name}[{i}]")
                    for i, item in enumerate(data.get(name, []))
                )
            }
            for name, kind in _TABLES.items()
        }
        last = data.get("last_id")
        if not isinstance(last, int) or last < 0:
            raise ValueError("linear snapshot: last_id must be a non-negative integer")
        with self.lock:
            for name, table in tables.items():
                setattr(self, name, table)
            self.seed = int(data.get("seed", self.seed))
            self._last = last
            self._counter = itertools.count(last + 1)
            self.sync_id = int(data.get("sync_id") or 0)
