"""Linear users as the gates see them, and the strict reading of the answers that name them.

A Linear user becomes an :class:`~orchestrator.domain.snapshot.Actor` named
``linear:<display name>`` (never a GitHub login: ``:`` cannot be in one) whose
``can_write`` says whether the user is trusted: active, not a guest, not an app
(integration) user, and not the API key's own user, the daemon. A policy that
lists the only users it trusts names them by id or email, and a user is matched
on those fields alone (:mod:`orchestrator.domain.linear_accounts`): the display
name is for people to read, never for deciding who someone is. A change or a
comment with no user (an automation) is :data:`NOBODY`'s, a bot that is never
trusted. Whatever else people write on Linear is untrusted content.

Times are cut to whole seconds, as GitHub's are, since they are compared with
GitHub's (a head sighting) or the daemon's clock. An answer of the wrong shape
is a :class:`~orchestrator.tracker.linear_client.LinearError` (code
``BAD_ANSWER``) naming the operation and the field.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from orchestrator.domain.linear_accounts import names_linear_user
from orchestrator.domain.snapshot import Actor
from orchestrator.tracker.linear_client import LinearError

LINEAR_LOGIN_PREFIX = "linear:"
# The name of a change nobody made (an automation or an integration, no actor).
NOBODY = LINEAR_LOGIN_PREFIX + "(automation)"


def is_linear_login(login: str) -> bool:
    """Whether an approver's login names a Linear user (not a GitHub account)."""
    return login.startswith(LINEAR_LOGIN_PREFIX)


class Answer:
    """Reads one operation's answer field by field; a wrong field is a located error."""

    def __init__(self, operation: str) -> None:
        self.operation = operation

    def bad(self, where: str, expected: str, value: object) -> LinearError:
        shown = repr(value)[:80]
        return LinearError(
            self.operation, "BAD_ANSWER", f"{where}: expected {expected}, got {shown}"
        )

    def get(self, node: object, key: str, kind: type, where: str, *, optional: bool = False) -> Any:
        """``node[key]`` of type ``kind`` (None allowed when ``optional``)."""
        if not isinstance(node, dict):
            raise self.bad(where, "an object", node)
        value = node.get(key)
        if value is None and optional:
            return None
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise self.bad(f"{where}.{key}", f"a {kind.__name__}", value)
        return value

    def moment(self, text: str, where: str) -> datetime:
        """A Linear timestamp, cut to its second (see the module docstring)."""
        try:
            moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            raise self.bad(where, "an ISO 8601 time", text) from None
        if moment.tzinfo is None:
            raise self.bad(where, "a time with its zone", text)
        return moment.replace(microsecond=0)

    def names(self, nodes: object, where: str) -> list[str]:
        """The ``name`` of each node of a list (None: an empty list)."""
        if nodes is None:
            return []
        if not isinstance(nodes, list):
            raise self.bad(where, "a list", nodes)
        return [self.get(node, "name", str, f"{where}[{i}]") for i, node in enumerate(nodes)]

    def actor(self, node: object, viewer_id: str, where: str, allowed: Iterable[str] = ()) -> Actor:
        """The user ``node`` as an Actor; with ``allowed`` (user ids or emails) only those
        users are trusted, matched by id or email, never by a name the user chose."""
        if node is None:
            return Actor(NOBODY, is_bot=True, can_write=False)
        user_id = self.get(node, "id", str, where)
        display = self.get(node, "displayName", str, where)
        flags = {name: self.get(node, name, bool, where) for name in ("active", "guest", "app")}
        only = tuple(allowed)
        trusted = (
            flags["active"]
            and not flags["guest"]
            and not flags["app"]
            and user_id != viewer_id
            and (
                not only
                or names_linear_user(
                    only, user_id, self.get(node, "email", str, where, optional=True)
                )
            )
        )
        return Actor(LINEAR_LOGIN_PREFIX + display, is_bot=flags["app"], can_write=trusted)
