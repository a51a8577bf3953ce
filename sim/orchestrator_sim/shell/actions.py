"""The shell commands that change the emulated GitHub, as a person or CI would.

Issues, labels, comments, reviews and merges go through GitHub's REST API as
the person (``--as``); check runs, a person's push and branch protection go
through the control API, because on GitHub they come from a CI app, a git
client and the settings page.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from urllib.parse import quote

import click

from orchestrator_sim.records import CHECK_CONCLUSIONS, CHECK_STATUSES
from orchestrator_sim.shell.session import (
    Actor,
    Refused,
    RepoInfo,
    Session,
    ShellError,
    as_option,
    repo_argument,
    url_option,
)

_NUMBER = re.compile(r"^#?([0-9]+)$")
_MERGE_METHODS = ("merge", "squash", "rebase")
WRITE_LEVELS = ("write", "maintain", "admin")

number_argument = click.argument("number", type=click.IntRange(min=1))


def _parse_file(value: str) -> tuple[str, str]:
    path, sep, content = value.partition("=")
    if not sep or not path:
        raise click.BadParameter(f"expected PATH=CONTENT, got {value!r}", param_hint="--file")
    return path, content.replace("\\n", "\n")


# ------------------------------------------------------------------ issues


@click.group()
def issue() -> None:
    """Open issues as a person."""


@issue.command("create")
@repo_argument
@click.option("--title", required=True, help="The issue's title.")
@click.option("--body", default=None, help="The issue's text (Markdown).")
@click.option(
    "--label",
    "labels",
    multiple=True,
    metavar="LABEL",
    help="A label to put on it (repeat for more; needs triage permission, as on GitHub).",
)
@url_option
@as_option
def issue_create(
    *,
    repo: str,
    title: str,
    body: str | None,
    labels: tuple[str, ...],
    url: str,
    as_login: str | None,
) -> None:
    """Open an issue in REPO (OWNER/NAME) and print its number and URL."""
    session = Session(url, as_login)
    info = session.repo(repo)
    actor = session.actor(info)
    payload: dict[str, Any] = {"title": title, "labels": list(labels)}
    if body is not None:
        payload["body"] = body
    created = session.rest(
        "POST", f"{info.path}/issues", actor=actor, doing=f"open an issue in {repo}", body=payload
    ).body
    click.echo(f"{info.full_name}#{created['number']} {created['html_url']}")
    kept = {str(label["name"]).lower() for label in created.get("labels") or []}
    dropped = [name for name in labels if name.lower() not in kept]
    if dropped:
        # GitHub drops them silently; a person at a shell wants to know.
        click.echo(
            f"warning: {actor.login} may not label issues in {repo}; dropped: {', '.join(dropped)}",
            err=True,
        )


# ------------------------------------------------------------------ labels


@click.group()
def label() -> None:
    """Add or remove labels on an issue or pull request, as a person."""


@label.command("add")
@repo_argument
@number_argument
@click.argument("labels", nargs=-1, required=True)
@url_option
@as_option
def label_add(
    *, repo: str, number: int, labels: tuple[str, ...], url: str, as_login: str | None
) -> None:
    """Add LABELS to issue or pull request NUMBER of REPO; print its labels."""
    session = Session(url, as_login)
    info = session.repo(repo)
    actor = session.actor(info)
    session.issue(info, number, actor)
    answer = session.rest(
        "POST",
        f"{info.path}/issues/{number}/labels",
        actor=actor,
        doing=f"label {repo}#{number}",
        body={"labels": list(labels)},
    )
    click.echo(f"{info.full_name}#{number} labels: {_names(answer.body)}")


@label.command("remove")
@repo_argument
@number_argument
@click.argument("labels", nargs=-1, required=True)
@url_option
@as_option
def label_remove(
    *, repo: str, number: int, labels: tuple[str, ...], url: str, as_login: str | None
) -> None:
    """Remove LABELS from issue or pull request NUMBER of REPO; print its labels."""
    session = Session(url, as_login)
    info = session.repo(repo)
    actor = session.actor(info)
    current = session.issue(info, number, actor).get("labels") or []
    present = {str(item["name"]).lower() for item in current}
    missing = [name for name in labels if name.lower() not in present]
    if missing:
        raise ShellError(
            f"{info.full_name}#{number} has no label {', '.join(map(repr, missing))} "
            f"(its labels: {_names(current)})"
        )
    remaining: Any = current
    for name in labels:
        remaining = session.rest(
            "DELETE",
            f"{info.path}/issues/{number}/labels/{quote(name, safe='')}",
            actor=actor,
            doing=f"remove label {name!r} from {repo}#{number}",
        ).body
    click.echo(f"{info.full_name}#{number} labels: {_names(remaining)}")


def _names(labels: Any) -> str:
    names = [str(item["name"]) for item in labels or []]
    return ", ".join(names) if names else "(none)"


# ---------------------------------------------------------------- comments


@click.command()
@repo_argument
@number_argument
@click.option("--body", required=True, help="The comment's text (Markdown).")
@url_option
@as_option
def comment(*, repo: str, number: int, body: str, url: str, as_login: str | None) -> None:
    """Comment on issue or pull request NUMBER of REPO, as a person; print the comment's URL."""
    session = Session(url, as_login)
    info = session.repo(repo)
    actor = session.actor(info)
    session.issue(info, number, actor)
    created = session.rest(
        "POST",
        f"{info.path}/issues/{number}/comments",
        actor=actor,
        doing=f"comment on {repo}#{number}",
        body={"body": body},
    ).body
    click.echo(f"comment {created['id']} by {actor.login}: {created['html_url']}")


