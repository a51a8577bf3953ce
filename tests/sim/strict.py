"""Helpers for the tests of the behaviours where the emulator is as strict as GitHub:
a world on a manual clock, GraphQL and REST calls as any account, pull requests."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from orchestrator_sim.clock import ManualClock
from orchestrator_sim.testing import Account, SimWorld, make_token, running_world

# Both lines of src/widgets.py change, so either is part of a pull request's diff.
WIDGETS = 'def greet(name: str) -> str:  # changed\n    return f"hi {name}"\n'


@contextmanager
def manual_world(tmp_path: Path) -> Iterator[tuple[SimWorld, ManualClock]]:
    """A running emulator whose clock moves only when the test moves it."""
    clock = ManualClock()
    with running_world(tmp_path / "sim", clock=clock) as world:
        yield world, clock


@dataclass(frozen=True)
class Pull:
    """A pull request a test opened: its number, branch and head SHA."""

    number: int
    branch: str
    head: str


def open_pull(
    world: SimWorld,
    files: dict[str, str] | None = None,
    *,
    draft: bool = False,
    base: str | None = None,
    as_user: str | None = None,
) -> Pull:
    """Push a new branch as the human and open a pull request from it (as the bot)."""
    branch = f"feature-{secrets.token_hex(4)}"
    head = world.control.push(
        world.repo,
        branch,
        files or {"src/widgets.py": WIDGETS},
        as_user=world.human.login,
        start=base,
    )
    number = world.control.create_pull(
        world.repo,
        f"Work on {branch}",
        branch,
        as_user=as_user or world.bot.login,
        base=base,
        draft=draft,
    )
    return Pull(number, branch, head)


def new_account(world: SimWorld, permission: str | None = "write", *, bot: bool = False) -> Account:
    """A new account with ``permission`` on the world's repository (REST spelling of its login)."""
    token = make_token()
    created = world.control.create_user(f"user-{secrets.token_hex(3)}", token, bot=bot)
    account = Account(str(created["login"]), token)
    if permission is not None:
        world.control.set_permission(world.repo, account.login, permission)
    return account


def graphql(
    world: SimWorld,
    query: str,
    variables: dict[str, Any] | None = None,
    account: Account | None = None,
) -> dict[str, Any]:
    """The JSON answer of one GraphQL request (data and errors both kept)."""
    who = account or world.bot
    response = httpx.post(
        f"{world.url}/graphql",
        json={"query": query, "variables": variables or {}},
        headers={"Authorization": f"bearer {who.token}"},
        timeout=30,
    )
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def rest(
    world: SimWorld,
    method: str,
    path: str,
    body: Any = None,
    account: Account | None = None,
) -> httpx.Response:
    """One REST request as ``account`` (default: the bot)."""
    who = account or world.bot
    return httpx.request(
        method,
        f"{world.url}{path}",
        json=body,
        headers={
            "Authorization": f"token {who.token}",
            "Accept": "application/vnd.github+json",
        },
        timeout=30,
    )


def pull_json(world: SimWorld, number: int) -> dict[str, Any]:
    """``GET .../pulls/{number}`` as the bot."""
    response = rest(world, "GET", f"/repos/{world.repo}/pulls/{number}")
    assert response.status_code == 200, response.text
    data: dict[str, Any] = response.json()
    return data
