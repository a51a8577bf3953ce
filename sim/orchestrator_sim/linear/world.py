"""One emulated Linear workspace: its records, its rate limits, and its snapshot file."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

from orchestrator_sim.clock import Clock
from orchestrator_sim.linear.limits import LinearLimits
from orchestrator_sim.linear.state import LinearState

SNAPSHOT_NAME = "linear.json"


class LinearWorld:
    """The Linear side of an emulator; with ``state_dir`` it loads and saves ``linear.json``."""

    def __init__(self, clock: Clock, *, seed: int = 0, state_dir: Path | None = None) -> None:
        self.state = LinearState(clock, seed=seed)
        self.limits = LinearLimits(clock)
        self.state_dir = state_dir
        self._writes: list[dict[str, Any]] = []
        self._writes_lock = threading.Lock()
        if self.snapshot_path is not None and self.snapshot_path.exists():
            try:
                self.state.load_json(json.loads(self.snapshot_path.read_text(encoding="utf-8")))
            except (OSError, ValueError) as exc:
                raise ValueError(f"{self.snapshot_path}: {exc}") from exc

    def record_write(self, user: str, operations: list[str], status: int) -> None:
        """Note one mutation request (its root fields) for tests that count the product's writes."""
        entry = {"at": self.state.now(), "user": user, "operations": operations, "status": status}
        with self._writes_lock:
            self._writes.append(entry)

    def writes(self) -> list[dict[str, Any]]:
        with self._writes_lock:
            return list(self._writes)

    def clear_writes(self) -> None:
        with self._writes_lock:
            self._writes.clear()

    @property
    def snapshot_path(self) -> Path | None:
        return None if self.state_dir is None else self.state_dir / SNAPSHOT_NAME

    def save(self) -> None:
        """Write the snapshot atomically, readable by its owner only (it holds API keys)."""
        path = self.snapshot_path
        if path is None:
            return
        data = json.dumps(self.state.to_json(), indent=1, sort_keys=True)
        temporary = path.with_name(path.name + ".tmp")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(data)
        os.replace(temporary, path)