# ----------------------------------------------------------------- reviews


@click.group()
def review() -> None:
    """Review a pull request as a person (on its current head)."""


def _submit_review(
    *, repo: str, number: int, event: str, body: str, url: str, as_login: str | None
) -> None:
    session, info, actor, head = _open_pull(url, as_login, repo, number, ": nothing to review")
    done = session.rest(
        "POST",
        f"{info.path}/pulls/{number}/reviews",
        actor=actor,
        doing=f"review {repo}#{number}",
        body={"event": event, "body": body, "commit_id": head},
    ).body
    click.echo(f"{info.full_name}#{number}: {done['state']} by {actor.login} on {head[:12]}")


@review.command("approve")
@repo_argument
@number_argument
@click.option("--body", default="", help="What the approval says.")
@url_option
@as_option
def review_approve(*, repo: str, number: int, body: str, url: str, as_login: str | None) -> None:
    """Approve pull request NUMBER of REPO at its current head."""
    _submit_review(repo=repo, number=number, event="APPROVE", body=body, url=url, as_login=as_login)


@review.command("request-changes")
@repo_argument
@number_argument
@click.option("--body", required=True, help="What should change (GitHub requires it).")
@url_option
@as_option
def review_request_changes(
    *, repo: str, number: int, body: str, url: str, as_login: str | None
) -> None:
    """Request changes on pull request NUMBER of REPO at its current head."""
    _submit_review(
        repo=repo, number=number, event="REQUEST_CHANGES", body=body, url=url, as_login=as_login
    )


@review.command("comment")
@repo_argument
@number_argument
@click.option("--body", required=True, help="The review's text.")
@url_option
@as_option
def review_comment(*, repo: str, number: int, body: str, url: str, as_login: str | None) -> None:
    """Leave a review that neither approves nor requests changes."""
    _submit_review(repo=repo, number=number, event="COMMENT", body=body, url=url, as_login=as_login)


def _open_pull(
    url: str, as_login: str | None, repo: str, number: int, refusal: str
) -> tuple[Session, RepoInfo, Actor, str]:
    """The session, repository, acting person and head of open pull request ``number``.

    A closed or merged one is refused with ``refusal`` after its state.
    """
    session = Session(url, as_login)
    info = session.repo(repo)
    actor = session.actor(info)
    pull = session.pull(info, number, actor)
    if pull["state"] != "open":
        raise ShellError(f"{info.full_name}#{number} is {_pull_state(pull)}{refusal}")
    return session, info, actor, str(pull["head"]["sha"])


