"""`orchestrator db ...`: schema upgrades and the current revision."""

from __future__ import annotations

import click

DB_HELP = (
    "Database URL or SQLite file path. Precedence: this flag > $ORCHESTRATOR_DATABASE_URL "
    "> database.url of --workflow > the default file under $XDG_STATE_HOME/orchestrator/."
)
WORKFLOW_HELP = "A WORKFLOW.md whose database.url to use when neither --db nor the env is set."


def _url(db_url: str | None, workflow: str | None) -> str:
    from orchestrator.store.engine import resolve_database_url

    policy_url = None
    if workflow and not db_url:
        from orchestrator.workflow import OriginKind, check_workflow

        check = check_workflow(workflow)
        if check.workflow is None:
            raise click.ClickException(
                f"cannot read database.url from {workflow}: "
                + "; ".join(str(p) for p in check.errors)
            )
        origin = check.workflow.origins.get("database.url")
        if origin is not None and origin.kind is not OriginKind.DEFAULT:
            policy_url = check.workflow.policy.database.url
    return resolve_database_url(db_url, policy_url)


@click.group()
def db() -> None:
    """Manage the database schema."""


@db.command()
@click.option("--db", "db_url", metavar="URL", help=DB_HELP)
@click.option("--workflow", type=click.Path(dir_okay=False), help=WORKFLOW_HELP)
@click.option("--revision", default="head", show_default=True)
def upgrade(db_url: str | None, workflow: str | None, revision: str) -> None:
    """Upgrade the schema (run this before starting a new release on PostgreSQL)."""
    from orchestrator.store.engine import describe_url, make_engine
    from orchestrator.store.migrate import current_revision
    from orchestrator.store.migrate import upgrade as run_upgrade

    url = _url(db_url, workflow)
    run_upgrade(url, revision)
    engine = make_engine(url)
    try:
        click.echo(f"{describe_url(url)}: at revision {current_revision(engine)}")
    finally:
        engine.dispose()


@db.command()
@click.option("--db", "db_url", metavar="URL", help=DB_HELP)
@click.argument("revision")
def downgrade(db_url: str | None, revision: str) -> None:
    """Downgrade the schema to REVISION (``base`` empties the database)."""
    from orchestrator.store.engine import describe_url, resolve_database_url
    from orchestrator.store.migrate import downgrade as run_downgrade

    url = resolve_database_url(db_url)
    run_downgrade(url, revision)
    click.echo(f"{describe_url(url)}: downgraded to {revision}")


@db.command()
@click.option("--db", "db_url", metavar="URL", help=DB_HELP)
@click.option("--workflow", type=click.Path(dir_okay=False), help=WORKFLOW_HELP)
def current(db_url: str | None, workflow: str | None) -> None:
    """Show the schema revision of the database and the one this release needs."""
    from orchestrator.store.engine import describe_url, make_engine
    from orchestrator.store.migrate import current_revision, head_revision

    url = _url(db_url, workflow)
    engine = make_engine(url)
    try:
        revision = current_revision(engine)
    finally:
        engine.dispose()
    head = head_revision(url)
    state = "up to date" if revision == head else "behind: run `orchestrator db upgrade`"
    click.echo(f"database: {describe_url(url)}")
    click.echo(f"current:  {revision or 'none (empty database)'}")
    click.echo(f"head:     {head} ({state})")
