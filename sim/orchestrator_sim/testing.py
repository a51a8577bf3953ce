"""Start an emulator with a repository, a bot and a human in one call, for any test suite.

with running_world(tmp_path) as world:
    gh = world.github()                      # PyGithub as the bot
    world.control.create_issue(world.repo, "Fix it", as_user=world.human.login)
    subprocess.run(["git", "clone", world.clone_url(), dest], env=world.git_env())
"""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator_sim.clock import Clock, ManualClock
from orchestrator_sim.control import ControlClient
from orchestrator_sim.server import SimServer

DEFAULT_FILES: Mapping[str, str] = {
    "README.md": "# widgets\n\nA small project the emulator serves.\n",
    "src/widgets.py": 'def greet(name: str) -> str:\n    return f"hello {name}"\n',
}


def make_token() -> str:
    """A token in GitHub's classic shape, so log redaction treats it as a secret."""
    return "ghp_" + secrets.token_hex(18)


@dataclass(frozen=True, slots=True)
class Account:
    """A login and its token."""

    login: str
    token: str


@dataclass(frozen=True, slots=True)
class Seeded:
    """A seeded issue: its number, and its pull request's number, branch and head SHA."""

    issue: int
    pull: int | None = None
    branch: str | None = None
    head_sha: str | None = None


@dataclass(frozen=True, slots=True)
class SimWorld:
    """A running emulator holding ``repo`` (``owner/name``), the product's account and a human.

    ``bot`` is the account the product runs as; ``human`` an administrator.
    """

    server: SimServer
    repo: str
    bot: Account
    human: Account

    @property
    def url(self) -> str:
        return self.server.url

    @property
    def control(self) -> ControlClient:
        return self.server.control

    @property
    def owner(self) -> str:
        return self.repo.split("/", 1)[0]

    @property
    def name(self) -> str:
        return self.repo.split("/", 1)[1]

    def seed(
        self,
        count: int,
        *,
        labels: Sequence[str] = (),
        pulls: bool = True,
        check: str | None = "success",
        review: str | None = None,
        timeout: float = 600.0,
    ) -> list[Seeded]:
        """Open ``count`` issues as the human in one control call, each with ``labels``.

        With ``pulls`` each issue gets an open pull request by the bot from its
        own branch (``seed/issue-N``, one commit) saying ``Closes #N``, a ``ci``
        check run concluding ``check`` on its head (None: no check run), and a
        review by the human in state ``review`` (None: none).
        """
        options: dict[str, Any] | None = None
        if pulls:
            options = {"as": self.bot.login}
            if check is not None:
                options["check_run"] = {"name": "ci", "conclusion": check}
            if review is not None:
                body = "" if review == "APPROVED" else "Please change this."
                options["review"] = {"as": self.human.login, "state": review, "body": body}
        client = ControlClient(self.url, timeout=timeout)
        items = client.seed(
            self.repo, count, as_user=self.human.login, labels=list(labels), pulls=options
        )
        return [Seeded(**item) for item in items]

    def settle_mergeability(self) -> None:
        """Let the emulator finish working out mergeability after a push or a new pull request:
        moves a manual clock past the delay, or waits it out on the system clock."""
        emulator = self.server.emulator
        delay = emulator.state.mergeability_delay
        if isinstance(emulator.clock, ManualClock):
            emulator.clock.advance(delay)
        elif delay > 0:
            time.sleep(delay)

    def github(self, account: Account | None = None, **options: Any) -> Any:
        """A PyGithub client for ``account`` (the bot by default) with no client-side pauses."""
        from github import Auth, Github

        settings: dict[str, Any] = {
            "seconds_between_requests": 0,
            "seconds_between_writes": 0,
            "retry": 0,
            "timeout": 30,
        }
        settings.update(options)
        who = account or self.bot
        return Github(base_url=self.url, auth=Auth.Token(who.token), **settings)

    def clone_url(self, account: Account | None = None) -> str:
        """The repository's git URL with ``x-access-token`` credentials of ``account``."""
        who = account or self.bot
        plain = self.server.git_url(self.owner, self.name)
        return plain.replace("http://", f"http://x-access-token:{who.token}@", 1)

    def git_env(self, home: Path | None = None) -> dict[str, str]:
        """An environment for ``git`` that never prompts and ignores the user's config."""
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_AUTHOR_NAME": "Test Author",
            "GIT_AUTHOR_EMAIL": "author@example.com",
            "GIT_COMMITTER_NAME": "Test Author",
            "GIT_COMMITTER_EMAIL": "author@example.com",
            "LC_ALL": "C",
        }
        env["HOME"] = str(home or self.server.emulator.state_dir)
        return env


def start_world(
    state_dir: Path,
    *,
    repo: str = "acme/widgets",
    files: Mapping[str, str] | None = None,
    bot_login: str = "orchestrator-bot",
    human_login: str = "alice",
    bot_permission: str = "write",
    human_permission: str = "admin",
    clock: Clock | None = None,
    seed: int = 0,
    bot_is_app: bool = False,
    mergeability_delay: float | None = None,
) -> SimWorld:
    """Start an emulator and create the repository, bot and human; the caller stops it.

    The product's account is a machine user (a personal access token, which
    can read ``GET /user``) unless ``bot_is_app``: then it is a bot account,
    which REST shows as ``login[bot]`` with type ``Bot`` and GraphQL as
    ``login`` with ``__typename: Bot``, and ``world.bot.login`` is the REST
    spelling. ``mergeability_delay`` overrides the emulator's default.
    """
    server = SimServer(state_dir, clock=clock, seed=seed).start()
    try:
        token = make_token()
        human = Account(human_login, make_token())
        control = server.control
        created = control.create_user(bot_login, token, bot=bot_is_app)
        bot = Account(str(created["login"]), token)
        control.create_user(human.login, human.token, name="Alice Example")
        if mergeability_delay is not None:
            control.set_mergeability_delay(mergeability_delay)
        control.create_repo(
            repo,
            dict(files or DEFAULT_FILES),
            permissions={bot.login: bot_permission, human.login: human_permission},
        )
    except BaseException:
        server.stop()
        raise
    return SimWorld(server=server, repo=repo, bot=bot, human=human)


@contextmanager
def running_world(state_dir: Path, **options: Any) -> Iterator[SimWorld]:
    """`start_world` as a context manager that stops the emulator afterwards."""
    world = start_world(state_dir, **options)
    try:
        yield world
    finally:
        world.server.stop()


@dataclass(frozen=True)
class AppAccount:
    """A GitHub App registered on the emulator and installed on the world's repository.

    ``login`` is the bot as REST shows it (``slug[bot]``); ``private_key`` the PEM.
    """

    id: int
    slug: str
    login: str
    private_key: str
    installation_id: int

    def key_file(self, folder: Path) -> Path:
        """Write the private key into ``folder`` (owner-only) and return the file."""
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        path = folder / f"{self.slug}.pem"
        path.write_text(self.private_key, encoding="utf-8")
        path.chmod(0o600)
        return path


def add_app(
    world: SimWorld,
    slug: str = "orchestrator-app",
    *,
    repos: list[str] | None = None,
    **options: Any,
) -> AppAccount:
    """Register an App owned by the repository's owner and install it on the repository
    (or on ``repos``)."""
    owner = world.repo.split("/", 1)[0]
    created = world.control.create_app(slug, owner=owner, **options)
    installed = world.control.install_app(slug, repos or [world.repo])
    return AppAccount(
        id=int(created["id"]),
        slug=str(created["slug"]),
        login=str(created["login"]),
        private_key=str(created["private_key"]),
        installation_id=int(installed["id"]),
    )
