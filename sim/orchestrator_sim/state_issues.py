"""Issues, labels, issue events and conversation comments of the emulated GitHub."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from orchestrator_sim.errors import NotFound, Unprocessable
from orchestrator_sim.records import (
    Issue,
    IssueComment,
    IssueEvent,
    Label,
    PullRequest,
    Repo,
    make_node_id,
)
from orchestrator_sim.state_accounts import AccountsState
from orchestrator_sim.state_core import unique_names
from orchestrator_sim.state_index import RepoIndex

# Colours GitHub gives labels created implicitly by adding them to an issue.
_DEFAULT_LABEL_COLOR = "ededed"


@dataclass(frozen=True, slots=True)
class IssueQuery:
    """The filters and order of GitHub's issue list (``GET /repos/{o}/{r}/issues``).

    ``labels`` must all be present (any case); ``since`` keeps issues updated at
    or after that GitHub-format time; ``assignee`` is a login, ``none`` or ``*``.
    """

    state: str = "open"
    labels: tuple[str, ...] = ()
    since: str | None = None
    creator: str | None = None
    assignee: str | None = None
    sort: str = "created"
    direction: str = "desc"


class IssuesState(AccountsState):
    """Issues and the issue half of pull requests: labels, events and comments."""

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

    def delete_label(self, repo: Repo, actor: str, name: str) -> None:
        """Delete a label of the repository, taking it off every issue and pull request that
        carries it (each gets its ``unlabeled`` event); NotFound if there is none."""
        with self.lock:
            account = self.user(actor)
            if self.find_label(repo, name) is None:
                raise NotFound("label")
            for issue in repo.issues.values():
                if name.lower() in {n.lower() for n in issue.labels}:
                    self._drop_label(repo, issue, account.login, name)
                    issue.updated_at = self.now()
            del repo.labels[name.lower()]
            self._touch()

    def _ensure_label(self, repo: Repo, name: str) -> Label:
        return self.find_label(repo, name) or self.create_label(repo, name)

    # ----------------------------------------------------------------- issues

    def issue(self, repo: Repo, number: int) -> Issue:
        """The issue (or pull request's issue half) with this number; NotFound otherwise."""
        return self._lookup(repo.issues, number, f"issue {repo.full_name}#{number}")

    def pull(self, repo: Repo, number: int) -> PullRequest:
        """The pull request with this number; NotFound for a plain issue or a missing number."""
        return self._lookup(repo.pulls, number, f"pull request {repo.full_name}#{number}")

    def list_issues(self, repo: Repo, query: IssueQuery) -> list[Issue]:
        """The issues and pull requests ``query`` selects, in its order.

        Worked out once per version of the state, so the pages of one listing
        share it; the list is shared too, and must not be changed.
        """
        with self.lock:
            return self.memo(("issues", repo.id, query), lambda: self._select(repo, query))

    def _select(self, repo: Repo, query: IssueQuery) -> list[Issue]:
        index = self.index(repo)
        numbers: set[int] | Iterable[int]
        if query.state == "open":
            numbers = index.open_numbers
        elif query.state == "closed":
            numbers = repo.issues.keys() - index.open_numbers
        else:
            numbers = repo.issues.keys()
        labelled = index.labelled(list(query.labels))
        if labelled is not None:
            numbers = labelled.intersection(numbers)
        creator = query.creator.lower() if query.creator else None
        items = []
        for number in sorted(numbers):
            issue = repo.issues[number]
            if query.since and issue.updated_at < query.since:
                continue
            if creator and issue.author.lower() != creator:
                continue
            if query.assignee and not _assigned(issue, query.assignee):
                continue
            items.append(issue)
        items.sort(key=_order(query.sort, index), reverse=query.direction == "desc")
        return items

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
            self.index(repo).add_issue(issue)
            for name in unique_names(labels):
                label = self._ensure_label(repo, name)
                self._attach_label(repo, issue, label.name)
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
                self.index(repo).state_changed(issue)
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
                self.index(repo).state_changed(issue)
                if pr is not None and pr.head_ref in repo.branches:
                    self._move_head(repo, pr, repo.branches[pr.head_ref])
            elif state_reason is not None and issue.state == "closed":
                issue.state_reason = state_reason
            issue.updated_at = now
            self._touch()
            return issue

    def close_by_commit(self, repo: Repo, number: int, actor: str, commit_id: str) -> bool:
        """Close the open issue ``number`` because the commit ``commit_id`` that reached the
        default branch says so; False when there is no such open issue (a pull request is
        left alone)."""
        with self.lock:
            issue = repo.issues.get(number)
            if issue is None or issue.is_pull or issue.state != "open":
                return False
            account = self.user(actor)
            now = self.now()
            issue.state = "closed"
            issue.state_reason = "completed"
            issue.closed_at = now
            issue.closed_by = account.login
            issue.updated_at = now
            self._event(repo, issue, "closed", account.login, commit_id=commit_id)
            self.index(repo).state_changed(issue)
            self._touch()
            return True

    def add_labels(self, repo: Repo, number: int, actor: str, names: Iterable[str]) -> list[Label]:
        """Add labels (creating unknown ones); each newly added one writes a ``labeled`` event."""
        with self.lock:
            issue = self.issue(repo, number)
            account = self.user(actor)
            present = {n.lower() for n in issue.labels}
            for name in unique_names(names):
                if name.lower() in present:
                    continue
                label = self._ensure_label(repo, name)
                self._attach_label(repo, issue, label.name)
                present.add(name.lower())
                self._event(repo, issue, "labeled", account.login, label=label)
            issue.updated_at = self.now()
            self._touch()
            return self.issue_labels(repo, issue)

    def set_labels(self, repo: Repo, number: int, actor: str, names: Iterable[str]) -> list[Label]:
        """Replace the issue's labels, writing ``unlabeled``/``labeled`` events for the change."""
        wanted = unique_names(names)
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
                self.index(repo).label_removed(issue.number, present)
                label = self.find_label(repo, present)
                self._event(
                    repo,
                    issue,
                    "unlabeled",
                    actor,
                    label=label or Label(id=0, node_id="", name=present),
                )

    def _attach_label(self, repo: Repo, issue: Issue, name: str) -> None:
        issue.labels.append(name)
        self.index(repo).label_added(issue.number, name)

    def _move_head(self, repo: Repo, pr: PullRequest, sha: str) -> None:
        """Point a pull request at a new head commit (the index follows)."""
        old = pr.head_sha
        pr.head_sha = sha
        self.index(repo).head_moved(pr, old)

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
        self.index(repo).add_event(record)
        return record

    def issue_events(self, repo: Repo, number: int) -> list[IssueEvent]:
        """The events of one issue, oldest first."""
        with self.lock:
            self.issue(repo, number)
            return list(self.index(repo).events_by_issue.get(number, ()))

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
            self.index(repo).add_comment(comment)
            issue.updated_at = now
            self._touch()
            return comment

    def comment(self, repo: Repo, comment_id: int) -> IssueComment:
        return self._lookup(repo.comments, comment_id, f"comment {comment_id}")

    def update_comment(
        self, repo: Repo, comment_id: int, body: str, editor: str | None = None
    ) -> IssueComment:
        """Replace a comment's body; a changed body records ``editor`` and when (as GitHub's
        ``editor`` / ``lastEditedAt``), the author when no editor is named."""
        if not body:
            raise Unprocessable.field("IssueComment", "body", "missing_field")
        with self.lock:
            comment = self.comment(repo, comment_id)
            now = self.now()
            if body != comment.body:
                comment.editor = self.user(editor).login if editor else comment.author
                comment.last_edited_at = now
            comment.body = body
            comment.updated_at = now
            self._touch()
            return comment

    def delete_comment(self, repo: Repo, comment_id: int) -> None:
        with self.lock:
            comment = self.comment(repo, comment_id)
            del repo.comments[comment_id]
            self.index(repo).remove_comment(comment)
            self._touch()

    def issue_comments(self, repo: Repo, number: int) -> list[IssueComment]:
        """The comments of one issue, oldest first."""
        with self.lock:
            self.issue(repo, number)
            return list(self.index(repo).comments_by_issue.get(number, {}).values())

    def comment_count(self, repo: Repo, number: int) -> int:
        with self.lock:
            return len(self.index(repo).comments_by_issue.get(number, ()))


def _assigned(issue: Issue, assignee: str) -> bool:
    """Whether ``issue`` matches an ``assignee`` filter: ``none``, ``*`` or a login."""
    if assignee == "none":
        return not issue.assignees
    if assignee == "*":
        return bool(issue.assignees)
    return assignee.lower() in {login.lower() for login in issue.assignees}


def _order(sort: str, index: RepoIndex) -> Callable[[Issue], tuple[object, int]]:
    """The sort key of GitHub's ``sort`` parameter: created, updated or comments."""
    if sort == "comments":
        counts = index.comments_by_issue
        return lambda issue: (len(counts.get(issue.number, ())), issue.id)
    if sort == "updated":
        return lambda issue: (issue.updated_at, issue.id)
    return lambda issue: (issue.created_at, issue.id)
