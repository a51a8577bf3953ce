"""`orchestrator db ...`: schema upgrades and the current revision."""

from __future__ import annotations

import click

DB_HELP = (
    "Database URL or SQLite file path. Precedence: this flag > $ORCHESTRATOR_DATABASE_URL "
    "> the default file under $XDG_STATE_HOME/orchestrator/."
)


@click.group()
def db() -> None:
    """Manage the database schema."""


@db.command()
@click.option("--db", "db_url", metavar="URL", help=DB_HELP)
@click.option("--revision", default="head", show_default=True)
def upgrade(db_url: str | None, revision: str) -> None:
    """Upgrade the schema (run this before starting a new release on PostgreSQL)."""
    from orchestrator.store.engine import describe_url, make_engine, resolve_database_url
    from orchestrator.store.migrate import current_revision
    from orchestrator.store.migrate import upgrade as run_upgrade

    url = resolve_database_url(db_url)
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
def current(db_url: str | None) -> None:
    """Show the schema revision of the database and the one this release needs."""
    from orchestrator.store.engine import describe_url, make_engine, resolve_database_url
    from orchestrator.store.migrate import current_revision, head_revision

    url = resolve_database_url(db_url)
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