def _pull_state(pull: dict[str, Any]) -> str:
    return "merged" if pull.get("merged") or pull.get("merged_at") else str(pull["state"])


# ------------------------------------------------------------------- checks


@click.group()
def check() -> None:
    """Report CI results, as a CI app would."""


@check.command("set")
@repo_argument
@click.argument("target", metavar="PR|SHA|BRANCH")
@click.option("--name", required=True, help="The check's name (what branch protection requires).")
@click.option(
    "--conclusion",
    type=click.Choice(sorted(CHECK_CONCLUSIONS)),
    help="The result of a completed run (default: success when the status is completed).",
)
@click.option(
    "--status",
    type=click.Choice(sorted(CHECK_STATUSES)),
    default="completed",
    show_default=True,
    help="Where the run is; only a completed run has a conclusion.",
)
@click.option("--summary", default=None, help="The run's summary line.")
@url_option
@as_option
def check_set(
    *,
    repo: str,
    target: str,
    name: str,
    conclusion: str | None,
    status: str,
    summary: str | None,
    url: str,
    as_login: str | None,
) -> None:
    """Set check run NAME on a pull request's head (TARGET is its number), a commit or a branch.

    A later run of the same name on the same commit replaces what it shows.
    """
    if status != "completed" and conclusion is not None:
        raise click.BadParameter(
            f"a {status} check run has no conclusion", param_hint="--conclusion"
        )
    if status == "completed" and conclusion is None:
        conclusion = "success"
    session = Session(url, as_login)
    info = session.repo(repo)
    where: dict[str, Any] = {"ref": target}
    number = _NUMBER.match(target)
    if number:
        pull = session.pull(info, int(number.group(1)), session.actor(info))
        where = {"sha": str(pull["head"]["sha"])}
    try:
        run = session.control(
            "POST",
            f"{_control_repo(info)}/check-runs",
            {
                **where,
                "name": name,
                "status": status,
                "conclusion": conclusion,
                "summary": summary,
            },
        )
    except Refused as exc:
        if exc.status == 422 and "unknown ref" in str(exc.message):
            raise ShellError(
                f"{target!r} is neither a pull request number, a commit nor a branch of "
                f"{info.full_name}"
            ) from None
        raise
    on = f"head of {info.full_name}#{number.group(1)}" if number else target
    click.echo(f"{name}: {conclusion or status} on {str(run['head_sha'])[:12]} ({on})")


def _control_repo(info: RepoInfo) -> str:
    owner, _, name = info.full_name.partition("/")
    return f"/repos/{quote(owner)}/{quote(name)}"


# --------------------------------------------------------------------- push


@click.command()
@repo_argument
@click.argument("branch")
@click.option(
    "--file",
    "files",
    multiple=True,
    metavar="PATH=CONTENT",
    help="Write CONTENT to PATH (\\n in CONTENT is a line break; repeat for more files).",
)
@click.option(
    "--from-file",
    "local_files",
    multiple=True,
    metavar="PATH=LOCAL",
    help="Write the content of the local file LOCAL to PATH.",
)
@click.option("--delete", "deleted", multiple=True, metavar="PATH", help="Delete PATH.")
@click.option("-m", "--message", required=True, help="The commit message.")
@click.option(
    "--start",
    default=None,
    metavar="REF",
    help="Where a new branch starts (default: the repository's default branch).",
)
@url_option
@as_option
def push(
    *,
    repo: str,
    branch: str,
    files: tuple[str, ...],
    local_files: tuple[str, ...],
    deleted: tuple[str, ...],
    message: str,
    start: str | None,
    url: str,
    as_login: str | None,
) -> None:
    """Commit files on BRANCH of REPO as a person and push it; print the new SHA.

    A pull request whose head is BRANCH follows the push, as on GitHub.
    """
    changes: dict[str, str | None] = dict(_parse_file(value) for value in files)
    for value in local_files:
        path, local = _parse_file(value)
        try:
            changes[path] = Path(local).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise click.BadParameter(f"{local}: {exc}", param_hint="--from-file") from None
    changes.update(dict.fromkeys(deleted))
    if not changes:
        raise click.UsageError("nothing to commit: give --file, --from-file or --delete")
    session = Session(url, as_login)
    info = session.repo(repo)
    actor = session.actor(info)
    # GitHub takes a push only from someone with write access.
    level = info.permissions.get(session.key_of(actor))
    if level not in WRITE_LEVELS:
        raise ShellError(
            f"{actor.login} may not push to {info.full_name}: pushing needs write access "
            f"(theirs: {level or 'read at most'})"
        )
    result = session.control(
        "POST",
        f"{_control_repo(info)}/commits",
        {"as": actor.login, "branch": branch, "files": changes, "message": message, "start": start},
    )
    verb = "pushed to" if branch in info.branches else "created"
    click.echo(f"{result['sha']} {verb} {info.full_name}:{branch} by {actor.login}")


