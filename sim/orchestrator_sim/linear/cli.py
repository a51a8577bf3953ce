"""``orchestrator sim linear``: play the people around a Linear tracker against a running emulator.

Each command is one call to the emulator's ``/_control/linear`` API (served by
``orchestrator sim serve`` on the same port as GitHub) and prints its JSON
answer, so a demo or a person at a terminal can create issues, move them,
label them and comment as someone while the product polls.
"""

from __future__ import annotations

import json
from typing import Any

import click

from orchestrator_sim.control import ControlRequestError
from orchestrator_sim.linear.client import LinearControl

DEFAULT_URL = "http://127.0.0.1:8787"


def _client(ctx: click.Context) -> LinearControl:
    client: LinearControl = ctx.obj
    return client


def _show(result: Any) -> None:
    click.echo(json.dumps(result, indent=2, sort_keys=True))


def _call(ctx: click.Context, action: Any) -> None:
    try:
        _show(action(_client(ctx)))
    except ControlRequestError as exc:
        raise click.ClickException(exc.message) from None
    except OSError as exc:
        raise click.ClickException(
            f"cannot reach the emulator at {_client(ctx).base_url}: {exc}"
        ) from None


@click.group("linear")
@click.option(
    "--url",
    default=DEFAULT_URL,
    show_default=True,
    envvar="ORCHESTRATOR_SIM_URL",
    help="Base URL of a running emulator (orchestrator sim serve).",
)
@click.pass_context
def linear_command(ctx: click.Context, url: str) -> None:
    """Drive the emulated Linear workspace of a running emulator."""
    try:
        ctx.obj = LinearControl(url)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--url") from exc


@linear_command.command("show")
@click.argument("issue")
@click.pass_context
def show(ctx: click.Context, issue: str) -> None:
    """Print one issue (ENG-12 or its id) with state, labels, comments and links."""
    _call(ctx, lambda c: c.issue(issue))


@linear_command.command("state")
@click.pass_context
def summary(ctx: click.Context) -> None:
    """Print the workspace: teams, their states and the issues in each, users, labels."""
    _call(ctx, lambda c: c.summary())


@linear_command.group("issue")
def issue_group() -> None:
    """Create issues and move them between workflow states."""


@issue_group.command("create")
@click.option("--team", required=True, help="Team key, e.g. ENG.")
@click.option("--title", required=True)
@click.option("--description")
@click.option("--state", help="Workflow state name (default: the team's first unstarted one).")
@click.option("--label", "labels", multiple=True, help="Label name; repeat for several.")
@click.option("--project", help="Project name or slug id.")
@click.option("--assignee", help="User name or email.")
@click.option("--priority", type=click.IntRange(0, 4), default=0, show_default=True)
@click.pass_context
def issue_create(
    ctx: click.Context,
    *,
    team: str,
    title: str,
    description: str | None,
    state: str | None,
    labels: tuple[str, ...],
    project: str | None,
    assignee: str | None,
    priority: int,
) -> None:
    """Create an issue in a team."""
    fields = {
        "description": description,
        "state": state,
        "labels": list(labels),
        "project": project,
        "assignee": assignee,
        "priority": priority,
    }
    _call(ctx, lambda c: c.create_issue(team, title, **fields))


@issue_group.command("state")
@click.argument("issue")
@click.argument("state")
@click.option(
    "--as", "user", help="The user who makes the change (default: an automation, no actor)."
)
@click.pass_context
def issue_state(ctx: click.Context, issue: str, state: str, user: str | None) -> None:
    """Move ISSUE to the workflow state named STATE (as a person dragging the card)."""
    _call(ctx, lambda c: c.set_state(issue, state, as_user=user))


@linear_command.group("label")
def label_group() -> None:
    """Add labels to an issue or take them off."""


@label_group.command("add")
@click.argument("issue")
@click.argument("labels", nargs=-1, required=True)
@click.option(
    "--as", "user", help="The user who makes the change (default: an automation, no actor)."
)
@click.pass_context
def label_add(ctx: click.Context, issue: str, labels: tuple[str, ...], user: str | None) -> None:
    """Add LABELS (names) to ISSUE."""
    _call(ctx, lambda c: c.add_labels(issue, *labels, as_user=user))


@label_group.command("remove")
@click.argument("issue")
@click.argument("label")
@click.option(
    "--as", "user", help="The user who makes the change (default: an automation, no actor)."
)
@click.pass_context
def label_remove(ctx: click.Context, issue: str, label: str, user: str | None) -> None:
    """Take LABEL off ISSUE."""
    _call(ctx, lambda c: c.remove_label(issue, label, as_user=user))


@linear_command.command("comment")
@click.argument("issue")
@click.argument("body")
@click.option("--as", "user", required=True, help="The user who writes the comment.")
@click.pass_context
def comment(ctx: click.Context, issue: str, body: str, user: str) -> None:
    """Comment on ISSUE as a user."""
    _call(ctx, lambda c: c.comment(issue, user, body))


@linear_command.group("setup")
def setup_group() -> None:
    """Create the workspace's users (with API keys), teams, labels and projects."""


@setup_group.command("user")
@click.argument("name")
@click.option("--api-key", help="Personal API key the user's requests send bare.")
@click.option("--oauth-token", help="OAuth token the user's requests send after 'Bearer'.")
@click.option("--git-username", help="Prefix of the user's suggested branch names.")
@click.option("--email")
@click.option(
    "--kind",
    type=click.Choice(["member", "guest", "admin", "app"]),
    default="member",
    show_default=True,
    help="A member, a guest (limited to some teams), an admin, or an app (integration) user.",
)
@click.pass_context
def setup_user(
    ctx: click.Context,
    *,
    name: str,
    api_key: str | None,
    oauth_token: str | None,
    git_username: str | None,
    email: str | None,
    kind: str,
) -> None:
    """Create a user called NAME."""
    extra: dict[str, Any] = {
        "oauth_token": oauth_token,
        "git_username": git_username,
        "email": email,
    }
    if kind != "member":
        extra[kind] = True
    _call(ctx, lambda c: c.create_user(name, api_key, **extra))


@setup_group.command("team")
@click.argument("key")
@click.option("--name", help="Team name (default: the key).")
@click.option(
    "--state",
    "states",
    multiple=True,
    metavar="NAME=TYPE",
    help="A workflow state, e.g. 'In Progress=started'; repeat in board order "
    "(default: Linear's Backlog, Todo, In Progress, In Review, Done, Canceled).",
)
@click.pass_context
def setup_team(ctx: click.Context, key: str, name: str | None, states: tuple[str, ...]) -> None:
    """Create a team whose issues are numbered KEY-1, KEY-2 ..."""
    parsed = []
    for item in states:
        state_name, sep, kind = item.rpartition("=")
        if not sep or not state_name:
            raise click.BadParameter(f"{item!r} is not NAME=TYPE", param_hint="--state")
        parsed.append({"name": state_name, "type": kind})
    _call(ctx, lambda c: c.create_team(key, name, parsed or None))


@setup_group.command("label")
@click.argument("name")
@click.option("--team", help="Team key; without it the label belongs to the workspace.")
@click.pass_context
def setup_label(ctx: click.Context, name: str, team: str | None) -> None:
    """Create a label."""
    _call(ctx, lambda c: c.create_label(name, team))


@setup_group.command("project")
@click.argument("name")
@click.option("--slug-id", help="The project's slug id (default: derived from the name).")
@click.pass_context
def setup_project(ctx: click.Context, name: str, slug_id: str | None) -> None:
    """Create a project."""
    _call(ctx, lambda c: c.create_project(name, slug_id))
