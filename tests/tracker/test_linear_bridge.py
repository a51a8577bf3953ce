"""Linear issues keyed on the GitHub repository, and the issue-side writes that go to Linear.

The workspace is `tests.sim.linear_world` (team ENG, ENG-1 and ENG-2 labelled
``agent`` in Todo), served by the emulator over HTTP.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest

from orchestrator.daemon.recovery import IntentChecker
from orchestrator.domain.actions import SideEffect, SideEffectKind, idempotency_key
from orchestrator.domain.phases import Phase
from orchestrator.domain.side_effects import PAYLOAD_TYPES
from orchestrator.domain.snapshot import IssueRef, StoredRecord
from orchestrator.domain.workpad import WORKPAD_COMMENT_MARKER
from orchestrator.effects.issue_writes import WriteTarget
from orchestrator.effects.linear_writes import LinearIssueWrites, linear_link, with_linear_link
from orchestrator.effects.writes import GitHubWrites
from orchestrator.github.accounting import Accounting
from orchestrator.github.client import MemoryEtagCache
from orchestrator.github.credentials import StaticToken
from orchestrator.tracker.base import TrackerSettings
from orchestrator.tracker.linear import LinearTracker
from orchestrator.tracker.linear_bridge import LinearIssues
from orchestrator.wiring.access import GitHubAccess, linear_tracker
from orchestrator.wiring.policy_view import PolicyView
from orchestrator.workflow import flow_policy
from orchestrator.workflow.loader import load_workflow
from tests.sim.linear_world import BOT_KEY, LinearWorld, running_linear

REPO = "acme/widgets"
# ENG has Linear's default states: In Review stands for the approval state here.
IN_REVIEW_APPROVES = "merge:\n  approval_states: [In Review]\n"
ISSUE_1 = IssueRef(REPO, 1)
ISSUE_2 = IssueRef(REPO, 2)


@pytest.fixture
def world(tmp_path: Path) -> Iterator[LinearWorld]:
    with running_linear(tmp_path / "sim") as found:
        found.control.create_label("orchestrator:stop")
        found.control.create_label("orchestrator:stop-all")
        yield found


def _view(world: LinearWorld, tmp_path: Path, merge: str = "") -> PolicyView:
    path = tmp_path / "WORKFLOW.md"
    path.write_text(
        "---\n"
        "tracker:\n"
        "  kind: linear\n"
        f"  repo: {REPO}\n"
        f"  endpoint: {world.control.graphql_url}\n"
        "  team_key: ENG\n"
        "  required_labels: [agent]\n"
        "  active_states: [Todo, In Progress, In Review, Merging]\n"
        "  state_labels:\n"
        "    In Progress: in-progress\n"
        "    Merging: merging\n"
        f"{merge}"
        "---\n"
        "Work on {{ issue.title }}.\n",
        encoding="utf-8",
    )
    workflow = load_workflow(path, env={"LINEAR_API_KEY": BOT_KEY, "GITHUB_TOKEN": "ghs_unused"})
    return PolicyView(workflow=workflow, flow=flow_policy(workflow.policy), repo=REPO)


def _bridge(view: PolicyView) -> LinearIssues:
    return LinearIssues(linear_tracker(view.policy), REPO)


def _github(bridge: LinearIssues) -> GitHubAccess:
    # Nothing listens there: the issue-side effects tested here never reach GitHub.
    return GitHubAccess(
        endpoint="http://127.0.0.1:9",
        credentials=StaticToken("ghs_unused"),
        credential_key=("token", "ghs_unused"),
        cache=MemoryEtagCache(),
        accounting=Accounting(),
        tracker=TrackerSettings(repo=REPO),
        issues=bridge,
    )


def _writes(view: PolicyView, bridge: LinearIssues) -> GitHubWrites:
    github = _github(bridge)

    def no_agents() -> object:
        raise AssertionError("no agent is needed for issue-side effects")

    issue = LinearIssueWrites(github, bridge)
    return GitHubWrites(github, issue, no_agents, no_agents)  # type: ignore[arg-type]


def _workpad(text: str) -> str:
    return f"{WORKPAD_COMMENT_MARKER}\n## Orchestrator Workpad\n\n{text}\n"


# What the planner always fills in, where a test does not care.
_DEFAULTS: dict[SideEffectKind, dict[str, object]] = {
    SideEffectKind.UPSERT_WORKPAD: {"marker": WORKPAD_COMMENT_MARKER, "heading": "## Workpad"},
    SideEffectKind.CLOSE_ISSUE: {"pr_number": 10},
}


def _effect(kind: SideEffectKind, key: str, **payload: object) -> SideEffect:
    values = {**_DEFAULTS.get(kind, {}), **payload}
    return SideEffect(ISSUE_1, PAYLOAD_TYPES[kind](**values), key)  # type: ignore[arg-type]


def _target() -> WriteTarget:
    return WriteTarget(REPO, 1, "Fix the login page", None)


def test_candidates_are_keyed_on_the_github_repository_with_the_identifier_alongside(
    world: LinearWorld, tmp_path: Path
) -> None:
    bridge = _bridge(_view(world, tmp_path))
    candidates = bridge.fetch_candidates()
    assert [(i.ref, i.tracker_state) for i in candidates] == [(ISSUE_1, "Todo"), (ISSUE_2, "Todo")]
    assert bridge.identifier(ISSUE_1) == "ENG-1"
    assert bridge.url(ISSUE_1) == world.control.issue("ENG-1")["url"]
    assert bridge.changes() == set()
    world.clock.advance(30)
    world.control.add_labels("ENG-2", "orchestrator:stop")
    world.clock.advance(30)
    candidates = bridge.fetch_candidates()
    assert "orchestrator:stop" in {label for i in candidates for label in i.labels}
    assert bridge.changes() == {2}
    assert bridge.changes() == set()
    # As in a tick: the poll, then the tracked issues that left the candidates.
    world.control.set_state("ENG-1", "Done")
    world.clock.advance(30)
    assert [i.ref for i in bridge.fetch_candidates()] == [ISSUE_2]
    refreshed = bridge.refresh_by_ids([ISSUE_1])
    assert refreshed[ISSUE_1].ref == ISSUE_1
    assert not refreshed[ISSUE_1].is_open
    with pytest.raises(ValueError, match="is not an issue of acme/widgets"):
        bridge.linear_ref(IssueRef("acme/other", 1))


def test_the_stop_labels_are_read_from_linear_right_now(world: LinearWorld, tmp_path: Path) -> None:
    bridge = _bridge(_view(world, tmp_path))
    bridge.fetch_candidates()
    assert bridge.labels_now(ISSUE_1) == {"agent"}
    world.control.add_labels("ENG-1", "orchestrator:stop")
    assert "orchestrator:stop" in bridge.labels_now(ISSUE_1)
    assert not bridge.repo_stopped()
    world.control.add_labels("ENG-2", "orchestrator:stop-all")
    world.clock.advance(30)
    bridge.fetch_candidates()
    assert bridge.repo_stopped()


def test_issue_side_effects_land_on_linear_once(world: LinearWorld, tmp_path: Path) -> None:
    view = _view(world, tmp_path)
    bridge = _bridge(view)
    bridge.fetch_candidates()
    writes = _writes(view, bridge)
    for text in ("first", "second", "second"):
        result = writes.perform(
            _effect(SideEffectKind.UPSERT_WORKPAD, f"workpad:{text}", body=_workpad(text)),
            _target(),
            view,
        )
        assert result.ok, result.error
    for _ in range(2):
        result = writes.perform(
            _effect(SideEffectKind.POST_COMMENT, "question:1", body="Which page?"),
            _target(),
            view,
        )
        assert result.ok, result.error
    comments = world.control.issue("ENG-1")["comments"]
    bodies = sorted(comment["body"] for comment in comments)
    assert len(bodies) == 2
    assert bodies[0] == _workpad("second")
    assert bodies[1].startswith("Which page?\n\n<!-- orchestrator-effect: question:1 -->")

    moved = writes.perform(
        _effect(SideEffectKind.SET_LABELS, "in-progress", add=("in-progress",), remove=()),
        _target(),
        view,
    )
    assert moved.ok and world.control.issue("ENG-1")["state"] == "In Progress"
    ignored = writes.perform(
        _effect(SideEffectKind.SET_LABELS, "other", add=("other",), remove=()), _target(), view
    )
    assert ignored.ok and world.control.issue("ENG-1")["labels"] == ["agent"]
    # A label taken off the issue (a stale approval) is left to people on Linear.
    withdrawn = writes.perform(
        _effect(SideEffectKind.SET_LABELS, "stale", remove=("agent",), on_number=1),
        _target(),
        view,
    )
    assert withdrawn.ok and world.control.issue("ENG-1")["labels"] == ["agent"]
    closed = writes.perform(
        _effect(SideEffectKind.CLOSE_ISSUE, "merged:abc", reason="completed"), _target(), view
    )
    assert closed.ok and world.control.issue("ENG-1")["state"] == "Done"


def test_a_persons_approval_state_is_kept_until_a_stale_approval_is_withdrawn(
    world: LinearWorld, tmp_path: Path
) -> None:
    view = _view(world, tmp_path, merge=IN_REVIEW_APPROVES + "  approval_label: lgtm\n")
    world.control.create_label("lgtm")
    world.control.set_state("ENG-1", "In Review", as_user="alice")
    world.control.add_labels("ENG-1", "lgtm", as_user="alice")
    bridge = _bridge(view)
    bridge.fetch_candidates()
    writes = _writes(view, bridge)
    implementing = WriteTarget(
        REPO, 1, "Fix the login page", StoredRecord(Phase.IMPLEMENTING, datetime.now(UTC))
    )
    # The phase's state does not replace a person's approval state.
    kept = writes.perform(
        _effect(SideEffectKind.SET_LABELS, "in-progress", add=("in-progress",), remove=()),
        implementing,
        view,
    )
    assert kept.ok and kept.data["kept"] == "In Review"
    assert world.control.issue("ENG-1")["state"] == "In Review"
    # A stale approval: the label comes off, the issue goes back to its phase's state.
    withdrawn = writes.perform(
        _effect(
            SideEffectKind.SET_LABELS, "stale", remove=("state:in-review", "lgtm"), on_number=1
        ),
        implementing,
        view,
    )
    assert withdrawn.ok and withdrawn.data["moved_to"] == "In Progress"
    found = world.control.issue("ENG-1")
    assert (found["state"], found["labels"]) == ("In Progress", ["agent"])
    by_bot = [(e["to_state"], e["removed_labels"]) for e in found["history"] if e["actor"] == "bot"]
    assert sorted(by_bot, key=str) == [("In Progress", []), (None, ["lgtm"])]
    # The question names the state, not the label the gates saw it as.
    asked = writes.perform(
        _effect(
            SideEffectKind.POST_COMMENT,
            idempotency_key(ISSUE_1, SideEffectKind.POST_COMMENT, "approval-withdrawn:abc"),
            body="The approval (`state:in-review`, `lgtm`) was given before ...",
        ),
        implementing,
        view,
    )
    assert asked.ok
    (comment,) = world.control.issue("ENG-1")["comments"]
    assert comment["body"].startswith("The approval (`In Review`, `lgtm`) was given before")


def test_a_stale_approval_state_the_phase_does_not_show_stays_put(
    world: LinearWorld, tmp_path: Path
) -> None:
    view = _view(world, tmp_path, merge=IN_REVIEW_APPROVES)
    world.control.set_state("ENG-1", "In Review", as_user="alice")
    bridge = _bridge(view)
    bridge.fetch_candidates()
    writes = _writes(view, bridge)
    # Blocked has no state in this policy, and the phases waiting for a person show the
    # approval state itself, which the daemon never moves an issue into.
    for phase in (Phase.BLOCKED, Phase.WAITING_FOR_HUMAN):
        target = WriteTarget(REPO, 1, "Fix the login page", StoredRecord(phase, datetime.now(UTC)))
        result = writes.perform(
            _effect(SideEffectKind.SET_LABELS, "stale", remove=("state:in-review",), on_number=1),
            target,
            view,
        )
        assert result.ok and result.data["kept"] == "In Review", phase
    assert world.control.issue("ENG-1")["state"] == "In Review"


def test_a_linear_refusal_is_a_failed_effect_not_a_crash(
    world: LinearWorld, tmp_path: Path
) -> None:
    view = _view(world, tmp_path)
    bridge = _bridge(view)
    bridge.fetch_candidates()
    writes = _writes(view, bridge)
    result = writes.perform(
        _effect(SideEffectKind.UPSERT_WORKPAD, "workpad:bad", body="no marker"), _target(), view
    )
    assert not result.ok and "workpad marker" in (result.error or "")


def test_the_pull_request_body_links_the_linear_issue_once() -> None:
    url = "https://linear.app/acme/issue/ENG-1/fix"
    body = with_linear_link("Work on #1: Fix the login page", 1, "ENG-1", url)
    assert body == f"Work on ENG-1: Fix the login page\n\n{linear_link('ENG-1', url)}"
    assert with_linear_link(body, 1, "ENG-1", url) == body


def test_restart_recovery_leaves_linear_side_intents_to_be_planned_again(
    world: LinearWorld, tmp_path: Path
) -> None:
    view = _view(world, tmp_path)
    bridge = _bridge(view)
    checker = IntentChecker(_github(bridge))
    for effect in (
        _effect(SideEffectKind.UPSERT_WORKPAD, "w", body=_workpad("x"), marker="m"),
        _effect(SideEffectKind.POST_COMMENT, "c", body="Which page?"),
        _effect(SideEffectKind.CLOSE_ISSUE, "merged:abc", reason="completed"),
        _effect(SideEffectKind.SET_LABELS, "in-progress", add=("in-progress",), remove=()),
    ):
        # Unconfirmed, without asking GitHub about an issue it does not have.
        assert checker.confirm(effect, None) is None


def test_a_project_issue_not_read_since_the_start_is_found_by_its_number(
    world: LinearWorld, tmp_path: Path
) -> None:
    view = _view(world, tmp_path)
    tracker = linear_tracker(view.policy)
    project = replace(tracker.scope, team_key=None, project_slug="website-1a2b")
    bridge = LinearIssues(
        LinearTracker(tracker.client, tracker.settings, project), REPO, ownership_label="mine"
    )
    # After a restart the store still tracks ENG-1, which has left the active states.
    world.control.set_state("ENG-1", "Backlog")
    world.clock.advance(30)
    assert bridge.fetch_candidates() == []  # ENG-2 is in no project
    refreshed = bridge.refresh_by_ids([ISSUE_1, IssueRef(REPO, 99)])
    assert list(refreshed) == [ISSUE_1]
    assert refreshed[ISSUE_1].tracker_state == "Backlog"
    assert refreshed[ISSUE_1].labels == {"agent", "mine"}
    assert bridge.identifier(ISSUE_1) == "ENG-1"
