"""Fixtures of the policy loader tests: a minimal valid policy and a clean environment."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

from orchestrator.workflow.loader import WorkflowCheck, check_text

TOKEN = "ghp_" + "T0ken" * 8
ENV: Mapping[str, str] = {"GITHUB_TOKEN": TOKEN}

MINIMAL = """---
tracker:
  repo: acme/widgets
---
"""


def check(
    text: str,
    *,
    env: Mapping[str, str] | None = None,
    flags: Mapping[str, object] | None = None,
    base: Path | None = None,
) -> WorkflowCheck:
    """Check ``text`` as a file named WORKFLOW.md, with only ``env`` as the environment."""
    folder = base or Path("/srv/policy")
    return check_text(
        text,
        path=folder / "WORKFLOW.md",
        source="WORKFLOW.md",
        env=dict(ENV if env is None else env),
        flags=flags,
    )


@pytest.fixture
def write_policy(tmp_path: Path) -> Callable[..., Path]:
    """Write a policy file under tmp_path and return its path."""

    def write(text: str, name: str = "WORKFLOW.md") -> Path:
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        return path

    return write
