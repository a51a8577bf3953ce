"""The incremental issue feed sees what a full read sees, after any sequence of changes."""

from __future__ import annotations

import time
import zlib
from pathlib import Path
from random import Random
from typing import Any

from orchestrator.github.client import GitHubClient
from orchestrator.github.feed import FeedRead, IssueFeed
from orchestrator.github.feed_state import FeedItem
from orchestrator.repos.feed_keeper import decode, encode
from orchestrator_sim.testing import SimWorld, running_world

LABELS = ("agent", "stop", "approved", "other")
WATCHED = frozenset({"stop", "approved"})
STOP_ALL = "orchestrator:stop-all"


def _full(client: GitHubClient, repo: str) -> dict[int, FeedItem]:
    """Every issue and pull request of the repository, read whole."""
    items = client.paginate(f"/repos/{repo}/issues", params={"state": "all"})
    return {int(data["number"]): FeedItem.of(data) for data in items}


def _assert_same(feed: IssueFeed, truth: dict[int, FeedItem], kept: set[int], step: str) -> None:
    wanted = sorted(
        n for n, i in truth.items() if i.is_open and not i.is_pull_request and "agent" in i.labels
    )
    assert [item.number for item in feed.candidates()] == wanted, step
    for item in feed.candidates():
        assert item.labels == truth[item.number].labels, step
    for label in WATCHED:
        carriers = {n for n, i in truth.items() if i.is_open and label in i.labels}
        assert feed.carriers(label) == carriers, f"{step}: carriers of {label}"
    for number, item in feed.known(kept).items():
        assert (item.is_open, item.labels, item.title) == (
            truth[number].is_open,
            truth[number].labels,
            truth[number].title,
        ), step


class _Changes:
    def __init__(self, world: SimWorld, rng: Random) -> None:
        self.world, self.rng = world, rng
        self.reader = GitHubClient(world.url, world.human.token)
        self.issues: list[int] = []
        self.pulls: list[int] = []
        self.branches = 0

    def one(self) -> str:
        world, rng = self.world, self.rng
        control, repo, human = world.control, world.repo, world.human.login
        numbers = self.issues + self.pulls
        choice = rng.choice(["new", "new_pull", "label", "unlabel", "close", "reopen", "retitle"])
        if choice == "new" or not numbers:
            labels = rng.sample(LABELS, rng.randint(0, 2))
            self.issues.append(control.create_issue(repo, "New", as_user=human, labels=labels))
            return f"new issue with {labels}"
        if choice == "new_pull":
            self.branches += 1
            branch = f"feature-{self.branches}"
            control.push(repo, branch, {f"{branch}.txt": "x\n"}, as_user=human)
            number = control.create_pull(repo, "A change", branch, as_user=human)
            self.pulls.append(number)
            return f"new pull #{number}"
        number = rng.choice(numbers)
        if choice == "label":
            label = rng.choice(LABELS)
            control.add_labels(repo, number, [label], as_user=human)
            return f"#{number} +{label}"
        if choice == "unlabel":
            data: dict[str, Any] = self.reader.request("GET", f"/repos/{repo}/issues/{number}").data
            names = [str(label["name"]) for label in data.get("labels") or ()]
            if not names:
                return "nothing to unlabel"
            label = rng.choice(names)
            control.remove_label(repo, number, label, as_user=human)
            return f"#{number} -{label}"
        if choice == "retitle":
            control.update_issue(repo, number, as_user=human, title=f"Title {rng.random():.3f}")
            return f"#{number} retitled"
        state = "closed" if choice == "close" else "open"
        control.update_issue(repo, number, as_user=human, state=state)
        return f"#{number} {state}"


def test_the_feed_misses_no_change_a_full_read_sees(tmp_path: Path) -> None:
    for seed in range(3):
        rng = Random(seed)
        with running_world(tmp_path / f"sim{seed}") as world:
            changes = _Changes(world, rng)
            for _ in range(6):
                changes.one()
            client = GitHubClient(world.url, world.bot.token)
            feed = IssueFeed(world.repo, required_labels=frozenset({"agent"}))
            feed.watch(WATCHED)
            kept: set[int] = set()
            previous_cold = True
            for step in range(40):
                done = [changes.one() for _ in range(rng.randint(0, 3))]
                if rng.random() < 0.3 and changes.issues:
                    kept = set(rng.sample(changes.issues, min(3, len(changes.issues))))
                    feed.keep(client, kept)
                read = feed.refresh(client)
                if not previous_cold and not done:
                    assert (read.requests, read.changed) == (1, 0), "nothing changed: one 304"
                previous_cold = read.cold
                _assert_same(feed, _full(client, world.repo), kept, f"seed {seed} step {step}")


