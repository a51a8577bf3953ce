"""The command line: version, help, the commands the emulator adds, the db commands."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import entry_points

import click
from click.testing import CliRunner

from orchestrator import __version__
from orchestrator.cli import ADDED_COMMANDS_GROUP, LazyGroup, cli

# A daemon-only install: the emulator's package cannot be imported.
WITHOUT_EMULATOR = (
    "import sys; sys.modules['orchestrator_sim'] = None; from orchestrator.cli import main; main()"
)


def test_version() -> None:
    result = CliRunner().invoke(cli, ["--version"])
    assert result.exit_code == 0
    assert __version__ in result.output


def test_console_script_help_runs() -> None:
    result = subprocess.run(
        [sys.executable, "-c", "from orchestrator.cli import main; main()", "--help"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "db" in result.stdout


def _listed(help_text: str) -> set[str]:
    """The command names under "Commands:" in a click help text."""
    listing = help_text.split("Commands:", 1)[1]
    return {line.split()[0] for line in listing.splitlines() if line.strip()}


def test_the_emulator_adds_sim_and_demo_through_its_entry_points() -> None:
    added = {ep.name: ep.value for ep in entry_points(group=ADDED_COMMANDS_GROUP)}
    assert added == {"sim": "orchestrator_sim.cli:sim", "demo": "orchestrator_sim.demo.cli:demo"}
    result = CliRunner().invoke(cli, ["--help"])
    assert result.exit_code == 0, result.output
    assert {"sim", "demo", "run", "db"} <= _listed(result.output)
    sim_help = CliRunner().invoke(cli, ["sim", "--help"])
    assert sim_help.exit_code == 0, sim_help.output
    assert "serve" in _listed(sim_help.output)


def test_without_the_emulator_sim_and_demo_are_not_offered() -> None:
    shown = subprocess.run(
        [sys.executable, "-c", WITHOUT_EMULATOR, "--help"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert shown.returncode == 0, shown.stderr
    listed = _listed(shown.stdout)
    assert "run" in listed and "db" in listed
    assert not {"sim", "demo"} & listed
    demo = subprocess.run(
        [sys.executable, "-c", WITHOUT_EMULATOR, "demo"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert demo.returncode == 2
    assert "No such command 'demo'" in demo.stderr
    assert "Traceback" not in demo.stderr


def test_an_added_command_never_replaces_a_built_in_one() -> None:
    group = LazyGroup(lazy={"sim": "orchestrator.store.cli:db"}, added_by=ADDED_COMMANDS_GROUP)
    command = group.get_command(click.Context(group), "sim")
    assert command is not None and command.name == "db"
    assert group.get_command(click.Context(group), "demo") is not None


def test_db_current_then_upgrade(db_url: str) -> None:
    runner = CliRunner()
    before = runner.invoke(cli, ["db", "current", "--db", db_url])
    assert before.exit_code == 0, before.output
    assert "none (empty database)" in before.output and "behind" in before.output
    upgraded = runner.invoke(cli, ["db", "upgrade", "--db", db_url])
    assert upgraded.exit_code == 0, upgraded.output
    after = runner.invoke(cli, ["db", "current", "--db", db_url])
    assert "up to date" in after.output
    down = runner.invoke(cli, ["db", "downgrade", "base", "--db", db_url])
    assert down.exit_code == 0 and "to base (empty database)" in down.output


def test_db_url_from_environment(sqlite_url: str, monkeypatch: object) -> None:
    runner = CliRunner()
    result = runner.invoke(cli, ["db", "upgrade"], env={"ORCHESTRATOR_DATABASE_URL": sqlite_url})
    assert result.exit_code == 0, result.output
    assert sqlite_url.split("///")[1] in result.output


def test_db_url_from_the_workflow(tmp_path: object, monkeypatch: object) -> None:
    from pathlib import Path

    base = Path(str(tmp_path))
    policy = base / "WORKFLOW.md"
    policy.write_text(
        "---\ntracker:\n  kind: github\n  repo: acme/app\ndatabase:\n  url: sqlite:///state/o.db\n---\nGo.\n"
    )
    result = CliRunner().invoke(
        cli,
        ["db", "upgrade", "--workflow", str(policy)],
        env={"ORCHESTRATOR_DATABASE_URL": "", "GITHUB_TOKEN": "ghp_x"},
    )
    assert result.exit_code == 0, result.output
    assert (base / "state" / "o.db").exists()


def test_schema_ahead_is_named(sqlite_url: str) -> None:
    import pytest
    from sqlalchemy import text

    from orchestrator.store import migrate
    from orchestrator.store.engine import make_engine

    migrate.upgrade(sqlite_url)
    engine = make_engine(sqlite_url)
    with engine.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = 'f00d'"))
    with pytest.raises(migrate.SchemaAheadError, match="f00d, which this release does not know"):
        migrate.ensure_schema(sqlite_url, engine)
    engine.dispose()
