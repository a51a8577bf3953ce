"""`orchestrator status | issue | brake | pr`: the operator's commands.

They read the database (so they work whether or not the daemon runs), the
policy file for the brake and GitHub access, and optionally a running daemon's
API for live status.
"""

from __future__ import annotations

import getpass
import json
import os
import shutil
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click

from orchestrator.operator.preferences import preference_option, resolve
from orchestrator.operator.refs import parse_ref


def _open_db(flag: str | None, workflow: str | None) -> Any:
    """The database ``orchestrator run`` would use: --db, $ORCHESTRATOR_DATABASE_URL,
    the policy file's ``database.url`` (read leniently), else the default file."""
    from orchestrator.operator.daemon_api import policy_database_url
    from orchestrator.store.database import Database
    from orchestrator.store.engine import DATABASE_URL_ENV, choose_database

    flagged = resolve("db", flag)
    path = Path(resolve("workflow", workflow))
    try:
        chosen = flagged or os.environ.get(DATABASE_URL_ENV)
        policy_url = None if chosen else policy_database_url(path, os.environ)
    except ValueError as exc:
        raise click.ClickException(f"cannot read database.url: {exc}; pass --db") from exc
    url = choose_database(flagged, policy_url, path).url
    try:
        return Database.open(url)
    except Exception as exc:
        raise click.ClickException(f"cannot open the database: {exc}") from exc


@click.command()
@preference_option("db", "--db", metavar="URL")
@preference_option("format", "--format", "fmt", type=click.Choice(["table", "json"]))
@click.option(
    "--json", "as_json", is_flag=True, help="Print the status as one JSON document (--format json)."
)
@preference_option("url", "--url", metavar="URL")
@preference_option("workflow", "--workflow", metavar="PATH")
def status(
    db: str | None, fmt: str | None, as_json: bool, url: str | None, workflow: str | None
) -> None:
    """The dashboard table in the terminal, live from the daemon or from the database.

    The daemon is found at --url, else at server.host:server.port of the policy
    file; it is sent $ORCHESTRATOR_API_TOKEN, else the policy's server.token.
    When it cannot be reached (and --url is not given), the database is shown.
    """
    from orchestrator.operator import render
    from orchestrator.operator.daemon_api import (
        DaemonAddress,
        DaemonUnreachable,
        fetch_state,
        find_daemon,
    )
    from orchestrator.web.views.dashboard import IssueRow, cluster, issue_rows

    fmt = "json" if as_json else resolve("format", fmt)
    explicit = resolve("url", url)
    address = find_daemon(explicit, Path(resolve("workflow", workflow)), os.environ)
    state: dict[str, Any] | None = None
    if isinstance(address, DaemonAddress):
        try:
            state = fetch_state(address, timeout_s=10 if explicit else 3)
        except DaemonUnreachable as exc:
            if explicit:
                raise click.ClickException(str(exc)) from exc
            reached = render.Reached(address.url, str(exc))
        else:
            reached = render.Reached(address.url, None)
    else:
        reached = render.Reached(None, address.reason)
    if state is not None:
        rows = [IssueRow(**row) for row in state["issues"]]
        leader = state.get("leader")
        replicas = list(state.get("replicas") or [])
        queued_turns = int(state.get("queued_turns") or 0)
        as_of = str(state.get("as_of") or datetime.now(UTC).isoformat())
    else:
        database = _open_db(db, workflow)
        try:
            now = datetime.now(UTC)
            rows = issue_rows(database, None, now)
            found = cluster(database, now)
        finally:
            database.close()
        leader = found.leader
        replicas = [replica.as_json() for replica in found.replicas]
        queued_turns = found.queued_turns
        as_of = now.isoformat()
    daemon = state["daemon"] if state is not None else None
    if fmt == "json":
        document = render.status_document(
            as_of=as_of,
            reached=reached,
            daemon=daemon,
            leader=leader,
            replicas=replicas,
            queued_turns=queued_turns,
            rows=rows,
        )
        click.echo(json.dumps(document, indent=2))
        return
    for line in render.header_lines(daemon, not_reached=reached.error):
        click.echo(line)
    for line in render.replica_lines(leader, replicas):
        click.echo(line)
    # A terminal cuts the table at its width; a pipe or a file gets every line whole.
    width = shutil.get_terminal_size().columns if sys.stdout.isatty() else None
    click.echo(render.table(rows, width=width))


@click.group()
def issue() -> None:
    """Inspect or unblock one tracked issue."""


