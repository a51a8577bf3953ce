"""The gateway's find-before-create under App auth: the App's own GraphQL replies are its own.

GraphQL names the App's bot ``slug`` where REST says ``slug[bot]``; a thread
reply whose answer was lost must be recognised as the daemon's when it is
looked for again, or it would be posted twice.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from orchestrator.domain.snapshot import Actor
from orchestrator.github.client import GitHubClient
from orchestrator.github.credentials import AppInstallationTokens
from orchestrator.github.gateway import GitHubGateway
from orchestrator.github.outcomes import PROpen
from orchestrator.github.prstate import inspect_pr_state
from orchestrator.github.retry import RetryPolicy
from orchestrator_sim.testing import AppAccount, SimWorld, add_app, running_world


@pytest.fixture
def world(tmp_path: Path) -> Iterator[SimWorld]:
    with running_world(tmp_path / "sim") as running:
        yield running


@pytest.fixture
def app(world: SimWorld) -> AppAccount:
    return add_app(world)


@pytest.fixture
def gateway(world: SimWorld, app: AppAccount) -> GitHubGateway:
    tokens = AppInstallationTokens(
        endpoint=world.url, app_id=app.id, private_key=app.private_key, repo=world.repo
    )
    client = GitHubClient(world.url, tokens, retry=RetryPolicy(max_attempts=2, base_delay_s=0.01))
    return GitHubGateway(client)


def _thread(world: SimWorld, gateway: GitHubGateway) -> tuple[int, str]:
    human = world.human.login
    head = world.control.push(
        world.repo, "agent/1-fix", {"src/fix.py": "x = 1\n"}, as_user=human, message="Fix"
    )
    opened = gateway.find_or_create_pr(
        world.repo, branch="agent/1-fix", base="main", title="Fix", body="Fixes it."
    )
    assert isinstance(opened, PROpen), opened
    number = opened.pr.number
    world.control.review(
        world.repo,
        number,
        "CHANGES_REQUESTED",
        as_user=world.human.login,
        commit_id=head,
        comments=[{"path": "src/fix.py", "line": 1, "body": "use a constant"}],
    )

    def actor(login: str, typename: str | None) -> Actor:
        return Actor(login, is_bot=typename == "Bot", can_write=typename != "Bot")

    pr = inspect_pr_state(gateway.client, world.repo, number, actor)
    assert pr is not None and len(pr.threads) == 1
    return number, pr.threads[0].id


def test_a_lost_thread_reply_is_found_as_the_apps_own_and_not_repeated(
    world: SimWorld, gateway: GitHubGateway, app: AppAccount
) -> None:
    number, thread_id = _thread(world, gateway)
    # The look before the reply passes; the reply itself happens, its answer is lost.
    world.control.add_fault(
        path="/graphql", method="POST", action="lost_response", after=1, count=1
    )
    marker = "<!-- reply:k1 -->"

    reply = gateway.reply_to_thread(
        world.repo, number, thread_id, f"Addressed.\n\n{marker}", marker
    )

    assert isinstance(reply, str), reply
    again = gateway.reply_to_thread(world.repo, number, thread_id, f"Again\n\n{marker}", marker)
    assert again == reply
    mutations = [
        w for w in world.control.writes() if w.get("operation") == "addPullRequestReviewThreadReply"
    ]
    assert len(mutations) == 1
    assert mutations[0]["login"] == app.login
    comments = world.github(world.human).get_repo(world.repo).get_pull(number).get_review_comments()
    replies = [c for c in comments if marker in c.body]
    assert [(c.user.login, c.user.type) for c in replies] == [(app.login, "Bot")]
