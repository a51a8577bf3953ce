"""The Linear tracker against the Linear emulator over HTTP.

The workspace is `tests.sim.linear_world`: team ENG with Linear's default
states, ENG-1 and ENG-2 labelled ``agent`` in Todo, the API key ``lin_api_bot``.
"""

from __future__ import annotations

import io
import random
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
import structlog

from orchestrator.domain.snapshot import IssueRef
from orchestrator.domain.workpad import WORKPAD_COMMENT_MARKER
from orchestrator.logs import clear_context, configure_logging
from orchestrator.tracker.base import TrackerSettings
from orchestrator.tracker.linear import LinearScope, LinearTracker
from orchestrator.tracker.linear_client import (
    LinearClient,
    LinearError,
    LinearRateLimited,
    authorization_header,
)
from orchestrator.wiring.access import linear_tracker
from orchestrator.wiring.policy_view import WiringError
from orchestrator.workflow.loader import load_workflow
from orchestrator.workflow.schema import TrackerKind
from orchestrator_sim.control import ControlClient
from tests.sim.linear_world import ALICE_TOKEN, BOT_KEY, LinearWorld, running_linear

ACTIVE = frozenset({"Todo", "In Progress", "In Review"})
ENG_1 = IssueRef("ENG", 1)
ENG_2 = IssueRef("ENG", 2)


@pytest.fixture
def world(tmp_path: Path) -> Iterator[LinearWorld]:
    with running_linear(tmp_path / "sim") as found:
        found.control.create_label("orchestrator:stop")
        found.control.create_label("orchestrator:stop-all")
        yield found


def _tracker(world: LinearWorld, key: str = BOT_KEY, **scope: str) -> LinearTracker:
    client = LinearClient(world.control.graphql_url, key, clock=world.clock, sleep=lambda _s: None)
    settings = TrackerSettings(
        repo="acme/widgets", required_labels=frozenset({"agent"}), active_states=ACTIVE
    )
    return LinearTracker(client, settings, LinearScope(**(scope or {"team_key": "ENG"})))


def _faults(world: LinearWorld) -> ControlClient:
    return ControlClient(world.server.url)


def _workpad(text: str) -> str:
    return f"{WORKPAD_COMMENT_MARKER}\n## Orchestrator Workpad\n\n{text}\n"


def test_authorization_is_the_bare_key_and_bearer_only_for_oauth_tokens() -> None:
    assert authorization_header("lin_api_abc") == "lin_api_abc"
    assert authorization_header("lin_oauth_abc") == "Bearer lin_oauth_abc"
    assert authorization_header("Bearer lin_oauth_abc") == "Bearer lin_oauth_abc"


def test_an_oauth_token_reads_as_its_user(world: LinearWorld) -> None:
    tracker = _tracker(world, ALICE_TOKEN)
    assert [i.ref for i in tracker.fetch_candidates()] == [ENG_1, ENG_2]


def test_first_poll_reads_the_active_issues_then_a_quiet_poll_is_one_cheap_request(
    world: LinearWorld,
) -> None:
    world.control.create_issue("ENG", "Not labelled", state="Todo")
    world.control.create_issue("ENG", "Parked", state="Backlog", labels=["agent"])
    tracker = _tracker(world)
    candidates = tracker.fetch_candidates()
    assert [(i.ref, i.tracker_state, i.title) for i in candidates] == [
        (ENG_1, "Todo", "Fix the login page"),
        (ENG_2, "Todo", "Upgrade the database"),
    ]
    before = tracker.client.requests
    spent = tracker.client.accounting.total_units()
    world.clock.advance(30)
    assert [i.ref for i in tracker.fetch_candidates()] == [ENG_1, ENG_2]
    assert tracker.client.requests == before + 1
    # Linear charges the page's requested size, whatever it holds: well under 1% of
    # the hourly 3,000,000 points even at one poll a second.
    assert tracker.client.accounting.total_units() - spent < 3_000_000 / 3600 * 2
    budget = tracker.client.accounting.budgets["linear_requests"]
    assert budget.limit == 5000 and budget.remaining is not None


