"""The emulator's in-memory model of GitHub, guarded by one re-entrant lock.

`SimState` owns every record (see `orchestrator.sim.records`) and every
operation that changes them, so the REST routes, the GraphQL executor and the
control API all see one consistent world. Each public method takes the lock
itself; a caller that reads several records and wants them consistent holds
``state.lock`` around the whole read. Methods raise the errors of
`orchestrator.sim.errors` (NotFound, Unprocessable ...), never return half-done.
"""

from __future__ import annotations

import itertools
import json
import os
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from orchestrator.sim.clock import Clock, format_time, system_clock
from orchestrator.sim.errors import NotFound, Unprocessable
from orchestrator.sim.records import (
    ANNOTATION_LEVELS,
    CHECK_CONCLUSIONS,
    CHECK_STATUSES,
    PERMISSION_LEVELS,
    REVIEW_STATES,
    STATUS_STATES,
    CheckAnnotation,
    CheckRun,
    CommitStatus,
    Issue,
    IssueComment,
    IssueEvent,
    Label,
    PullRequest,
    Repo,
    Review,
    ReviewComment,
    ReviewThread,
    User,
    make_node_id,
    parse_node_id,
)
from orchestrator.sim.snapshot import from_json, to_json

__all__ = [
    "PERMISSION_LEVELS",
    "CheckAnnotation",
    "CheckRun",
    "CommitStatus",
    "InlineComment",
    "Issue",
    "IssueComment",
    "IssueEvent",
    "Label",
    "MergeabilityProbe",
    "PullRequest",
    "Repo",
    "Review",
    "ReviewComment",
    "ReviewThread",
    "SimState",
    "User",
    "make_node_id",
    "parse_node_id",
]

# (repo, base sha, head sha) -> True when the head merges cleanly, None when unknown.
MergeabilityProbe = Callable[[Repo, str, str], bool | None]

# Colours GitHub gives labels created implicitly by adding them to an issue.
_DEFAULT_LABEL_COLOR = "ededed"


K = TypeVar("K")
V = TypeVar("V")


@dataclass(frozen=True, slots=True)
class InlineComment:
    """An inline comment submitted with a review: it opens a new review thread."""

    path: str
    line: int
    body: str
    side: str = "RIGHT"
    diff_hunk: str | None = None


