"""``tracker.retry``: how the daemon retries GitHub calls, from the policy and its reloads."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from orchestrator.github.errors import GitHubError
from orchestrator.github.retry import RetryPolicy
from orchestrator_sim.testing import SimWorld, running_world
from tests.e2e.harness import FAST_RETRY, flow_for
from tests.workflow.conftest import check


@pytest.fixture
def world(tmp_path: Path) -> Iterator[SimWorld]:
    with running_world(tmp_path / "sim") as running:
        yield running


def test_the_policys_retries_reach_the_github_client_and_a_reload_changes_them(
    tmp_path: Path, world: SimWorld
) -> None:
    repo_path = f"/repos/{world.repo}"
    with flow_for(tmp_path, world) as flow:
        github = flow.d.parts.repo_set.first.parts.github
        assert github.client.retry == RetryPolicy(
            max_attempts=FAST_RETRY["max_attempts"], base_delay_s=0.01, max_delay_s=0.05
        )
        # Two attempts: one 502 is retried away.
        world.control.add_fault(path=repo_path, method="GET", action="error", status=502, count=1)
        assert github.client.request("GET", repo_path).status == 200

        flow.edit_policy({"tracker": {"retry": {"max_attempts": 1}}})
        flow.d.tick()
        github = flow.d.parts.repo_set.first.parts.github
        assert github.client.retry.max_attempts == 1
        # One attempt: the same 502 is the call's answer.
        world.control.add_fault(path=repo_path, method="GET", action="error", status=502, count=1)
        with pytest.raises(GitHubError) as failed:
            github.client.request("GET", repo_path)
        assert failed.value.status == 502


@pytest.mark.parametrize(
    ("key", "value"),
    [("max_attempts", 0), ("max_attempts", 11), ("base_delay_ms", 0), ("max_delay_ms", 300_001)],
)
def test_retries_out_of_bounds_are_refused_with_their_line(key: str, value: int) -> None:
    result = check(f"---\ntracker:\n  repo: acme/widgets\n  retry:\n    {key}: {value}\n---\n")
    assert result.workflow is None
    assert any(
        f"tracker.retry.{key}" in str(p) and "WORKFLOW.md:5:" in str(p) for p in result.errors
    ), [str(p) for p in result.errors]
