"""The scenario steps of the control API: what the humans and CI around the product do.

Each handler takes the emulator, the path parameters and the JSON body, and
returns the JSON answer; `orchestrator_sim.control_api` mounts them under
``/_control``. "as" in a body names the account doing the step.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from orchestrator_sim.clock import parse_time
from orchestrator_sim.emulator import Emulator
from orchestrator_sim.gitstore import GitError
from orchestrator_sim.records import CheckAnnotation, Repo
from orchestrator_sim.snapshot import to_json
from orchestrator_sim.state import InlineComment

ControlHandler = Callable[[Emulator, dict[str, Any], dict[str, Any]], Any]


class ControlError(Exception):
    """A control request that cannot be done; answered with ``status`` and a message."""

    def __init__(self, message: str, status: int = 422) -> None:
        super().__init__(message)
        self.status = status


def field_value(data: dict[str, Any], name: str, kind: type, *, required: bool = False) -> Any:
    value = data.get(name)
    if value is None:
        if required:
            raise ControlError(f"field {name!r} is required")
        return None
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ControlError(f"field {name!r} must be {kind.__name__}")
    return value


def actor_login(emulator: Emulator, data: dict[str, Any]) -> str:
    login = field_value(data, "as", str, required=True)
    return str(emulator.state.user(login).login)


def repo_of(emulator: Emulator, params: dict[str, Any]) -> Repo:
    """The repository the path names."""
    return emulator.state.repo(params["owner"], params["repo"])


def sha_of(emulator: Emulator, repo: Repo, data: dict[str, Any]) -> str:
    """The commit the body names by ``sha``, or by ``ref`` (a branch, or anything git resolves)."""
    sha = field_value(data, "sha", str)
    ref = field_value(data, "ref", str)
    if sha:
        return str(sha)
    if ref:
        if ref in repo.branches:
            return repo.branches[ref]
        resolved = emulator.git.resolve(emulator.repo_path(repo), ref)
        if resolved:
            return resolved
        raise ControlError(f"unknown ref {ref!r}")
    raise ControlError("give 'sha' or 'ref'")


# ---------------------------------------------------------------- accounts


def create_user(emulator: Emulator, params: dict[str, Any], data: dict[str, Any]) -> Any:
    user = emulator.state.add_user(
        field_value(data, "login", str, required=True),
        token=field_value(data, "token", str),
        bot=bool(field_value(data, "bot", bool)),
        organization=bool(field_value(data, "organization", bool)),
        name=field_value(data, "name", str),
        email=field_value(data, "email", str),
    )
    return {
        "login": user.rest_login,
        "graphql_login": user.login,
        "id": user.id,
        "node_id": user.node_id,
        "type": user.type,
    }


def get_user(emulator: Emulator, params: dict[str, Any], data: dict[str, Any]) -> Any:
    """An account with its token: what a person's shell needs to act as them over REST."""
    user = emulator.state.user(params["login"])
    return {
        "login": user.rest_login,
        "graphql_login": user.login,
        "type": user.type,
        "token": user.token,
    }


def list_repos(emulator: Emulator, params: dict[str, Any], data: dict[str, Any]) -> Any:
    with emulator.state.lock:
        return {"repos": sorted(repo.full_name for repo in emulator.state.repos.values())}


def create_repo(emulator: Emulator, params: dict[str, Any], data: dict[str, Any]) -> Any:
    files = field_value(data, "files", dict) or None
    if files is not None and not all(isinstance(v, str) for v in files.values()):
        raise ControlError("files must map paths to text")
    permissions = field_value(data, "permissions", dict) or {}
    for login in permissions:
        emulator.state.user(login)
    try:
        repo = emulator.create_repo(
            field_value(data, "owner", str, required=True),
            field_value(data, "name", str, required=True),
            files=files,
            default_branch=field_value(data, "default_branch", str) or "main",
            private=bool(field_value(data, "private", bool)),
            description=field_value(data, "description", str),
            require_review=field_value(data, "require_review", bool) is not False,
        )
    except GitError as exc:
        raise ControlError(str(exc)) from exc
    for login, level in permissions.items():
        emulator.state.set_permission(repo, login, level)
    return _repo_summary(emulator, repo)


def _repo_summary(emulator: Emulator, repo: Repo) -> dict[str, Any]:
    return {
        "full_name": repo.full_name,
        "id": repo.id,
        "node_id": repo.node_id,
        "default_branch": repo.default_branch,
        "branches": dict(repo.branches),
        "permissions": dict(repo.permissions),
        "protections": {name: to_json(rules) for name, rules in repo.protections.items()},
        "merge_settings": emulator.state.merge_settings(repo),
    }


def get_repo(emulator: Emulator, params: dict[str, Any], data: dict[str, Any]) -> Any:
    with emulator.state.lock:
        return _repo_summary(emulator, repo_of(emulator, params))


def set_permission(emulator: Emulator, params: dict[str, Any], data: dict[str, Any]) -> Any:
    repo = repo_of(emulator, params)
    level = data.get("permission")
    if level is not None and not isinstance(level, str):
        raise ControlError("permission must be a level name or null")
    emulator.state.set_permission(repo, params["login"], level)
    return {"login": params["login"], "permission": level}


