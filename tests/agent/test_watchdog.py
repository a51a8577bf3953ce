"""The turn's watchdogs as pure rules: what fires at a given moment, and when to look again.

Times are monotonic seconds made up for each row; the watchdogs never read a clock.
"""

from __future__ import annotations

from typing import Any

import pytest

from orchestrator.agent import AgentSettings, TurnOutcome
from orchestrator.agent.watchdog import Progress, Watchdogs

START = 100.0


def progress(**overrides: Any) -> Progress:
    """A turn that started at ``START`` and has seen what ``overrides`` say."""
    return Progress(started=START, **overrides)


SEEN = {"events": 4, "first_event": START + 0.1, "last_event": START + 0.1}


@pytest.mark.parametrize(
    ("watchdogs", "seen", "after_s", "expected"),
    [
        pytest.param(Watchdogs(), {}, 10_000.0, None, id="all_limits_off_never_fire"),
        pytest.param(
            Watchdogs(first_event_ms=400),
            {},
            0.4,
            (
                TurnOutcome.SESSION_START_TIMEOUT,
                "session start timeout: no event within 400 ms of the start",
            ),
            id="no_event_by_the_first_event_limit_is_a_session_start_timeout",
        ),
        pytest.param(
            Watchdogs(first_event_ms=400),
            {},
            0.399,
            None,
            id="the_first_event_limit_is_not_reached_early",
        ),
        pytest.param(
            Watchdogs(first_event_ms=400),
            SEEN,
            5.0,
            None,
            id="a_first_event_disarms_the_session_start_watchdog",
        ),
        pytest.param(
            Watchdogs(first_event_ms=1_000, stall_ms=500),
            SEEN,
            0.6,
            (TurnOutcome.STALLED, "stalled: no event for 500 ms (after 4 events)"),
            id="silence_after_the_first_event_is_a_stall",
        ),
        pytest.param(
            Watchdogs(first_event_ms=10_000, stall_ms=500),
            {},
            1.0,
            None,
            id="with_a_first_event_watchdog_silence_before_it_is_not_a_stall",
        ),
        pytest.param(
            Watchdogs(stall_ms=500),
            {},
            0.5,
            (TurnOutcome.STALLED, "stalled: no event for 500 ms (after 0 events)"),
            id="without_a_first_event_watchdog_silence_from_the_start_is_a_stall",
        ),
        pytest.param(
            Watchdogs(stall_ms=500),
            {**SEEN, "retries": 3, "last_error": "429 rate limited"},
            0.6,
            (
                TurnOutcome.STALLED,
                "stalled: no progress for 500 ms (after 4 events); last error: 429 rate limited",
            ),
            id="retries_only_are_no_progress_and_the_last_error_is_named",
        ),
        pytest.param(
            Watchdogs(stall_ms=500),
            {**SEEN, "last_event": START + 0.5},
            0.9,
            None,
            id="each_event_restarts_the_stall_watchdog",
        ),
        pytest.param(
            Watchdogs(stall_ms=500, turn_ms=1_000),
            {**SEEN, "last_event": START + 0.9},
            1.0,
            (TurnOutcome.TURN_TIMEOUT, "turn timeout: still running after 1000 ms"),
            id="a_busy_agent_past_the_turn_limit_is_a_turn_timeout",
        ),
        pytest.param(
            Watchdogs(first_event_ms=100, stall_ms=100, turn_ms=100),
            {},
            1.0,
            (
                TurnOutcome.SESSION_START_TIMEOUT,
                "session start timeout: no event within 100 ms of the start",
            ),
            id="session_start_is_named_before_stall_and_turn_timeout",
        ),
        pytest.param(
            Watchdogs(first_event_ms=100, stall_ms=100, turn_ms=100),
            SEEN,
            1.0,
            (TurnOutcome.STALLED, "stalled: no event for 100 ms (after 4 events)"),
            id="a_stall_is_named_before_the_turn_timeout",
        ),
    ],
)
def test_verdict(
    watchdogs: Watchdogs,
    seen: dict[str, Any],
    after_s: float,
    expected: tuple[TurnOutcome, str] | None,
) -> None:
    assert watchdogs.verdict(progress(**seen), START + after_s) == expected


@pytest.mark.parametrize(
    ("watchdogs", "seen", "after_s", "expected"),
    [
        pytest.param(Watchdogs(), {}, 1.0, None, id="no_deadline_with_every_limit_off"),
        pytest.param(
            Watchdogs(first_event_ms=2_000, stall_ms=5_000, turn_ms=10_000),
            {},
            0.5,
            1.5,
            id="before_the_first_event_its_deadline_comes_first",
        ),
        pytest.param(
            Watchdogs(first_event_ms=2_000, stall_ms=5_000, turn_ms=10_000),
            {**SEEN, "first_event": START + 1.0, "last_event": START + 1.0},
            2.0,
            4.0,
            id="after_the_first_event_the_stall_counts_from_the_last_event",
        ),
        pytest.param(
            Watchdogs(stall_ms=5_000, turn_ms=3_000),
            SEEN,
            1.0,
            2.0,
            id="the_turn_limit_when_it_is_the_earliest",
        ),
        pytest.param(
            Watchdogs(stall_ms=500),
            {},
            0.75,
            -0.25,
            id="a_passed_deadline_is_negative",
        ),
    ],
)
def test_next_deadline(
    watchdogs: Watchdogs, seen: dict[str, Any], after_s: float, expected: float | None
) -> None:
    deadline = watchdogs.next_deadline(progress(**seen), START + after_s)
    if expected is None:
        assert deadline is None
    else:
        assert deadline == pytest.approx(expected)


def test_the_watchdogs_are_those_the_settings_configure() -> None:
    settings = AgentSettings(
        command="true", first_event_timeout_ms=1, stall_timeout_ms=2, turn_timeout_ms=3
    )
    assert Watchdogs.of(settings) == Watchdogs(first_event_ms=1, stall_ms=2, turn_ms=3)
