"""One shell command's conversation with a running emulator.

A person's actions go through the emulator's GitHub REST API with the token the
emulator knows for that person (read from the control API), so permissions,
events and refusals are GitHub's. What GitHub only lets CI or a git client do
(check runs, a commit pushed by a person, branch protection) goes through the
control API. Every failure becomes a `ShellError`: one line that says what is
wrong, never a traceback.
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import quote, urlencode

import click

from orchestrator_sim.records import PERMISSION_LEVELS

DEFAULT_URL = "http://127.0.0.1:8787"
URL_ENV = "ORCHESTRATOR_SIM_URL"
AS_ENV = "ORCHESTRATOR_SIM_AS"
# Items per page of a REST list: GitHub's largest page.
PAGE_SIZE = 100
_LINK_NEXT = re.compile(r'<([^>]+)>;\s*rel="next"')
_REPO = re.compile(r"^[A-Za-z0-9_.\-]+/[A-Za-z0-9_.\-]+$")

F = TypeVar("F", bound=Callable[..., Any])


class ShellError(click.ClickException):
    """A command that cannot be done; click prints ``Error: <message>`` and exits 1."""


class Refused(ShellError):
    """The emulator answered a request with an error status."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True, slots=True)
class Actor:
    """An account the command acts or reads as, with its token."""

    login: str
    token: str


@dataclass(frozen=True, slots=True)
class RepoInfo:
    """A repository as the control API describes it."""

    full_name: str
    default_branch: str
    branches: Mapping[str, str]
    permissions: Mapping[str, str]

    @property
    def path(self) -> str:
        """The REST path of the repository, ``/repos/owner/name``."""
        owner, _, name = self.full_name.partition("/")
        return f"/repos/{quote(owner)}/{quote(name)}"


@dataclass(frozen=True, slots=True)
class Answer:
    """A REST answer: status, decoded body, headers (names in lower case)."""

    status: int
    body: Any
    headers: Mapping[str, str]


def check_repo_name(value: str) -> str:
    """``owner/name``, or a `click.BadParameter` naming what is wrong."""
    if not _REPO.match(value):
        raise click.BadParameter(f"expected OWNER/NAME, got {value!r}", param_hint="REPO")
    return value


def repo_argument(func: F) -> F:
    """The REPO argument every command takes first."""
    return click.argument("repo", callback=lambda _ctx, _param, value: check_repo_name(value))(func)


def url_option(func: F) -> F:
    """``--url``: where the emulator listens."""
    return click.option(
        "--url",
        envvar=URL_ENV,
        default=DEFAULT_URL,
        show_default=True,
        show_envvar=True,
        metavar="URL",
        help="The running emulator (orchestrator sim serve).",
    )(func)


def as_option(func: F) -> F:
    """``--as``: the account a person's action is done as."""
    return click.option(
        "--as",
        "as_login",
        envvar=AS_ENV,
        show_envvar=True,
        metavar="LOGIN",
        help="Act as this account, with the token the emulator knows for it (default: the "
        "person with the highest permission on the repository, then by login).",
    )(func)


