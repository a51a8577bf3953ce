"""The scene every REST contract case runs in, and what a case is.

A module-scoped emulator holds a repository with an issue, a pull request,
reviews, comments, checks and statuses; each `Case` names one request, the
GitHub operation and status its answer must match, and who sends it.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from orchestrator_sim.clock import ManualClock
from orchestrator_sim.testing import Account, SimWorld, make_token, running_world
from tests.contract.openapi_contract import load_contract

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


@pytest.fixture(scope="module")
def scene(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Scene]:
    load_contract()  # fail early, and with the `make contracts` hint, when the file is missing
    # A manual clock: pull requests stay "mergeability unknown" until a case settles them.
    with running_world(tmp_path_factory.mktemp("contract"), clock=ManualClock()) as world:
        control = world.control
        human = world.human.login
        reader = Account("reader", make_token())
        control.create_user(reader.login, reader.token)
        control.set_permission(world.repo, reader.login, "read")
        issue = control.create_issue(
            world.repo, "Widgets break on empty names", as_user=human, labels=["bug"]
        )
        comment_id = control.comment(world.repo, issue, "Seen on main too.", as_user=human)
        head = control.push(
            world.repo,
            "fix-empty-names",
            {"src/widgets.py": 'def greet(name: str) -> str:\n    return f"hello {name or 1}"\n'},
            as_user=human,
        )
        pull = control.create_pull(
            world.repo, "Handle empty names", "fix-empty-names", as_user=world.bot.login
        )
        review = control.review(
            world.repo,
            pull,
            "CHANGES_REQUESTED",
            as_user=human,
            body="One thing",
            comments=[{"path": "src/widgets.py", "line": 2, "body": "Use a default name"}],
        )
        run = control.check_run(
            world.repo,
            sha=head,
            name="tests",
            conclusion="failure",
            title="1 failed",
            summary="test_greet failed",
            annotations=[
                {
                    "path": "src/widgets.py",
                    "start_line": 2,
                    "end_line": 2,
                    "annotation_level": "failure",
                    "message": "AssertionError",
                }
            ],
            log="FAILED test_greet\n",
        )
        control.status(world.repo, "pending", as_user=human, sha=head, context="deploy")
        yield Scene(
            world=world,
            reader=reader,
            issue=issue,
            pull=pull,
            head=head,
            review_id=int(review["id"]),
            review_comment_id=int(review["threads"][0]["comment_id"]),
            comment_id=comment_id,
            check_run_id=int(run["id"]),
            job_id=int(run["job_id"]),
        )


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


def get(path: Callable[[Scene], str]) -> Request:
    """A GET of the path ``path`` builds from the scene."""
    return lambda s: (path(s), None)