@pytest.mark.parametrize("seed", [7, 11, 23])
def test_incremental_reads_miss_no_edit_made_between_polls(world: LinearWorld, seed: int) -> None:
    control = world.control
    for n in range(8):
        control.create_issue("ENG", f"Issue {n}", labels=["agent"] if n % 2 else [])
    tracker = _tracker(world)
    tracker.fetch_candidates()
    world.clock.advance(0.001)
    rng = random.Random(seed)
    states = ["Backlog", "Todo", "In Progress", "In Review", "Done", "Canceled"]
    for _round in range(25):
        for _edit in range(rng.randint(0, 4)):
            identifiers = [f"ENG-{n}" for n in range(1, control.summary()["issues"] + 1)]
            target = rng.choice(identifiers)
            kind = rng.choice(["state", "label", "unlabel", "create", "comment"])
            if kind == "state":
                control.set_state(target, rng.choice(states))
            elif kind == "label":
                control.add_labels(target, "agent")
            elif kind == "unlabel" and "agent" in control.issue(target)["labels"]:
                control.remove_label(target, "agent")
            elif kind == "create":
                control.create_issue("ENG", "New", state=rng.choice(states), labels=["agent"])
            else:
                control.comment(target, "alice", "a note")
            # Edits in the same millisecond as the last poll, and far apart.
            world.clock.advance(rng.choice([0, 0.001, 1, 45]))
        seen = {i.ref: i.tracker_state for i in tracker.fetch_candidates()}
        # updatedAt has millisecond resolution: an issue changed in the millisecond it
        # was read shows no change, so a read takes at least a millisecond here.
        world.clock.advance(0.001)
        truth = {}
        for n in range(1, control.summary()["issues"] + 1):
            issue = control.issue(f"ENG-{n}")
            if issue["state"] in ACTIVE and "agent" in issue["labels"]:
                truth[IssueRef("ENG", n)] = issue["state"]
        assert seen == truth


def test_reads_follow_pages_past_fifty_issues(world: LinearWorld) -> None:
    for n in range(55):
        world.control.create_issue("ENG", f"Early {n}", state="In Progress", labels=["agent"])
    tracker = _tracker(world)
    assert len(tracker.fetch_candidates()) == 57
    world.clock.advance(1)
    for n in range(60):
        world.control.create_issue("ENG", f"Late {n}", labels=["agent"])
    assert len(tracker.fetch_candidates()) == 117


def test_a_poll_reads_only_what_changed_and_a_bulk_edit_leaves_quiet_polls_cheap(
    world: LinearWorld,
) -> None:
    # Linear charges a connection by the page size asked for: the read after a change
    # asks for as many issues as changed, and 60 issues edited in one moment (more
    # than a page of the overlap window) are read once, not at every quiet poll.
    for n in range(60):
        world.control.create_issue("ENG", f"Bulk {n}", labels=["agent"])
    tracker = _tracker(world)
    assert len(tracker.fetch_candidates()) == 62
    world.clock.advance(1)
    spent = tracker.client.accounting.total_units()
    requests = tracker.client.requests
    for _ in range(3):
        world.clock.advance(30)
        assert len(tracker.fetch_candidates()) == 62
    quiet = (tracker.client.accounting.total_units() - spent) / 3
    assert (tracker.client.requests - requests) / 3 <= 2, "ids and times only"
    world.control.set_state("ENG-3", "In Progress")
    spent = tracker.client.accounting.total_units()
    world.clock.advance(30)
    assert {i.ref: i.tracker_state for i in tracker.fetch_candidates()}[
        IssueRef("ENG", 3)
    ] == "In Progress"
    one_change = tracker.client.accounting.total_units() - spent
    # A page of one issue, not of fifty, on top of the quiet poll's check.
    assert one_change < quiet + 200, (one_change, quiet)


