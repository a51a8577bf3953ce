"""The service sections of the policy: polling, workspace, hooks, server and database.

They say how the daemon runs as a service on its host: when it ticks, where
its workspaces and database live, the hooks it runs, and the web server.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from orchestrator.workflow.schema_types import meta

# One place for the daemon's own state when the operator does not choose one.
STATE_DIR = "~/.local/state/orchestrator"
# The web server's connection cap and request-head deadline (server.max_connections,
# server.header_timeout_ms): a quarter of the usual 1,024 descriptors, and ten seconds.
DEFAULT_MAX_CONNECTIONS = 256
DEFAULT_HEADER_TIMEOUT_MS = 10_000


@dataclass(frozen=True)
class PollingSettings:
    """How often the daemon ticks."""

    interval_ms: int = field(
        default=30_000,
        metadata=meta(doc="Time between two ticks.", minimum=100, maximum=86_400_000),
    )


@dataclass(frozen=True)
class WorkspaceSettings:
    """Where the per-issue git workspaces live."""

    root: Path = field(
        default=Path(f"{STATE_DIR}/workspaces"),
        metadata=meta(
            doc="Directory holding one workspace per issue. `~` is expanded; a relative path is "
            "relative to the policy file's directory."
        ),
    )


@dataclass(frozen=True)
class HooksSettings:
    """Shell snippets run in the workspace at fixed moments (with `bash -lc`)."""

    after_create: str | None = field(
        default=None,
        metadata=meta(
            doc="After a workspace is created, in the checked-out repository; failure aborts "
            "creation.",
            shell_text=True,
        ),
    )
    before_run: str | None = field(
        default=None,
        metadata=meta(doc="Before each agent turn; failure aborts the attempt.", shell_text=True),
    )
    after_run: str | None = field(
        default=None,
        metadata=meta(doc="After each agent turn; failure is logged and ignored.", shell_text=True),
    )
    before_remove: str | None = field(
        default=None,
        metadata=meta(
            doc="Before a workspace is removed; failure is logged and ignored.", shell_text=True
        ),
    )
    after_create_in_empty_dir: bool = field(
        default=False,
        metadata=meta(
            doc="Run `after_create` first, in the new workspace's empty folder, as Symphony "
            "does (it may `git clone ... .`); the runtime then checks the issue's branch out "
            "around what it made, with a `.git` of its own making."
        ),
    )
    timeout_ms: int = field(
        default=60_000,
        metadata=meta(doc="Time limit of each hook.", minimum=1_000, maximum=3_600_000),
    )


@dataclass(frozen=True)
class ServerSettings:
    """The dashboard, JSON API and metrics endpoint."""

    host: str = field(default="127.0.0.1", metadata=meta(doc="Listen address."))
    port: int = field(
        default=8080,
        metadata=meta(doc="Listen port (0 picks a free one).", minimum=0, maximum=65_535),
    )
    token: str | None = field(
        default=None,
        metadata=meta(
            doc="Bearer token for the operator API's write actions (a `$VAR` reference).",
            secret=True,
        ),
    )
    metrics_token: str | None = field(
        default=None,
        metadata=meta(
            doc="Bearer token `/metrics` also accepts, for Prometheus (a `$VAR` reference).",
            secret=True,
        ),
    )
    allowed_hosts: tuple[str, ...] = field(
        default=(),
        metadata=meta(
            doc="Host names the server answers besides its listen address "
            "(the names a browser or proxy uses to reach it).",
        ),
    )
    max_connections: int = field(
        default=DEFAULT_MAX_CONNECTIONS,
        metadata=meta(
            doc="Connections the server holds at once. A new one beyond it closes the oldest "
            "connection that is not in a request (or, when every one is, itself); at most a "
            "quarter of the daemon's descriptor limit, the rest is kept for its own work.",
            minimum=4,
            maximum=1_000_000,
        ),
    )
    header_timeout_ms: int = field(
        default=DEFAULT_HEADER_TIMEOUT_MS,
        metadata=meta(
            doc="A connection that has not sent a whole request head for this long (since it "
            "opened, or since its last answer) is closed.",
            minimum=100,
            maximum=600_000,
        ),
    )


@dataclass(frozen=True)
class DatabaseSettings:
    """The working store."""

    url: str = field(
        default=f"sqlite:///{STATE_DIR}/orchestrator.db",
        metadata=meta(
            doc="SQLAlchemy URL: `sqlite:///PATH` (embedded; `~` and relative paths as for files) "
            "or `postgresql+psycopg://...` (best as a `$VAR` reference). A password in it is "
            "never printed.",
            sensitive=True,
        ),
    )
