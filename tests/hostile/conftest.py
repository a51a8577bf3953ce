"""Fixtures of the hostile suite: the GitHub emulator and the listener that catches what leaks."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from orchestrator_sim.testing import SimWorld, running_world
from tests.hostile.test_hostile_daemon import Listener


@pytest.fixture
def listener() -> Iterator[Listener]:
    served = Listener()
    try:
        yield served
    finally:
        served.close()


@pytest.fixture
def world(tmp_path: Path) -> Iterator[SimWorld]:
    with running_world(tmp_path / "sim") as running:
        yield running
