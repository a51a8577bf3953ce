"""`orchestrator db ...` as an operator meets it: which database, which revision, which message.

Each command names the database it works on, takes it from ``--db``, the
environment or a policy file the way ``orchestrator run`` does, and answers a
database it cannot use with one line: never a traceback, never a masked URL to
paste back.
"""

from __future__ import annotations

import re
import shlex
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from alembic.script import ScriptDirectory
from click.testing import CliRunner, Result
from sqlalchemy import Engine, create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import OperationalError

from orchestrator.cli import cli
from orchestrator.store import migrate
from orchestrator.store.engine import DATABASE_URL_ENV, DatabaseChoice, UrlSource, make_engine

# A PostgreSQL password with the characters a URL must percent-encode.
PASSWORD = "p@ss:w/rd%1"
# Without a token the policy is invalid; the tests' own environment must not leak in.
BASE_ENV = {"GITHUB_TOKEN": "ghp_placeholder", DATABASE_URL_ENV: ""}


def invoke(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), env={**BASE_ENV, **(env or {})})


def revisions() -> list[str]:
    """This release's revisions, oldest first."""
    script = ScriptDirectory.from_config(migrate.alembic_config("sqlite://"))
    return [r.revision for r in reversed(list(script.walk_revisions()))]


def revision_of(url: str) -> str | None:
    engine = make_engine(url)
    try:
        return migrate.current_revision(engine)
    finally:
        engine.dispose()


def write_policy(path: Path, url: str) -> Path:
    path.write_text(
        "---\ntracker:\n  kind: github\n  repo: acme/app\n  endpoint: http://127.0.0.1:9\n"
        f"database:\n  url: {url}\n---\nGo.\n"
    )
    return path


def one_line_error(result: Result) -> str:
    """The message of a refused command, checked to be one line without a traceback.

    ``run`` logs its start-up as JSON lines first; those are not the message.
    """
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output and '"exception"' not in result.output
    lines = [line for line in result.output.strip().splitlines() if not line.startswith("{")]
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.output
    return lines[0]


def suggested_command(message: str) -> list[str]:
    """The arguments after ``orchestrator`` in the "run: orchestrator ..." part of a message."""
    found = re.search(r"run:? `?orchestrator ([^`]*)`?", message)
    assert found, message
    return shlex.split(found.group(1))


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


# ------------------------------------------------------------------ the commands


def test_help_and_options_agree() -> None:
    for name in ("upgrade", "downgrade", "current"):
        shown = invoke("db", name, "--help")
        assert shown.exit_code == 0, shown.output
        named = set(re.findall(r"(?<![\w-])--[a-z][a-z-]+", shown.output)) - {"--help"}
        from orchestrator.store.cli import db

        command = db.commands[name]
        options = {o for p in command.params for o in p.opts if o.startswith("--")}
        assert named <= options, f"db {name} --help names {named - options}, which it lacks"
        assert {"--db", "--workflow"} <= options, name


def test_every_command_takes_the_workflows_database(tmp_path: Path) -> None:
    policy = write_policy(tmp_path / "WORKFLOW.md", "sqlite:///state/o.db")
    url = f"sqlite:///{tmp_path / 'state' / 'o.db'}"
    *_, before_head, head = revisions()

    assert invoke("db", "upgrade", "--workflow", str(policy)).exit_code == 0
    assert revision_of(url) == head
    down = invoke("db", "downgrade", "-1", "--workflow", str(policy))
    assert down.exit_code == 0, down.output
    assert f"downgraded from {head} to {before_head}" in down.output
    shown = invoke("db", "current", "--workflow", str(policy))
    assert f"current:  {before_head}" in shown.output
    assert f"behind: run `orchestrator db upgrade --workflow {policy}`" in shown.output


def test_a_policy_without_database_url_gives_the_file_run_uses(tmp_path: Path) -> None:
    policy = tmp_path / "WORKFLOW.md"
    policy.write_text("---\ntracker:\n  kind: github\n  repo: acme/app\n---\nGo.\n")
    env = {"HOME": str(tmp_path / "home"), "XDG_STATE_HOME": str(tmp_path / "elsewhere")}
    shown = invoke("db", "current", "--workflow", str(policy), env=env)
    assert shown.exit_code == 0, shown.output
    # What `orchestrator run` takes: the policy's database.url, here its default,
    # which is under $XDG_STATE_HOME when that is set.
    runs_on = tmp_path / "elsewhere" / "orchestrator" / "orchestrator.db"
    assert f"database: sqlite:///{runs_on}\n" in shown.output


