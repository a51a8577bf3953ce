"""Fixtures of the hostile suites: a running emulator for the daemon under attack."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from orchestrator.sim.testing import SimWorld, running_world


@pytest.fixture
def world(tmp_path: Path) -> Iterator[SimWorld]:
    with running_world(tmp_path / "sim") as running:
        yield running
