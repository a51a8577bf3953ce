"""What the web layer may ask of the running daemon."""

from __future__ import annotations

from typing import Protocol


class DaemonControl(Protocol):
    """The daemon's operator controls, as the HTTP API uses them."""

    def request_tick(self) -> bool:
        """Ask for a tick now; False when it was coalesced into one already pending."""

    def set_brake(self, active: bool) -> None:
        """Create (True) or remove (False) the local kill-switch file."""
