"""The issue feed outlives the daemon: a restart resumes it instead of reading every issue."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from orchestrator.github.feed import IssueFeed
from orchestrator.repos.feed_keeper import FeedKeeper, decode, encode
from orchestrator.store.database import Database
from orchestrator_sim.testing import SimWorld, running_world
from tests.e2e.harness import flow_for


@pytest.fixture
def world(tmp_path: Path) -> Iterator[SimWorld]:
    with running_world(tmp_path / "sim") as running:
        yield running


def _events(logs: list[dict[str, object]], name: str) -> list[dict[str, object]]:
    return [e for e in logs if e.get("event") == name]


def test_a_restart_resumes_the_feed_and_sees_what_changed_meanwhile(
    tmp_path: Path, world: SimWorld
) -> None:
    with flow_for(tmp_path, world) as flow:
        first = flow.open_issue()
        flow.run_to_phase(first, "waiting_for_checks")
        pr = flow.pr_number(first)
        flow.stop()  # saves the feed
        # While no daemon polls: a new candidate, and the first issue's checks go green.
        second = flow.open_issue()
        flow.check(pr, "success")
        with capture_logs() as logs:
            flow.start()
            flow.step()
        assert _events(logs, "issue_feed_resumed"), "the saved feed was resumed"
        assert not _events(logs, "issue_feed_cold"), "no full read of the issues"
        assert flow.phase(second) is not None, "the issue labelled meanwhile was seen"
        flow.run_to_phase(first, "waiting_for_human")


def test_a_damaged_saved_feed_is_named_and_the_feed_read_in_full(
    tmp_path: Path, world: SimWorld
) -> None:
    with flow_for(tmp_path, world) as flow:
        number = flow.open_issue()
        flow.step()
        flow.stop()
        db = Database.open(flow.db_url or f"sqlite:///{flow.tmp / 'orchestrator.db'}")
        try:
            db.feeds.save(world.repo, b"\x00not a feed", now=datetime.now(UTC))
        finally:
            db.close()
        with capture_logs() as logs:
            flow.start()
            flow.step()
        (unusable,) = _events(logs, "issue_feed_unusable")
        assert f"the saved issue feed of {world.repo} cannot be read" in str(unusable["reason"])
        assert "not compressed data" in str(unusable["reason"])
        assert _events(logs, "issue_feed_cold")
        flow.run_to_phase(number, "waiting_for_checks")


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_the_feed_is_saved_when_it_changed_at_most_once_a_period(
    tmp_path: Path, world: SimWorld
) -> None:
    from orchestrator.github.client import GitHubClient

    world.control.create_issue(world.repo, "One", as_user=world.human.login, labels=["agent"])
    db = Database.open(f"sqlite:///{tmp_path / 'feeds.db'}")
    try:
        monotonic = _Clock()
        keeper = FeedKeeper(
            db.feeds, clock=lambda: datetime.now(UTC), every_s=60, monotonic=monotonic
        )
        client = GitHubClient(world.url, world.bot.token)
        feed = IssueFeed(world.repo, required_labels=frozenset({"agent"}))
        assert keeper.save(feed) is False, "a cold feed has nothing to save"
        feed.refresh(client)
        assert keeper.save(feed) is True, "the first warm feed is saved at once"
        assert keeper.save(feed, force=True) is False, "unchanged: not saved again"
        world.control.create_issue(world.repo, "Two", as_user=world.human.login, labels=["agent"])
        feed.refresh(client)
        feed.refresh(client)
        assert keeper.save(feed) is False, "changed, but saved less than a period ago"
        monotonic.now += 61
        assert keeper.save(feed) is True
        world.control.create_issue(world.repo, "Three", as_user=world.human.login)
        feed.refresh(client)
        assert keeper.save(feed, force=True) is True, "shutdown saves what changed"

        loaded = db.feeds.load(world.repo)
        assert loaded is not None
        resumed = IssueFeed(world.repo, required_labels=frozenset({"agent"}))
        assert FeedKeeper(db.feeds, clock=lambda: datetime.now(UTC)).resume(resumed)
        assert [i.title for i in resumed.candidates()] == ["One", "Two"]
        assert decode(loaded[0]) == decode(encode(resumed.export() or {}))
    finally:
        db.close()
