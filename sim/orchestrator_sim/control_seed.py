"""The control API's bulk seed: thousands of issues, each with its pull request, in one call.

``POST /_control/repos/{o}/{r}/seed`` opens ``count`` issues with the given
labels, as the steps of `orchestrator_sim.control_steps` would one by one;
with ``pulls`` each issue is followed by a pull request from its own branch
(one real commit on the base, written with ``git fast-import``) whose body
says ``Closes #N``, optionally with a check run on its head and a review. The
records come from the same state methods as the single steps (same ids, node
ids, events, timestamps, lazy mergeability); only the git commits are written
in one batch. Everything is checked before anything is created.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from orchestrator_sim.control_steps import ControlError, actor_login, field_value
from orchestrator_sim.emulator import Emulator
from orchestrator_sim.gitbulk import NewBranch, create_branches
from orchestrator_sim.gitstore import GitError
from orchestrator_sim.records import CHECK_CONCLUSIONS, CHECK_STATUSES, Repo

# The most issues one seed call opens.
MAX_SEED = 50_000
ISSUE = "{issue}"
_REVIEW_STATES = ("APPROVED", "CHANGES_REQUESTED", "COMMENTED")


@dataclass(frozen=True, slots=True)
class _CheckRun:
    name: str
    status: str
    conclusion: str | None


@dataclass(frozen=True, slots=True)
class _Review:
    author: str
    state: str
    body: str


@dataclass(frozen=True, slots=True)
class _Pulls:
    author: str
    base: str
    branch: str
    check_run: _CheckRun | None
    review: _Review | None
    # The pull request's body; ``{issue}`` is each one's issue number.
    body: str = "Closes #{issue}"


def seed(emulator: Emulator, params: dict[str, Any], data: dict[str, Any]) -> Any:
    """Open the issues (and pull requests) a seed body asks for; list what was made."""
    state = emulator.state
    with state.lock:
        repo = state.repo(params["owner"], params["repo"])
        author = actor_login(emulator, data)
        count = field_value(data, "count", int, required=True)
        if not 1 <= count <= MAX_SEED:
            raise ControlError(f"count must be between 1 and {MAX_SEED}")
        title = field_value(data, "title", str) or "Issue {issue}"
        if not title.strip():
            raise ControlError("title must not be blank")
        body = field_value(data, "body", str)
        labels = field_value(data, "labels", list) or []
        if not all(isinstance(name, str) and name.strip() for name in labels):
            raise ControlError("labels must be a list of names")
        pulls = _pulls(emulator, repo, field_value(data, "pulls", dict))
        step = 2 if pulls is not None else 1
        numbers = [repo.next_number + index * step for index in range(count)]
        heads = _branches(emulator, repo, pulls, numbers, title) if pulls is not None else {}
        items = []
        for number in numbers:
            issue_title = title.replace(ISSUE, str(number))
            issue = state.create_issue(repo, author, issue_title, body=body, labels=labels)
            item: dict[str, Any] = {"issue": issue.number}
            if pulls is not None:
                item.update(
                    _open_pull(
                        emulator,
                        repo,
                        pulls,
                        issue.number,
                        title=issue_title,
                        sha=heads[issue.number],
                    )
                )
            items.append(item)
        return {"items": items}


def _pulls(emulator: Emulator, repo: Repo, data: dict[str, Any] | None) -> _Pulls | None:
    if data is None:
        return None
    author = actor_login(emulator, data)
    base = field_value(data, "base", str) or repo.default_branch
    if base not in repo.branches:
        raise ControlError(f"no base branch {base!r}")
    branch = field_value(data, "branch", str) or "seed/issue-{issue}"
    if ISSUE not in branch:
        raise ControlError("branch must contain {issue}, to give each pull request its own")
    check = field_value(data, "check_run", dict)
    review = field_value(data, "review", dict)
    return _Pulls(
        author=author,
        base=base,
        branch=branch,
        body=field_value(data, "body", str) or "Closes #{issue}",
        check_run=_check_run(check) if check is not None else None,
        review=_review(emulator, author, review) if review is not None else None,
    )


def _check_run(data: dict[str, Any]) -> _CheckRun:
    status = field_value(data, "status", str) or "completed"
    conclusion = field_value(data, "conclusion", str)
    if status not in CHECK_STATUSES:
        raise ControlError(f"check_run.status must be one of {sorted(CHECK_STATUSES)}")
    if status == "completed":
        conclusion = conclusion or "success"
        if conclusion not in CHECK_CONCLUSIONS:
            raise ControlError(f"check_run.conclusion must be one of {sorted(CHECK_CONCLUSIONS)}")
    elif conclusion is not None:
        raise ControlError("only a completed check run has a conclusion")
    return _CheckRun(field_value(data, "name", str) or "ci", status, conclusion)


def _review(emulator: Emulator, pull_author: str, data: dict[str, Any]) -> _Review:
    author = actor_login(emulator, data)
    state = field_value(data, "state", str, required=True)
    body = field_value(data, "body", str) or ""
    if state not in _REVIEW_STATES:
        raise ControlError(f"review.state must be one of {_REVIEW_STATES}")
    if state != "APPROVED" and not body:
        raise ControlError(f"a {state} review needs a body")
    if state != "COMMENTED" and author.lower() == pull_author.lower():
        raise ControlError("the pull request's author cannot approve or request changes")
    return _Review(author, state, body)


def _branches(
    emulator: Emulator, repo: Repo, pulls: _Pulls, numbers: list[int], title: str
) -> dict[int, str]:
    """Write every pull request's branch (one commit each) in git; head SHA by issue."""
    names = {number: pulls.branch.replace(ISSUE, str(number)) for number in numbers}
    taken = sorted(set(names.values()) & set(repo.branches))
    if taken:
        raise ControlError(f"branch {taken[0]!r} exists already")
    branches = [
        NewBranch(
            name=names[number],
            path=f"seed/issue-{number}.md",
            content=f"{title.replace(ISSUE, str(number))}\n\nWork for #{number}.\n",
            message=f"Work for #{number}",
        )
        for number in numbers
    ]
    try:
        shas = create_branches(
            emulator.git,
            emulator.repo_path(repo),
            repo.branches[pulls.base],
            branches,
            author=emulator.identity(emulator.state.user(pulls.author)),
            moment=emulator.clock(),
        )
    except GitError as exc:
        raise ControlError(str(exc)) from exc
    return {number: shas[names[number]] for number in numbers}


def _open_pull(
    emulator: Emulator, repo: Repo, pulls: _Pulls, number: int, *, title: str, sha: str
) -> dict[str, Any]:
    """The pushed branch at ``sha``, the pull request closing issue ``number``, its check
    run and review."""
    state = emulator.state
    branch = pulls.branch.replace(ISSUE, str(number))
    state.set_branch(repo, branch, sha, pulls.author)
    _issue, pr = state.create_pull(
        repo,
        pulls.author,
        title,
        head=branch,
        base=pulls.base,
        body=pulls.body.replace(ISSUE, str(number)),
    )
    check = pulls.check_run
    if check is not None:
        state.set_check_run(repo, sha, check.name, check.status, conclusion=check.conclusion)
    review = pulls.review
    if review is not None:
        state.submit_review(repo, pr.number, review.author, review.state, body=review.body)
    return {"pull": pr.number, "branch": branch, "head_sha": sha}
