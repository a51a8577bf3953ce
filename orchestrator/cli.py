"""The `orchestrator` command line.

Subcommands live next to the code they drive and are imported only when they
are invoked, so `orchestrator --help` stays fast and no command does work at
import time. `sim` and `demo` belong to the emulator's distribution
(orchestrator-sim), which adds them through an entry point where it is installed.
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
    "run": "orchestrator.daemon.command:run",
    "status": "orchestrator.operator.cli:status",
    "issue": "orchestrator.operator.cli:issue",
    "brake": "orchestrator.operator.cli:brake",
    "pr": "orchestrator.operator.cli:pr",
}


# Entry points in this group add subcommands from other installed distributions:
# the emulator's (orchestrator-sim) `sim` and `demo`, which the daemon never imports.
ADDED_COMMANDS_GROUP = "orchestrator.commands"


class LazyGroup(click.Group):
    """A click group whose subcommands are imported on first use.

    ``lazy`` names its own subcommands; ``added_by`` an entry-point group through
    which other installed distributions add more (never replacing one of ``lazy``).
    """

    def __init__(
        self, *args: Any, lazy: dict[str, str], added_by: str | None = None, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self._lazy = lazy
        self._added_by = added_by
        self._added: dict[str, str] | None = None

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
        target = self._lazy.get(cmd_name) or self._added_commands().get(cmd_name)
        if target is not None and _importable(target):
            module_name, attr = target.split(":")
            command = getattr(importlib.import_module(module_name), attr)
            if not isinstance(command, click.Command):
                raise click.ClickException(f"{target} is not a click command")
            return command
        return super().get_command(ctx, cmd_name)

    def _available(self) -> set[str]:
        targets = {**self._added_commands(), **self._lazy}
        return {name for name, target in targets.items() if _importable(target)}

    def _added_commands(self) -> dict[str, str]:
        """name -> "module:attribute" from the entry points of ``added_by``, read once."""
        if self._added_by is None:
            return {}
        if self._added is None:
            from importlib.metadata import entry_points

            found = entry_points(group=self._added_by)
            self._added = {ep.name: f"{ep.module}:{ep.attr}" for ep in found}
        return self._added


def _importable(target: str) -> bool:
    """Whether the module of a "module:attribute" target is installed."""
    try:
        return importlib.util.find_spec(target.partition(":")[0]) is not None
    except ModuleNotFoundError:
        return False


@click.group(
    cls=LazyGroup,
    lazy=SUBCOMMANDS,
    added_by=ADDED_COMMANDS_GROUP,
    context_settings={"help_option_names": ["-h", "--help"]},
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
