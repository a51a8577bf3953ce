"""Reloading the policy file: valid -> invalid -> valid, and never a tick without a policy."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from orchestrator.workflow import PolicyError, PolicySource, ReloadOutcome
from tests.workflow.conftest import ENV

WritePolicy = Callable[..., Path]


def policy_text(max_turns: object) -> str:
    return f"---\ntracker:\n  repo: acme/widgets\nagent:\n  max_turns: {max_turns}\n---\n"


def set_mtime_in_the_past(path: Path, seconds: int = 600) -> None:
    past = path.stat().st_mtime_ns - seconds * 1_000_000_000
    os.utime(path, ns=(past, past))


def test_valid_then_invalid_then_valid(write_policy: WritePolicy) -> None:
    path = write_policy(policy_text(5))
    source = PolicySource(path, env=ENV)
    assert source.current.policy.agent.max_turns == 5
    assert source.refresh() is ReloadOutcome.UNCHANGED

    first = source.current
    with capture_logs() as logs:
        path.write_text(policy_text("ten"), encoding="utf-8")
        assert source.refresh() is ReloadOutcome.REJECTED
    assert source.current is first
    failure = source.last_error
    assert failure is not None
    assert failure.messages == (f"{path}:5:3: agent.max_turns: expected an integer, got 'ten'",)
    assert source.status().last_error == failure
    rejected = [entry for entry in logs if entry["event"] == "policy_reload_rejected"]
    assert rejected and rejected[0]["errors"] == list(failure.messages)
    assert rejected[0]["log_level"] == "warning"

    # The same broken content is not checked or logged again at every tick.
    with capture_logs() as quiet:
        assert source.refresh() is ReloadOutcome.REJECTED
    assert quiet == []

    path.write_text(policy_text(7), encoding="utf-8")
    assert source.refresh() is ReloadOutcome.APPLIED
    assert source.current.policy.agent.max_turns == 7
    assert source.last_error is None
    assert source.refresh() is ReloadOutcome.UNCHANGED


def test_reverting_to_the_policy_in_force_clears_the_error(write_policy: WritePolicy) -> None:
    path = write_policy(policy_text(5))
    source = PolicySource(path, env=ENV)
    path.write_text(policy_text(0), encoding="utf-8")
    assert source.refresh() is ReloadOutcome.REJECTED
    path.write_text(policy_text(5), encoding="utf-8")
    assert source.refresh() is ReloadOutcome.APPLIED
    assert source.last_error is None
    assert source.current.policy.agent.max_turns == 5


def test_a_deleted_file_keeps_the_last_good_policy(write_policy: WritePolicy) -> None:
    path = write_policy(policy_text(5))
    source = PolicySource(path, env=ENV)
    path.unlink()
    assert source.refresh() is ReloadOutcome.REJECTED
    failure = source.last_error
    assert failure is not None and failure.messages == (f"{path}: file not found",)
    assert source.current.policy.agent.max_turns == 5
    path.write_text(policy_text(6), encoding="utf-8")
    assert source.refresh() is ReloadOutcome.APPLIED
    assert source.current.policy.agent.max_turns == 6


def test_no_tick_runs_without_a_policy(write_policy: WritePolicy) -> None:
    path = write_policy(policy_text(1))
    source = PolicySource(path, env=ENV)
    steps: list[tuple[str | None, int]] = [
        (policy_text(2), 2),
        ("---\nnot: [valid\n---\n", 2),
        (None, 2),
        ("", 2),
        (policy_text(3), 3),
        (policy_text("x"), 3),
        (policy_text(4), 4),
    ]
    for text, expected in steps:
        if text is None:
            path.unlink()
        else:
            path.write_text(text, encoding="utf-8")
        # One tick: refresh at the boundary, then plan with the policy in force.
        source.refresh()
        policy = source.current.policy
        assert policy.agent.max_turns == expected


def test_start_up_without_a_file_is_fatal(tmp_path: Path) -> None:
    missing = tmp_path / "WORKFLOW.md"
    with pytest.raises(PolicyError) as raised:
        PolicySource(missing, env=ENV)
    assert str(raised.value) == f"{missing}: file not found"


def test_start_up_with_an_invalid_file_is_fatal(write_policy: WritePolicy) -> None:
    path = write_policy(policy_text("ten") + "{{ nope }}\n")
    with pytest.raises(PolicyError) as raised:
        PolicySource(path, env=ENV)
    assert str(raised.value) == (
        f"{path}:5:3: agent.max_turns: expected an integer, got 'ten'\n"
        f"{path}:7:4: prompt: unknown variable 'nope' (variables: issue, phase, attempt, policy, "
        "context, workspace)"
    )
    assert len(raised.value.problems) == 2


def test_unchanged_stat_costs_no_read_until_a_reload_is_requested(
    write_policy: WritePolicy,
) -> None:
    path = write_policy(policy_text(5))
    set_mtime_in_the_past(path)
    source = PolicySource(path, env=ENV)
    stat = path.stat()
    # Same size, same mtime: what an edit looks like on a file system with coarse timestamps.
    path.write_text(policy_text(6), encoding="utf-8")
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert source.refresh() is ReloadOutcome.UNCHANGED
    assert source.current.policy.agent.max_turns == 5
    source.request_reload()
    assert source.refresh() is ReloadOutcome.APPLIED
    assert source.current.policy.agent.max_turns == 6


def test_a_file_changed_within_the_racy_window_is_hashed(write_policy: WritePolicy) -> None:
    path = write_policy(policy_text(5))
    source = PolicySource(path, env=ENV)
    stat = path.stat()
    path.write_text(policy_text(6), encoding="utf-8")
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert source.refresh() is ReloadOutcome.APPLIED
    assert source.current.policy.agent.max_turns == 6


def test_a_touched_file_with_the_same_content_is_unchanged(write_policy: WritePolicy) -> None:
    path = write_policy(policy_text(5))
    source = PolicySource(path, env=ENV)
    first = source.current
    path.write_text(policy_text(5), encoding="utf-8")
    assert source.refresh() is ReloadOutcome.UNCHANGED
    assert source.current is first


def test_concurrent_refreshes_apply_a_change_once(write_policy: WritePolicy) -> None:
    path = write_policy(policy_text(5))
    source = PolicySource(path, env=ENV)
    path.write_text(policy_text(9), encoding="utf-8")
    outcomes: list[ReloadOutcome] = []
    barrier = threading.Barrier(4)

    def refresh() -> None:
        barrier.wait()
        outcomes.append(source.refresh())

    threads = [threading.Thread(target=refresh) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == sorted([ReloadOutcome.APPLIED] + [ReloadOutcome.UNCHANGED] * 3)
    assert source.current.policy.agent.max_turns == 9


def test_readers_always_see_a_whole_valid_policy(write_policy: WritePolicy) -> None:
    path = write_policy(policy_text(1))
    source = PolicySource(path, env=ENV)
    seen: set[int] = set()
    stop = threading.Event()

    def read() -> None:
        while not stop.is_set():
            workflow = source.current
            seen.add(workflow.policy.agent.max_turns)
            assert workflow.prompt is not None

    readers = [threading.Thread(target=read) for _ in range(3)]
    for reader in readers:
        reader.start()
    try:
        for turns in (2, "bad", 3, "", 4):
            path.write_text(policy_text(turns), encoding="utf-8")
            source.refresh()
    finally:
        stop.set()
        for reader in readers:
            reader.join()
    assert seen <= {1, 2, 3, 4}
    assert source.current.policy.agent.max_turns == 4


def test_status_for_the_dashboard(write_policy: WritePolicy) -> None:
    path = write_policy(
        "---\ntracker:\n  repo: acme/widgets\nrollout:\n  mode: mutate\nmerge:\n  mode: auto\n---\n"
    )
    source = PolicySource(path, env=ENV)
    status = source.status()
    assert status.path == str(path)
    assert status.digest == source.current.digest
    assert status.last_error is None
    assert len(status.warnings) == 1 and "merge disabled by rollout mode" in status.warnings[0]
