"""The transport of the control API's Python client: one JSON request, errors raised.

It uses only the standard library so the demo can drive an emulator without
extra dependencies. Refusals raise `ControlRequestError` with the server's message.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import quote


class ControlRequestError(Exception):
    """The control API refused a request."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"control API answered {status}: {message}")
        self.status = status
        self.message = message


class ControlHttp:
    """Sends requests to one emulator's ``/_control`` API at ``base_url``."""

    def __init__(self, base_url: str, timeout: float = 30.0) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise ValueError(f"control API URL must be http(s), got {base_url!r}")
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout

    def request(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        """Send one control request and return the decoded JSON answer."""
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(  # noqa: S310 (scheme checked in __init__)
            f"{self.base_url}/_control{path}",
            data=data,
            method=method,
            headers={"content-type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as answer:  # noqa: S310
                return json.loads(answer.read() or b"null")
        except urllib.error.HTTPError as exc:
            raw = exc.read()
            try:
                message = json.loads(raw)["error"]["message"]
            except (ValueError, KeyError, TypeError):
                message = raw.decode(errors="replace")
            raise ControlRequestError(exc.code, message) from None

    @staticmethod
    def _repo(repo: str) -> str:
        owner, _, name = repo.partition("/")
        if not owner or not name:
            raise ValueError(f"repository must be 'owner/name', got {repo!r}")
        return f"/repos/{quote(owner)}/{quote(name)}"