def test_downgrade_takes_relative_steps_revision_ids_and_base(sqlite_url: str) -> None:
    known = revisions()
    assert invoke("db", "upgrade", "--db", sqlite_url).exit_code == 0

    one = invoke("db", "downgrade", "-1", "--db", sqlite_url)
    assert one.exit_code == 0, one.output
    assert revision_of(sqlite_url) == known[-2]
    two = invoke("db", "downgrade", "--db", sqlite_url, "-2")
    assert two.exit_code == 0, two.output
    assert revision_of(sqlite_url) == known[-4]
    separated = invoke("db", "downgrade", "--db", sqlite_url, "--", "-1")
    assert separated.exit_code == 0, separated.output
    assert revision_of(sqlite_url) == known[-5]
    by_id = invoke("db", "downgrade", known[0], "--db", sqlite_url)
    assert by_id.exit_code == 0, by_id.output
    assert revision_of(sqlite_url) == known[0]
    emptied = invoke("db", "downgrade", "base", "--db", sqlite_url)
    assert "to base (empty database)" in emptied.output
    assert revision_of(sqlite_url) is None


def test_downgrade_refusals_are_one_line(sqlite_url: str) -> None:
    empty = one_line_error(invoke("db", "downgrade", "-1", "--db", sqlite_url))
    assert "no schema revision: nothing to downgrade" in empty
    invoke("db", "upgrade", "--db", sqlite_url)
    unknown = one_line_error(invoke("db", "downgrade", "abc123", "--db", sqlite_url))
    assert "Can't locate revision identified by 'abc123'" in unknown
    too_far = one_line_error(invoke("db", "downgrade", "-99", "--db", sqlite_url))
    assert "-99" in too_far
    option = invoke("db", "downgrade", "-x", "--db", sqlite_url)
    assert option.exit_code == 2 and "No such option '-x'" in option.output


# ------------------------------------------------------- a database from a newer release


def test_a_newer_database_is_named_as_such_everywhere(sqlite_url: str, tmp_path: Path) -> None:
    migrate.upgrade(sqlite_url)
    engine = make_engine(sqlite_url)
    with engine.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = 'f00d'"))
    engine.dispose()

    shown = invoke("db", "current", "--db", sqlite_url)
    assert shown.exit_code == 0, shown.output
    assert "current:  f00d (unknown to this release)" in shown.output
    assert "the database is newer than this release" in shown.output
    assert "behind" not in shown.output
    for args in (("upgrade",), ("downgrade", "-1")):
        refused = one_line_error(invoke("db", *args, "--db", sqlite_url))
        assert "newer than this release" in refused and "f00d" in refused, args
    policy = write_policy(tmp_path / "WORKFLOW.md", sqlite_url)
    run = one_line_error(invoke("run", str(policy), "--once", "--db", sqlite_url))
    assert "f00d, which this release does not know" in run
    assert "newer than this release" in run
    assert revision_of(sqlite_url) == "f00d"


# ---------------------------------------------------------- what a hint tells to run


@pytest.mark.parametrize(
    ("choice", "command"),
    [
        pytest.param(
            DatabaseChoice("postgresql+psycopg://o:pw@db/o", UrlSource.POLICY, Path("/etc/W.md")),
            "orchestrator db upgrade --workflow /etc/W.md",
            id="policy_file",
        ),
        pytest.param(
            DatabaseChoice("postgresql+psycopg://o:pw@db/o", UrlSource.ENV),
            f"orchestrator db upgrade (with the same {DATABASE_URL_ENV} in the environment)",
            id="environment",
        ),
        pytest.param(
            DatabaseChoice("postgresql+psycopg://o:pw@db/o", UrlSource.FLAG),
            "orchestrator db upgrade --db URL (this database's URL, with its password)",
            id="flag_with_password",
        ),
        pytest.param(
            DatabaseChoice("postgresql+psycopg://o@db/o", UrlSource.FLAG),
            "orchestrator db upgrade --db postgresql+psycopg://o@db/o",
            id="flag_without_password",
        ),
        pytest.param(
            DatabaseChoice("sqlite:////var/lib/o b.db", UrlSource.DEFAULT),
            "orchestrator db upgrade",
            id="default_file",
        ),
    ],
)
def test_the_upgrade_hint_names_what_chose_the_database(
    choice: DatabaseChoice, command: str
) -> None:
    assert choice.command("upgrade") == command
    assert "***" not in command


@pytest.mark.postgres
def test_a_schema_behind_names_a_command_that_works(pg_url: str, tmp_path: Path) -> None:
    # The throwaway server trusts every login; the password only has to be in the URL.
    url = make_url(pg_url).set(password="s3cret").render_as_string(hide_password=False)
    policy = write_policy(tmp_path / "WORKFLOW.md", url)

    refused = one_line_error(invoke("run", str(policy), "--once"))
    assert "***" not in refused.split("run: ", 1)[1]
    assert suggested_command(refused) == ["db", "upgrade", "--workflow", str(policy)]
    shown = invoke("db", "current", "--workflow", str(policy))
    assert suggested_command(shown.output) == ["db", "upgrade", "--workflow", str(policy)]

    from_env = one_line_error(invoke("run", str(policy), "--once", env={DATABASE_URL_ENV: url}))
    assert f"the same {DATABASE_URL_ENV}" in from_env and "***" not in from_env.split("run: ")[1]
    from_flag = one_line_error(invoke("run", str(policy), "--once", "--db", url))
    assert "--db URL (this database's URL, with its password)" in from_flag

    upgraded = invoke(*suggested_command(refused))
    assert upgraded.exit_code == 0, upgraded.output
    assert "up to date" in invoke("db", "current", "--workflow", str(policy)).output