@issue.command("show")
@click.argument("ref")
@preference_option("db", "--db", metavar="URL")
@preference_option("format", "--format", "fmt", type=click.Choice(["table", "json"]))
@preference_option("workflow", "--workflow", metavar="PATH")
def issue_show(ref: str, db: str | None, fmt: str | None, workflow: str | None) -> None:
    """The timeline of OWNER/REPO#N: phase events, side effects, agent runs."""
    from orchestrator.operator import render
    from orchestrator.web.views.issue import timeline

    repo, number = parse_ref(ref)
    database = _open_db(db, workflow)
    try:
        data = timeline(database, repo, number)
    finally:
        database.close()
    if data is None:
        raise click.ClickException(f"{repo}#{number} is not tracked")
    if resolve("format", fmt) == "json":
        click.echo(json.dumps(data, indent=2, default=str))
    else:
        click.echo(render.timeline(data))


@issue.command("unblock")
@click.argument("ref")
@click.option(
    "--phase",
    "to_phase",
    metavar="PHASE",
    help="Where the flow continues (default: the phase it was blocked from).",
)
@preference_option("db", "--db", metavar="URL")
@preference_option("workflow", "--workflow", metavar="PATH")
def issue_unblock(ref: str, to_phase: str | None, db: str | None, workflow: str | None) -> None:
    """Let a blocked issue continue, where it was or in PHASE."""
    from orchestrator.domain.phases import Phase, is_allowed
    from orchestrator.store.issues import Applied, LostRace

    repo, number = parse_ref(ref)
    database = _open_db(db, workflow)
    try:
        row = database.issues.get(repo, number)
        if row is None:
            raise click.ClickException(f"{repo}#{number} is not tracked")
        if row.phase != Phase.BLOCKED:
            raise click.ClickException(f"{repo}#{number} is {row.phase}, not blocked")
        target = _unblock_target(database, row.id, to_phase)
        if not is_allowed(Phase.BLOCKED, target):
            raise click.ClickException(f"blocked cannot move to {target}")
        # The next action shown moves with the phase; the next tick plans it in detail.
        observation = {**(row.observation or {}), "next_intended_action": f"resume {target}"}
        result = database.issues.transition(
            row.id,
            Phase.BLOCKED,
            target,
            reason="unblocked by an operator",
            now=datetime.now(UTC),
            actor=f"operator:{getpass.getuser()}",
            waiting_reason=None,
            waiting_since=None,
            attempt=0,
            retry_due_at=None,
            observation=observation,
        )
    finally:
        database.close()
    if isinstance(result, LostRace):
        raise click.ClickException(f"{repo}#{number} moved to {result.actual} meanwhile")
    assert isinstance(result, Applied)
    click.echo(f"{repo}#{number}: blocked -> {target}")


def _unblock_target(database: Any, issue_id: int, flag: str | None) -> Any:
    from orchestrator.domain.phases import Phase

    if flag:
        try:
            return Phase(flag)
        except ValueError as exc:
            names = ", ".join(p.value for p in Phase)
            raise click.BadParameter(f"{flag!r} is not a phase ({names})") from exc
    for event in reversed(database.issues.events(issue_id)):
        if event.to_phase == Phase.BLOCKED and event.from_phase:
            return Phase(event.from_phase)
    return Phase.IMPLEMENTING


@click.command()
@click.argument("state", type=click.Choice(["on", "off"]))
@preference_option("workflow", "--workflow", metavar="PATH")
@click.option(
    "--file",
    "brake_file",
    type=click.Path(path_type=Path),
    help="The kill-switch file (default: rollout.kill_switch_file of the policy).",
)
def brake(state: str, workflow: str | None, brake_file: Path | None) -> None:
    """Pull (on) or release (off) the local emergency brake: no side effect while it is on."""
    path = brake_file or _kill_switch_file(Path(resolve("workflow", workflow)))
    if state == "on":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"brake pulled by {getpass.getuser()} at {datetime.now(UTC)}\n")
        click.echo(f"brake ON: {path} exists; every side effect is refused until `brake off`")
    else:
        path.unlink(missing_ok=True)
        click.echo(f"brake off: {path} removed")