def test_a_feed_saved_and_resumed_misses_no_change_a_full_read_sees(tmp_path: Path) -> None:
    """Restarts at random steps: the feed is exported, changes happen while no process
    reads, and a new feed resumes the saved state; it then sees what a full read sees,
    without reading every issue again."""
    for seed in range(3):
        rng = Random(100 + seed)
        with running_world(tmp_path / f"sim{seed}") as world:
            changes = _Changes(world, rng)
            for _ in range(6):
                changes.one()
            client = GitHubClient(world.url, world.bot.token)

            def new_feed() -> IssueFeed:
                feed = IssueFeed(world.repo, required_labels=frozenset({"agent"}))
                feed.watch(WATCHED)
                return feed

            feed = new_feed()
            kept: set[int] = set()
            restarts = 0
            for step in range(30):
                for _ in range(rng.randint(0, 3)):
                    changes.one()
                if rng.random() < 0.3 and changes.issues:
                    kept = set(rng.sample(changes.issues, min(3, len(changes.issues))))
                    feed.keep(client, kept)
                if feed.warm and rng.random() < 0.3:
                    saved = feed.export()
                    assert saved is not None
                    blob = encode(saved)
                    for _ in range(rng.randint(0, 3)):
                        changes.one()  # while no process polls
                    if rng.random() < 0.5:
                        time.sleep(1.1)  # changes in a later second than the save
                        changes.one()
                    feed = new_feed()
                    assert feed.restore(decode(blob))
                    restarts += 1
                    read = feed.refresh(client)
                    assert not read.cold, "a resumed feed reads the updates since, not all"
                else:
                    feed.refresh(client)
                feed.keep(client, kept)
                _assert_same(feed, _full(client, world.repo), kept, f"seed {seed} step {step}")
            assert restarts > 0


def test_a_saved_feed_is_refused_by_another_repository_or_label_set(tmp_path: Path) -> None:
    with running_world(tmp_path / "sim") as world:
        world.control.create_issue(world.repo, "One", as_user=world.human.login, labels=["agent"])
        client = GitHubClient(world.url, world.bot.token)
        feed = IssueFeed(world.repo, required_labels=frozenset({"agent"}))
        feed.refresh(client)
        saved = feed.export()
        assert saved is not None
        other_labels = IssueFeed(world.repo, required_labels=frozenset({"agent", "ready"}))
        assert other_labels.restore(saved) is False and not other_labels.warm
        other_repo = IssueFeed("acme/other", required_labels=frozenset({"agent"}))
        assert other_repo.restore(saved) is False
        # A warm feed keeps what it read.
        assert feed.restore(saved) is False


def test_a_damaged_saved_feed_is_a_located_error() -> None:
    feed = IssueFeed("acme/widgets", required_labels=frozenset())
    base = {"repo": "acme/widgets", "required_labels": [], "watched": [], "pinned": []}
    cases = {
        "newest: not a timestamp": {**base, "newest": "yesterday", "items": []},
        "items[1]: not an item of seven fields": {
            **base,
            "newest": "2026-01-01T00:00:00Z",
            "items": [[1, False, True, "t", [], "2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z"], 7],
        },
        "items[0]: number: not a positive integer": {
            **base,
            "newest": "2026-01-01T00:00:00Z",
            "items": [[True, False, True, "t", [], "2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z"]],
        },
        "items[0]: updated_at: not a timestamp": {
            **base,
            "newest": "2026-01-01T00:00:00Z",
            "items": [[3, False, True, "t", [], "2026-01-01T00:00:00Z", 5]],
        },
    }
    for message, state in cases.items():
        try:
            feed.restore(state)
        except ValueError as error:
            assert message in str(error), (message, error)
        else:
            raise AssertionError(f"accepted: {message}")
        assert not feed.warm
    for blob, message in [
        (b"not zlib", "not compressed data"),
        (zlib.compress(b"[1, 2]"), "not a JSON object"),
        (zlib.compress(b"{nope"), "not JSON"),
    ]:
        try:
            decode(blob)
        except ValueError as error:
            assert message in str(error)
        else:
            raise AssertionError(f"decoded: {blob!r}")


def test_a_quiet_repository_costs_one_free_request_per_page_of_recent_updates(
    tmp_path: Path,
) -> None:
    with running_world(tmp_path / "sim") as world:
        control, human = world.control, world.human.login
        for i in range(250):
            control.create_issue(world.repo, f"Issue {i}", as_user=human, labels=["agent"])
        client = GitHubClient(world.url, world.bot.token)
        feed = IssueFeed(world.repo, required_labels=frozenset({"agent"}))
        cold = feed.refresh(client)
        assert cold.cold and cold.requests == 3 and len(feed.candidates()) == 250
        # The first incremental read has nothing to be conditional on: it reads the window
        # of recent updates (all 250 here, created a moment ago: three pages).
        assert feed.refresh(client).changed == 250
        before = client.accounting.total_units()
        for _ in range(5):
            assert feed.refresh(client) == FeedRead(cold=False, requests=3, changed=0)
        assert client.accounting.total_units() == before
        # One change: the pages it changed are read again, then all is quiet again.
        control.remove_label(world.repo, 7, "agent", as_user=human)
        changed = feed.refresh(client)
        assert changed.changed >= 1
        assert 7 not in {item.number for item in feed.candidates()}
        assert feed.refresh(client).changed == 0
        assert client.accounting.total_units() - before <= 3


