"""Fixtures of the end-to-end tests: a running emulator and a daemon wired to it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from orchestrator_sim.testing import SimWorld, running_world


@pytest.fixture
def world(tmp_path: Path) -> Iterator[SimWorld]:
    with running_world(tmp_path / "sim") as running:
        yield running