def _kill_switch_file(workflow: Path) -> Path:
    """The policy's kill-switch file, read leniently: the brake must work in an emergency."""
    from orchestrator.state_home import expand_path
    from orchestrator.workflow import PolicyError, load_workflow
    from orchestrator.workflow.document import parse_document
    from orchestrator.workflow.schema import STATE_DIR

    try:
        return Path(load_workflow(workflow).policy.rollout.kill_switch_file)
    except PolicyError:
        pass  # the rest of the policy may need variables this shell lacks
    except OSError as exc:
        raise click.ClickException(f"cannot read {workflow}: {exc}; pass --file") from exc
    document, _ = parse_document(workflow.read_text(encoding="utf-8"), str(workflow))
    config = (document.config or {}) if document else {}
    rollout = config.get("rollout")
    raw = rollout.get("kill_switch_file") if isinstance(rollout, dict) else None
    path = Path(expand_path(str(raw or f"{STATE_DIR}/STOP")))
    return path if path.is_absolute() else workflow.resolve().parent / path


@click.group()
def pr() -> None:
    """A pull request's failing checks and review threads, read from GitHub."""


def _gateway(workflow: str | None) -> Any:
    from orchestrator.github.client import GitHubClient
    from orchestrator.github.gateway import GitHubGateway
    from orchestrator.wiring.credentials import policy_credentials
    from orchestrator.wiring.policy_view import WiringError, github_retry
    from orchestrator.workflow import PolicyError, load_workflow
    from orchestrator.workflow.flow import github_endpoint

    path = Path(resolve("workflow", workflow))
    try:
        policy = load_workflow(path).policy
    except (PolicyError, OSError) as exc:
        raise click.ClickException(f"cannot load {path}: {exc}") from exc
    try:
        credentials = policy_credentials(policy)
    except WiringError as exc:
        raise click.ClickException(f"{path}: {exc}") from exc
    # With kind linear the pull requests are still GitHub's: tracker.github_endpoint.
    return GitHubGateway(
        GitHubClient(github_endpoint(policy), credentials, retry=github_retry(policy))
    )


@pr.command("checks")
@click.argument("ref")
@preference_option("workflow", "--workflow", metavar="PATH")
def pr_checks(ref: str, workflow: str | None) -> None:
    """Failing checks on the head of OWNER/REPO#N, with annotations and the log tail."""
    from orchestrator.github.checks import failing_check_details
    from orchestrator.github.outcomes import PRInfo
    from orchestrator.operator import render

    repo, number = parse_ref(ref)
    gateway = _gateway(workflow)
    info = gateway.get_pr(repo, number)
    if not isinstance(info, PRInfo):
        raise click.ClickException(str(info))
    click.echo(f"{repo}#{number} head {info.head_sha[:12]}")
    click.echo(render.checks(failing_check_details(gateway.client, repo, info.head_sha)))


@pr.command("threads")
@click.argument("ref")
@preference_option("workflow", "--workflow", metavar="PATH")
@preference_option("include_bots", "--include-bots/--no-include-bots")
@preference_option("sort", "--sort", type=click.Choice(["file", "time"]))
@click.option("--all", "show_all", is_flag=True, help="Include resolved threads.")
def pr_threads(
    ref: str, workflow: str | None, include_bots: bool | None, sort: str | None, show_all: bool
) -> None:
    """Review threads of OWNER/REPO#N (unresolved ones unless --all)."""
    from orchestrator.domain.snapshot import Actor
    from orchestrator.github.prstate import inspect_pr_state

    repo, number = parse_ref(ref)
    gateway = _gateway(workflow)

    def actor(login: str, typename: str | None) -> Actor:
        return Actor(login, is_bot=typename == "Bot" or login.endswith("[bot]"))

    state = inspect_pr_state(gateway.client, repo, number, actor)
    if state is None:
        raise click.ClickException(f"{repo}#{number} is not a pull request")
    threads = [t for t in state.threads if show_all or not t.is_resolved]
    if not resolve("include_bots", include_bots):
        threads = [t for t in threads if not t.author.is_bot]
    if resolve("sort", sort) == "time":
        threads.sort(key=lambda t: t.created_at)
    else:
        threads.sort(key=lambda t: (t.path or "", t.created_at))
    if not threads:
        click.echo("No matching review threads.")
    for thread in threads:
        flags = " [resolved]" if thread.is_resolved else ""
        flags += " [outdated]" if thread.is_outdated else ""
        flags += " [bot]" if thread.author.is_bot else ""
        click.echo(
            f"{thread.path or '(conversation)'}  {thread.author.login}  "
            f"{thread.created_at:%Y-%m-%d %H:%M}{flags}  {thread.id}"
        )
        for line in thread.body.splitlines()[:8]:
            click.echo(f"    {line}")
