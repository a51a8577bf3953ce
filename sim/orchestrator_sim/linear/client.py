"""Small standard-library clients for the Linear emulator: its control API and its GraphQL API.

`LinearControl` is what ``orchestrator sim linear`` and the tests use to play
the people around the tracker; `post_graphql` sends one document the way a
Linear client does and returns the status, headers and decoded answer.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from orchestrator_sim.control import ControlClient


@dataclass(frozen=True, slots=True)
class GraphQLAnswer:
    """One HTTP answer of the GraphQL endpoint."""

    status: int
    headers: dict[str, str]
    body: Any


def post_graphql(
    url: str,
    authorization: str | None,
    query: str,
    variables: dict[str, Any] | None = None,
    *,
    timeout: float = 30.0,
) -> GraphQLAnswer:
    """POST one GraphQL document; ``authorization`` is the header's whole value."""
    if not url.startswith(("http://", "https://")):
        raise ValueError(f"GraphQL URL must be http(s), got {url!r}")
    headers = {"content-type": "application/json"}
    if authorization is not None:
        headers["authorization"] = authorization
    payload = json.dumps({"query": query, "variables": variables or {}}).encode()
    request = urllib.request.Request(url, data=payload, method="POST", headers=headers)  # noqa: S310
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:  # noqa: S310
            return GraphQLAnswer(answer.status, _lower(answer.headers), json.loads(answer.read()))
    except urllib.error.HTTPError as exc:
        raw = exc.read()
        try:
            body = json.loads(raw)
        except ValueError:
            body = raw.decode(errors="replace")
        return GraphQLAnswer(exc.code, _lower(exc.headers), body)


def _lower(headers: Any) -> dict[str, str]:
    return {str(k).lower(): str(v) for k, v in headers.items()}


class LinearControl:
    """Drives one emulator's ``/_control/linear`` API at ``base_url``."""

    def __init__(self, base_url: str, timeout: float = 30.0) -> None:
        self._control = ControlClient(base_url, timeout)
        self.base_url = self._control.base_url

    @property
    def graphql_url(self) -> str:
        return f"{self.base_url}/linear/graphql"

    def request(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        return self._control.request(method, "/linear" + path, body)

    def create_user(self, name: str, api_key: str | None = None, **extra: Any) -> dict[str, Any]:
        result: dict[str, Any] = self.request(
            "POST", "/users", {"name": name, "api_key": api_key, **extra}
        )
        return result

    def update_user(self, user: str, /, **changes: bool | str) -> dict[str, Any]:
        """Change a user's ``active``, ``guest`` or ``admin`` flag, or rename the user as
        it may itself (``name``: the display name, ``full_name``)."""
        result: dict[str, Any] = self.request("PATCH", f"/users/{quote(user)}", dict(changes))
        return result

    def create_team(
        self, key: str, name: str | None = None, states: list[dict[str, str]] | None = None
    ) -> dict[str, Any]:
        result: dict[str, Any] = self.request(
            "POST", "/teams", {"key": key, "name": name, "states": states}
        )
        return result

    def create_project(self, name: str, slug_id: str | None = None) -> dict[str, Any]:
        result: dict[str, Any] = self.request(
            "POST", "/projects", {"name": name, "slug_id": slug_id}
        )
        return result

    def create_label(self, name: str, team: str | None = None) -> dict[str, Any]:
        result: dict[str, Any] = self.request("POST", "/labels", {"name": name, "team": team})
        return result

    def create_issue(self, team: str, title: str, **fields: Any) -> dict[str, Any]:
        result: dict[str, Any] = self.request(
            "POST", "/issues", {"team": team, "title": title, **fields}
        )
        return result

    def seed(self, team: str, count: int, **fields: Any) -> list[str]:
        """Create ``count`` issues in ``team`` in one call; their identifiers, in order.

        ``fields`` are those of `create_issue` (``title`` may hold ``{issue}``,
        each one's number; ``state``, ``labels``, ``description`` ...).
        """
        answer = self.request("POST", "/seed", {"team": team, "count": count, **fields})
        return [str(identifier) for identifier in answer["issues"]]

    def issue(self, ref: str) -> dict[str, Any]:
        result: dict[str, Any] = self.request("GET", f"/issues/{quote(ref)}")
        return result

    def set_state(self, ref: str, state: str, *, as_user: str | None = None) -> dict[str, Any]:
        """Move the issue, as ``as_user`` (None: as an automation, with no actor)."""
        result: dict[str, Any] = self.request(
            "PUT", f"/issues/{quote(ref)}/state", {"state": state, "as": as_user}
        )
        return result

    def add_labels(self, ref: str, *labels: str, as_user: str | None = None) -> dict[str, Any]:
        result: dict[str, Any] = self.request(
            "POST", f"/issues/{quote(ref)}/labels", {"labels": list(labels), "as": as_user}
        )
        return result

    def remove_label(self, ref: str, label: str, *, as_user: str | None = None) -> dict[str, Any]:
        result: dict[str, Any] = self.request(
            "DELETE", f"/issues/{quote(ref)}/labels/{quote(label)}", {"as": as_user}
        )
        return result

    def history(self, ref: str) -> list[dict[str, Any]]:
        """The issue's history entries, oldest first (actor, from/to state, labels)."""
        result: list[dict[str, Any]] = self.issue(ref)["history"]
        return result

    def comment(self, ref: str, user: str, body: str) -> dict[str, Any]:
        result: dict[str, Any] = self.request(
            "POST", f"/issues/{quote(ref)}/comments", {"as": user, "body": body}
        )
        return result

    def relate(self, ref: str, related: str, kind: str = "blocks") -> dict[str, Any]:
        result: dict[str, Any] = self.request(
            "POST", f"/issues/{quote(ref)}/relations", {"related": related, "type": kind}
        )
        return result

    def set_rate_limit(self, user: str | None = None, **limits: int) -> dict[str, Any]:
        result: dict[str, Any] = self.request("PUT", "/rate-limit", {"user": user, **limits})
        return result

    def counters(self) -> dict[str, Any]:
        result: dict[str, Any] = self.request("GET", "/counters")
        return result

    def writes(self) -> list[dict[str, Any]]:
        result: list[dict[str, Any]] = self.request("GET", "/writes")["writes"]
        return result

    def summary(self) -> dict[str, Any]:
        result: dict[str, Any] = self.request("GET", "/state")
        return result
