"""GitHub Apps in the emulator: Apps with RSA keys, installations, installation tokens.

An App acts through its bot account (``slug``, shown as ``slug[bot]`` with
type ``Bot`` in REST and as a ``Bot`` named ``slug`` in GraphQL). It proves
itself with a JSON web token signed by its private key (RS256, ``iss`` = the
App's id, ``exp`` at most ten minutes ahead, ``iat`` not in the future beyond
the clock drift GitHub tolerates), and trades it for installation tokens that
expire after an hour. A request with an installation token acts as the bot,
on the installation's repositories, billed to the installation's budget:
5,000 requests an hour, plus 50 per repository once it has more than 20
repositories and 50 per user once its account has more than 20 users, at most
12,500 (GitHub's documented figures for installation access tokens).
"""

from __future__ import annotations

import secrets
import threading
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from orchestrator_sim.billing import Billing
from orchestrator_sim.clock import Clock, format_time
from orchestrator_sim.errors import NotFound, Unprocessable
from orchestrator_sim.records import Repo, User, make_node_id
from orchestrator_sim.state import SimState

TOKEN_LIFETIME = timedelta(hours=1)
# GitHub refuses a JWT that expires more than ten minutes after it was issued or from now.
MAX_JWT_LIFETIME_S = 600
# How far in the future ``iat`` may be (clocks drift; GitHub advises backdating by 60 s).
CLOCK_DRIFT_S = 60
INSTALLATION_MINIMUM = 5000
INSTALLATION_MAXIMUM = 12500
PER_EXTRA = 50
EXTRA_THRESHOLD = 20
NOT_FOR_INTEGRATIONS = "Resource not accessible by integration"
DEFAULT_PERMISSIONS: dict[str, str] = {
    "contents": "write",
    "pull_requests": "write",
    "issues": "write",
    "checks": "read",
    "metadata": "read",
}
_LEVELS = ("read", "write", "admin")
_KEY_PREFIX = "installation-"


class JwtRefused(Exception):
    """A JSON web token GitHub would answer 401 for; the message is GitHub's wording."""


@dataclass
class SimApp:
    """One registered App: its bot account, its public key and what it may do."""

    id: int
    slug: str
    name: str
    owner: str
    node_id: str
    client_id: str
    public_pem: bytes
    permissions: dict[str, str]
    events: list[str]
    created_at: str


@dataclass
class Installation:
    """An App installed on some repositories of one account."""

    id: int
    app_id: int
    account: str
    repos: list[str]
    permissions: dict[str, str]
    created_at: str


@dataclass
class InstallationToken:
    """One installation access token and when it stops working."""

    token: str = field(repr=False)
    installation_id: int
    expires_at: datetime
    permissions: dict[str, str]


