"""Fixtures that start a real emulator on 127.0.0.1 for a test.

Other test folders can reuse them with
``from tests.sim.conftest import sim_world, gh  # noqa: F401`` or call
`orchestrator_sim.testing.running_world` directly.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from orchestrator_sim.testing import SimWorld, running_world


@pytest.fixture
def sim_world(tmp_path: Path) -> Iterator[SimWorld]:
    """A running emulator with ``acme/widgets``, a bot (write) and a human (admin)."""
    with running_world(tmp_path / "sim") as world:
        yield world


@pytest.fixture
def gh(sim_world: SimWorld) -> Any:
    """PyGithub authenticated as the bot, without client-side pauses or retries."""
    return sim_world.github()
