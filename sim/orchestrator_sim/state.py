"""The emulator's in-memory model of GitHub, guarded by one re-entrant lock.

`SimState` owns every record (see `orchestrator_sim.records`) and every
operation that changes them, so the REST routes, the GraphQL executor and the
control API all see one consistent world. It is assembled from one layer per
kind of resource (`state_core`, `state_accounts`, `state_issues`,
`state_checks`, `state_reviews`, `state_deployments`, `state_protection`,
`state_requirements`, `state_pulls`, `state_rulesets`, `state_queue`) and adds
snapshots. Each public
method takes the lock itself; a caller that reads several records and wants
them consistent holds ``state.lock`` around the whole read. Methods raise the
errors of `orchestrator_sim.errors` (NotFound, Unprocessable ...), never
return half-done.
"""

from __future__ import annotations

import itertools
import json
import os
from pathlib import Path
from typing import Any

from orchestrator_sim.records import (
    PERMISSION_LEVELS,
    BranchProtection,
    CheckAnnotation,
    CheckRun,
    CommitStatus,
    Issue,
    IssueComment,
    IssueEvent,
    Label,
    PullRequest,
    Repo,
    Review,
    ReviewComment,
    ReviewThread,
    User,
    make_node_id,
    parse_node_id,
)
from orchestrator_sim.snapshot import from_json, to_json
from orchestrator_sim.state_core import GitView, MergeabilityProbe
from orchestrator_sim.state_queue import QueueState
from orchestrator_sim.state_reviews import InlineComment, LineNotInDiff

__all__ = [
    "PERMISSION_LEVELS",
    "BranchProtection",
    "CheckAnnotation",
    "CheckRun",
    "CommitStatus",
    "GitView",
    "InlineComment",
    "Issue",
    "IssueComment",
    "IssueEvent",
    "Label",
    "LineNotInDiff",
    "MergeabilityProbe",
    "PullRequest",
    "Repo",
    "Review",
    "ReviewComment",
    "ReviewThread",
    "SimState",
    "User",
    "make_node_id",
    "parse_node_id",
]


class SimState(QueueState):
    """Every account, repository and record of the emulated GitHub, with one lock.

    Ids come from one monotonic counter; node ids are derived from them.
    ``version`` increases on every change, so readers can cache renderings.
    ``git`` is set by the emulator to read the bare repositories;
    ``mergeability_delay`` is how long mergeability stays unknown after a
    pull request's head or base moves.
    """

    # --------------------------------------------------------------- snapshot

    def to_json(self) -> dict[str, Any]:
        """The whole state as JSON-ready data (tokens included: snapshots are secrets)."""
        with self.lock:
            return {
                "schema": 1,
                "last_id": self._last_id,
                "users": [to_json(u) for u in self.users.values()],
                "repos": [to_json(r) for r in self.repos.values()],
            }

    def load_json(self, data: dict[str, Any]) -> None:
        """Replace the whole state with a snapshot made by `to_json`; bad data changes nothing."""
        if not isinstance(data, dict) or data.get("schema") != 1:
            raise ValueError("snapshot: not an emulator snapshot (expected schema 1)")
        users = [
            from_json(User, item, f"users[{i}]") for i, item in enumerate(data.get("users", []))
        ]
        repos = [
            from_json(Repo, item, f"repos[{i}]") for i, item in enumerate(data.get("repos", []))
        ]
        last_id = data.get("last_id")
        if not isinstance(last_id, int) or last_id < 0:
            raise ValueError("snapshot: last_id must be a non-negative integer")
        with self.lock:
            self.users = {u.login.lower(): u for u in users}
            self._tokens = {u.token: u.login.lower() for u in users if u.token is not None}
            self.repos = {r.full_name.lower(): r for r in repos}
            self._indexes.clear()
            self.retired_groups.clear()
            self._last_id = last_id
            self._ids = itertools.count(last_id + 1)
            self._touch()

    def save(self, path: Path) -> None:
        """Write the snapshot atomically (temporary file, then rename), readable by owner only."""
        data = json.dumps(self.to_json(), indent=1, sort_keys=True)
        temporary = path.with_name(path.name + ".tmp")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(data)
        os.replace(temporary, path)

    def load(self, path: Path) -> None:
        """Load a snapshot file written by `save`; errors name the file."""
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            self.load_json(data)
        except (OSError, ValueError) as exc:
            raise ValueError(f"{path}: {exc}") from exc
