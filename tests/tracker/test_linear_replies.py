"""People's comments on a Linear issue as replies to a question, through the emulator over HTTP.

The workspace is `tests.tracker.test_linear_approval`'s: ``bot`` holds the API
key, ``alice`` and ``carol`` are members, ``gus`` a guest, ``deploy`` an app user.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from orchestrator.domain.snapshot import IssueRef
from orchestrator.tracker.linear_client import LinearError
from orchestrator.tracker.linear_replies import (
    MAX_REPLY_PAGES,
    comment_number,
    read_replies,
)
from tests.sim.linear_world import LinearWorld
from tests.tracker.test_linear_approval import CannedLinear, bridge_for, symphony_workspace

ISSUE_1 = IssueRef("acme/widgets", 1)


@pytest.fixture
def world(tmp_path: Path) -> Iterator[LinearWorld]:
    with symphony_workspace(tmp_path / "sim") as found:
        yield found


def test_replies_leave_out_the_keys_own_comments_and_say_who_is_trusted(
    world: LinearWorld,
) -> None:
    for who in ("bot", "alice", "gus", "deploy"):
        world.clock.advance(1)
        world.control.comment("ENG-1", who, f"{who} writes")
    bridge = bridge_for(world)
    replies = bridge.replies(ISSUE_1)
    # Newest first; the API key's own comments (the workpad, the question) are not replies.
    assert [(r.author.login, r.author.can_write, r.author.is_bot) for r in replies] == [
        ("linear:deploy", False, True),
        ("linear:gus", False, False),
        ("linear:alice", True, False),
    ]
    assert replies[2].body == "alice writes"
    comment = replies[2].as_issue_comment()
    assert comment.id == comment_number(replies[2].id) > 0
    assert comment.created_at == replies[2].created_at
    assert comment.created_at.microsecond == 0


def test_replies_are_read_again_only_once_the_issue_changed(world: LinearWorld) -> None:
    world.control.comment("ENG-1", "alice", "first")
    bridge = bridge_for(world)
    client = bridge.linear.client
    assert [r.body for r in bridge.replies(ISSUE_1)] == ["first"]
    before = client.requests
    bridge.replies(ISSUE_1)
    assert client.requests == before
    world.clock.advance(1)
    world.control.comment("ENG-1", "carol", "second")
    world.clock.advance(1)
    bridge.fetch_candidates()
    assert [r.body for r in bridge.replies(ISSUE_1)] == ["second", "first"]


def test_reading_stops_at_the_first_page_that_reaches_back_to_the_moment_asked_about(
    world: LinearWorld,
) -> None:
    for index in range(60):
        world.clock.advance(1)
        world.control.comment("ENG-1", "alice", f"comment {index}")
    bridge = bridge_for(world)
    client = bridge.linear.client
    since = datetime(2000, 1, 1, tzinfo=UTC)
    before = client.requests
    assert len(bridge.replies(ISSUE_1, since)) == 60
    assert client.requests - before == 2
    # The emulator's clock starts at 2026-01-01T00:00:00; the comments are 00:01:01 to
    # 00:02:00, so the first page (the newest 50) reaches back past 00:01:40.
    recent = datetime(2026, 1, 1, 0, 1, 40, tzinfo=UTC)
    before = client.requests
    found = read_replies(client, "ENG-1", bridge.linear.viewer_id(), recent)
    assert client.requests - before == 1
    assert len(found.replies) == 50
    assert MAX_REPLY_PAGES >= 2


def test_a_comment_number_is_stable_and_tells_comments_apart() -> None:
    first = "9b2b0c5e-8f3a-4c1e-9d7a-0a1b2c3d4e5f"
    assert comment_number(first) == comment_number(first)
    assert comment_number(first) != comment_number(first.replace("9b", "9c", 1))
    assert 0 < comment_number(first) < 2**63


def _answer(*comments: Any) -> dict[str, Any]:
    return {
        "issue": {
            "id": "i1",
            "updatedAt": "2026-01-01T00:00:00.000Z",
            "comments": {
                "nodes": list(comments),
                "pageInfo": {"hasNextPage": False, "endCursor": None},
            },
        }
    }


@pytest.mark.parametrize(
    ("comment", "where"),
    [
        ({"id": "c1", "body": "x", "createdAt": "soon", "user": None}, "nodes[0].createdAt"),
        ({"id": "c1", "createdAt": "2026-01-01T00:00:00Z", "user": None}, "nodes[0].body"),
        (
            {"id": "c1", "body": "x", "createdAt": "2026-01-01T00:00:00Z", "user": {"id": "u"}},
            "nodes[0].user.displayName",
        ),
        ({"id": "c1", "body": "x", "createdAt": "2026-01-01T00:00:00Z", "user": 3}, "user"),
    ],
)
def test_a_malformed_comments_answer_is_an_error_naming_the_field(comment: Any, where: str) -> None:
    with pytest.raises(LinearError) as raised:
        read_replies(CannedLinear(_answer(comment)), "ENG-1", "viewer")
    assert (raised.value.operation, raised.value.code) == ("IssueReplies", "BAD_ANSWER")
    assert where in raised.value.message
