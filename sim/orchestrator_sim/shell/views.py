"""The shell commands that show the emulated GitHub: ``pr show`` and ``state``.

Both read GitHub's REST API as a person would (``--as``, or the repository's
most trusted person), gather what matters for a merge into plain dicts, and
print them as text or as JSON (``--format json``) for scripts.
"""

from __future__ import annotations

import json
from typing import Any

import click

from orchestrator_sim.shell.session import (
    Actor,
    RepoInfo,
    Session,
    ShellError,
    as_option,
    check_repo_name,
    repo_argument,
    url_option,
)

format_option = click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="Readable text, or JSON for scripts.",
)


# ------------------------------------------------------------------ gather


def pull_view(session: Session, info: RepoInfo, number: int, actor: Actor) -> dict[str, Any]:
    """What a person looks at before a merge: state, head, mergeability, labels, checks,
    statuses and reviews of pull request ``number``."""
    pull = session.pull(info, number, actor)
    head = str(pull["head"]["sha"])
    ref = f"{info.full_name}#{number}"
    runs = session.listing(
        f"{info.path}/commits/{head}/check-runs",
        actor=actor,
        doing=f"read the checks of {ref}",
        key="check_runs",
    )
    combined = session.rest(
        "GET",
        f"{info.path}/commits/{head}/status",
        actor=actor,
        doing=f"read the statuses of {ref}",
    ).body
    reviews = session.listing(
        f"{info.path}/pulls/{number}/reviews", actor=actor, doing=f"read the reviews of {ref}"
    )
    merged = bool(pull.get("merged"))
    return {
        "repo": info.full_name,
        "number": number,
        "title": pull["title"],
        "url": pull["html_url"],
        "state": "merged" if merged else pull["state"],
        "merged": merged,
        "merged_by": (pull.get("merged_by") or {}).get("login"),
        "merge_commit_sha": pull.get("merge_commit_sha") if merged else None,
        "draft": bool(pull.get("draft")),
        "author": pull["user"]["login"],
        "head_ref": pull["head"]["ref"],
        "base_ref": pull["base"]["ref"],
        "head_sha": head,
        "mergeable": pull.get("mergeable"),
        "mergeable_state": pull.get("mergeable_state"),
        "labels": [str(item["name"]) for item in pull.get("labels") or []],
        "checks": sorted(
            (
                {"name": run["name"], "status": run["status"], "conclusion": run["conclusion"]}
                for run in runs
            ),
            key=lambda run: str(run["name"]),
        ),
        "statuses": [
            {"context": item["context"], "state": item["state"]}
            for item in combined.get("statuses") or []
        ],
        "reviews": [
            {
                "user": item["user"]["login"],
                "state": item["state"],
                "commit_id": item.get("commit_id"),
                "on_head": item.get("commit_id") == head,
            }
            for item in reviews
        ],
        "requested_reviewers": [
            str(item["login"]) for item in pull.get("requested_reviewers") or []
        ],
    }


def repo_state(session: Session, info: RepoInfo, actor: Actor, limit: int) -> dict[str, Any]:
    """Open issues, open pull requests (in full), merged pull requests and closed issues,
    at most ``limit`` of each (the most recently updated closed ones)."""
    name = info.full_name
    issues = f"list the issues of {name}"
    pulls = f"list the pull requests of {name}"

    def is_issue(item: dict[str, Any]) -> bool:
        return "pull_request" not in item

    open_issues = session.listing(
        f"{info.path}/issues", actor=actor, doing=issues, query={"state": "open"}, limit=limit,
        keep=is_issue,
    )  # fmt: skip
    open_pulls = session.listing(
        f"{info.path}/pulls",
        actor=actor,
        doing=pulls,
        query={"state": "open"},
        limit=limit,
    )
    merged = session.listing(
        f"{info.path}/pulls",
        actor=actor,
        doing=pulls,
        query={"state": "closed", "sort": "updated"},
        limit=limit,
        keep=lambda item: bool(item.get("merged_at")),
    )
    closed = session.listing(
        f"{info.path}/issues",
        actor=actor,
        doing=issues,
        query={"state": "closed", "sort": "updated"},
        limit=limit,
        keep=is_issue,
    )
    return {
        "repo": name,
        "open_issues": [_issue_line(item) for item in open_issues],
        "open_pulls": [pull_view(session, info, int(item["number"]), actor) for item in open_pulls],
        "merged_pulls": [
            {"number": item["number"], "title": item["title"], "merged_at": item["merged_at"]}
            for item in merged
        ],
        "closed_issues": [
            {**_issue_line(item), "state_reason": item.get("state_reason")} for item in closed
        ],
    }


def _issue_line(item: dict[str, Any]) -> dict[str, Any]:
    return {
        "number": item["number"],
        "title": item["title"],
        "labels": [str(label["name"]) for label in item.get("labels") or []],
    }


# ------------------------------------------------------------------ render


def pull_lines(view: dict[str, Any]) -> list[str]:
    """``pr show`` as text, one fact a line."""
    if view["merged"]:
        state = f"merged by {view['merged_by']} as {str(view['merge_commit_sha'])[:12]}"
    else:
        state = f"{view['state']}, not merged" + (", draft" if view["draft"] else "")
    mergeable = {True: "yes", False: "no", None: "not known yet"}[view["mergeable"]]
    lines = [
        f"{view['repo']}#{view['number']}  {view['title']}",
        f"  url:        {view['url']}",
        f"  state:      {state}",
        f"  author:     {view['author']}",
        f"  branch:     {view['head_ref']} -> {view['base_ref']}",
        f"  head:       {view['head_sha']}",
        f"  labels:     {', '.join(view['labels']) or '(none)'}",
        f"  checks:     {_checks_text(view)}",
        f"  reviews:    {_reviews_text(view)}",
    ]
    if view["state"] == "open":
        lines.insert(7, f"  mergeable:  {mergeable} ({view['mergeable_state']})")
    if view["requested_reviewers"]:
        lines.append(f"  requested:  {', '.join(view['requested_reviewers'])}")
    return lines


