"""Starting the dashboard and API server beside the daemon, within its descriptor budget."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from orchestrator.daemon.descriptors import DescriptorLimit, web_connection_cap
from orchestrator.daemon.status import RuntimeStatus
from orchestrator.logs import get_logger
from orchestrator.repos.parts import web_base
from orchestrator.store.database import Database
from orchestrator.wiring.policy_view import PolicyView

log = get_logger(__name__)


class DashboardError(RuntimeError):
    """The dashboard cannot serve; the message names the setting."""


class WebHandle(Protocol):
    """What the web layer's start function returns."""

    url: str

    def stop(self) -> None: ...


def start_dashboard(
    view: PolicyView,
    *,
    port: int | None,
    db: Database,
    descriptors: DescriptorLimit,
    status: Callable[[], RuntimeStatus],
    control: Any,
) -> WebHandle | None:
    """Serve the dashboard and API (None when the web layer is not installed)."""
    try:
        from orchestrator.web.server import start_web
    except ImportError:
        log.info("web_unavailable", reason="orchestrator.web.server is not installed")
        return None
    server = view.policy.server
    cap = web_connection_cap(server.max_connections, descriptors)
    if cap < server.max_connections:
        log.warning(
            "web_connections_clamped",
            max_connections=server.max_connections,
            serving=cap,
            descriptor_limit=descriptors.soft,
            reason="the web server may hold a quarter of the descriptors at most",
        )
    try:
        handle: WebHandle = start_web(
            server.host,
            port if port is not None else server.port,
            db=db,
            status=status,
            control=control,
            token=server.token,
            metrics_token=server.metrics_token,
            allowed_hosts=server.allowed_hosts,
            html_base=web_base(view),
            max_connections=cap,
            header_timeout_s=server.header_timeout_ms / 1000,
        )
    except OSError as error:
        raise DashboardError(f"server.port: cannot serve the dashboard: {error}") from None
    return handle
