"""The control API's bulk seed makes the very state the single steps make, in one call.

Two emulators on the same manual clock: one seeded in bulk, one driven step by
step as humans, the bot and CI would (open the issue, push a branch, open the
pull request over REST, report the check run, review). Their repositories,
their git commits and their REST and GraphQL answers must be the same; the
daemon's own readers must see the seeded world; a bad seed changes nothing.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
import pytest

from orchestrator.domain.snapshot import Actor, ReviewVerdict
from orchestrator.github import queries
from orchestrator.github.client import GitHubClient, MemoryEtagCache
from orchestrator.github.gateway import GitHubGateway
from orchestrator.github.prstate import PRStatePoller
from orchestrator.tracker.base import TrackerSettings
from orchestrator.tracker.github_issues import GitHubIssuesTracker
from orchestrator_sim.clock import ManualClock
from orchestrator_sim.control import ControlRequestError
from orchestrator_sim.snapshot import to_json
from orchestrator_sim.testing import SimWorld, running_world

LABELS = ["agent", "p1"]


@pytest.fixture
def worlds(tmp_path: Path) -> Iterator[tuple[SimWorld, SimWorld]]:
    with ExitStack() as stack:
        seeded, stepped = (
            stack.enter_context(running_world(tmp_path / name, clock=ManualClock()))
            for name in ("seeded", "stepped")
        )
        yield seeded, stepped


def step_by_step(world: SimWorld, count: int) -> None:
    """What the seed does, one normal request at a time (issues get the odd numbers)."""
    repo = world.github().get_repo(world.repo)
    human = world.human.login
    for index in range(count):
        number = 2 * index + 1
        world.control.create_issue(world.repo, f"Issue {number}", as_user=human, labels=LABELS)
        branch = f"seed/issue-{number}"
        head = world.control.push(
            world.repo,
            branch,
            {f"seed/issue-{number}.md": f"Issue {number}\n\nWork for #{number}.\n"},
            as_user=world.bot.login,
            message=f"Work for #{number}",
        )
        pull = repo.create_pull(
            title=f"Issue {number}", body=f"Closes #{number}", head=branch, base="main"
        )
        world.control.check_run(world.repo, sha=head, name="ci", conclusion="success")
        world.control.review(world.repo, pull.number, "APPROVED", as_user=human)


def answers(world: SimWorld, numbers: list[tuple[int, int, str]]) -> dict[str, Any]:
    """The REST and GraphQL answers the daemon reads, with the server's address taken out."""
    headers = {"Authorization": f"token {world.bot.token}"}
    paths = [f"/repos/{world.repo}/issues?labels=agent&state=all&per_page=100"]
    for issue, pull, head in numbers:
        paths += [
            f"/repos/{world.repo}/issues/{issue}",
            f"/repos/{world.repo}/issues/{issue}/comments",
            f"/repos/{world.repo}/issues/{issue}/events",
            f"/repos/{world.repo}/pulls/{pull}",
            f"/repos/{world.repo}/pulls/{pull}/reviews",
            f"/repos/{world.repo}/commits/{head}/check-runs",
        ]
    found: dict[str, Any] = {}
    with httpx.Client(base_url=world.url, headers=headers, timeout=30) as client:
        for path in paths:
            found[path] = client.get(path).text.replace(world.url, "http://emulator")
        pulls = [pull for _issue, pull, _head in numbers]
        owner, name = world.repo.split("/")
        for request in (
            queries.fingerprint_request(owner, name, pulls),
            queries.state_request(owner, name, pulls),
        ):
            document = client.post("/graphql", json=request.payload()).json()
            document["data"].pop("rateLimit")
            found[request.operation_name] = json.dumps(document).replace(
                world.url, "http://emulator"
            )
    return found


def test_the_seed_makes_what_the_single_steps_make(worlds: tuple[SimWorld, SimWorld]) -> None:
    seeded, stepped = worlds
    items = seeded.seed(3, labels=LABELS, review="APPROVED")
    step_by_step(stepped, 3)
    assert [(i.issue, i.pull, i.branch) for i in items] == [
        (1, 2, "seed/issue-1"),
        (3, 4, "seed/issue-3"),
        (5, 6, "seed/issue-5"),
    ]
    seeded_state, stepped_state = (w.server.emulator.state for w in worlds)
    assert to_json(seeded_state.repo("acme", "widgets")) == to_json(
        stepped_state.repo("acme", "widgets")
    )
    assert seeded_state.to_json()["last_id"] == stepped_state.to_json()["last_id"]
    for world in worlds:
        world.settle_mergeability()
    numbers = [(i.issue, i.pull or 0, i.head_sha or "") for i in items]
    assert answers(seeded, numbers) == answers(stepped, numbers)