# ------------------------------------------------------------------ issues


def create_issue(emulator: Emulator, params: dict[str, Any], data: dict[str, Any]) -> Any:
    repo = repo_of(emulator, params)
    issue = emulator.state.create_issue(
        repo,
        actor_login(emulator, data),
        field_value(data, "title", str, required=True),
        body=field_value(data, "body", str),
        labels=field_value(data, "labels", list) or [],
        assignees=field_value(data, "assignees", list) or [],
    )
    return {"number": issue.number, "id": issue.id, "node_id": issue.node_id}


def update_issue(emulator: Emulator, params: dict[str, Any], data: dict[str, Any]) -> Any:
    repo = repo_of(emulator, params)
    issue = emulator.state.update_issue(
        repo,
        int(params["number"]),
        actor_login(emulator, data),
        title=field_value(data, "title", str),
        body=field_value(data, "body", str),
        state=field_value(data, "state", str),
        state_reason=field_value(data, "state_reason", str),
    )
    return {"number": issue.number, "state": issue.state}


def add_labels(emulator: Emulator, params: dict[str, Any], data: dict[str, Any]) -> Any:
    repo = repo_of(emulator, params)
    labels = emulator.state.add_labels(
        repo,
        int(params["number"]),
        actor_login(emulator, data),
        field_value(data, "labels", list, required=True),
    )
    return {"labels": [label.name for label in labels]}


def remove_label(emulator: Emulator, params: dict[str, Any], data: dict[str, Any]) -> Any:
    repo = repo_of(emulator, params)
    labels = emulator.state.remove_label(
        repo, int(params["number"]), actor_login(emulator, data), params["name"]
    )
    return {"labels": [label.name for label in labels]}


def add_comment(emulator: Emulator, params: dict[str, Any], data: dict[str, Any]) -> Any:
    repo = repo_of(emulator, params)
    comment = emulator.state.add_comment(
        repo,
        int(params["number"]),
        actor_login(emulator, data),
        field_value(data, "body", str, required=True),
    )
    return {"id": comment.id, "node_id": comment.node_id}


def edit_comment(emulator: Emulator, params: dict[str, Any], data: dict[str, Any]) -> Any:
    repo = repo_of(emulator, params)
    comment = emulator.state.update_comment(
        repo,
        int(params["comment_id"]),
        field_value(data, "body", str, required=True),
        editor=actor_login(emulator, data),
    )
    return {"id": comment.id, "editor": comment.editor, "last_edited_at": comment.last_edited_at}


# ------------------------------------------------------------------- pulls


def create_pull(emulator: Emulator, params: dict[str, Any], data: dict[str, Any]) -> Any:
    repo = repo_of(emulator, params)
    _issue, pr = emulator.state.create_pull(
        repo,
        actor_login(emulator, data),
        field_value(data, "title", str, required=True),
        head=field_value(data, "head", str, required=True),
        base=field_value(data, "base", str) or repo.default_branch,
        body=field_value(data, "body", str),
        draft=bool(field_value(data, "draft", bool)),
    )
    return {"number": pr.number, "id": pr.id, "node_id": pr.node_id, "head_sha": pr.head_sha}


