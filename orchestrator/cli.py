"""The `orchestrator` command line.

Subcommands live next to the code they drive and are imported only when they
are invoked, so `orchestrator --help` stays fast and no command does work at
import time.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from typing import Any

import click

from orchestrator import __version__

# name -> "module:attribute" of a click command or group.
SUBCOMMANDS: dict[str, str] = {
    "db": "orchestrator.store.cli:db",
    "validate": "orchestrator.workflow.cli:validate",
    "migrate-workflow": "orchestrator.workflow.cli:migrate_workflow",
    "sim": "orchestrator_sim.cli:sim",
    "run": "orchestrator.runtime.cli:run",
    "demo": "orchestrator_sim.demo.cli:demo",
    "status": "orchestrator.operator.cli:status",
    "issue": "orchestrator.operator.cli:issue",
    "brake": "orchestrator.operator.cli:brake",
    "pr": "orchestrator.operator.cli:pr",
}


class LazyGroup(click.Group):
    """A click group whose subcommands are imported on first use."""

    def __init__(self, *args: Any, lazy: dict[str, str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._lazy = lazy

    def invoke(self, ctx: click.Context) -> Any:
        """Run the subcommand; an error it reports is shown without any credential in it."""
        try:
            return super().invoke(ctx)
        except click.ClickException as error:
            from orchestrator.logs import redact_text

            shown = redact_text(error.format_message())
            if shown == error.format_message():
                raise
            if isinstance(error, click.UsageError):
                raise click.UsageError(shown, error.ctx) from None
            raise click.ClickException(shown) from None

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | self._available())

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self._lazy and cmd_name in self._available():
            module_name, attr = self._lazy[cmd_name].split(":")
            command = getattr(importlib.import_module(module_name), attr)
            if not isinstance(command, click.Command):
                raise click.ClickException(f"{self._lazy[cmd_name]} is not a click command")
            return command
        return super().get_command(ctx, cmd_name)

    def _available(self) -> set[str]:
        found = set()
        for name, target in self._lazy.items():
            module_name = target.split(":")[0]
            try:
                spec = importlib.util.find_spec(module_name)
            except ModuleNotFoundError:
                spec = None
            if spec is not None:
                found.add(name)
        return found


@click.group(
    cls=LazyGroup, lazy=SUBCOMMANDS, context_settings={"help_option_names": ["-h", "--help"]}
)
@click.version_option(__version__, prog_name="orchestrator")
@click.option(
    "--log-format",
    type=click.Choice(["auto", "json", "console"]),
    default="auto",
    envvar="ORCHESTRATOR_LOG_FORMAT",
    show_default=True,
    help="JSON when not on a terminal (auto), or forced.",
)
@click.option(
    "--log-level",
    default="info",
    envvar="ORCHESTRATOR_LOG_LEVEL",
    show_default=True,
    type=click.Choice(["debug", "info", "warning", "error"]),
)
def cli(log_format: str, log_level: str) -> None:
    """Turn GitHub issues into merged pull requests with coding agents."""
    from orchestrator.logs import configure_logging

    configure_logging(fmt=log_format, level=log_level)


def main() -> None:
    """Console-script entry point.

    An error nothing caught ends the process with its traceback, redacted like
    every log line (an exception's text may quote a URL with its credentials).
    """
    try:
        cli(prog_name="orchestrator")
    except Exception:
        import traceback

        from orchestrator.logs import redact_text

        sys.stderr.write(redact_text(traceback.format_exc()))
        raise SystemExit(1) from None
