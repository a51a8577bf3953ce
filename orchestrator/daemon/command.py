"""``orchestrator run``: the daemon's command."""

from __future__ import annotations

from pathlib import Path

import click

from orchestrator.daemon.daemon import REPLICA_ENV, Daemon, DaemonError
from orchestrator.daemon.instance_lock import AlreadyRunning
from orchestrator.daemon.process import own_process
from orchestrator.repos.cluster import DEFAULT_LEASE_S
from orchestrator.workflow.schema import DEFAULT_SHUTDOWN_GRACE_MS


@click.command("run")
@click.argument(
    "workflow",
    required=False,
    default="WORKFLOW.md",
    type=click.Path(dir_okay=False, path_type=Path),
)
@click.option("--once", is_flag=True, help="Run one tick, wait for the turns it started, exit.")
@click.option(
    "--db",
    "db_url",
    metavar="URL",
    help="Database URL or SQLite file (overrides ORCHESTRATOR_DATABASE_URL and database.url).",
)
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    help="Port of the dashboard and API (overrides server.port; 0 picks a free one).",
)
@click.option(
    "--grace-seconds",
    type=click.FloatRange(min=0),
    help="On SIGTERM, how long running agent turns may finish before they are cancelled "
    f"(overrides agent.shutdown_grace_ms; {DEFAULT_SHUTDOWN_GRACE_MS / 1000:g} by default).",
)
@click.option(
    "--replica-id",
    metavar="NAME",
    envvar=REPLICA_ENV,
    help=f"This replica's name in logs, runs and the dashboard (also {REPLICA_ENV}; "
    "default host name and process id).",
)
@click.option(
    "--lease-seconds",
    type=click.FloatRange(min=1),
    default=DEFAULT_LEASE_S,
    show_default=True,
    help="How long the polling and turn leases of a replica that stopped stay valid "
    "(takeover time; heartbeats every third of it).",
)
def run(
    *,
    workflow: Path,
    once: bool,
    db_url: str | None,
    port: int | None,
    grace_seconds: float | None,
    replica_id: str | None,
    lease_seconds: float,
) -> None:
    """Run the daemon with the policy in WORKFLOW (default ./WORKFLOW.md).

    SIGTERM or Ctrl-C stops it gracefully; SIGHUP reloads the policy now.
    """
    daemon = Daemon(
        workflow,
        db_url=db_url,
        port=port,
        grace_s=grace_seconds,
        replica_id=replica_id,
        lease_s=lease_seconds,
        # This process is the daemon's alone: it is hardened and takes every descriptor.
        process=own_process(),
    )
    if not once:
        # A SIGTERM while the daemon starts stops it gracefully once it has started.
        daemon.signals.install()
    try:
        daemon.start()
    except (DaemonError, AlreadyRunning) as error:
        raise click.ClickException(str(error)) from None
    try:
        code = daemon.run_once() if once else daemon.serve_forever()
    except DaemonError as error:
        raise click.ClickException(str(error)) from None
    raise SystemExit(code)
