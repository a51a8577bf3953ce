"""Where the daemon's GitHub token comes from: one provider every request and git command asks.

With a personal or machine-user token the provider just hands it out. As a
GitHub App it holds the App's key and trades a short JSON web token (made by
PyGithub's ``Auth.AppAuth``) for installation tokens (``GithubIntegration``),
which GitHub ends after an hour: a token is replaced some minutes before it
expires, and at once when GitHub refuses it (revoked, or expired early), so
every REST and GraphQL request and every git push or fetch carries a token
that is valid at that moment. Each new token is registered for redaction
before anything can log it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Protocol, TypeVar

from github import Auth, GithubException, GithubIntegration

from orchestrator.github.errors import GitHubError
from orchestrator.logs import get_logger, register_secret

log = get_logger(__name__)

# A token is replaced this long before GitHub ends it: a long git push or a slow
# tick started just before the change still finishes with a valid token.
REFRESH_MARGIN = timedelta(minutes=10)
APP_TIMEOUT_S = 30

T = TypeVar("T")


class TokenProvider(Protocol):
    """The daemon's GitHub credential: a token valid now, and what to do when one is refused."""

    def token(self) -> str:
        """A token valid at this moment (may ask GitHub for a new one)."""
        ...

    def refused(self, token: str) -> bool:
        """GitHub refused ``token`` (401): forget it; whether a different one can be had."""
        ...

    def own_login(self) -> str | None:
        """The daemon's login when the credential itself names it (an App's bot), else None."""
        ...


@dataclass(frozen=True)
class StaticToken:
    """A personal or machine-user token: the same one for every request."""

    value: str = field(repr=False)

    def __post_init__(self) -> None:
        register_secret(self.value)

    def token(self) -> str:
        return self.value

    def refused(self, token: str) -> bool:
        return False

    def own_login(self) -> str | None:
        return None


@dataclass(frozen=True)
class _Held:
    token: str = field(repr=False)
    expires_at: datetime


class AppInstallationTokens:
    """A GitHub App's installation tokens for one repository, replaced before they expire.

    ``installation_id`` may be left out: the installation is then the one
    GitHub names for ``repo`` (``GET /repos/{owner}/{repo}/installation``).
    Thread-safe: every thread's client shares one provider, so a refresh
    happens once for all of them.
    """

    def __init__(
        self,
        *,
        endpoint: str,
        app_id: int,
        private_key: str,
        repo: str,
        installation_id: int | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        margin: timedelta = REFRESH_MARGIN,
        timeout_s: int = APP_TIMEOUT_S,
    ) -> None:
        self.endpoint = endpoint.rstrip("/")
        self.app_id = app_id
        self.repo = repo
        self._installation_id = installation_id
        self._clock = clock
        self._margin = margin
        self._lock = threading.Lock()
        self._held: _Held | None = None
        self._login: str | None = None
        self._integration = GithubIntegration(
            base_url=self.endpoint,
            auth=Auth.AppAuth(app_id, private_key),
            timeout=timeout_s,
            retry=None,
            seconds_between_requests=0,
            seconds_between_writes=0,
        )

    # -------------------------------------------------------------- identity

    def own_login(self) -> str | None:
        """The App's bot login as REST shows it (``slug[bot]``), from ``GET /app``."""
        with self._lock:
            if self._login is None:
                app = self._call("GET /app", self._integration.get_app)
                self._login = f"{app.slug}[bot]"
            return self._login

    @property
    def installation_id(self) -> int:
        """The installation acted as (asked of GitHub once when the policy does not say)."""
        with self._lock:
            return self._installation()

    def _installation(self) -> int:
        if self._installation_id is None:
            owner, name = self.repo.split("/", 1)
            found = self._call(
                "GET /repos/{owner}/{repo}/installation",
                lambda: self._integration.get_repo_installation(owner, name),
            )
            self._installation_id = int(found.id)
            log.info("app_installation_found", app_id=self.app_id, installation=found.id)
        return self._installation_id

    # ---------------------------------------------------------------- tokens

    def token(self) -> str:
        with self._lock:
            held = self._held
            if held is None or held.expires_at - self._margin <= self._clock():
                held = self._held = self._fresh()
            return held.token

    def refused(self, token: str) -> bool:
        with self._lock:
            if self._held is not None and self._held.token == token:
                self._held = None
                log.warning("app_token_refused", app_id=self.app_id)
            return True

    def _fresh(self) -> _Held:
        installation = self._installation()
        granted = self._call(
            "POST /app/installations/{installation_id}/access_tokens",
            lambda: self._integration.get_access_token(installation),
        )
        register_secret(granted.token)
        expires_at = granted.expires_at
        if expires_at.tzinfo is None:
            expires_at = expires_at.replace(tzinfo=UTC)
        log.info(
            "app_token_issued",
            app_id=self.app_id,
            installation=installation,
            expires_at=expires_at.isoformat(),
        )
        return _Held(granted.token, expires_at)

    def _call(self, route: str, action: Callable[[], T]) -> T:
        try:
            return action()
        except GithubException as error:
            message = _message(error)
            raise GitHubError(route, error.status, message, retryable=error.status >= 500) from None
        except Exception as error:  # network failures: the next request tries again
            raise GitHubError(route, 0, f"{type(error).__name__}: {error}", True) from None


def _message(error: GithubException) -> str:
    data = error.data
    if isinstance(data, dict) and data.get("message"):
        return str(data["message"])
    return str(data)[:300]
