"""``orchestrator sim``: run the GitHub emulator, and the scripted agent when installed."""

from __future__ import annotations

import json
import signal
import socket
from pathlib import Path
from typing import Any

import click

from orchestrator.cli import LazyGroup
from orchestrator.logs import get_logger

log = get_logger(__name__)

# The scripted coding agent lives next to the emulator but is optional; the
# commands that play GitHub against a running emulator load on first use.
_SHELL = "orchestrator_sim.shell"
LAZY_SUBCOMMANDS = {
    "agent": "orchestrator_sim.agent:agent_command",
    "issue": f"{_SHELL}.actions:issue",
    "label": f"{_SHELL}.actions:label",
    "comment": f"{_SHELL}.actions:comment",
    "review": f"{_SHELL}.actions:review",
    "check": f"{_SHELL}.actions:check",
    "push": f"{_SHELL}.actions:push",
    "protect": f"{_SHELL}.actions:protect",
    "merge": f"{_SHELL}.actions:merge",
    "pr": f"{_SHELL}.views:pr",
    "state": f"{_SHELL}.views:state",
    "linear": "orchestrator_sim.linear.cli:linear_command",
}


@click.group(cls=LazyGroup, lazy=LAZY_SUBCOMMANDS)
def sim() -> None:
    """A local GitHub emulator (REST, GraphQL, git) and Linear emulator for tests and the demo.

    `serve` runs them; the other commands play the people and the CI around the
    product against a running one (see docs/emulator.md, "Playing GitHub by hand").
    """


def load_bootstrap(path: Path) -> dict[str, Any]:
    """Read a bootstrap file: ``{"users": [...], "repos": [...]}`` as the control API takes them."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise click.BadParameter(f"{path}: {exc}", param_hint="--bootstrap") from exc
    if not isinstance(data, dict) or set(data) - {"users", "repos"}:
        raise click.BadParameter(
            f"{path}: expected an object with 'users' and 'repos' lists", param_hint="--bootstrap"
        )
    for key in ("users", "repos"):
        items = data.get(key, [])
        if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
            raise click.BadParameter(
                f"{path}: {key} must be a list of objects", param_hint="--bootstrap"
            )
    return data


def _listen(host: str, port: int) -> socket.socket:
    """A socket listening on ``host:port`` (0: a free port), so the port shown is the real one."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        listener = socket.socket(family, kind, proto)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(address)
        listener.listen(128)
    except OSError as exc:
        raise click.ClickException(f"cannot listen on {host}:{port}: {exc}") from exc
    return listener


def _after_shutdown(signum: int, _frame: Any) -> None:
    log.info("sim_signal", signal=signal.Signals(signum).name)


@sim.command()
@click.option("--port", type=click.IntRange(0, 65535), default=8787, show_default=True)
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to listen on; keep the loopback address unless you mean to share it.",
)
@click.option(
    "--state",
    "state_dir",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    help="Directory for bare repositories and the state snapshot (kept across restarts).",
)
@click.option(
    "--seed", type=int, default=0, show_default=True, help="Seed for fault rules and Linear ids."
)
@click.option(
    "--bootstrap",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="JSON file of users and repositories to create when the state is new.",
)
def serve(port: int, host: str, state_dir: Path, seed: int, bootstrap: Path | None) -> None:
    """Serve the emulator in the foreground until interrupted."""
    import uvicorn

    from orchestrator_sim.app import build_app
    from orchestrator_sim.control_api import ControlError, create_repo, create_user
    from orchestrator_sim.emulator import Emulator
    from orchestrator_sim.errors import SimError
    from orchestrator_sim.gitstore import GitError
    from orchestrator_sim.server import uvicorn_config

    setup = load_bootstrap(bootstrap) if bootstrap else {}
    try:
        emulator = Emulator(state_dir, seed=seed, persist=True)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from exc
    if setup and not emulator.state.users:
        for key, create in (("users", create_user), ("repos", create_repo)):
            for index, item in enumerate(setup.get(key, [])):
                try:
                    create(emulator, {}, item)
                except (ControlError, SimError, GitError, ValueError) as exc:
                    raise click.ClickException(f"{bootstrap}: {key}[{index}]: {exc}") from exc
    config = uvicorn_config(build_app(emulator), log_level="info")
    listener = _listen(host, port)
    bound = listener.getsockname()[1]
    config.host, config.port = host, bound
    server = uvicorn.Server(config)
    where = f"[{host}]" if ":" in host else host
    click.echo(f"GitHub emulator on http://{where}:{bound} (state in {state_dir})", err=True)
    click.echo(f"Linear emulator on http://{where}:{bound}/linear/graphql", err=True)
    # uvicorn shuts down on SIGINT/SIGTERM and then raises the signal again for the
    # previous handler; this one lets the snapshot be saved and the exit be clean.
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, _after_shutdown)
    try:
        server.run(sockets=[listener])
    finally:
        emulator.save()
        log.info("sim_stopped", state=str(state_dir))
