"""``since`` on the issue list, with GitHub's semantics, over HTTP through PyGithub.

GitHub keeps the issues (and pull requests) last updated at or after ``since``,
combines it with ``state``, ``labels``, ``sort`` and ``direction``, and moves an
issue's ``updated_at`` when it is labelled or unlabelled, closed or reopened,
renamed or edited, or commented on; a check run on a pull request's head does not.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from orchestrator_sim.clock import ManualClock
from orchestrator_sim.testing import SimWorld, running_world

START = datetime(2026, 3, 1, tzinfo=UTC)


@pytest.fixture
def world(tmp_path: Path) -> Iterator[tuple[SimWorld, ManualClock]]:
    clock = ManualClock(START)
    with running_world(tmp_path / "sim", clock=clock, mergeability_delay=0) as running:
        yield running, clock


def titles(world: SimWorld, **filters: Any) -> list[str]:
    repo = world.github().get_repo(world.repo)
    return [issue.title for issue in repo.get_issues(**filters)]


def test_since_keeps_issues_updated_at_or_after_it(
    world: tuple[SimWorld, ManualClock],
) -> None:
    sim, clock = world
    human = sim.human.login
    sim.control.create_issue(sim.repo, "old", as_user=human)
    clock.advance(60)
    sim.control.create_issue(sim.repo, "exactly then", as_user=human)
    clock.advance(60)
    sim.control.create_issue(sim.repo, "newer", as_user=human)
    at = START + timedelta(seconds=60)
    assert titles(sim, since=at) == ["newer", "exactly then"]
    assert titles(sim, since=at + timedelta(seconds=1)) == ["newer"]
    assert titles(sim, since=START + timedelta(hours=1)) == []
    status, _headers, body = sim.github().requester.requestJson(
        "GET", f"/repos/{sim.repo}/issues", parameters={"since": "2026-03-01T01:01:00+01:00"}
    )
    assert status == 200
    assert '"exactly then"' in body
    assert '"old"' not in body


def test_since_combines_with_state_labels_sort_and_direction(
    world: tuple[SimWorld, ManualClock],
) -> None:
    sim, clock = world
    human = sim.human.login
    first = sim.control.create_issue(sim.repo, "first", as_user=human, labels=["agent"])
    second = sim.control.create_issue(sim.repo, "second", as_user=human, labels=["agent"])
    sim.control.create_issue(sim.repo, "unlabelled", as_user=human)
    clock.advance(60)
    cutoff = START + timedelta(seconds=60)
    sim.control.update_issue(sim.repo, second, as_user=human, state="closed")
    clock.advance(60)
    sim.control.comment(sim.repo, first, "still on it", as_user=human)
    assert titles(sim, since=cutoff) == ["first"]
    assert titles(sim, since=cutoff, state="all") == ["second", "first"]
    ascending = titles(sim, since=cutoff, state="all", sort="updated", direction="asc")
    assert ascending == ["second", "first"]
    descending = titles(sim, since=cutoff, state="all", sort="updated", direction="desc")
    assert descending == ["first", "second"]
    assert titles(sim, since=cutoff, state="closed", labels=["agent"]) == ["second"]
    assert titles(sim, since=START, state="all", labels=["agent"], sort="updated") == [
        "first",
        "second",
    ]


def _label(sim: SimWorld, number: int) -> None:
    sim.control.add_labels(sim.repo, number, ["blocked"], as_user=sim.human.login)


def _unlabel(sim: SimWorld, number: int) -> None:
    sim.control.remove_label(sim.repo, number, "agent", as_user=sim.human.login)


def _close(sim: SimWorld, number: int) -> None:
    sim.control.update_issue(sim.repo, number, as_user=sim.human.login, state="closed")


def _rename(sim: SimWorld, number: int) -> None:
    sim.control.update_issue(sim.repo, number, as_user=sim.human.login, title="renamed")


def _edit_body(sim: SimWorld, number: int) -> None:
    sim.control.update_issue(sim.repo, number, as_user=sim.human.login, body="more detail")


def _comment(sim: SimWorld, number: int) -> None:
    sim.control.comment(sim.repo, number, "a question", as_user=sim.human.login)


def _rest_label(sim: SimWorld, number: int) -> None:
    sim.github().get_repo(sim.repo).get_issue(number).add_to_labels("blocked")


def _rest_comment(sim: SimWorld, number: int) -> None:
    sim.github().get_repo(sim.repo).get_issue(number).create_comment("on it")


@pytest.mark.parametrize(
    "change",
    [_label, _unlabel, _close, _rename, _edit_body, _comment, _rest_label, _rest_comment],
)
def test_updated_at_moves_with_each_change_github_counts(
    world: tuple[SimWorld, ManualClock], change: Callable[[SimWorld, int], None]
) -> None:
    sim, clock = world
    number = sim.control.create_issue(sim.repo, "watched", as_user=sim.human.login)
    sim.control.add_labels(sim.repo, number, ["agent"], as_user=sim.human.login)
    sim.control.create_issue(sim.repo, "untouched", as_user=sim.human.login)
    clock.advance(300)
    change(sim, number)
    issue = sim.github().get_repo(sim.repo).get_issue(number)
    assert issue.updated_at == START + timedelta(seconds=300)
    assert [
        i.number
        for i in sim.github()
        .get_repo(sim.repo)
        .get_issues(since=START + timedelta(seconds=300), state="all")
    ] == [number]


def test_reopening_moves_updated_at(world: tuple[SimWorld, ManualClock]) -> None:
    sim, clock = world
    number = sim.control.create_issue(sim.repo, "flaky", as_user=sim.human.login)
    _close(sim, number)
    clock.advance(300)
    sim.control.update_issue(sim.repo, number, as_user=sim.human.login, state="open")
    assert titles(sim, since=START + timedelta(seconds=300)) == ["flaky"]


def test_a_check_run_does_not_move_a_pull_requests_updated_at(
    world: tuple[SimWorld, ManualClock],
) -> None:
    sim, clock = world
    human = sim.human.login
    head = sim.control.push(sim.repo, "feature", {"x.txt": "x\n"}, as_user=human)
    sim.control.create_pull(sim.repo, "A change", "feature", as_user=sim.bot.login)
    clock.advance(300)
    sim.control.check_run(sim.repo, sha=head, name="ci", conclusion="success")
    assert titles(sim, since=START + timedelta(seconds=300), state="all") == []
