"""Where the daemon keeps its state: ``$XDG_STATE_HOME``, else ``~/.local/state``.

The policy's defaults name ``~/.local/state/orchestrator/...``; as the XDG base
directory rules say, that folder stands for ``$XDG_STATE_HOME`` when it is set
(the systemd unit and the container set it), so the database, the workspaces
and the kill-switch file land where the deployment's documents say.
"""

from __future__ import annotations

import os
from pathlib import Path

DEFAULT_STATE_HOME = "~/.local/state"


def state_home() -> Path:
    """``$XDG_STATE_HOME`` when set (and absolute), else ``~/.local/state``."""
    configured = os.environ.get("XDG_STATE_HOME", "")
    if configured and os.path.isabs(configured):
        return Path(configured)
    return Path(os.path.expanduser(DEFAULT_STATE_HOME))


def expand_path(raw: str) -> str:
    """``raw`` with ``~`` expanded; under ``~/.local/state`` it goes under :func:`state_home`."""
    if raw == DEFAULT_STATE_HOME or raw.startswith(DEFAULT_STATE_HOME + "/"):
        return str(state_home()) + raw[len(DEFAULT_STATE_HOME) :]
    return os.path.expanduser(raw)