@dataclass
class Session:
    """Talks to one emulator at ``url`` on behalf of one shell command."""

    url: str
    as_login: str | None = None
    timeout: float = 30.0
    _accounts: dict[str, dict[str, Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.url.startswith(("http://", "https://")):
            raise ShellError(f"--url must be an http(s) URL, got {self.url!r}")
        self.url = self.url.rstrip("/")

    # ------------------------------------------------------------ transport

    def _send(
        self, method: str, url: str, body: Any = None, headers: Mapping[str, str] | None = None
    ) -> Answer:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(  # noqa: S310 (scheme checked in __post_init__)
            url,
            data=data,
            method=method,
            headers={"content-type": "application/json", **(headers or {})},
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as answer:  # noqa: S310
                status, raw, found = answer.status, answer.read(), answer.headers
        except urllib.error.HTTPError as exc:
            status, raw, found = exc.code, exc.read(), exc.headers
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise ShellError(
                f"cannot reach the emulator at {self.url} ({reason}); start it with "
                f"`orchestrator sim serve` or point --url / {URL_ENV} at it"
            ) from None
        try:
            decoded = json.loads(raw) if raw.strip() else None
        except ValueError:
            decoded = raw.decode(errors="replace")
        return Answer(status, decoded, {k.lower(): v for k, v in found.items()})

    def control(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        """One control API request (``/_control`` + ``path``); its JSON answer."""
        answer = self._send(method, f"{self.url}/_control{path}", body)
        if answer.status >= 400:
            message = _control_message(answer.body)
            if answer.status == 404 and isinstance(answer.body, dict):
                raise Refused(f"not found in the emulator: {message}", 404)
            raise Refused(message, answer.status)
        return answer.body

    def rest(
        self,
        method: str,
        path: str,
        *,
        actor: Actor,
        doing: str,
        body: Any = None,
        query: Mapping[str, Any] | None = None,
    ) -> Answer:
        """One GitHub REST request as ``actor``; `Refused` names ``doing`` when it fails."""
        url = path if path.startswith("http") else f"{self.url}{path}"
        if query:
            url = f"{url}?{urlencode(query)}"
        headers = {
            "authorization": f"token {actor.token}",
            "accept": "application/vnd.github+json",
        }
        answer = self._send(method, url, body, headers)
        if answer.status >= 400:
            raise Refused(
                f"cannot {doing} as {actor.login}: GitHub answered {answer.status} "
                f"{_rest_message(answer.body)}",
                answer.status,
            )
        return answer

    def listing(
        self,
        path: str,
        *,
        actor: Actor,
        doing: str,
        query: Mapping[str, Any] | None = None,
        limit: int | None = None,
        key: str | None = None,
        keep: Callable[[Any], bool] | None = None,
    ) -> list[Any]:
        """The items of a paged REST list (``key`` names the list in an object answer)
        that ``keep`` accepts, following ``Link: rel="next"``; at most ``limit`` of them."""
        items: list[Any] = []
        params = {**(query or {}), "per_page": PAGE_SIZE}
        next_url: str | None = path
        while next_url is not None and (limit is None or len(items) < limit):
            answer = self.rest("GET", next_url, actor=actor, doing=doing, query=params)
            page = answer.body[key] if key is not None else answer.body
            items.extend(item for item in page if keep is None or keep(item))
            found = _LINK_NEXT.search(answer.headers.get("link", ""))
            next_url, params = (found.group(1), {}) if found else (None, {})
        return items if limit is None else items[:limit]

    # -------------------------------------------------------------- lookups

    def repo(self, full_name: str) -> RepoInfo:
        """The repository, or a `ShellError` when the emulator has none by that name."""
        owner, _, name = full_name.partition("/")
        try:
            data = self.control("GET", f"/repos/{quote(owner)}/{quote(name)}")
        except Refused as exc:
            if exc.status == 404:
                raise ShellError(
                    f"no repository {full_name} in the emulator at {self.url}"
                ) from None
            raise
        return RepoInfo(
            full_name=str(data["full_name"]),
            default_branch=str(data["default_branch"]),
            branches=dict(data.get("branches") or {}),
            permissions=dict(data.get("permissions") or {}),
        )

    def repos(self) -> list[str]:
        """Every repository the emulator holds, by full name."""
        return [str(name) for name in self.control("GET", "/repos")["repos"]]

    def account(self, login: str) -> dict[str, Any] | None:
        """An account (login, type, token), or None when the emulator has none by that name."""
        key = login.lower()
        if key not in self._accounts:
            try:
                self._accounts[key] = self.control("GET", f"/users/{quote(login)}")
            except Refused as exc:
                if exc.status == 404:
                    return None
                raise
        return self._accounts[key]

    def key_of(self, actor: Actor) -> str:
        """The key the repository's permissions file ``actor`` under (bare login, lower case)."""
        account = self.account(actor.login)
        return str((account or {}).get("graphql_login") or actor.login).lower()

    def actor(self, repo: RepoInfo) -> Actor:
        """The account to act as: ``--as``, else the repository's most trusted person.

        The default prefers people over bots, then the highest permission level,
        then the login, among accounts with a level on the repository and a token.
        """
        if self.as_login is not None:
            account = self.account(self.as_login)
            if account is None:
                raise ShellError(f"--as {self.as_login}: no such account in the emulator")
            if not account.get("token"):
                raise ShellError(
                    f"--as {self.as_login}: the account has no token, so it cannot use the "
                    'REST API (give it a "token" where it is created)'
                )
            return Actor(str(account["login"]), str(account["token"]))
        ranked = []
        for login, level in repo.permissions.items():
            account = self.account(login)
            if account is None or not account.get("token"):
                continue
            rank = PERMISSION_LEVELS.index(level) if level in PERMISSION_LEVELS else -1
            ranked.append((account["type"] != "User", -rank, str(account["login"]), account))
        if not ranked:
            raise ShellError(
                f"no account with a token has a permission on {repo.full_name}: name one with --as"
            )
        chosen = min(ranked, key=lambda item: item[:3])[3]
        return Actor(str(chosen["login"]), str(chosen["token"]))

    def pull(self, repo: RepoInfo, number: int, actor: Actor) -> dict[str, Any]:
        """Pull request ``number``; a `ShellError` says whether it is an issue or nothing."""
        try:
            answer = self.rest(
                "GET",
                f"{repo.path}/pulls/{number}",
                actor=actor,
                doing=f"read pull request {repo.full_name}#{number}",
            )
        except Refused as exc:
            if exc.status != 404:
                raise
            self.issue(repo, number, actor)
            raise ShellError(f"{repo.full_name}#{number} is an issue, not a pull request") from None
        result: dict[str, Any] = answer.body
        return result

    def issue(self, repo: RepoInfo, number: int, actor: Actor) -> dict[str, Any]:
        """Issue or pull request ``number`` as the issues API shows it."""
        try:
            answer = self.rest(
                "GET",
                f"{repo.path}/issues/{number}",
                actor=actor,
                doing=f"read {repo.full_name}#{number}",
            )
        except Refused as exc:
            if exc.status == 404:
                raise ShellError(f"no issue or pull request {repo.full_name}#{number}") from None
            raise
        result: dict[str, Any] = answer.body
        return result


def _control_message(body: Any) -> str:
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])
    return str(body)[:300]


def _rest_message(body: Any) -> str:
    """GitHub's ``message`` and the messages of its ``errors``, on one line."""
    if not isinstance(body, dict):
        return str(body)[:300]
    message = str(body.get("message") or "")
    details = []
    for item in body.get("errors") or []:
        text = item
        if isinstance(item, dict):
            named = f"{item['field']} {item.get('code', 'invalid')}" if item.get("field") else None
            text = item.get("message") or named
        if text and str(text) != message:
            details.append(str(text))
    return f"{message} ({'; '.join(details)})" if details else message