def test_reading_one_issue_does_not_skip_other_changes(world: LinearWorld) -> None:
    tracker = _tracker(world)
    tracker.fetch_candidates()
    world.clock.advance(10)
    world.control.set_state("ENG-2", "In Progress")
    world.clock.advance(10)
    later = world.control.create_issue("ENG", "Parked", state="Backlog")["identifier"]
    assert tracker.branch_name(IssueRef("ENG", 3)).endswith(later.lower() + "-parked")
    states = {i.ref: i.tracker_state for i in tracker.fetch_candidates()}
    assert states == {ENG_1: "Todo", ENG_2: "In Progress"}


def test_a_read_cut_short_by_the_rate_limit_is_read_again_whole(world: LinearWorld) -> None:
    tracker = _tracker(world)
    tracker.fetch_candidates()
    world.clock.advance(1)
    for n in range(60):
        world.clock.advance(5)
        world.control.create_issue("ENG", f"Late {n}", labels=["agent"])
    # The probe and the first page pass; the second page is refused.
    world.control.set_rate_limit("bot", requests_remaining=2)
    with pytest.raises(LinearRateLimited) as caught:
        tracker.fetch_candidates()
    world.clock.set(caught.value.reset_at)
    assert len(tracker.fetch_candidates()) == 62


def test_states_are_set_by_name_resolved_once_per_team(world: LinearWorld) -> None:
    tracker = _tracker(world)
    tracker.fetch_candidates()
    tracker.set_tracker_state(ENG_1, "In Progress")
    assert world.control.issue("ENG-1")["state"] == "In Progress"
    before = tracker.client.requests
    tracker.set_tracker_state(ENG_1, "In Review")
    assert tracker.client.requests == before + 1  # the mutation alone
    assert world.control.issue("ENG-1")["state"] == "In Review"
    first = tracker.fetch_candidates()[0]
    assert (first.ref, first.tracker_state) == (ENG_1, "In Review")
    tracker.set_tracker_state(ENG_1, "Done")
    assert world.control.issue("ENG-1")["state"] == "Done"
    refreshed = tracker.refresh_by_ids([ENG_1])[ENG_1]
    assert not refreshed.is_open and refreshed.tracker_state == "Done"
    with pytest.raises(ValueError, match="no workflow state named 'Shipping'"):
        tracker.set_tracker_state(ENG_2, "Shipping")


def test_refresh_reads_issues_never_seen_by_number(world: LinearWorld) -> None:
    world.control.create_issue("ENG", "Closed long ago", state="Done", labels=["agent"])
    tracker = _tracker(world)
    tracker.fetch_candidates()
    found = tracker.refresh_by_ids([IssueRef("ENG", 3), IssueRef("ENG", 99)])
    assert list(found) == [IssueRef("ENG", 3)]
    assert not found[IssueRef("ENG", 3)].is_open


def test_the_workpad_is_one_comment_even_when_the_create_answer_is_lost(
    world: LinearWorld,
) -> None:
    # Someone quoting the marker does not make a workpad: only the bot's own comment counts.
    world.control.comment("ENG-1", "alice", _workpad("quoted by a human"))
    tracker = _tracker(world)
    _faults(world).add_fault(path="/linear/graphql/CreateComment", action="lost_response", count=1)
    created = tracker.upsert_workpad(ENG_1, _workpad("phase: implementing"))
    assert _faults(world).faults() == []  # the one lost answer was played
    comments = world.control.issue("ENG-1")["comments"]
    mine = [c for c in comments if c["user"] == "bot"]
    assert [c["id"] for c in mine] == [created.id]
    assert mine[0]["body"] == _workpad("phase: implementing")
    # A restarted daemon finds it before it writes.
    restarted = _tracker(world)
    again = restarted.upsert_workpad(ENG_1, _workpad("phase: reviewing"))
    assert again.id == created.id
    comments = world.control.issue("ENG-1")["comments"]
    assert [c["body"] for c in comments if c["user"] == "bot"] == [_workpad("phase: reviewing")]
    assert _tracker(world).find_workpad(ENG_1) == again
    writes = len(world.control.writes())
    restarted.upsert_workpad(ENG_1, _workpad("phase: reviewing"))
    _tracker(world).upsert_workpad(ENG_1, _workpad("phase: reviewing"))
    assert len(world.control.writes()) == writes  # an unchanged workpad is not written again


