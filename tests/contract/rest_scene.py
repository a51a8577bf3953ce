"""The scene the REST contract cases run in, what a case is, and how one is sent.

The scene (built by the ``scene`` fixture of ``tests/contract/conftest.py``)
is a module-scoped emulator holding a repository with an issue, a pull
request, reviews, comments, checks and statuses. A case is one real request
through it; `send` returns its status and body for the test to check against
GitHub's OpenAPI description.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx

from orchestrator_sim.testing import Account, SimWorld

R = "/repos/{owner}/{repo}"


@dataclass(frozen=True)
class Scene:
    """A repository with an issue, a pull request, reviews, comments, checks and statuses."""

    world: SimWorld
    reader: Account
    issue: int
    pull: int
    head: str
    review_id: int
    review_comment_id: int
    comment_id: int
    check_run_id: int
    job_id: int

    @property
    def repo(self) -> str:
        return f"/repos/{self.world.repo}"

    def fresh_pull(
        self,
        files: dict[str, str] | None = None,
        *,
        settle: bool = True,
        draft: bool = False,
        base: str | None = None,
    ) -> tuple[int, str]:
        """A new pull request from a new branch; returns its number and head SHA.

        With ``settle`` the emulator's clock moves past the mergeability delay.
        """
        branch = f"contract-{secrets.token_hex(4)}"
        control = self.world.control
        head = control.push(
            self.world.repo,
            branch,
            files or {f"docs/{branch}.md": "notes\n"},
            as_user=self.world.human.login,
            start=base,
        )
        number = control.create_pull(
            self.world.repo,
            f"Change {branch}",
            branch,
            as_user=self.world.bot.login,
            base=base,
            draft=draft,
        )
        if settle:
            self.world.settle_mergeability()
        return number, head

    def protected_base(self) -> str:
        """A new branch off main that requires a passing ``ci`` check."""
        name = f"release-{secrets.token_hex(4)}"
        self.world.control.push(
            self.world.repo, name, {f"{name}.txt": "x\n"}, as_user=self.world.human.login
        )
        self.world.control.protect(self.world.repo, name, required_checks=["ci"])
        return name

    def fresh_comment(self) -> int:
        return self.world.control.comment(
            self.world.repo, self.issue, "temporary", as_user=self.world.bot.login
        )

    def fresh_branch(self) -> str:
        name = f"ref-{secrets.token_hex(4)}"
        self.world.control.push(
            self.world.repo, name, {f"{name}.txt": "x\n"}, as_user=self.world.human.login
        )
        return name


Request = Callable[[Scene], tuple[str, Any]]


@dataclass(frozen=True)
class Case:
    """One request and the GitHub operation and status its answer must match.

    ``served_as`` is the path the request takes when it is an older spelling
    GitHub still answers but no longer documents; ``template`` is then the
    documented operation whose answer it must match. ``who`` names the account
    sending it (``bot``, ``human`` or ``reader``). ``documented`` is False for
    an answer GitHub sends but does not describe: it must be GitHub's usual
    error object.
    """

    name: str
    method: str
    template: str
    status: int
    request: Request
    served_as: str | None = None
    who: str = "bot"
    documented: bool = True


def fetch(path: Callable[[Scene], str]) -> Request:
    """A request without a body to the path ``path`` makes of the scene."""
    return lambda s: (path(s), None)


def send(scene: Scene, case: Case) -> tuple[int, Any]:
    """Send a case's request as its account: the status and the decoded body."""
    path, body = case.request(scene)
    account = {"bot": scene.world.bot, "human": scene.world.human, "reader": scene.reader}
    response = httpx.request(
        case.method,
        f"{scene.world.url}{path}",
        json=body,
        headers={
            "Authorization": f"token {account[case.who].token}",
            "Accept": "application/vnd.github+json",
        },
        follow_redirects=False,
        timeout=30,
    )
    text = response.content.strip()
    return response.status_code, json.loads(text) if text else None
