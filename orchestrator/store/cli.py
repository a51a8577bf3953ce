"""`orchestrator db ...`: schema upgrades and downgrades, and the current revision."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from orchestrator.store.engine import DatabaseChoice

DB_HELP = (
    "Database URL or SQLite file path. Precedence: this flag > $ORCHESTRATOR_DATABASE_URL "
    "> database.url of --workflow > (without --workflow) the default file under "
    "$XDG_STATE_HOME/orchestrator/."
)
WORKFLOW_HELP = (
    "A WORKFLOW.md whose database.url (or its default) to use when neither --db nor the env "
    "is set: the database `orchestrator run` with that file uses."
)
# Alembic's relative steps: ``-1`` is one revision down from the current one.
RELATIVE_STEP = re.compile(r"-\d+")


def _choice(db_url: str | None, workflow: str | None) -> DatabaseChoice:
    from orchestrator.store.engine import choose_database

    policy_url = None
    if workflow and not db_url:
        from orchestrator.workflow import check_workflow

        check = check_workflow(workflow)
        if check.workflow is None:
            raise click.ClickException(
                f"cannot read database.url from {workflow}: "
                + "; ".join(str(p) for p in check.errors)
            )
        policy_url = check.workflow.policy.database.url
    return choose_database(db_url, policy_url, Path(workflow) if workflow else None)


@contextmanager
def _one_line_errors(choice: DatabaseChoice) -> Iterator[None]:
    """Turn what goes wrong with the database into one line naming it, never a traceback.

    A server that cannot be reached or refuses the login, a SQLite file that
    cannot be used, a revision Alembic does not find.
    """
    from alembic.util import CommandError
    from sqlalchemy.exc import SQLAlchemyError

    from orchestrator.store.engine import sqlite_path
    from orchestrator.store.outage import is_unreachable, short_message
    from orchestrator.store.sqlite_faults import StorageFault, describe_storage_error

    try:
        yield
    except StorageFault as error:
        raise click.ClickException(str(error)) from None
    except CommandError as error:
        raise click.ClickException(f"database {choice.display}: {error}") from None
    except SQLAlchemyError as error:
        described = describe_storage_error(error, sqlite_path(choice.url))
        if described is None and not is_unreachable(error):
            raise
        message = described or f"cannot open the database {choice.display}: {short_message(error)}"
        raise click.ClickException(message) from None


def _refuse_a_newer_schema(choice: DatabaseChoice) -> str | None:
    """The current revision; a revision only a newer release knows is refused."""
    from orchestrator.store.engine import make_engine
    from orchestrator.store.migrate import (
        SchemaState,
        current_revision,
        newer_schema_message,
        schema_state,
    )

    engine = make_engine(choice.url)
    try:
        current = current_revision(engine)
    finally:
        engine.dispose()
    if current is not None and schema_state(choice.url, current) is SchemaState.NEWER:
        raise click.ClickException(newer_schema_message(choice.url, current))
    return current


class _StepsAsArguments(click.Command):
    """A command whose REVISION may be a relative step such as ``-1``, as Alembic spells it.

    click would read ``-1`` as an unknown option; it is moved behind ``--`` instead.
    """

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if "--" not in args and any(RELATIVE_STEP.fullmatch(a) for a in args):
            steps = [a for a in args if RELATIVE_STEP.fullmatch(a)]
            args = [a for a in args if not RELATIVE_STEP.fullmatch(a)] + ["--", *steps]
        return super().parse_args(ctx, args)


@click.group()
def db() -> None:
    """Manage the database schema."""


@db.command()
@click.option("--db", "db_url", metavar="URL", help=DB_HELP)
@click.option("--workflow", type=click.Path(dir_okay=False), help=WORKFLOW_HELP)
@click.option(
    "--revision",
    default="head",
    show_default=True,
    help="Where to go: head, a revision id, or a relative step (+1).",
)
def upgrade(db_url: str | None, workflow: str | None, revision: str) -> None:
    """Upgrade the schema (run this before starting a new release on PostgreSQL)."""
    from orchestrator.store.engine import make_engine
    from orchestrator.store.migrate import current_revision
    from orchestrator.store.migrate import upgrade as run_upgrade

    choice = _choice(db_url, workflow)
    with _one_line_errors(choice):
        _refuse_a_newer_schema(choice)
        run_upgrade(choice.url, revision)
        engine = make_engine(choice.url)
        try:
            click.echo(f"{choice.display}: at revision {current_revision(engine)}")
        finally:
            engine.dispose()


@db.command(cls=_StepsAsArguments)
@click.option("--db", "db_url", metavar="URL", help=DB_HELP)
@click.option("--workflow", type=click.Path(dir_okay=False), help=WORKFLOW_HELP)
@click.argument("revision")
def downgrade(db_url: str | None, workflow: str | None, revision: str) -> None:
    """Downgrade the schema to REVISION: a revision id, a relative step back (-1, -2),
    or base (empties the database).

    Run it with the release that made the revisions being undone: only it knows
    how to undo them.
    """
    from orchestrator.store.engine import make_engine
    from orchestrator.store.migrate import current_revision
    from orchestrator.store.migrate import downgrade as run_downgrade

    choice = _choice(db_url, workflow)
    with _one_line_errors(choice):
        before = _refuse_a_newer_schema(choice)
        if before is None and revision != "base":
            raise click.ClickException(
                f"database {choice.display} has no schema revision: nothing to downgrade"
            )
        run_downgrade(choice.url, revision)
        engine = make_engine(choice.url)
        try:
            after = current_revision(engine)
        finally:
            engine.dispose()
    click.echo(
        f"{choice.display}: downgraded from {before or 'base'} to "
        + (after or "base (empty database)")
    )


@db.command()
@click.option("--db", "db_url", metavar="URL", help=DB_HELP)
@click.option("--workflow", type=click.Path(dir_okay=False), help=WORKFLOW_HELP)
def current(db_url: str | None, workflow: str | None) -> None:
    """Show the schema revision of the database and the one this release needs."""
    from orchestrator.store.engine import make_engine
    from orchestrator.store.migrate import (
        SchemaState,
        current_revision,
        head_revision,
        schema_state,
    )

    choice = _choice(db_url, workflow)
    with _one_line_errors(choice):
        engine = make_engine(choice.url)
        try:
            revision = current_revision(engine)
        finally:
            engine.dispose()
    head = head_revision(choice.url)
    state = schema_state(choice.url, revision)
    if state is SchemaState.UP_TO_DATE:
        verdict = "up to date"
    elif state is SchemaState.NEWER:
        verdict = (
            "the database is newer than this release: a newer release migrated it; run that "
            "release, or restore a backup taken before the upgrade"
        )
    else:
        verdict = f"behind: run `{choice.command('upgrade')}`"
    click.echo(f"database: {choice.display}")
    known = "" if state is not SchemaState.NEWER else " (unknown to this release)"
    click.echo(f"current:  {revision or 'none (empty database)'}{known}")
    click.echo(f"head:     {head} ({verdict})")
