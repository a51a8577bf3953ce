"""The GitHub Issues tracker (on the emulator) and the in-memory tracker agree."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from orchestrator.domain.snapshot import IssueRef, TrackedIssue
from orchestrator.github.client import GitHubClient
from orchestrator.github.gateway import GitHubGateway
from orchestrator.tracker.base import TrackerSettings
from orchestrator.tracker.github_issues import GitHubIssuesTracker
from orchestrator.tracker.memory import MemoryTracker
from orchestrator_sim.testing import running_world

STATES = {"Todo": "todo", "In Progress": "in-progress", "In Review": "in-review", "Done": "done"}


def _settings(repo: str) -> TrackerSettings:
    return TrackerSettings(
        repo=repo,
        required_labels=frozenset({"agent"}),
        state_labels=STATES,
        active_states=frozenset({"Todo", "In Progress", "In Review"}),
    )


def test_state_of_labels() -> None:
    settings = _settings("a/b")
    assert settings.state_of({"agent"}) == "Todo"
    assert settings.state_of({"agent", "in-review"}) == "In Review"


def test_github_tracker_candidates_states_and_refresh(tmp_path: Path) -> None:
    with running_world(tmp_path / "sim") as world:
        control, human = world.control, world.human.login
        wanted = control.create_issue(world.repo, "Add x", as_user=human, labels=["agent"])
        control.create_issue(world.repo, "Unlabelled", as_user=human)
        closed = control.create_issue(world.repo, "Closed", as_user=human, labels=["agent"])
        control.update_issue(world.repo, closed, as_user=human, state="closed")
        finished = control.create_issue(
            world.repo, "Finished", as_user=human, labels=["agent", "done"]
        )
        control.push(world.repo, "feature", {"f.txt": "1\n"}, as_user=human)
        control.create_pull(world.repo, "A PR with the label", "feature", as_user=human)

        gateway = GitHubGateway(GitHubClient(world.url, world.bot.token))
        tracker = GitHubIssuesTracker(lambda: gateway, _settings(world.repo))
        candidates = tracker.fetch_candidates()
        assert [(c.ref.number, c.tracker_state) for c in candidates] == [(wanted, "Todo")]
        assert candidates[0].labels == {"agent"} and candidates[0].is_open

        tracker.set_tracker_state(IssueRef(world.repo, wanted), "In Progress")
        tracker.set_tracker_state(IssueRef(world.repo, wanted), "In Review")
        refreshed = tracker.refresh_by_ids(
            [IssueRef(world.repo, n) for n in (wanted, closed, finished, 999)]
        )
        assert refreshed[IssueRef(world.repo, wanted)].labels == {"agent", "in-review"}
        assert refreshed[IssueRef(world.repo, wanted)].tracker_state == "In Review"
        assert refreshed[IssueRef(world.repo, closed)].is_open is False
        assert refreshed[IssueRef(world.repo, closed)].tracker_state == "Done"
        assert IssueRef(world.repo, 999) not in refreshed


def test_memory_tracker_behaves_alike() -> None:
    settings = _settings("acme/app")
    now = datetime(2026, 11, 1, tzinfo=UTC)
    tracker = MemoryTracker(
        settings,
        [
            TrackedIssue(IssueRef("acme/app", 2), "b", True, frozenset({"agent"}), now),
            TrackedIssue(IssueRef("acme/app", 1), "a", True, frozenset({"agent", "done"}), now),
            TrackedIssue(IssueRef("acme/app", 3), "c", True, frozenset(), now),
        ],
    )
    assert [c.ref.number for c in tracker.fetch_candidates()] == [2]
    tracker.set_tracker_state(IssueRef("acme/app", 2), "In Progress")
    issue = tracker.refresh_by_ids([IssueRef("acme/app", 2)])[IssueRef("acme/app", 2)]
    assert issue.labels == {"agent", "in-progress"} and issue.tracker_state == "In Progress"
    assert tracker.state_changes == [(IssueRef("acme/app", 2), "In Progress")]


def test_a_poll_reads_the_issue_feed_once(tmp_path: Path) -> None:
    """fetch_candidates brings the feed up to date; the refresh_by_ids that completes the
    same poll reads it as it is, unless the tracker wrote in between."""
    with running_world(tmp_path / "sim") as world:
        control, human = world.control, world.human.login
        wanted = control.create_issue(world.repo, "Add x", as_user=human, labels=["agent"])
        other = control.create_issue(world.repo, "Tracked", as_user=human)
        client = GitHubClient(world.url, world.bot.token)
        gateway = GitHubGateway(client)
        tracker = GitHubIssuesTracker(lambda: gateway, _settings(world.repo))
        lists = "GET /repos/{owner}/{repo}/issues"
        for _ in range(3):
            before = client.accounting.requests[lists]
            tracker.fetch_candidates()
            tracker.refresh_by_ids([IssueRef(world.repo, other)])
            assert client.accounting.requests[lists] - before == 1
        tracker.fetch_candidates()
        tracker.set_tracker_state(IssueRef(world.repo, wanted), "In Progress")
        before = client.accounting.requests[lists]
        refreshed = tracker.refresh_by_ids([IssueRef(world.repo, wanted)])
        assert client.accounting.requests[lists] - before == 1
        assert refreshed[IssueRef(world.repo, wanted)].tracker_state == "In Progress"
