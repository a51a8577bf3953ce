"""Errors raised by the emulator's state and routes, each carrying GitHub's HTTP status.

The REST layer turns them into GitHub's error body ``{"message", "documentation_url"}``
(plus ``errors`` for validation failures); the GraphQL layer into GraphQL errors.
"""

from __future__ import annotations

from typing import Any

DOCS_URL = "https://docs.github.com/rest"


class SimError(Exception):
    """A request the emulator refuses, with the status GitHub would answer.

    ``errors`` holds GitHub's details: objects naming a resource and field, or
    plain sentences (some endpoints answer those).
    """

    status = 400

    def __init__(
        self,
        message: str,
        *,
        errors: list[Any] | None = None,
        documentation_url: str = DOCS_URL,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.errors = errors or []
        self.documentation_url = documentation_url

    def body(self) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "message": self.message,
            "documentation_url": self.documentation_url,
        }
        if self.errors:
            payload["errors"] = self.errors
        payload["status"] = str(self.status)
        return payload


class BadRequest(SimError):
    """Malformed input (bad JSON, wrong parameter type): 400."""

    status = 400


class Unauthorized(SimError):
    """No token or an unknown token: 401."""

    status = 401


class Forbidden(SimError):
    """Authenticated but not allowed: 403."""

    status = 403


class NotFound(SimError):
    """Unknown resource, or one the caller may not see: 404."""

    status = 404

    def __init__(self, what: str = "Not Found", *, message: str = "Not Found") -> None:
        super().__init__(message)
        self.what = what

    def __str__(self) -> str:
        return f"Not Found: {self.what}"


class NotAllowed(SimError):
    """The operation is not allowed in the current state (e.g. merging an unmergeable PR): 405."""

    status = 405


class Conflict(SimError):
    """The resource changed under the caller (e.g. the head moved before a merge): 409."""

    status = 409


class Unprocessable(SimError):
    """Validation failed: 422, with GitHub's ``errors`` list naming the field."""

    status = 422

    @classmethod
    def field(
        cls, resource: str, name: str, code: str = "invalid", message: str = ""
    ) -> Unprocessable:
        """A validation error about one field of one resource."""
        detail: dict[str, Any] = {"resource": resource, "field": name, "code": code}
        if message:
            detail["message"] = message
        return cls("Validation Failed", errors=[detail])