# --------------------------------------------------------------- protection


@click.command()
@repo_argument
@click.argument("branch")
@click.option(
    "--required-check",
    "checks",
    multiple=True,
    metavar="NAME",
    help="A check that must pass on the head before a merge (repeat for more).",
)
@click.option(
    "--required-approvals",
    type=click.IntRange(0, 6),
    default=0,
    show_default=True,
    help="Approving reviews needed from accounts with write access.",
)
@click.option(
    "--dismiss-stale-reviews", is_flag=True, help="A push dismisses approvals of older heads."
)
@click.option("--enforce-admins", is_flag=True, help="Administrators are held to the rules too.")
@click.option("--remove", is_flag=True, help="Remove the branch's protection instead.")
@url_option
def protect(
    *,
    repo: str,
    branch: str,
    checks: tuple[str, ...],
    required_approvals: int,
    dismiss_stale_reviews: bool,
    enforce_admins: bool,
    remove: bool,
    url: str,
) -> None:
    """Protect BRANCH of REPO: required checks and approvals for a merge."""
    session = Session(url)
    info = session.repo(repo)
    if branch not in info.branches:
        known = ", ".join(sorted(info.branches))
        raise ShellError(f"{info.full_name} has no branch {branch!r} (branches: {known})")
    path = f"{_control_repo(info)}/branches/{quote(branch, safe='/')}/protection"
    if remove:
        session.control("DELETE", path)
        click.echo(f"{info.full_name}:{branch} is no longer protected")
        return
    rules = session.control(
        "PUT",
        path,
        {
            "required_checks": list(checks),
            "required_approvals": required_approvals,
            "dismiss_stale_reviews": dismiss_stale_reviews,
            "enforce_admins": enforce_admins,
        },
    )
    required = ", ".join(rules.get("required_checks") or []) or "none"
    click.echo(
        f"{info.full_name}:{branch} protected: required checks {required}; "
        f"approvals {rules.get('required_approvals', required_approvals)}"
        + ("; stale reviews dismissed" if rules.get("dismiss_stale_reviews") else "")
        + ("; admins included" if rules.get("enforce_admins") else "")
    )


# -------------------------------------------------------------------- merge


@click.command()
@repo_argument
@number_argument
@click.option(
    "--method",
    type=click.Choice(_MERGE_METHODS),
    default="merge",
    show_default=True,
    help="How GitHub merges it.",
)
@url_option
@as_option
def merge(*, repo: str, number: int, method: str, url: str, as_login: str | None) -> None:
    """Merge pull request NUMBER of REPO at the head it has now, as a person."""
    session, info, actor, head = _open_pull(url, as_login, repo, number, " already")
    done = session.rest(
        "PUT",
        f"{info.path}/pulls/{number}/merge",
        actor=actor,
        doing=f"merge {repo}#{number}",
        body={"sha": head, "merge_method": method},
    ).body
    click.echo(f"{info.full_name}#{number} merged by {actor.login}: {done['sha']}")