def submit_review(emulator: Emulator, params: dict[str, Any], data: dict[str, Any]) -> Any:
    repo = repo_of(emulator, params)
    state = field_value(data, "state", str, required=True)
    inline = []
    for index, item in enumerate(field_value(data, "comments", list) or []):
        if not isinstance(item, dict):
            raise ControlError(f"comments[{index}] must be an object")
        try:
            inline.append(
                InlineComment(
                    path=str(item["path"]),
                    line=int(item["line"]),
                    body=str(item["body"]),
                    side=str(item.get("side", "RIGHT")),
                    diff_hunk=item.get("diff_hunk"),
                )
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ControlError(f"comments[{index}] needs path, line and body") from exc
    with emulator.state.lock:
        review = emulator.state.submit_review(
            repo,
            int(params["number"]),
            actor_login(emulator, data),
            state,
            body=field_value(data, "body", str) or "",
            commit_id=field_value(data, "commit_id", str),
            comments=inline,
        )
        threads = [
            {
                "id": thread.id,
                "node_id": thread.node_id,
                "comment_id": thread.comment_ids[0],
                "path": thread.path,
                "line": thread.line,
            }
            for thread in emulator.state.pull_threads(repo, int(params["number"]))
            if thread.comment_ids
            and repo.review_comments[thread.comment_ids[0]].review_id == review.id
        ]
    return {"id": review.id, "node_id": review.node_id, "state": review.state, "threads": threads}


def reply_thread(emulator: Emulator, params: dict[str, Any], data: dict[str, Any]) -> Any:
    repo = repo_of(emulator, params)
    comment = emulator.state.reply_to_thread(
        repo,
        int(params["thread_id"]),
        actor_login(emulator, data),
        field_value(data, "body", str, required=True),
    )
    return {"id": comment.id, "node_id": comment.node_id}


def resolve_thread(emulator: Emulator, params: dict[str, Any], data: dict[str, Any]) -> Any:
    repo = repo_of(emulator, params)
    resolved = field_value(data, "resolved", bool)
    outdated = field_value(data, "outdated", bool)
    # One hold of the lock, so no reader sees (or caches) the thread half changed.
    with emulator.state.lock:
        thread = emulator.state.resolve_thread(
            repo, int(params["thread_id"]), actor_login(emulator, data), resolved is not False
        )
        if outdated is not None:
            thread.outdated = outdated
    return {"id": thread.id, "resolved": thread.resolved, "resolved_by": thread.resolved_by}


def set_mergeable(emulator: Emulator, params: dict[str, Any], data: dict[str, Any]) -> Any:
    repo = repo_of(emulator, params)
    value = data.get("mergeable")
    if value is not None and not isinstance(value, bool):
        raise ControlError("mergeable must be true, false or null")
    emulator.state.set_mergeable_override(repo, int(params["number"]), value)
    return {"number": int(params["number"]), "mergeable": value}


def merge_pull(emulator: Emulator, params: dict[str, Any], data: dict[str, Any]) -> Any:
    repo = repo_of(emulator, params)
    sha = emulator.merge_pull(
        repo,
        int(params["number"]),
        actor_login(emulator, data),
        sha=field_value(data, "sha", str),
        method=field_value(data, "method", str) or "merge",
    )
    return {"sha": sha}


# ------------------------------------------------------------- git and CI


def push_commit(emulator: Emulator, params: dict[str, Any], data: dict[str, Any]) -> Any:
    repo = repo_of(emulator, params)
    files = field_value(data, "files", dict, required=True)
    if not all(v is None or isinstance(v, str) for v in files.values()):
        raise ControlError("files must map paths to text (or null to delete)")
    sha = emulator.push_commit(
        repo,
        actor_login(emulator, data),
        field_value(data, "branch", str) or repo.default_branch,
        files,
        message=field_value(data, "message", str) or "Update files",
        start=field_value(data, "start", str),
        author_date=_time(data, "author_date"),
        committer_date=_time(data, "committer_date"),
    )
    return {"sha": sha}


def _time(data: dict[str, Any], name: str) -> datetime | None:
    text = field_value(data, name, str)
    if text is None:
        return None
    try:
        return parse_time(text)
    except ValueError as exc:
        raise ControlError(f"{name} must be an ISO 8601 time, got {text!r}") from exc


def set_mergeability_delay(emulator: Emulator, params: dict[str, Any], data: dict[str, Any]) -> Any:
    delay = data.get("seconds")
    if isinstance(delay, bool) or not isinstance(delay, int | float) or delay < 0:
        raise ControlError("seconds must be a number >= 0")
    emulator.state.mergeability_delay = float(delay)
    return {"seconds": float(delay)}


def get_mergeability_delay(emulator: Emulator, params: dict[str, Any], data: dict[str, Any]) -> Any:
    return {"seconds": emulator.state.mergeability_delay}


def set_check_run(emulator: Emulator, params: dict[str, Any], data: dict[str, Any]) -> Any:
    repo = repo_of(emulator, params)
    notes = []
    for index, item in enumerate(field_value(data, "annotations", list) or []):
        if not isinstance(item, dict):
            raise ControlError(f"annotations[{index}] must be an object")
        try:
            notes.append(
                CheckAnnotation(
                    path=str(item["path"]),
                    start_line=int(item["start_line"]),
                    end_line=int(item.get("end_line") or item["start_line"]),
                    annotation_level=str(item.get("annotation_level", "failure")),
                    message=str(item["message"]),
                    title=item.get("title"),
                    raw_details=item.get("raw_details"),
                )
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ControlError(f"annotations[{index}] needs path, start_line and message") from exc
    run = emulator.state.set_check_run(
        repo,
        sha_of(emulator, repo, data),
        field_value(data, "name", str) or "ci",
        field_value(data, "status", str) or "completed",
        conclusion=field_value(data, "conclusion", str),
        title=field_value(data, "title", str),
        summary=field_value(data, "summary", str),
        text=field_value(data, "text", str),
        annotations=notes,
        log=field_value(data, "log", str),
        check_run_id=field_value(data, "id", int),
        details_url=field_value(data, "details_url", str),
    )
    return {"id": run.id, "job_id": run.job_id, "node_id": run.node_id, "head_sha": run.head_sha}


def set_status(emulator: Emulator, params: dict[str, Any], data: dict[str, Any]) -> Any:
    repo = repo_of(emulator, params)
    status = emulator.state.set_commit_status(
        repo,
        sha_of(emulator, repo, data),
        state=field_value(data, "state", str, required=True),
        context=field_value(data, "context", str) or "default",
        creator=actor_login(emulator, data),
        description=field_value(data, "description", str),
        target_url=field_value(data, "target_url", str),
    )
    return {"id": status.id}