def test_a_quiet_restart_costs_no_unit(tmp_path: Path) -> None:
    """The saved feed holds its window's pages and ETags: a restart in a quiet repository
    asks the same conditional pages, and every answer is a free 304."""
    with running_world(tmp_path / "sim") as world:
        control, human = world.control, world.human.login
        for i in range(150):
            control.create_issue(world.repo, f"Issue {i}", as_user=human, labels=["agent"])
        client = GitHubClient(world.url, world.bot.token)
        feed = IssueFeed(world.repo, required_labels=frozenset({"agent"}))
        feed.refresh(client)
        feed.refresh(client)
        saved = feed.export()
        assert saved is not None
        resumed = IssueFeed(world.repo, required_labels=frozenset({"agent"}))
        assert resumed.restore(decode(encode(saved)))
        before = client.accounting.total_units()
        assert resumed.refresh(client) == FeedRead(cold=False, requests=2, changed=0)
        assert client.accounting.total_units() == before
        assert len(resumed.candidates()) == 150


def test_kept_issues_are_read_once_and_followed(tmp_path: Path) -> None:
    with running_world(tmp_path / "sim") as world:
        control, human = world.control, world.human.login
        tracked = control.create_issue(world.repo, "Was a candidate", as_user=human)
        client = GitHubClient(world.url, world.bot.token)
        feed = IssueFeed(world.repo, required_labels=frozenset({"agent"}))
        control.create_issue(world.repo, "Dates the feed", as_user=human, labels=["agent"])
        feed.refresh(client)
        assert feed.keep(client, {tracked, 999})[tracked].is_open
        control.update_issue(world.repo, tracked, as_user=human, state="closed")
        feed.refresh(client)
        assert feed.known({tracked})[tracked].is_open is False
        # Dropped once no longer kept and not otherwise wanted.
        feed.keep(client, set())
        assert feed.known({tracked}) == {}


def test_only_changes_after_the_feed_started_count_as_moves(tmp_path: Path) -> None:
    """A pull request the feed first meets in its window moved only if it changed after the
    start: a restart must not take every recent item for a signal."""
    with running_world(tmp_path / "sim") as world:
        control, human = world.control, world.human.login
        control.push(world.repo, "old", {"old.txt": "x\n"}, as_user=human)
        old_pull = control.create_pull(world.repo, "Before the start", "old", as_user=human)
        # The feed dates its start from the newest candidate it reads first: made after the
        # pull request, whatever second each falls in.
        control.create_issue(world.repo, "Candidate", as_user=human, labels=["agent"])
        client = GitHubClient(world.url, world.bot.token)
        feed = IssueFeed(world.repo, required_labels=frozenset({"agent"}))
        feed.refresh(client)
        feed.refresh(client)
        assert old_pull not in feed.changes()
        time.sleep(1.1)  # GitHub's timestamps have one-second resolution
        control.add_labels(world.repo, old_pull, ["other"], as_user=human)
        feed.refresh(client)
        assert old_pull in feed.changes()
        assert feed.changes() == set()


def test_a_repository_with_nothing_to_keep_still_goes_warm(tmp_path: Path) -> None:
    """Every issue closed: the first read finds nothing to keep, and the repository's latest
    update dates the next reads, which are then one 304 each, not a full read per tick."""
    with running_world(tmp_path / "sim") as world:
        control, human = world.control, world.human.login
        number = control.create_issue(world.repo, "Done", as_user=human, labels=["agent"])
        control.update_issue(world.repo, number, as_user=human, state="closed")
        client = GitHubClient(world.url, world.bot.token)
        feed = IssueFeed(world.repo, required_labels=frozenset({"agent"}))
        feed.watch(WATCHED)
        assert feed.refresh(client).cold
        feed.refresh(client)
        for _ in range(3):
            assert feed.refresh(client) == FeedRead(cold=False, requests=1, changed=0)
        control.update_issue(world.repo, number, as_user=human, state="open")
        feed.refresh(client)
        assert [item.number for item in feed.candidates()] == [number]


def test_a_feed_without_candidates_keeps_only_the_carriers_of_watched_labels(
    tmp_path: Path,
) -> None:
    """When the issues come from another tracker (Linear), the repository's feed holds the
    carriers of the watched labels alone: the stop labels on pull requests and issues."""
    with running_world(tmp_path / "sim") as world:
        control, human = world.control, world.human.login
        control.create_issue(world.repo, "A GitHub issue", as_user=human, labels=["agent"])
        stop = control.create_issue(world.repo, "Stop", as_user=human, labels=[STOP_ALL])
        client = GitHubClient(world.url, world.bot.token)
        feed = IssueFeed(world.repo, required_labels=frozenset(), candidates=False)
        feed.watch({STOP_ALL})
        feed.refresh(client)
        assert feed.candidates() == []
        assert feed.carriers(STOP_ALL) == {stop}
        assert set(feed.known(range(1, 10))) == {stop}
