"""Every adapter of the issue tracker port honours the whole port, run on the same script.

GitHub Issues runs on the GitHub emulator, Linear on the Linear emulator (both over
HTTP), and the in-memory adapter in the test process. Where the port leaves an
adapter a choice (confirming a write after a crash, a stop label beyond the GitHub
repository's own issues, changes beyond the repository's feed), the harness says
which one the adapter makes, and the script checks that one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from orchestrator.domain.actions import SideEffect
from orchestrator.domain.policy import FlowPolicy
from orchestrator.domain.side_effects import PostComment, UpsertWorkpad, effect_marker
from orchestrator.domain.snapshot import Actor, IssueRef, TrackedIssue
from orchestrator.domain.workpad import WORKPAD_COMMENT_MARKER
from orchestrator.github.client import GitHubClient, MemoryEtagCache
from orchestrator.github.gateway import GitHubGateway
from orchestrator.tracker.base import DetailsAsk, IssueTracker, TrackerSettings
from orchestrator.tracker.github_issues import GitHubIssuesTracker
from orchestrator.tracker.linear_bridge import LinearIssues
from orchestrator.tracker.memory import MemoryTracker
from orchestrator.wiring.access import linear_tracker
from orchestrator.workflow.loader import load_workflow
from orchestrator_sim.testing import running_world
from tests.sim.linear_world import BOT_KEY, running_linear

REPO = "acme/widgets"
STATES = {"Todo": "todo", "In Progress": "in-progress", "Done": "done"}
STOP_ALL = "orchestrator:stop-all"


@dataclass
class Harness:
    """One adapter on its tracker, with what a test does there as a person."""

    tracker: IssueTracker
    ref: IssueRef
    title: str
    # A person's comment on the issue, and the stop label put on another open issue.
    person_comments: Callable[[str], None]
    stop_repo: Callable[[], None]
    # The choices the port leaves the adapter.
    confirms: bool
    stops_beyond_repo: bool
    reports_changes: bool


def _github(tmp_path: Path) -> Iterator[Harness]:
    with running_world(tmp_path / "sim", repo=REPO) as world:
        control, human = world.control, world.human.login
        number = control.create_issue(REPO, "Fix the login page", as_user=human, labels=["agent"])
        other = control.create_issue(REPO, "Something else", as_user=human)
        gateway = GitHubGateway(GitHubClient(world.url, world.bot.token, cache=MemoryEtagCache()))
        settings = TrackerSettings(
            repo=REPO,
            required_labels=frozenset({"agent"}),
            state_labels=STATES,
            active_states=frozenset({"Todo", "In Progress"}),
        )

        def person_comments(body: str) -> None:
            control.comment(REPO, number, body, as_user=human)

        def stop_repo() -> None:
            control.add_labels(REPO, other, [STOP_ALL], as_user=human)

        yield Harness(
            tracker=GitHubIssuesTracker(lambda: gateway, settings),
            ref=IssueRef(REPO, number),
            title="Fix the login page",
            person_comments=person_comments,
            stop_repo=stop_repo,
            confirms=True,
            stops_beyond_repo=False,
            reports_changes=False,
        )


def _linear(tmp_path: Path) -> Iterator[Harness]:
    with running_linear(tmp_path / "sim") as world:
        world.control.create_label("orchestrator:stop")
        world.control.create_label(STOP_ALL)
        path = tmp_path / "WORKFLOW.md"
        path.write_text(
            "---\ntracker:\n  kind: linear\n"
            f"  repo: {REPO}\n"
            f"  endpoint: {world.control.graphql_url}\n"
            "  api_key: $LINEAR_API_KEY\n  team_key: ENG\n  required_labels: [agent]\n"
            "---\nWork on {{ issue.title }}.\n",
            encoding="utf-8",
        )
        policy = load_workflow(
            path, env={"LINEAR_API_KEY": BOT_KEY, "GITHUB_TOKEN": "ghs_unused"}
        ).policy
        bridge = LinearIssues(linear_tracker(policy), REPO)

        def person_comments(body: str) -> None:
            world.clock.advance(5)
            world.control.comment("ENG-1", "alice", body)

        def stop_repo() -> None:
            world.clock.advance(5)
            world.control.add_labels("ENG-2", STOP_ALL)

        yield Harness(
            tracker=bridge,
            ref=IssueRef(REPO, 1),
            title="Fix the login page",
            person_comments=person_comments,
            stop_repo=stop_repo,
            confirms=False,
            stops_beyond_repo=True,
            reports_changes=True,
        )


def _memory(tmp_path: Path) -> Iterator[Harness]:
    now = datetime.now(UTC) - timedelta(hours=1)
    ref, other = IssueRef(REPO, 1), IssueRef(REPO, 2)
    tracker = MemoryTracker(
        TrackerSettings(
            repo=REPO,
            required_labels=frozenset({"agent"}),
            state_labels=STATES,
            active_states=frozenset({"Todo", "In Progress"}),
        ),
        [
            TrackedIssue(ref, "Fix the login page", True, frozenset({"agent"}), now),
            TrackedIssue(other, "Something else", True, frozenset(), now),
        ],
        repo_stop_label=STOP_ALL,
    )
    alice = Actor("alice", can_write=True)

    def person_comments(body: str) -> None:
        tracker.comment(ref, alice, body, datetime.now(UTC))

    def stop_repo() -> None:
        tracker.put(TrackedIssue(other, "Something else", True, frozenset({STOP_ALL}), now))

    yield Harness(
        tracker=tracker,
        ref=ref,
        title="Fix the login page",
        person_comments=person_comments,
        stop_repo=stop_repo,
        confirms=True,
        stops_beyond_repo=True,
        reports_changes=True,
    )


@pytest.fixture(params=["github", "linear", "memory"])
def harness(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Harness]:
    make = {"github": _github, "linear": _linear, "memory": _memory}[request.param]
    yield from make(tmp_path)


def _workpad(text: str) -> str:
    return f"{WORKPAD_COMMENT_MARKER}\n## Orchestrator Workpad\n\n{text}\n"


def test_the_poll_finds_the_candidate_and_its_state_moves(harness: Harness) -> None:
    tracker, ref = harness.tracker, harness.ref
    candidates = {issue.ref: issue for issue in tracker.fetch_candidates()}
    assert candidates[ref].tracker_state == "Todo"
    assert candidates[ref].title == harness.title
    tracker.changes()  # what the first poll saw is not news
    tracker.set_tracker_state(ref, "In Progress")
    assert tracker.refresh_by_ids([ref])[ref].tracker_state == "In Progress"
    assert "agent" in tracker.labels_now(ref)
    assert tracker.facts(ref).title == harness.title
    assert tracker.facts(ref).identifier


def test_the_workpad_and_the_comments_are_written_once(harness: Harness) -> None:
    tracker, ref = harness.tracker, harness.ref
    tracker.fetch_candidates()
    assert tracker.own_workpads(ref) == []
    assert tracker.upsert_workpad(ref, WORKPAD_COMMENT_MARKER, _workpad("phase: one")).ok
    assert tracker.upsert_workpad(ref, WORKPAD_COMMENT_MARKER, _workpad("phase: two")).ok
    [workpad] = tracker.own_workpads(ref)
    assert "phase: two" in workpad.body

    key = f"{ref}:post_comment:question"
    marker = effect_marker(key)
    for _ in range(2):
        assert tracker.upsert_comment(ref, marker, f"Which one?\n\n{marker}").ok
    comment = SideEffect(ref, PostComment(body="Which one?"), key)
    workpad_effect = SideEffect(
        ref,
        UpsertWorkpad(
            marker=WORKPAD_COMMENT_MARKER, heading="## Orchestrator Workpad", body=workpad.body
        ),
        f"{ref}:upsert_workpad:x",
    )
    for effect in (comment, workpad_effect):
        confirmed = tracker.confirm(effect)
        if harness.confirms:
            assert confirmed is not None and confirmed.ok
        else:
            assert confirmed is None
    # The daemon's own comments are not people's words.
    assert tracker.thread(ref, datetime(2000, 1, 1, tzinfo=UTC)) == ()


def test_peoples_comments_reach_the_thread_and_the_details(harness: Harness) -> None:
    tracker, ref = harness.tracker, harness.ref
    before = datetime.now(UTC) - timedelta(days=1)
    issue = {i.ref: i for i in tracker.fetch_candidates()}[ref]
    tracker.changes()
    harness.person_comments("Use the second option.")
    assert [c.body for c in tracker.thread(ref, before)] == ["Use the second option."]
    tracker.fetch_candidates()
    detailed = tracker.with_details(issue, DetailsAsk(flow=FlowPolicy(), replies_since=before))
    assert len(detailed.comments) == 1
    assert not detailed.comments[0].author.is_bot
    plain = tracker.with_details(issue, DetailsAsk(flow=FlowPolicy()))
    assert plain.comments == ()
    if harness.reports_changes:
        assert ref.number in tracker.changes()
    else:
        assert tracker.changes() == set()


def test_the_repository_stop_label_beyond_the_repositorys_issues(harness: Harness) -> None:
    tracker = harness.tracker
    tracker.fetch_candidates()
    assert tracker.repo_stopped() is False
    harness.stop_repo()
    assert tracker.repo_stopped(fresh=True) is harness.stops_beyond_repo


def test_closing_shows_the_completion_state(harness: Harness) -> None:
    tracker, ref = harness.tracker, harness.ref
    tracker.fetch_candidates()
    assert tracker.close(ref, reason="completed", state="Done").ok
    assert tracker.refresh_by_ids([ref])[ref].tracker_state == "Done"
    tracker.forget_except(set())