def test_the_workpad_is_found_past_the_first_page_of_comments(world: LinearWorld) -> None:
    tracker = _tracker(world)
    first = tracker.upsert_workpad(ENG_1, _workpad("one"))
    for n in range(60):
        world.clock.advance(1)
        world.control.comment("ENG-1", "alice", f"comment {n}")
    assert _tracker(world).upsert_workpad(ENG_1, _workpad("two")).id == first.id
    assert len(world.control.issue("ENG-1")["comments"]) == 61


def test_a_workpad_body_without_the_marker_is_refused(world: LinearWorld) -> None:
    with pytest.raises(ValueError, match="marker"):
        _tracker(world).upsert_workpad(ENG_1, "## Orchestrator Workpad\n")


def test_the_pull_request_is_linked_once_per_url(world: LinearWorld) -> None:
    tracker = _tracker(world)
    url = "https://github.com/acme/widgets/pull/7"
    first = tracker.link_pull_request(ENG_1, url, "Fix the login page", subtitle="Open")
    lose = {"action": "lost_response", "count": 1}
    _faults(world).add_fault(path="/linear/graphql/LinkPullRequest", **lose)
    again = tracker.link_pull_request(ENG_1, url, "Fix the login page", subtitle="Merged")
    assert again == first
    attachments = world.control.issue("ENG-1")["attachments"]
    assert [(a["url"], a["subtitle"]) for a in attachments] == [(url, "Merged")]
    other = tracker.link_pull_request(ENG_1, url.replace("/7", "/8"), "Follow-up")
    assert other != first
    assert len(world.control.issue("ENG-1")["attachments"]) == 2


def test_a_rate_limited_client_waits_for_the_reset_without_sending(world: LinearWorld) -> None:
    tracker = _tracker(world)
    tracker.fetch_candidates()
    world.control.set_rate_limit("bot", requests_remaining=0)
    with pytest.raises(LinearRateLimited) as caught:
        tracker.fetch_candidates()
    limited = caught.value
    assert limited.resource == "linear_requests"
    assert limited.reset_at > world.clock()
    assert "Linear linear_requests budget spent" in str(limited)
    sent = tracker.client.requests
    refused = world.control.counters()["bot"]["rate_limited"]
    world.clock.advance(60)
    with pytest.raises(LinearRateLimited):
        tracker.fetch_candidates()
    assert tracker.client.requests == sent
    assert world.control.counters()["bot"]["rate_limited"] == refused
    assert tracker.client.limited_until == limited.reset_at
    assert tracker.client.accounting.rate_limited == 1
    world.clock.set(limited.reset_at)
    assert [i.ref for i in tracker.fetch_candidates()] == [ENG_1, ENG_2]
    assert tracker.client.limited_until is None


def test_a_spent_complexity_budget_is_named(world: LinearWorld) -> None:
    tracker = _tracker(world)
    world.control.set_rate_limit("bot", complexity_remaining=10)
    with pytest.raises(LinearRateLimited) as caught:
        tracker.fetch_candidates()
    assert caught.value.resource == "linear_complexity"


