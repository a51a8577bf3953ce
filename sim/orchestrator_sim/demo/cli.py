"""`orchestrator demo`: watch the whole flow work, with no token and no network."""

from __future__ import annotations

import logging
import shutil
import tempfile
import time
from pathlib import Path

import click


@click.command()
@click.option(
    "--keep-open",
    is_flag=True,
    help="Leave the dashboard up after the issues are merged (until Ctrl-C).",
)
@click.option(
    "--timeout",
    "timeout_s",
    type=click.FloatRange(min=1),
    default=180.0,
    show_default=True,
    help="Give up (exit 1) after this many seconds.",
)
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=0,
    show_default=True,
    help="Dashboard port (0 picks a free one).",
)
@click.option(
    "--dir",
    "workdir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Keep the demo's files (database, workspaces, emulator state) here.",
)
@click.option("--verbose", is_flag=True, help="Show the daemon's logs (warnings only otherwise).")
def demo(keep_open: bool, timeout_s: float, port: int, workdir: Path | None, verbose: bool) -> None:
    """Three labelled issues become three merged pull requests, end to end.

    Starts the GitHub emulator with a sample repository, three labelled issues
    and a CI simulator (one pull request fails its tests once), a scripted
    coding agent, a scripted human who approves each pull request when it waits
    for a human, and the daemon in merge mode on SQLite with fast polling.
    """
    from orchestrator.daemon.process import own_process
    from orchestrator_sim.demo.run import Demo

    if not verbose:
        # The progress lines tell the story; the daemon's own log is for --verbose.
        logging.getLogger().setLevel(logging.WARNING)
    scratch = workdir or Path(tempfile.mkdtemp(prefix="orchestrator-demo-"))
    # The demo's process is the daemon's, as under `orchestrator run`.
    run = Demo(scratch, port=port, say=click.echo, process=own_process())
    ok = False
    try:
        url = run.start()
        click.echo(f"dashboard: {url}" if url else "dashboard: not served")
        click.echo(f"files: {scratch}")
        deadline = time.monotonic() + timeout_s
        while not run.finished():
            if time.monotonic() > deadline:
                run.progress()
                click.echo(f"gave up after {timeout_s:.0f} s", err=True)
                break
            run.progress()
            time.sleep(0.25)
        else:
            ok = True
            run.progress()
        click.echo("")
        for line in run.summary().lines():
            click.echo(line)
        if keep_open:
            click.echo(f"the dashboard stays up at {url}; Ctrl-C to stop")
            while True:
                time.sleep(3600)
    except KeyboardInterrupt:
        click.echo("interrupted")
    finally:
        run.stop()
        if workdir is None:
            shutil.rmtree(scratch, ignore_errors=True)
    if not ok:
        raise SystemExit(1)