# ------------------------------------------------- a server that cannot be used


def test_an_unreachable_server_is_one_line_everywhere(tmp_path: Path) -> None:
    url = f"postgresql://orchestrator:s3cret@127.0.0.1:{free_port()}/orchestrator"
    policy = write_policy(tmp_path / "WORKFLOW.md", url)
    for args in (
        ("db", "current", "--db", url),
        ("db", "upgrade", "--db", url),
        ("db", "downgrade", "-1", "--db", url),
        ("db", "current", "--workflow", str(policy)),
        ("run", str(policy), "--once"),
    ):
        line = one_line_error(invoke(*args))
        assert "cannot open the database postgresql+psycopg://" in line, args
        assert "***@127.0.0.1" in line, args
        assert "Connection refused" in line and "s3cret" not in line, args


@pytest.fixture
def password_role(pg_url: str) -> Iterator[tuple[str, str]]:
    """A role that must log in with its password, and the URL of a database it may use.

    The throwaway server trusts every login, so a line asking this role for its
    password goes first in the server's pg_hba.conf for the test's duration.
    The password holds characters a URL must percent-encode, and the URL is
    written as deploy/README.md tells the operator to.
    """
    admin = create_engine(pg_url, isolation_level="AUTOCOMMIT")
    role = f"pw_{int(time.time() * 1000) % 10**9}"
    server = make_url(pg_url)
    right = (
        f"postgresql://{role}:{quote(PASSWORD, safe='')}@{server.host}:{server.port}/"
        f"{server.database}"
    )
    with admin.connect() as conn:
        hba = Path(str(conn.execute(text("SHOW hba_file")).scalar_one()))
    if not hba.is_file():
        admin.dispose()
        pytest.skip(f"the server's {hba} is not on this machine")
    original = hba.read_text()
    try:
        with admin.connect() as conn:
            # A utility statement takes no parameters; the driver still reads '%%' as '%'.
            literal = PASSWORD.replace("%", "%%")
            conn.exec_driver_sql(f"CREATE ROLE {role} LOGIN PASSWORD '{literal}'")
            conn.execute(text(f"GRANT ALL ON SCHEMA public TO {role}"))
        hba.write_text(f"host all {role} 127.0.0.1/32 scram-sha-256\n{original}")
        _reload(admin)
        wrong = make_url(right).set(password="wrong-one").render_as_string(hide_password=False)
        _wait_until_refused(wrong)
        yield role, right
    finally:
        hba.write_text(original)
        _reload(admin)
        with admin.connect() as conn:
            if conn.execute(text(f"SELECT 1 FROM pg_roles WHERE rolname = '{role}'")).first():
                conn.execute(text(f"DROP OWNED BY {role}"))
                conn.execute(text(f"DROP ROLE {role}"))
        admin.dispose()


def _reload(admin: Engine) -> None:
    with admin.connect() as conn:
        conn.execute(text("SELECT pg_reload_conf()"))


def _wait_until_refused(url: str) -> None:
    """The server reads pg_hba.conf again a moment after the reload is asked for."""
    deadline = time.monotonic() + 10
    while True:
        engine = create_engine(url)
        try:
            with engine.connect():
                pass
        except OperationalError:
            return
        finally:
            engine.dispose()
        assert time.monotonic() < deadline, "the server still lets the wrong password in"
        time.sleep(0.05)


@pytest.mark.postgres
def test_a_wrong_password_is_one_line_everywhere(
    password_role: tuple[str, str], tmp_path: Path
) -> None:
    role, right = password_role
    assert invoke("db", "upgrade", "--db", right).exit_code == 0
    wrong = make_url(right).set(password="wrong-one").render_as_string(hide_password=False)
    policy = write_policy(tmp_path / "WORKFLOW.md", wrong)
    for args in (
        ("db", "current", "--db", wrong),
        ("db", "upgrade", "--db", wrong),
        ("db", "downgrade", "-1", "--db", wrong),
        ("db", "upgrade", "--workflow", str(policy)),
        ("run", str(policy), "--once"),
    ):
        line = one_line_error(invoke(*args))
        assert f'password authentication failed for user "{role}"' in line, args
        assert "cannot open the database" in line and "wrong-one" not in line, args
    assert invoke("db", "downgrade", "base", "--db", right).exit_code == 0