def test_the_daemons_readers_see_a_seeded_world(tmp_path: Path) -> None:
    with running_world(tmp_path / "sim", mergeability_delay=0) as world:
        items = world.seed(150, labels=["agent"], review="APPROVED")
        client = GitHubClient(world.url, world.bot.token, cache=MemoryEtagCache())
        gateway = GitHubGateway(client)
        tracker = GitHubIssuesTracker(
            lambda: gateway,
            TrackerSettings(repo=world.repo, required_labels=frozenset({"agent"})),
        )
        candidates = tracker.fetch_candidates()
        assert [c.ref.number for c in candidates] == [item.issue for item in items]
        poller = PRStatePoller(client, client.cache, lambda login, kind: Actor(login))
        pulls = poller.poll(world.repo, [item.pull or 0 for item in items])
        assert len(pulls) == 150
        for item in items:
            pr = pulls[item.pull or 0]
            assert pr.head_sha == item.head_sha
            assert pr.mergeable is True
            assert pr.checks is not None and pr.checks.passed == frozenset({"ci"})
            assert [r.verdict for r in pr.reviews] == [ReviewVerdict.APPROVED]
        # The issue feed's first incremental read, then a quiet one: a 304.
        assert tracker.fetch_candidates() == candidates
        assert tracker.fetch_candidates() == candidates
        assert sum(client.accounting.not_modified.values()) > 0


def test_a_seed_without_pull_requests_numbers_issues_in_a_row(tmp_path: Path) -> None:
    with running_world(tmp_path / "sim") as world:
        world.control.create_issue(world.repo, "before", as_user=world.human.login)
        items = world.seed(4, labels=["todo"], pulls=False)
        assert [(i.issue, i.pull) for i in items] == [(2, None), (3, None), (4, None), (5, None)]
        repo = world.github().get_repo(world.repo)
        assert [i.number for i in repo.get_issues(labels=["todo"])] == [5, 4, 3, 2]
        assert repo.get_issue(3).title == "Issue 3"


@pytest.mark.parametrize(
    ("pulls", "message"),
    [
        ({"as": "orchestrator-bot", "branch": "seed/fixed"}, "{issue}"),
        ({"as": "orchestrator-bot", "branch": "main-{issue}", "base": "nope"}, "no base"),
        ({"as": "orchestrator-bot", "review": {"as": "alice", "state": "LGTM"}}, "state"),
        (
            {"as": "orchestrator-bot", "review": {"as": "orchestrator-bot", "state": "APPROVED"}},
            "author",
        ),
        (
            {"as": "orchestrator-bot", "review": {"as": "alice", "state": "CHANGES_REQUESTED"}},
            "body",
        ),
        ({"as": "orchestrator-bot", "check_run": {"conclusion": "green"}}, "conclusion"),
        ({"as": "orchestrator-bot", "branch": "taken-{issue}"}, "exists"),
        ({"as": "orchestrator-bot", "branch": "bad..name-{issue}"}, "fast-import"),
    ],
)
def test_a_bad_seed_changes_nothing(tmp_path: Path, pulls: dict[str, Any], message: str) -> None:
    with running_world(tmp_path / "sim") as world:
        world.control.push(world.repo, "taken-1", {"x.md": "x\n"}, as_user=world.human.login)
        state = world.server.emulator.state
        version, last = state.version, state.to_json()
        with pytest.raises(ControlRequestError) as refused:
            world.control.seed(world.repo, 2, as_user=world.human.login, pulls=pulls)
        assert refused.value.status == 422
        assert message in refused.value.message
        assert state.version == version
        assert state.to_json() == last
        assert set(
            world.server.emulator.git.heads(
                world.server.emulator.repo_path(state.repo("acme", "widgets"))
            )
        ) == {"main", "taken-1"}


def test_a_seed_by_an_unknown_account_is_404(tmp_path: Path) -> None:
    with running_world(tmp_path / "sim") as world, pytest.raises(ControlRequestError) as refused:
        world.control.seed(world.repo, 1, as_user=world.human.login, pulls={"as": "nobody"})
    assert refused.value.status == 404
    assert "nobody" in refused.value.message


@pytest.mark.parametrize("count", [0, 50_001])
def test_a_seed_count_is_bounded(tmp_path: Path, count: int) -> None:
    with running_world(tmp_path / "sim") as world, pytest.raises(ControlRequestError) as refused:
        world.control.seed(world.repo, count, as_user=world.human.login)
    assert refused.value.status == 422
