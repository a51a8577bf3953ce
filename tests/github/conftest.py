from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from orchestrator.github.client import GitHubClient
from orchestrator.github.gateway import GitHubGateway
from orchestrator.github.retry import RetryPolicy
from orchestrator_sim.testing import SimWorld, running_world


class SleepRecorder:
    """Records the waits the client asks for instead of sleeping them."""

    def __init__(self) -> None:
        self.calls: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)


@pytest.fixture
def world(tmp_path: Path) -> Iterator[SimWorld]:
    with running_world(tmp_path / "sim") as w:
        yield w


@pytest.fixture
def sleeps() -> SleepRecorder:
    return SleepRecorder()


@pytest.fixture
def client(world: SimWorld, sleeps: SleepRecorder) -> GitHubClient:
    return GitHubClient(world.url, world.bot.token, sleep=sleeps, retry=RetryPolicy(max_attempts=4))


@pytest.fixture
def gateway(client: GitHubClient) -> GitHubGateway:
    return GitHubGateway(client)