def _checks_text(view: dict[str, Any]) -> str:
    parts = [f"{run['name']} {run['conclusion'] or run['status']}" for run in view["checks"]]
    parts += [f"{item['context']} {item['state']} (status)" for item in view["statuses"]]
    return ", ".join(parts) or "(none on this head)"


def _reviews_text(view: dict[str, Any]) -> str:
    parts = [
        f"{item['user']} {item['state']}"
        + (" (this head)" if item["on_head"] else f" (on {str(item['commit_id'])[:12]})")
        for item in view["reviews"]
    ]
    return ", ".join(parts) or "(none)"


def state_lines(state: dict[str, Any]) -> list[str]:
    """``state`` of one repository as text."""
    lines = [state["repo"]]
    lines.append(f"  open issues ({len(state['open_issues'])}):")
    for item in state["open_issues"]:
        lines.append(f"    #{item['number']} {item['title']}{_labels_text(item['labels'])}")
    lines.append(f"  open pull requests ({len(state['open_pulls'])}):")
    for view in state["open_pulls"]:
        lines.append(f"    #{view['number']} {view['title']}{_labels_text(view['labels'])}")
        lines.append(
            f"      {view['head_ref']} -> {view['base_ref']} at {view['head_sha'][:12]}, "
            f"mergeable state {view['mergeable_state']}"
        )
        lines.append(f"      checks: {_checks_text(view)}; reviews: {_reviews_text(view)}")
    lines.append(f"  merged pull requests ({len(state['merged_pulls'])}):")
    for item in state["merged_pulls"]:
        lines.append(f"    #{item['number']} {item['title']} (merged {item['merged_at']})")
    lines.append(f"  closed issues ({len(state['closed_issues'])}):")
    for item in state["closed_issues"]:
        reason = f", {item['state_reason']}" if item.get("state_reason") else ""
        lines.append(f"    #{item['number']} {item['title']}{_labels_text(item['labels'])}{reason}")
    return lines


def _labels_text(labels: list[str]) -> str:
    return f"  [{', '.join(labels)}]" if labels else ""


# ---------------------------------------------------------------- commands


@click.group()
def pr() -> None:
    """Look at pull requests as a person would."""


@pr.command("create")
@repo_argument
@click.option("--head", required=True, metavar="BRANCH", help="The branch with the changes.")
@click.option("--base", default=None, metavar="BRANCH", help="Where to merge (default branch).")
@click.option("--title", required=True, help="The pull request's title.")
@click.option(
    "--body", default=None, help="Its description (Markdown); 'Closes #N' links an issue."
)
@click.option("--draft", is_flag=True, help="Open it as a draft.")
@url_option
@as_option
def pr_create(
    *,
    repo: str,
    head: str,
    base: str | None,
    title: str,
    body: str | None,
    draft: bool,
    url: str,
    as_login: str | None,
) -> None:
    """Open a pull request in REPO from branch HEAD, as a person; print its number and URL."""
    session = Session(url, as_login)
    info = session.repo(repo)
    for option, branch in (("--head", head), ("--base", base)):
        if branch is not None and branch not in info.branches:
            raise ShellError(f"{option}: {info.full_name} has no branch {branch!r}")
    payload: dict[str, Any] = {
        "title": title,
        "head": head,
        "base": base or info.default_branch,
        "draft": draft,
    }
    if body is not None:
        payload["body"] = body
    created = session.rest(
        "POST",
        f"{info.path}/pulls",
        actor=session.actor(info),
        doing=f"open a pull request in {repo}",
        body=payload,
    ).body
    click.echo(f"{info.full_name}#{created['number']} {created['html_url']}")


@pr.command("show")
@repo_argument
@click.argument("number", type=click.IntRange(min=1))
@format_option
@url_option
@as_option
def pr_show(*, repo: str, number: int, fmt: str, url: str, as_login: str | None) -> None:
    """Pull request NUMBER of REPO: state, head, mergeability, labels, checks and reviews."""
    session = Session(url, as_login)
    info = session.repo(repo)
    view = pull_view(session, info, number, session.actor(info))
    if fmt == "json":
        click.echo(json.dumps(view, indent=2))
    else:
        click.echo("\n".join(pull_lines(view)))


@click.command()
@click.argument("repo", required=False)
@click.option(
    "--limit",
    type=click.IntRange(min=1),
    default=30,
    show_default=True,
    help="The most items shown in each list.",
)
@format_option
@url_option
@as_option
def state(*, repo: str | None, limit: int, fmt: str, url: str, as_login: str | None) -> None:
    """A summary of REPO (every repository when omitted): open issues with their labels,
    open pull requests with head, checks and reviews, merged pull requests, closed issues."""
    session = Session(url, as_login)
    names = [check_repo_name(repo)] if repo else session.repos()
    states = []
    for name in names:
        info = session.repo(name)
        states.append(repo_state(session, info, session.actor(info), limit))
    if fmt == "json":
        click.echo(json.dumps({"repos": states}, indent=2))
        return
    if not states:
        click.echo(f"the emulator at {session.url} has no repositories")
        return
    click.echo("\n\n".join("\n".join(state_lines(item)) for item in states))