def test_stop_labels_on_linear_issues_are_seen(world: LinearWorld) -> None:
    parked = world.control.create_issue("ENG", "Freeze", state="Backlog")["identifier"]
    tracker = _tracker(world)
    tracker.fetch_candidates()
    assert not tracker.is_stopped(ENG_1) and not tracker.repo_stopped()
    world.clock.advance(5)
    world.control.add_labels("ENG-1", "orchestrator:stop")
    tracker.fetch_candidates()
    assert tracker.is_stopped(ENG_1) and not tracker.is_stopped(ENG_2)
    world.control.add_labels(parked, "orchestrator:stop-all")
    tracker.fetch_candidates()
    assert tracker.repo_stopped() and tracker.is_stopped(ENG_2)
    # A daemon that starts now sees it in its first read.
    assert _tracker(world).repo_stopped() is False
    fresh = _tracker(world)
    fresh.fetch_candidates()
    assert fresh.repo_stopped()
    world.clock.advance(1)
    world.control.set_state(parked, "Canceled")
    tracker.fetch_candidates()
    assert not tracker.repo_stopped()


def test_the_branch_name_is_linears(world: LinearWorld) -> None:
    assert _tracker(world).branch_name(ENG_1) == "bot/eng-1-fix-the-login-page"


def test_a_project_scope_reads_only_the_projects_issues(world: LinearWorld) -> None:
    tracker = _tracker(world, project_slug="website-1a2b")
    assert [i.ref for i in tracker.fetch_candidates()] == [ENG_1]


def test_a_scope_needs_a_team_or_a_project() -> None:
    with pytest.raises(ValueError, match=r"team_key or tracker\.project_slug"):
        LinearScope()


def test_the_api_key_never_reaches_the_logs(world: LinearWorld) -> None:
    out = io.StringIO()
    configure_logging(fmt="json", level="debug", stream=out)
    try:
        tracker = _tracker(world)
        tracker.fetch_candidates()
        tracker.upsert_workpad(ENG_1, _workpad("x"))
        world.control.set_rate_limit("bot", requests_remaining=0)
        with pytest.raises(LinearRateLimited) as limited:
            tracker.fetch_candidates()
        wrong = "lin_api_not_a_real_key_1234"
        with pytest.raises(LinearError) as refused:
            _tracker(world, wrong).fetch_candidates()
        assert refused.value.code == "AUTHENTICATION_ERROR"
        texts = [out.getvalue(), str(limited.value), str(refused.value), repr(tracker.client)]
        assert "rate_limited" in out.getvalue()
        for text in texts:
            assert BOT_KEY not in text and wrong not in text
    finally:
        clear_context()
        structlog.reset_defaults()


def _linear_workflow(path: Path, endpoint: str, scope: str) -> Path:
    path.write_text(
        "---\n"
        "tracker:\n"
        "  kind: linear\n"
        "  repo: acme/widgets\n"
        f"  endpoint: {endpoint}\n"
        f"  {scope}\n"
        "  required_labels: [agent]\n"
        "  active_states: [Todo, In Progress, Merging]\n"
        "rollout:\n"
        "  kill_switch_label: halt\n"
        "---\n"
        "Work on {{ issue.title }}.\n",
        encoding="utf-8",
    )
    return path


def test_the_policy_builds_the_linear_tracker(world: LinearWorld, tmp_path: Path) -> None:
    path = _linear_workflow(tmp_path / "WORKFLOW.md", world.control.graphql_url, "team_key: ENG")
    env = {"LINEAR_API_KEY": BOT_KEY, "GITHUB_TOKEN": "ghs_unused_here"}
    policy = load_workflow(path, env=env).policy
    tracker = linear_tracker(policy)
    assert tracker.scope == LinearScope(team_key="ENG", kill_switch_label="halt")
    assert [i.ref for i in tracker.fetch_candidates()] == [ENG_1, ENG_2]
    with pytest.raises(WiringError, match=r"tracker\.kind: expected linear"):
        linear_tracker(replace(policy, tracker=replace(policy.tracker, kind=TrackerKind.GITHUB)))