class SimState:
    """Every account, repository and record of the emulated GitHub, with one lock.

    Ids come from one monotonic counter; node ids are derived from them.
    ``version`` increases on every change, so readers can cache renderings.
    ``mergeability_probe`` is set by the git layer to compute whether a head
    merges cleanly into its base; ``diff_hunk_probe`` to cut a diff hunk for an
    inline comment.
    """

    def __init__(self, clock: Clock | None = None) -> None:
        self.clock: Clock = clock or system_clock
        self.lock = threading.RLock()
        self.users: dict[str, User] = {}
        self.repos: dict[str, Repo] = {}
        self.version = 0
        self.mergeability_probe: MergeabilityProbe | None = None
        self.diff_hunk_probe: Callable[[Repo, PullRequest, str, int], str | None] | None = None
        self._tokens: dict[str, str] = {}
        self._ids = itertools.count(1)
        self._last_id = 0

    # ----------------------------------------------------------------- basics

    def now(self) -> str:
        """The current time from the injected clock, in GitHub's format."""
        return format_time(self.clock())

    def new_id(self) -> int:
        """The next id of the single monotonic sequence every record draws from."""
        with self.lock:
            self._last_id = next(self._ids)
            return self._last_id

    def _lookup(self, table: Mapping[K, V], key: K, what: str) -> V:
        """``table[key]`` read under the lock, or NotFound naming ``what``."""
        with self.lock:
            found = table.get(key)
        if found is None:
            raise NotFound(what)
        return found

    def _touch(self) -> None:
        self.version += 1

    # --------------------------------------------------------------- accounts

    def add_user(
        self,
        login: str,
        *,
        token: str | None = None,
        bot: bool = False,
        organization: bool = False,
        name: str | None = None,
        email: str | None = None,
    ) -> User:
        """Create an account; a token may belong to one account only."""
        if not login or "/" in login or login.strip() != login:
            raise Unprocessable.field("User", "login", message=f"invalid login {login!r}")
        with self.lock:
            key = login.lower()
            if key in self.users:
                raise Unprocessable.field("User", "login", "already_exists", f"{login} exists")
            if token is not None and token in self._tokens:
                raise Unprocessable.field("User", "token", "already_exists", "token is in use")
            ident = self.new_id()
            kind = "Organization" if organization else ("Bot" if bot else "User")
            user = User(
                id=ident,
                login=login,
                node_id=make_node_id(kind, ident),
                token=token,
                bot=bot,
                organization=organization,
                name=name,
                email=email,
                created_at=self.now(),
            )
            self.users[key] = user
            if token is not None:
                self._tokens[token] = key
            self._touch()
            return user

    def find_user(self, login: str) -> User | None:
        with self.lock:
            return self.users.get(login.lower())

    def user(self, login: str) -> User:
        """The account with this login (case-insensitive); NotFound otherwise."""
        found = self.find_user(login)
        if found is None:
            raise NotFound(f"user {login}")
        return found

    def user_for_token(self, token: str) -> User | None:
        """The account a token authenticates, or None for an unknown token."""
        with self.lock:
            key = self._tokens.get(token)
            return self.users.get(key) if key is not None else None

    # ------------------------------------------------------------------ repos

    def add_repo(
        self,
        owner: str,
        name: str,
        *,
        private: bool = False,
        default_branch: str = "main",
        description: str | None = None,
        require_review: bool = True,
    ) -> Repo:
        """Create a repository; the owner account is created (as an organization) if missing."""
        if not name or "/" in name or name.strip() != name:
            raise Unprocessable.field("Repository", "name", message=f"invalid name {name!r}")
        with self.lock:
            account = self.find_user(owner) or self.add_user(owner, organization=True)
            key = f"{account.login}/{name}".lower()
            if key in self.repos:
                raise Unprocessable.field("Repository", "name", "already_exists", f"{key} exists")
            ident = self.new_id()
            now = self.now()
            repo = Repo(
                id=ident,
                node_id=make_node_id("Repository", ident),
                owner=account.login,
                name=name,
                created_at=now,
                updated_at=now,
                pushed_at=now,
                description=description,
                private=private,
                default_branch=default_branch,
                require_review=require_review,
            )
            if not account.organization:
                repo.permissions[account.login.lower()] = "admin"
            self.repos[key] = repo
            self._touch()
            return repo

    def find_repo(self, owner: str, name: str) -> Repo | None:
        with self.lock:
            return self.repos.get(f"{owner}/{name}".lower())

    def repo(self, owner: str, name: str) -> Repo:
        """The repository ``owner/name`` (case-insensitive); NotFound otherwise."""
        found = self.find_repo(owner, name)
        if found is None:
            raise NotFound(f"repository {owner}/{name}")
        return found

    def set_permission(self, repo: Repo, login: str, level: str | None) -> None:
        """Give ``login`` a permission level on ``repo`` (None removes it)."""
        if level is not None and level not in PERMISSION_LEVELS:
            raise Unprocessable.field(
                "Permission", "permission", message=f"level must be one of {PERMISSION_LEVELS}"
            )
        with self.lock:
            account = self.user(login)
            if level is None:
                repo.permissions.pop(account.login.lower(), None)
            else:
                repo.permissions[account.login.lower()] = level
            self._touch()

    def permission(self, repo: Repo, login: str | None) -> str | None:
        """The effective level of ``login`` on ``repo``: explicit, else read on public repos."""
        with self.lock:
            if login is None:
                return None if repo.private else "read"
            explicit = repo.permissions.get(login.lower())
            if explicit is not None:
                return explicit
            return None if repo.private else "read"

    def has_permission(self, repo: Repo, login: str | None, needed: str) -> bool:
        """Whether ``login`` holds at least the ``needed`` level on ``repo``."""
        level = self.permission(repo, login)
        if level is None:
            return False
        return PERMISSION_LEVELS.index(level) >= PERMISSION_LEVELS.index(needed)

    # ----------------------------------------------------------------- labels

    def find_label(self, repo: Repo, name: str) -> Label | None:
        with self.lock:
            return repo.labels.get(name.lower())

    def create_label(
        self,
        repo: Repo,
        name: str,
        color: str = _DEFAULT_LABEL_COLOR,
        description: str | None = None,
    ) -> Label:
        """Add a label to the repository; 422 if the name is taken or the colour is not hex."""
        color = color.lstrip("#").lower()
        if not name.strip():
            raise Unprocessable.field("Label", "name", "missing_field")
        if len(color) != 6 or any(c not in "0123456789abcdef" for c in color):
            raise Unprocessable.field("Label", "color", message=f"bad colour {color!r}")
        with self.lock:
            if name.lower() in repo.labels:
                raise Unprocessable.field("Label", "name", "already_exists")
            ident = self.new_id()
            label = Label(
                id=ident,
                node_id=make_node_id("Label", ident),
                name=name,
                color=color,
                description=description,
            )
            repo.labels[name.lower()] = label
            self._touch()
            return label

    def _ensure_label(self, repo: Repo, name: str) -> Label:
        return self.find_label(repo, name) or self.create_label(repo, name)

    # ----------------------------------------------------------------- issues

    def issue(self, repo: Repo, number: int) -> Issue:
        """The issue (or pull request's issue half) with this number; NotFound otherwise."""
        return self._lookup(repo.issues, number, f"issue {repo.full_name}#{number}")

    def pull(self, repo: Repo, number: int) -> PullRequest:
        """The pull request with this number; NotFound for a plain issue or a missing number."""
        return self._lookup(repo.pulls, number, f"pull request {repo.full_name}#{number}")

    def _new_number(self, repo: Repo) -> int:
        number = repo.next_number
        repo.next_number += 1
        return number

    def create_issue(
        self,
        repo: Repo,
        author: str,
        title: str,
        *,
        body: str | None = None,
        labels: Iterable[str] = (),
        assignees: Iterable[str] = (),
    ) -> Issue:
        """Open an issue; missing labels are created, as GitHub does for writers."""
        if not title or not title.strip():
            raise Unprocessable.field("Issue", "title", "missing_field")
        with self.lock:
            account = self.user(author)
            for login in assignees:
                self.user(login)
            number = self._new_number(repo)
            ident = self.new_id()
            now = self.now()
            issue = Issue(
                number=number,
                id=ident,
                node_id=make_node_id("Issue", ident),
                title=title,
                author=account.login,
                created_at=now,
                updated_at=now,
                body=body,
                assignees=[self.user(a).login for a in assignees],
            )
            repo.issues[number] = issue
            for name in _unique(labels):
                label = self._ensure_label(repo, name)
                issue.labels.append(label.name)
                self._event(repo, issue, "labeled", account.login, label=label)
            self._touch()
            return issue

    def update_issue(
        self,
        repo: Repo,
        number: int,
        actor: str,
        *,
        title: str | None = None,
        body: str | None = None,
        state: str | None = None,
        state_reason: str | None = None,
    ) -> Issue:
        """Change title, body or state; closing and reopening write events as GitHub does."""
        if state is not None and state not in ("open", "closed"):
            raise Unprocessable.field("Issue", "state", message="state must be open or closed")
        if title is not None and not title.strip():
            raise Unprocessable.field("Issue", "title", "missing_field")
        with self.lock:
            issue = self.issue(repo, number)
            account = self.user(actor)
            now = self.now()
            if title is not None and title != issue.title:
                self._event(
                    repo, issue, "renamed", account.login, rename_from=issue.title, rename_to=title
                )
                issue.title = title
            if body is not None:
                issue.body = body
            if state == "closed" and issue.state != "closed":
                issue.state = "closed"
                issue.state_reason = state_reason or "completed"
                issue.closed_at = now
                issue.closed_by = account.login
                self._event(repo, issue, "closed", account.login)
            elif state == "open" and issue.state != "open":
                pr = repo.pulls.get(number)
                if pr is not None and pr.merged:
                    raise Unprocessable.field(
                        "PullRequest", "state", message="merged; cannot reopen"
                    )
                issue.state = "open"
                issue.state_reason = "reopened"
                issue.closed_at = None
                issue.closed_by = None
                self._event(repo, issue, "reopened", account.login)
                if pr is not None and pr.head_ref in repo.branches:
                    pr.head_sha = repo.branches[pr.head_ref]
            elif state_reason is not None and issue.state == "closed":
                issue.state_reason = state_reason
            issue.updated_at = now
            self._touch()
            return issue

    def add_labels(self, repo: Repo, number: int, actor: str, names: Iterable[str]) -> list[Label]:
        """Add labels (creating unknown ones); each newly added one writes a ``labeled`` event."""
        with self.lock:
            issue = self.issue(repo, number)
            account = self.user(actor)
            present = {n.lower() for n in issue.labels}
            for name in _unique(names):
                if name.lower() in present:
                    continue
                label = self._ensure_label(repo, name)
                issue.labels.append(label.name)
                present.add(name.lower())
                self._event(repo, issue, "labeled", account.login, label=label)
            issue.updated_at = self.now()
            self._touch()
            return self.issue_labels(repo, issue)

    def set_labels(self, repo: Repo, number: int, actor: str, names: Iterable[str]) -> list[Label]:
        """Replace the issue's labels, writing ``unlabeled``/``labeled`` events for the change."""
        wanted = _unique(names)
        with self.lock:
            issue = self.issue(repo, number)
            account = self.user(actor)
            keep = {n.lower() for n in wanted}
            for name in list(issue.labels):
                if name.lower() not in keep:
                    self._drop_label(repo, issue, account.login, name)
            self.add_labels(repo, number, account.login, wanted)
            return self.issue_labels(repo, issue)

    def remove_label(self, repo: Repo, number: int, actor: str, name: str) -> list[Label]:
        """Remove one label; NotFound if the issue does not carry it."""
        with self.lock:
            issue = self.issue(repo, number)
            account = self.user(actor)
            if name.lower() not in {n.lower() for n in issue.labels}:
                raise NotFound(f"label {name} on {repo.full_name}#{number}")
            self._drop_label(repo, issue, account.login, name)
            issue.updated_at = self.now()
            self._touch()
            return self.issue_labels(repo, issue)

    def _drop_label(self, repo: Repo, issue: Issue, actor: str, name: str) -> None:
        for present in list(issue.labels):
            if present.lower() == name.lower():
                issue.labels.remove(present)
                label = self.find_label(repo, present)
                self._event(
                    repo,
                    issue,
                    "unlabeled",
                    actor,
                    label=label or Label(id=0, node_id="", name=present),
                )

    def issue_labels(self, repo: Repo, issue: Issue) -> list[Label]:
        """The label records an issue carries, in the order they were added."""
        with self.lock:
            found = (repo.labels.get(name.lower()) for name in issue.labels)
            return [label for label in found if label is not None]

    def _event(
        self,
        repo: Repo,
        issue: Issue,
        event: str,
        actor: str,
        *,
        label: Label | None = None,
        commit_id: str | None = None,
        requested_reviewer: str | None = None,
        rename_from: str | None = None,
        rename_to: str | None = None,
    ) -> IssueEvent:
        ident = self.new_id()
        kind = "".join(part.capitalize() for part in event.split("_")) + "Event"
        record = IssueEvent(
            id=ident,
            node_id=make_node_id(kind, ident),
            issue_number=issue.number,
            event=event,
            actor=actor,
            created_at=self.now(),
            label=label.name if label else None,
            label_color=label.color if label else None,
            commit_id=commit_id,
            requested_reviewer=requested_reviewer,
            rename_from=rename_from,
            rename_to=rename_to,
        )
        repo.events.append(record)
        return record

    def issue_events(self, repo: Repo, number: int) -> list[IssueEvent]:
        """The events of one issue, oldest first."""
        with self.lock:
            self.issue(repo, number)
            return [e for e in repo.events if e.issue_number == number]

    # --------------------------------------------------------------- comments

    def add_comment(self, repo: Repo, number: int, author: str, body: str) -> IssueComment:
        """Post a conversation comment on an issue or pull request."""
        if not body:
            raise Unprocessable.field("IssueComment", "body", "missing_field")
        with self.lock:
            issue = self.issue(repo, number)
            account = self.user(author)
            ident = self.new_id()
            now = self.now()
            comment = IssueComment(
                id=ident,
                node_id=make_node_id("IssueComment", ident),
                issue_number=number,
                author=account.login,
                body=body,
                created_at=now,
                updated_at=now,
            )
            repo.comments[ident] = comment
            issue.updated_at = now
            self._touch()
            return comment

    def comment(self, repo: Repo, comment_id: int) -> IssueComment:
        return self._lookup(repo.comments, comment_id, f"comment {comment_id}")

    def update_comment(self, repo: Repo, comment_id: int, body: str) -> IssueComment:
        """Replace a comment's body."""
        if not body:
            raise Unprocessable.field("IssueComment", "body", "missing_field")
        with self.lock:
            comment = self.comment(repo, comment_id)
            comment.body = body
            comment.updated_at = self.now()
            self._touch()
            return comment

    def delete_comment(self, repo: Repo, comment_id: int) -> None:
        with self.lock:
            self.comment(repo, comment_id)
            del repo.comments[comment_id]
            self._touch()

    def issue_comments(self, repo: Repo, number: int) -> list[IssueComment]:
        """The comments of one issue, oldest first."""
        with self.lock:
            self.issue(repo, number)
            return [c for c in repo.comments.values() if c.issue_number == number]

    def comment_count(self, repo: Repo, number: int) -> int:
        with self.lock:
            return sum(1 for c in repo.comments.values() if c.issue_number == number)

    # ------------------------------------------------------------------ pulls

    def create_pull(
        self,
        repo: Repo,
        author: str,
        title: str,
        *,
        head: str,
        base: str,
        body: str | None = None,
        draft: bool = False,
    ) -> tuple[Issue, PullRequest]:
        """Open a pull request from branch ``head`` into ``base``; both must exist and differ."""
        with self.lock:
            head_sha = repo.branches.get(head)
            if head_sha is None:
                raise Unprocessable.field("PullRequest", "head", message=f"no branch {head!r}")
            if base not in repo.branches:
                raise Unprocessable.field("PullRequest", "base", message=f"no branch {base!r}")
            if head_sha == repo.branches[base]:
                raise Unprocessable(
                    "Validation Failed",
                    errors=[
                        {
                            "resource": "PullRequest",
                            "code": "custom",
                            "message": f"No commits between {base} and {head}",
                        }
                    ],
                )
            for pr in repo.pulls.values():
                if (
                    pr.head_ref == head
                    and pr.base_ref == base
                    and repo.issues[pr.number].state == "open"
                ):
                    raise Unprocessable(
                        "Validation Failed",
                        errors=[
                            {
                                "resource": "PullRequest",
                                "code": "custom",
                                "message": (
                                    f"A pull request already exists for {repo.owner}:{head}."
                                ),
                            }
                        ],
                    )
            issue = self.create_issue(repo, author, title, body=body)
            issue.is_pull = True
            ident = self.new_id()
            pr = PullRequest(
                number=issue.number,
                id=ident,
                node_id=make_node_id("PullRequest", ident),
                head_ref=head,
                base_ref=base,
                head_sha=head_sha,
                draft=draft,
            )
            repo.pulls[issue.number] = pr
            self._touch()
            return issue, pr

    def update_pull(
        self,
        repo: Repo,
        number: int,
        actor: str,
        *,
        title: str | None = None,
        body: str | None = None,
        state: str | None = None,
        base: str | None = None,
    ) -> PullRequest:
        """Change a pull request's title, body, state or base branch."""
        with self.lock:
            pr = self.pull(repo, number)
            if base is not None:
                if base not in repo.branches:
                    raise Unprocessable.field("PullRequest", "base", message=f"no branch {base!r}")
                pr.base_ref = base
                pr.mergeable_cache = None
            self.update_issue(repo, number, actor, title=title, body=body, state=state)
            return pr

    def set_branch(self, repo: Repo, branch: str, sha: str | None) -> None:
        """Record a branch head as seen in the bare repository (None: deleted).

        Open pull requests whose head is that branch follow it.
        """
        with self.lock:
            if sha is None:
                repo.branches.pop(branch, None)
            else:
                repo.branches[branch] = sha
                for pr in repo.pulls.values():
                    if pr.head_ref == branch and repo.issues[pr.number].state == "open":
                        pr.head_sha = sha
            repo.pushed_at = self.now()
            self._touch()

    def record_merge(self, repo: Repo, number: int, actor: str, merge_sha: str) -> PullRequest:
        """Mark a pull request merged by ``actor`` with ``merge_sha`` on its base, and close it."""
        with self.lock:
            pr = self.pull(repo, number)
            issue = self.issue(repo, number)
            account = self.user(actor)
            now = self.now()
            pr.merged = True
            pr.merged_at = now
            pr.merged_by = account.login
            pr.merge_commit_sha = merge_sha
            issue.state = "closed"
            issue.state_reason = None
            issue.closed_at = now
            issue.closed_by = account.login
            issue.updated_at = now
            self._event(repo, issue, "merged", account.login, commit_id=merge_sha)
            self._event(repo, issue, "closed", account.login, commit_id=merge_sha)
            self._touch()
            return pr

    def set_mergeable_override(self, repo: Repo, number: int, value: bool | None) -> None:
        """Force a pull request (un)mergeable, or hand the answer back to git with None."""
        with self.lock:
            self.pull(repo, number).mergeable_override = value
            self._touch()

    def mergeable(self, repo: Repo, pr: PullRequest) -> bool | None:
        """Whether the head merges cleanly into the base (override first, then git)."""
        with self.lock:
            if pr.merged or repo.issues[pr.number].state == "closed":
                return None
            if pr.mergeable_override is not None:
                return pr.mergeable_override
            base_sha = repo.branches.get(pr.base_ref)
            if base_sha is None:
                return False
            prefix = f"{base_sha}:{pr.head_sha}:"
            if pr.mergeable_cache and pr.mergeable_cache.startswith(prefix):
                return pr.mergeable_cache.endswith(":1")
            if self.mergeability_probe is None:
                return True
            result = self.mergeability_probe(repo, base_sha, pr.head_sha)
            if result is not None:
                pr.mergeable_cache = prefix + ("1" if result else "0")
            return result

    def mergeable_state(self, repo: Repo, pr: PullRequest) -> str:
        """GitHub's ``mergeable_state``: clean, dirty, blocked, unstable, draft or unknown."""
        with self.lock:
            mergeable = self.mergeable(repo, pr)
            if mergeable is None:
                return "unknown"
            if not mergeable:
                return "dirty"
            if pr.draft:
                return "draft"
            if repo.require_review and self.review_decision(repo, pr) != "APPROVED":
                return "blocked"
            rollup = self.rollup_state(repo, pr.head_sha)
            if rollup in ("FAILURE", "ERROR"):
                return "unstable"
            if rollup == "PENDING":
                return "blocked"
            return "clean"

    # ---------------------------------------------------------------- reviews

    def request_reviewers(
        self, repo: Repo, number: int, actor: str, logins: Iterable[str]
    ) -> PullRequest:
        """Ask users for a review; the author cannot be asked (422), as on GitHub."""
        with self.lock:
            pr = self.pull(repo, number)
            issue = self.issue(repo, number)
            account = self.user(actor)
            for login in _unique(logins):
                reviewer = self.user(login)
                if reviewer.login.lower() == issue.author.lower():
                    raise Unprocessable(
                        "Review cannot be requested from pull request author.",
                        errors=[
                            {"resource": "PullRequest", "code": "custom", "field": "reviewers"}
                        ],
                    )
                if reviewer.login not in pr.requested_reviewers:
                    pr.requested_reviewers.append(reviewer.login)
                    self._event(
                        repo,
                        issue,
                        "review_requested",
                        account.login,
                        requested_reviewer=reviewer.login,
                    )
            issue.updated_at = self.now()
            self._touch()
            return pr

    def remove_requested_reviewers(
        self, repo: Repo, number: int, actor: str, logins: Iterable[str]
    ) -> PullRequest:
        with self.lock:
            pr = self.pull(repo, number)
            issue = self.issue(repo, number)
            account = self.user(actor)
            for login in _unique(logins):
                for present in list(pr.requested_reviewers):
                    if present.lower() == login.lower():
                        pr.requested_reviewers.remove(present)
                        self._event(
                            repo,
                            issue,
                            "review_request_removed",
                            account.login,
                            requested_reviewer=present,
                        )
            issue.updated_at = self.now()
            self._touch()
            return pr

    def submit_review(
        self,
        repo: Repo,
        number: int,
        author: str,
        state: str,
        *,
        body: str = "",
        commit_id: str | None = None,
        comments: Iterable[InlineComment] = (),
    ) -> Review:
        """Submit a review on the head (or ``commit_id``); each inline comment opens a thread.

        A review clears the author's pending review request, as on GitHub.
        """
        if state not in REVIEW_STATES or state in ("PENDING", "DISMISSED"):
            raise Unprocessable.field("PullRequestReview", "event", message=f"bad state {state!r}")
        inline = list(comments)
        if state in ("CHANGES_REQUESTED", "COMMENTED") and not body and not inline:
            raise Unprocessable.field(
                "PullRequestReview", "body", "missing_field", f"{state} needs a body"
            )
        with self.lock:
            pr = self.pull(repo, number)
            issue = self.issue(repo, number)
            account = self.user(author)
            if pr.merged or issue.state == "closed":
                raise Unprocessable.field("PullRequestReview", "pull_request", message="closed")
            if (
                state in ("APPROVED", "CHANGES_REQUESTED")
                and account.login.lower() == issue.author.lower()
            ):
                raise Unprocessable(
                    "Can not approve or request changes on your own pull request",
                    errors=[{"resource": "PullRequestReview", "code": "custom", "field": "event"}],
                )
            ident = self.new_id()
            now = self.now()
            review = Review(
                id=ident,
                node_id=make_node_id("PullRequestReview", ident),
                pull_number=number,
                author=account.login,
                state=state,
                body=body,
                commit_id=commit_id or pr.head_sha,
                submitted_at=now,
            )
            repo.reviews[ident] = review
            for item in inline:
                self._open_thread(repo, pr, account.login, item, review=review)
            for present in list(pr.requested_reviewers):
                if present.lower() == account.login.lower():
                    pr.requested_reviewers.remove(present)
            issue.updated_at = now
            self._touch()
            return review

    def _open_thread(
        self, repo: Repo, pr: PullRequest, author: str, item: InlineComment, *, review: Review
    ) -> ReviewComment:
        if not item.path or item.line < 1 or not item.body:
            raise Unprocessable.field(
                "PullRequestReviewComment",
                "path",
                message="inline comments need path, line >= 1, body",
            )
        if item.side not in ("LEFT", "RIGHT"):
            raise Unprocessable.field("PullRequestReviewComment", "side", message="LEFT or RIGHT")
        hunk = item.diff_hunk
        if hunk is None and self.diff_hunk_probe is not None:
            hunk = self.diff_hunk_probe(repo, pr, item.path, item.line)
        hunk = hunk or f"@@ -{item.line},1 +{item.line},1 @@"
        thread_ident = self.new_id()
        thread = ReviewThread(
            id=thread_ident,
            node_id=make_node_id("PullRequestReviewThread", thread_ident),
            pull_number=pr.number,
            path=item.path,
            line=item.line,
            side=item.side,
            diff_hunk=hunk,
            commit_id=review.commit_id,
        )
        repo.threads[thread_ident] = thread
        return self._add_thread_comment(repo, thread, author, item.body, review.id)

    def _add_thread_comment(
        self, repo: Repo, thread: ReviewThread, author: str, body: str, review_id: int | None
    ) -> ReviewComment:
        ident = self.new_id()
        now = self.now()
        pr = repo.pulls[thread.pull_number]
        first = thread.comment_ids[0] if thread.comment_ids else None
        comment = ReviewComment(
            id=ident,
            node_id=make_node_id("PullRequestReviewComment", ident),
            pull_number=thread.pull_number,
            thread_id=thread.id,
            author=author,
            body=body,
            path=thread.path,
            line=thread.line,
            side=thread.side,
            commit_id=pr.head_sha,
            original_commit_id=thread.commit_id,
            diff_hunk=thread.diff_hunk,
            created_at=now,
            updated_at=now,
            review_id=review_id,
            in_reply_to_id=first,
        )
        repo.review_comments[ident] = comment
        thread.comment_ids.append(ident)
        repo.issues[thread.pull_number].updated_at = now
        return comment

    def add_review_comment(
        self,
        repo: Repo,
        number: int,
        author: str,
        item: InlineComment,
        commit_id: str | None = None,
    ) -> ReviewComment:
        """A stand-alone inline comment (a single-comment COMMENTED review) opening a thread."""
        with self.lock:
            pr = self.pull(repo, number)
            account = self.user(author)
            ident = self.new_id()
            review = Review(
                id=ident,
                node_id=make_node_id("PullRequestReview", ident),
                pull_number=number,
                author=account.login,
                state="COMMENTED",
                body="",
                commit_id=commit_id or pr.head_sha,
                submitted_at=self.now(),
            )
            repo.reviews[ident] = review
            comment = self._open_thread(repo, pr, account.login, item, review=review)
            self._touch()
            return comment

    def reply_to_comment(
        self, repo: Repo, number: int, author: str, in_reply_to: int, body: str
    ) -> ReviewComment:
        """Reply in the thread of review comment ``in_reply_to`` (any comment of the thread)."""
        with self.lock:
            target = repo.review_comments.get(in_reply_to)
            if target is None or target.pull_number != number:
                raise NotFound(f"review comment {in_reply_to}")
            return self.reply_to_thread(repo, target.thread_id, author, body)

    def reply_to_thread(self, repo: Repo, thread_id: int, author: str, body: str) -> ReviewComment:
        """Append a reply to a review thread."""
        if not body:
            raise Unprocessable.field("PullRequestReviewComment", "body", "missing_field")
        with self.lock:
            thread = self.thread(repo, thread_id)
            account = self.user(author)
            comment = self._add_thread_comment(repo, thread, account.login, body, None)
            self._touch()
            return comment

    def thread(self, repo: Repo, thread_id: int) -> ReviewThread:
        return self._lookup(repo.threads, thread_id, f"review thread {thread_id}")

    def resolve_thread(
        self, repo: Repo, thread_id: int, actor: str, resolved: bool = True
    ) -> ReviewThread:
        """Mark a review thread resolved by ``actor`` (or unresolved)."""
        with self.lock:
            thread = self.thread(repo, thread_id)
            account = self.user(actor)
            thread.resolved = resolved
            thread.resolved_by = account.login if resolved else None
            repo.issues[thread.pull_number].updated_at = self.now()
            self._touch()
            return thread

    def find_thread_by_node_id(self, node_id: str) -> tuple[Repo, ReviewThread] | None:
        """The repository and review thread a GraphQL node id names, if any."""
        parsed = parse_node_id(node_id)
        if parsed is None or parsed[0] != "PullRequestReviewThread":
            return None
        with self.lock:
            for repo in self.repos.values():
                thread = repo.threads.get(parsed[1])
                if thread is not None:
                    return repo, thread
            return None

    def pull_reviews(self, repo: Repo, number: int) -> list[Review]:
        with self.lock:
            return [r for r in repo.reviews.values() if r.pull_number == number]

    def pull_threads(self, repo: Repo, number: int) -> list[ReviewThread]:
        with self.lock:
            return [t for t in repo.threads.values() if t.pull_number == number]

    def pull_review_comments(self, repo: Repo, number: int) -> list[ReviewComment]:
        with self.lock:
            return [c for c in repo.review_comments.values() if c.pull_number == number]

    def review_decision(self, repo: Repo, pr: PullRequest) -> str | None:
        """GitHub's reviewDecision from each reviewer's latest decisive review.

        CHANGES_REQUESTED wins over APPROVED; with neither it is REVIEW_REQUIRED
        (or None when the repository does not require reviews).
        """
        with self.lock:
            latest: dict[str, str] = {}
            for review in self.pull_reviews(repo, pr.number):
                if review.state in ("APPROVED", "CHANGES_REQUESTED", "DISMISSED"):
                    latest[review.author.lower()] = review.state
            decisions = set(latest.values())
            if "CHANGES_REQUESTED" in decisions:
                return "CHANGES_REQUESTED"
            if "APPROVED" in decisions:
                return "APPROVED"
            return "REVIEW_REQUIRED" if repo.require_review else None

    # ----------------------------------------------------------------- checks

    def set_check_run(
        self,
        repo: Repo,
        head_sha: str,
        name: str,
        status: str,
        *,
        conclusion: str | None = None,
        title: str | None = None,
        summary: str | None = None,
        text: str | None = None,
        annotations: Iterable[CheckAnnotation] = (),
        log: str | None = None,
        check_run_id: int | None = None,
        details_url: str | None = None,
    ) -> CheckRun:
        """Create a check run, or update ``check_run_id``; completed runs need a conclusion."""
        if status not in CHECK_STATUSES:
            raise Unprocessable.field("CheckRun", "status", message=f"bad status {status!r}")
        if status == "completed" and conclusion not in CHECK_CONCLUSIONS:
            raise Unprocessable.field(
                "CheckRun", "conclusion", message="completed needs a conclusion"
            )
        if status != "completed" and conclusion is not None:
            raise Unprocessable.field(
                "CheckRun", "conclusion", message="only completed runs conclude"
            )
        notes = list(annotations)
        for note in notes:
            if note.annotation_level not in ANNOTATION_LEVELS:
                raise Unprocessable.field("CheckRun", "annotations", message="bad annotation_level")
        if len(head_sha) != 40:
            raise Unprocessable.field("CheckRun", "head_sha", message="head_sha must be a full SHA")
        with self.lock:
            now = self.now()
            if check_run_id is not None:
                run = self.find_check_run(repo, check_run_id)
            else:
                ident = self.new_id()
                run = CheckRun(
                    id=ident,
                    node_id=make_node_id("CheckRun", ident),
                    head_sha=head_sha,
                    name=name,
                    status=status,
                    # GitHub Actions gives a job the id of its check run.
                    job_id=ident,
                    started_at=now,
                )
                repo.check_runs[ident] = run
            run.status = status
            run.conclusion = conclusion
            run.completed_at = now if status == "completed" else None
            if title is not None:
                run.output_title = title
            if summary is not None:
                run.output_summary = summary
            if text is not None:
                run.output_text = text
            if notes:
                run.annotations = notes
            if log is not None:
                run.log = log
            if details_url is not None:
                run.details_url = details_url
            self._touch()
            return run

    def check_runs_for(self, repo: Repo, sha: str, latest_only: bool = True) -> list[CheckRun]:
        """Check runs on a commit; with ``latest_only`` only the newest run of each name."""
        with self.lock:
            runs = [r for r in repo.check_runs.values() if r.head_sha == sha]
            if not latest_only:
                return runs
            newest: dict[str, CheckRun] = {}
            for run in runs:
                newest[run.name] = run
            return list(newest.values())

    def find_check_run(self, repo: Repo, check_run_id: int) -> CheckRun:
        return self._lookup(repo.check_runs, check_run_id, f"check run {check_run_id}")

    def check_run_for_job(self, repo: Repo, job_id: int) -> CheckRun:
        """The check run tied to a CI job id; NotFound otherwise."""
        with self.lock:
            for run in repo.check_runs.values():
                if run.job_id == job_id:
                    return run
            raise NotFound(f"job {job_id}")

    def set_commit_status(
        self,
        repo: Repo,
        sha: str,
        *,
        state: str,
        context: str,
        creator: str,
        description: str | None = None,
        target_url: str | None = None,
    ) -> CommitStatus:
        """Add a commit status; the newest one per context is the one that counts."""
        if state not in STATUS_STATES:
            raise Unprocessable.field("Status", "state", message=f"bad state {state!r}")
        with self.lock:
            account = self.user(creator)
            ident = self.new_id()
            now = self.now()
            status = CommitStatus(
                id=ident,
                node_id=make_node_id("StatusContext", ident),
                sha=sha,
                state=state,
                context=context or "default",
                creator=account.login,
                created_at=now,
                updated_at=now,
                description=description,
                target_url=target_url,
            )
            repo.statuses.append(status)
            self._touch()
            return status

    def latest_statuses(self, repo: Repo, sha: str) -> list[CommitStatus]:
        """The newest status of each context on a commit, newest first."""
        with self.lock:
            newest: dict[str, CommitStatus] = {}
            for status in repo.statuses:
                if status.sha == sha:
                    newest[status.context] = status
            return sorted(newest.values(), key=lambda s: s.id, reverse=True)

    def combined_status(self, repo: Repo, sha: str) -> str:
        """The combined state of commit statuses: failure/error beat pending beat success."""
        with self.lock:
            states = {s.state for s in self.latest_statuses(repo, sha)}
            if "error" in states or "failure" in states:
                return "failure"
            if "pending" in states or not states:
                return "pending"
            return "success"

    def rollup_state(self, repo: Repo, sha: str) -> str | None:
        """GraphQL's statusCheckRollup state over check runs and statuses (None if none).

        FAILURE if any run failed (failure, timed_out, cancelled, action_required)
        or a status failed, ERROR for an errored status,
        PENDING while anything is not complete, else SUCCESS.
        """
        with self.lock:
            runs = self.check_runs_for(repo, sha)
            statuses = self.latest_statuses(repo, sha)
            if not runs and not statuses:
                return None
            bad = {"failure", "timed_out", "cancelled", "action_required"}
            if any(r.status == "completed" and r.conclusion in bad for r in runs):
                return "FAILURE"
            if any(s.state == "failure" for s in statuses):
                return "FAILURE"
            if any(s.state == "error" for s in statuses):
                return "ERROR"
            if any(r.status != "completed" for r in runs) or any(
                s.state == "pending" for s in statuses
            ):
                return "PENDING"
            return "SUCCESS"

    # --------------------------------------------------------------- snapshot

    def to_json(self) -> dict[str, Any]:
        """The whole state as JSON-ready data (tokens included: snapshots are secrets)."""
        with self.lock:
            return {
                "schema": 1,
                "last_id": self._last_id,
                "users": [to_json(u) for u in self.users.values()],
                "repos": [to_json(r) for r in self.repos.values()],
            }

    def load_json(self, data: dict[str, Any]) -> None:
        """Replace the whole state with a snapshot made by `to_json`; bad data changes nothing."""
        if not isinstance(data, dict) or data.get("schema") != 1:
            raise ValueError("snapshot: not an emulator snapshot (expected schema 1)")
        users = [
            from_json(User, item, f"users[{i}]") for i, item in enumerate(data.get("users", []))
        ]
        repos = [
            from_json(Repo, item, f"repos[{i}]") for i, item in enumerate(data.get("repos", []))
        ]
        last_id = data.get("last_id")
        if not isinstance(last_id, int) or last_id < 0:
            raise ValueError("snapshot: last_id must be a non-negative integer")
        with self.lock:
            self.users = {u.login.lower(): u for u in users}
            self._tokens = {u.token: u.login.lower() for u in users if u.token is not None}
            self.repos = {r.full_name.lower(): r for r in repos}
            self._last_id = last_id
            self._ids = itertools.count(last_id + 1)
            self._touch()

    def save(self, path: Path) -> None:
        """Write the snapshot atomically (temporary file, then rename), readable by owner only."""
        data = json.dumps(self.to_json(), indent=1, sort_keys=True)
        temporary = path.with_name(path.name + ".tmp")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(data)
        os.replace(temporary, path)

    def load(self, path: Path) -> None:
        """Load a snapshot file written by `save`; errors name the file."""
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            self.load_json(data)
        except (OSError, ValueError) as exc:
            raise ValueError(f"{path}: {exc}") from exc


def _unique(names: Iterable[str]) -> list[str]:
    seen: set[str] = set()
    result: list[str] = []
    for name in names:
        if name.lower() not in seen:
            seen.add(name.lower())
            result.append(name)
    return result
