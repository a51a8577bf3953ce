"""`orchestrator issue show` states why the issue waits and why its last turn failed."""

from __future__ import annotations

from typing import Any

from orchestrator.operator import render


def _data(**extra: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "issue": {
            "repo": "acme/app",
            "number": 7,
            "title": "Add it",
            "phase": "blocked",
            "phase_since": "2026-11-24T10:00:00+00:00",
            "tracker_state": "Blocked",
            "pr_number": None,
            "pr_head_sha": None,
            "rework_cycles": 0,
            "waiting_reason": "tool_unavailable",
        },
        "workpad": {"waiting": {"reason": "tool_unavailable", "detail": "5 failed turns: x"}},
        "observation": {},
        "phase_events": [],
        "side_effects": [],
        "agent_runs": [],
        "last_failure": "agent exited with code 1: claude: Not logged in · Please run /login",
    }
    data.update(extra)
    return data


def test_the_blocked_detail_and_the_last_failure_are_shown_in_one_line_each() -> None:
    shown = render.timeline(_data())
    assert "  why: 5 failed turns: x" in shown
    assert "  last failure: agent exited with code 1: claude: Not logged in" in shown


def test_nothing_is_shown_when_nothing_failed() -> None:
    shown = render.timeline(_data(workpad={}, last_failure=None))
    assert "why:" not in shown and "last failure:" not in shown


def test_the_last_failure_is_the_newest_runs_error_flattened() -> None:
    from types import SimpleNamespace

    from orchestrator.web.views.issue import _last_failure

    ok = SimpleNamespace(outcome="completed", error=None)
    error = "agent exited with code 1:\n  401 Unauthorized"
    failed = SimpleNamespace(outcome="failed", error=error)
    assert _last_failure([failed, ok]) is None
    assert _last_failure([ok, failed]) == "agent exited with code 1: 401 Unauthorized"
    assert _last_failure([]) is None