class AppRegistry:
    """Every App, installation and installation token of one emulator, with one lock."""

    def __init__(self, state: SimState, billing: Billing, clock: Clock) -> None:
        self.state = state
        self.billing = billing
        self.clock = clock
        self._lock = threading.RLock()
        self._apps: dict[int, SimApp] = {}
        self._installations: dict[int, Installation] = {}
        self._tokens: dict[str, InstallationToken] = {}

    # ------------------------------------------------------------------ apps

    def create_app(
        self,
        slug: str,
        *,
        owner: str,
        name: str | None = None,
        permissions: dict[str, str] | None = None,
    ) -> tuple[SimApp, str]:
        """Register an App and its bot account; returns it and its private key (PEM, once)."""
        chosen = dict(DEFAULT_PERMISSIONS if permissions is None else permissions)
        for scope, level in chosen.items():
            if level not in _LEVELS:
                raise Unprocessable.field("App", "permissions", message=f"{scope}: bad level")
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        private_pem = key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.TraditionalOpenSSL,
            serialization.NoEncryption(),
        ).decode()
        public_pem = key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        with self._lock:
            account = self.state.find_user(owner) or self.state.add_user(owner, organization=True)
            bot = self.state.add_user(slug, bot=True, name=name or slug)
            app = SimApp(
                id=bot.id,
                slug=bot.login,
                name=name or slug,
                owner=account.login,
                node_id=make_node_id("Integration", bot.id),
                client_id="Iv1." + secrets.token_hex(8),
                public_pem=public_pem,
                permissions=chosen,
                events=["issues", "pull_request", "check_run"],
                created_at=format_time(self.clock()),
            )
            self._apps[app.id] = app
        return app, private_pem

    def app(self, app_id: int) -> SimApp:
        with self._lock:
            found = self._apps.get(app_id)
        if found is None:
            raise NotFound(f"app {app_id}")
        return found

    def app_named(self, slug: str) -> SimApp:
        with self._lock:
            for app in self._apps.values():
                if app.slug.lower() == slug.lower():
                    return app
        raise NotFound(f"app {slug}")

    def bot(self, app: SimApp) -> User:
        return self.state.user(app.slug)

    def install(self, app: SimApp, repos: list[str]) -> Installation:
        """Install ``app`` on these repositories (``owner/name``, one account)."""
        found = [self.state.repo(*full.split("/", 1)) for full in repos]
        owners = {repo.owner.lower() for repo in found}
        if len(owners) != 1:
            raise Unprocessable.field(
                "Installation", "repositories", message="one account's repositories"
            )
        level = "write" if app.permissions.get("contents") in ("write", "admin") else "read"
        with self._lock:
            existing = self._installation_on(app, found[0].owner)
            if existing is None:
                ident = self.state.new_id()
                existing = Installation(
                    id=ident,
                    app_id=app.id,
                    account=found[0].owner,
                    repos=[],
                    permissions=dict(app.permissions),
                    created_at=format_time(self.clock()),
                )
                self._installations[ident] = existing
            for repo in found:
                if repo.full_name.lower() not in existing.repos:
                    existing.repos.append(repo.full_name.lower())
                self.state.set_permission(repo, app.slug, level)
            self._apply_limit(existing)
            return existing

    def _installation_on(self, app: SimApp, account: str) -> Installation | None:
        for installation in self._installations.values():
            if installation.app_id == app.id and installation.account.lower() == account.lower():
                return installation
        return None

    def installation(self, installation_id: int) -> Installation:
        with self._lock:
            found = self._installations.get(installation_id)
        if found is None:
            raise NotFound(f"installation {installation_id}")
        return found

    def installation_for_repo(self, app: SimApp, repo: Repo) -> Installation:
        with self._lock:
            for installation in self._installations.values():
                if installation.app_id == app.id and repo.full_name.lower() in installation.repos:
                    return installation
        raise NotFound(f"installation of {app.slug} on {repo.full_name}")

    def installations_of(self, app: SimApp) -> list[Installation]:
        with self._lock:
            return [i for i in self._installations.values() if i.app_id == app.id]

    def installation_of_actor(self, user: User) -> Installation:
        """The installation an installation-token request acts for."""
        key = user.token or ""
        if not key.startswith(_KEY_PREFIX):
            raise NotFound("installation")
        return self.installation(int(key[len(_KEY_PREFIX) :]))

    def repositories(self, installation: Installation) -> list[Repo]:
        return [self.state.repo(*full.split("/", 1)) for full in installation.repos]

    # ------------------------------------------------------------ rate limits

    def hourly_limit(self, installation: Installation) -> int:
        """GitHub's documented budget of an installation (requests, or GraphQL points)."""
        repos = self.repositories(installation)
        users = {
            login
            for repo in repos
            for login in repo.permissions
            if not (found := self.state.find_user(login)) or not found.bot
        }
        limit = INSTALLATION_MINIMUM
        if len(repos) > EXTRA_THRESHOLD:
            limit += PER_EXTRA * len(repos)
        if len(users) > EXTRA_THRESHOLD:
            limit += PER_EXTRA * len(users)
        return min(limit, INSTALLATION_MAXIMUM)

    def _apply_limit(self, installation: Installation) -> None:
        limit = self.hourly_limit(installation)
        for resource in ("core", "graphql"):
            self.billing.set_budget(billing_key(installation.id), resource, limit=limit)

    # ------------------------------------------------------------------ JWT

    def verify_jwt(self, raw: str) -> SimApp:
        """The App a JSON web token proves, or :class:`JwtRefused` with GitHub's message."""
        try:
            claims = jwt.decode(raw, options={"verify_signature": False})
        except jwt.PyJWTError:
            raise JwtRefused("A JSON web token could not be decoded") from None
        issuer = claims.get("iss")
        try:
            app = self.app(int(str(issuer)))
        except (NotFound, ValueError):
            raise JwtRefused(f"Integration not found (iss {issuer!r})") from None
        try:
            jwt.decode(
                raw,
                app.public_pem,
                algorithms=["RS256"],
                options={"verify_exp": False, "verify_iat": False, "verify_nbf": False},
            )
        except jwt.PyJWTError:
            raise JwtRefused("A JSON web token could not be decoded") from None
        issued, expires = claims.get("iat"), claims.get("exp")
        if not isinstance(issued, int) or isinstance(issued, bool):
            raise JwtRefused(
                "'Issued at' claim ('iat') must be an Integer representing the time "
                "that the assertion was issued."
            )
        if not isinstance(expires, int) or isinstance(expires, bool):
            raise JwtRefused(
                "'Expiration time' claim ('exp') must be a numeric value representing "
                "the future time at which the assertion expires."
            )
        now = int(self.clock().timestamp())
        if issued > now + CLOCK_DRIFT_S:
            raise JwtRefused("'Issued at' claim ('iat') must be in the past.")
        if expires - issued > MAX_JWT_LIFETIME_S or expires > now + MAX_JWT_LIFETIME_S:
            raise JwtRefused("'Expiration time' claim ('exp') is too far in the future.")
        if expires <= now:
            raise JwtRefused(
                "'Expiration time' claim ('exp') must be a numeric value in the future."
            )
        return app

    # ---------------------------------------------------------------- tokens

    def issue_token(
        self, app: SimApp, installation_id: int, permissions: dict[str, str] | None = None
    ) -> InstallationToken:
        """A new installation token, valid for an hour (at most the App's permissions)."""
        installation = self.installation(installation_id)
        if installation.app_id != app.id:
            raise NotFound(f"installation {installation_id}")
        granted = dict(installation.permissions)
        if permissions:
            for scope, level in permissions.items():
                held = granted.get(scope)
                if (
                    level not in _LEVELS
                    or held is None
                    or _LEVELS.index(level) > _LEVELS.index(held)
                ):
                    raise Unprocessable.field(
                        "InstallationToken",
                        "permissions",
                        message=f"The permissions requested are not granted to this installation "
                        f"({scope}: {level}).",
                    )
            granted = dict(permissions)
        token = InstallationToken(
            token="ghs_" + secrets.token_urlsafe(27)[:36],
            installation_id=installation.id,
            expires_at=self.clock() + TOKEN_LIFETIME,
            permissions=granted,
        )
        with self._lock:
            self._tokens[token.token] = token
        self._apply_limit(installation)
        return token

    def actor_for_token(self, token: str) -> User | None:
        """The bot an unexpired installation token acts as, carrying the installation's
        billing key as its token (never a valid credential itself); None otherwise."""
        with self._lock:
            found = self._tokens.get(token)
            if found is None or found.expires_at <= self.clock():
                return None
            installation = self._installations[found.installation_id]
            app = self._apps[installation.app_id]
        return replace(self.state.user(app.slug), token=billing_key(installation.id))

    def expire_tokens(self, *, app: SimApp | None = None, age_s: float | None = None) -> int:
        """End tokens now (``age_s`` None) or make them ``age_s`` seconds older; how many."""
        now = self.clock()
        count = 0
        with self._lock:
            for token in self._tokens.values():
                owner = self._installations[token.installation_id].app_id
                if app is not None and owner != app.id:
                    continue
                if token.expires_at <= now:
                    continue
                if age_s is None:
                    token.expires_at = now
                else:
                    token.expires_at -= timedelta(seconds=age_s)
                count += 1
        return count

    def login_for_key(self, key: str) -> str | None:
        """The bot's login for an installation's billing key (counters name it so)."""
        if not key.startswith(_KEY_PREFIX):
            return None
        try:
            installation = self.installation(int(key[len(_KEY_PREFIX) :]))
        except (NotFound, ValueError):
            return None
        return self.app(installation.app_id).slug + "[bot]"

    def describe(self, app: SimApp) -> dict[str, Any]:
        """The control API's view of an App (never its key)."""
        with self._lock:
            installations = [i.id for i in self._installations.values() if i.app_id == app.id]
        return {
            "id": app.id,
            "slug": app.slug,
            "name": app.name,
            "owner": app.owner,
            "login": app.slug + "[bot]",
            "permissions": dict(app.permissions),
            "installations": installations,
        }


def billing_key(installation_id: int) -> str:
    """The key an installation's budget and counters are kept under."""
    return f"{_KEY_PREFIX}{installation_id}"


def is_installation_actor(user: User) -> bool:
    """Whether a request's account is an App acting through an installation token."""
    return user.bot and (user.token or "").startswith(_KEY_PREFIX)
