"""Linear as the tracker: issues of a team or project, their states, workpad and linked PR.

An issue is named by ``IssueRef(team key, number)`` (``ENG-12`` is
``IssueRef("ENG", 12)``), so the runtime keys Linear issues as it keys GitHub
ones. The first poll reads the scope's issues in an active state (and the open
ones carrying the repo-wide stop label); every later poll reads only the issues
updated since the newest ``updatedAt`` seen, less a small overlap, in one
request while nothing changed. Workflow states are resolved by name to ids once
per team. The workpad is one comment on the issue, found by the marker on the
comments the API key's own user wrote before one is created; the pull request
is linked as an attachment, which Linear keeps once per URL.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from orchestrator.domain.snapshot import IssueRef, TrackedIssue
from orchestrator.domain.workpad import is_workpad_comment
from orchestrator.logs import get_logger
from orchestrator.tracker import linear_queries as q
from orchestrator.tracker.base import TrackerSettings
from orchestrator.tracker.linear_client import LinearClient, LinearError

log = get_logger(__name__)

# Linear's state types that close an issue, whatever the state's name.
CLOSED_TYPES = frozenset({"completed", "canceled"})
# How far behind the newest updatedAt seen the next poll starts: an issue written
# in the same millisecond as the newest one read is read again, never missed.
POLL_OVERLAP = timedelta(seconds=2)
PAGE_SIZE = 50


@dataclass(frozen=True)
class LinearScope:
    """Which Linear issues the daemon tracks, and the kill-switch labels it honours."""

    team_key: str | None = None
    project_slug: str | None = None
    kill_switch_label: str = "orchestrator:stop"
    repo_kill_switch_label: str = "orchestrator:stop-all"

    def __post_init__(self) -> None:
        if not self.team_key and not self.project_slug:
            raise ValueError("tracker: kind linear needs tracker.team_key or tracker.project_slug")

    def issue_filter(self) -> dict[str, Any]:
        """The ``IssueFilter`` part that narrows to this scope."""
        found: dict[str, Any] = {}
        if self.team_key:
            found["team"] = {"key": {"eq": self.team_key}}
        if self.project_slug:
            found["project"] = {"slugId": {"eq": self.project_slug}}
        return found


@dataclass(frozen=True)
class LinearIssue:
    """One Linear issue as the tracker last read it."""

    id: str
    identifier: str
    ref: IssueRef
    title: str
    description: str
    state: str
    state_type: str
    labels: frozenset[str]
    branch_name: str
    url: str
    created_at: datetime
    updated_at: str
    # Identifiers of the issues that block this one and are not closed.
    blocked_by: tuple[str, ...] = ()

    @property
    def is_open(self) -> bool:
        return self.state_type not in CLOSED_TYPES

    @classmethod
    def of(cls, node: dict[str, Any]) -> LinearIssue:
        team = node.get("team") or {}
        state = node.get("state") or {}
        labels = ((node.get("labels") or {}).get("nodes")) or []
        relations = ((node.get("inverseRelations") or {}).get("nodes")) or []
        blockers = tuple(
            str(r["issue"]["identifier"])
            for r in relations
            if r.get("type") == "blocks"
            and r.get("issue")
            and ((r["issue"].get("state") or {}).get("type")) not in CLOSED_TYPES
        )
        return cls(
            id=str(node["id"]),
            identifier=str(node["identifier"]),
            ref=IssueRef(
                str(team.get("key") or node["identifier"].rpartition("-")[0]), int(node["number"])
            ),
            title=str(node.get("title") or ""),
            description=str(node.get("description") or ""),
            state=str(state.get("name") or ""),
            state_type=str(state.get("type") or ""),
            labels=frozenset(str(label["name"]) for label in labels),
            branch_name=str(node.get("branchName") or ""),
            url=str(node.get("url") or ""),
            created_at=_moment(str(node["createdAt"])),
            updated_at=str(node["updatedAt"]),
            blocked_by=blockers,
        )


@dataclass(frozen=True)
class WorkpadComment:
    """The bot's workpad comment on one issue."""

    id: str
    body: str


def _moment(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _stamp(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def identifier(ref: IssueRef) -> str:
    """The Linear identifier of a ref (``ENG-12``)."""
    return f"{ref.repo}-{ref.number}"


@dataclass
class _Known:
    issues: dict[IssueRef, LinearIssue] = field(default_factory=dict)
    # The newest updatedAt read from Linear (its own clock): where the next poll starts.
    watermark: str | None = None
    kept: set[IssueRef] = field(default_factory=set)
    # id -> updatedAt of every issue read inside the overlap window, tracked or not:
    # the probe tells them from changes.
    recent: dict[str, str] = field(default_factory=dict)


class LinearTracker:
    """The tracker adapter on Linear's GraphQL API (see the module docstring)."""

    def __init__(self, client: LinearClient, settings: TrackerSettings, scope: LinearScope) -> None:
        self.client = client
        self.settings = settings
        self.scope = scope
        self._known = _Known()
        self._lock = threading.RLock()
        self._fresh = False
        self._viewer_id: str | None = None
        self._states: dict[str, dict[str, str]] = {}
        self._workpads: dict[IssueRef, WorkpadComment] = {}
        self._attachments: dict[tuple[IssueRef, str], str] = {}

    # ------------------------------------------------------------------ reads

    def poll(self) -> int:
        """Bring the known issues up to date; the number of issues read."""
        with self._lock:
            read = self._full_read() if self._known.watermark is None else self._changed_read()
            self._fresh = True
            return read

    def _full_read(self) -> int:
        scope = self.scope.issue_filter()
        # The newest changes in the scope, first (ids and times only): whatever changes
        # after them is read next poll, and they are not taken for changes then.
        newest = self.client.execute("ChangedIssues", q.CHANGED_ISSUES, {"filter": scope})[
            "issues"
        ]["nodes"]
        watermark = (
            str(newest[0]["updatedAt"]) if newest else _stamp(datetime(2000, 1, 1, tzinfo=UTC))
        )
        self._known.recent = {str(n["id"]): str(n["updatedAt"]) for n in newest}
        active = {**scope, "state": {"name": {"in": sorted(self.settings.active_states)}}}
        stopping = {
            **scope,
            "labels": {"name": {"eq": self.scope.repo_kill_switch_label}},
            "state": {"type": {"nin": sorted(CLOSED_TYPES)}},
        }
        read = 0
        for flt in (active, stopping):
            for page in self.client.pages(
                "IssuesPage", q.ISSUES_PAGE, {"filter": flt, "first": PAGE_SIZE}, ("issues",)
            ):
                read += self._take(page)
        self._known.watermark = watermark
        self._forget_old()
        log.info("linear_full_read", issues=read, tracked=len(self._known.issues))
        return read

    def _changed_read(self) -> int:
        assert self._known.watermark is not None
        since = _stamp(_moment(self._known.watermark) - POLL_OVERLAP)
        flt = {**self.scope.issue_filter(), "updatedAt": {"gte": since}}
        changed = self._changed(flt)
        if not changed:
            return 0
        newest = _moment(self._known.watermark)
        read = 0
        # Only the issues that changed, a page of at most their number each: Linear
        # charges a connection by the page size asked for.
        for start in range(0, len(changed), PAGE_SIZE):
            ids = changed[start : start + PAGE_SIZE]
            page = self.client.execute(
                "IssuesPage",
                q.ISSUES_PAGE,
                {"filter": {**flt, "id": {"in": ids}}, "first": len(ids), "after": None},
            )["issues"]["nodes"]
            read += self._take(page)
            newest = max([newest, *(_moment(str(node["updatedAt"])) for node in page)])
        # Only a read that got every page moves the watermark: pages come newest first,
        # and one cut short by a rate limit is read again from the old watermark.
        self._known.watermark = _stamp(newest)
        self._forget_old()
        return read

    def _changed(self, flt: dict[str, Any]) -> list[str]:
        """The ids of the issues matching ``flt`` that changed since they were read.

        Ids and times only, a cheap page each (one while nothing moved): a bulk
        edit that left many issues in the overlap window costs pages of ids, not
        a read of every issue again.
        """
        seen = {issue.id: issue.updated_at for issue in self._known.issues.values()}
        seen.update(self._known.recent)
        changed: list[str] = []
        for page in self.client.pages(
            "ChangedIssues", q.CHANGED_ISSUES, {"filter": flt}, ("issues",)
        ):
            changed += [str(n["id"]) for n in page if seen.get(str(n["id"])) != str(n["updatedAt"])]
        return changed

    def _take(self, nodes: list[dict[str, Any]]) -> int:
        """Fold read issues into what is known (the watermark is the polls' to move)."""
        for node in nodes:
            issue = LinearIssue.of(node)
            known = self._known.issues.get(issue.ref)
            if known is not None and _moment(known.updated_at) > _moment(issue.updated_at):
                continue
            if self._interesting(issue):
                self._known.issues[issue.ref] = issue
            else:
                self._known.issues.pop(issue.ref, None)
            self._known.recent[issue.id] = issue.updated_at
        return len(nodes)

    def _forget_old(self) -> None:
        """Keep ``recent`` to the overlap window (the only updatedAt the probe can answer)."""
        if self._known.watermark is None:
            return
        since = _moment(self._known.watermark) - POLL_OVERLAP
        recent = self._known.recent
        for key in [k for k, stamp in recent.items() if _moment(stamp) < since]:
            del recent[key]

    def _interesting(self, issue: LinearIssue) -> bool:
        return (
            issue.state in self.settings.active_states
            or issue.ref in self._known.kept
            or (issue.is_open and self.scope.repo_kill_switch_label in issue.labels)
        )

    def tracked(self, issue: LinearIssue) -> TrackedIssue:
        """A Linear issue as the runtime's TrackedIssue."""
        return TrackedIssue(
            ref=issue.ref,
            title=issue.title,
            is_open=issue.is_open and issue.state not in self.settings.terminal_states,
            labels=issue.labels,
            created_at=issue.created_at,
            tracker_state=issue.state,
        )

    def fetch_candidates(self) -> list[TrackedIssue]:
        """Polls, then the open issues with the required labels in an active state."""
        self.poll()
        with self._lock:
            issues = [self.tracked(issue) for issue in self._known.issues.values()]
        return sorted(
            (issue for issue in issues if self.settings.is_candidate(issue)),
            key=lambda issue: (issue.ref.repo, issue.ref.number),
        )

    def refresh_by_ids(self, refs: Iterable[IssueRef]) -> dict[IssueRef, TrackedIssue]:
        """These issues as last read; the ones never seen are read by number.

        They are kept up to date from now on (pass every tracked issue that is
        not a candidate, each poll).
        """
        refs = list(refs)
        with self._lock:
            if not self._fresh:
                self.poll()
            self._fresh = False
            self._known.kept = set(refs)
            missing: dict[str, list[int]] = {}
            for ref in refs:
                if ref not in self._known.issues:
                    missing.setdefault(ref.repo, []).append(ref.number)
            for team, numbers in sorted(missing.items()):
                flt = {"team": {"key": {"eq": team}}, "number": {"in": sorted(numbers)}}
                for page in self.client.pages(
                    "IssuesPage", q.ISSUES_PAGE, {"filter": flt, "first": PAGE_SIZE}, ("issues",)
                ):
                    self._take(page)
            return {
                ref: self.tracked(self._known.issues[ref])
                for ref in refs
                if ref in self._known.issues
            }

    def read_numbers(self, numbers: Iterable[int]) -> list[IssueRef]:
        """Read the scope's issues with these numbers (whatever their team); their refs.

        For a ref whose team is not known yet (a project spanning teams, after a restart).
        """
        wanted = sorted(set(numbers))
        if not wanted:
            return []
        flt = {**self.scope.issue_filter(), "number": {"in": wanted}}
        found: list[IssueRef] = []
        with self._lock:
            for page in self.client.pages(
                "IssuesPage", q.ISSUES_PAGE, {"filter": flt, "first": PAGE_SIZE}, ("issues",)
            ):
                self._take(page)
                found.extend(LinearIssue.of(node).ref for node in page)
        return found

    def issue(self, ref: IssueRef) -> LinearIssue:
        """The issue as last read, or read now by its identifier."""
        with self._lock:
            known = self._known.issues.get(ref)
        if known is not None:
            return known
        data = self.client.execute("Issue", q.ISSUE, {"id": identifier(ref)})
        found = LinearIssue.of(data["issue"])
        with self._lock:
            self._take([data["issue"]])
        return found

    def branch_name(self, ref: IssueRef) -> str:
        """The branch Linear suggests for the issue (``issue.branchName``)."""
        return self.issue(ref).branch_name

    # ------------------------------------------------------------ kill switches

    def is_stopped(self, ref: IssueRef) -> bool:
        """Whether the issue carries the stop label, or an open issue the repo-wide one."""
        with self._lock:
            issue = self._known.issues.get(ref)
        return self.repo_stopped() or (
            issue is not None and self.scope.kill_switch_label in issue.labels
        )

    def repo_stopped(self) -> bool:
        """Whether an open issue in the scope carries the repo-wide stop label."""
        label = self.scope.repo_kill_switch_label
        with self._lock:
            return any(i.is_open and label in i.labels for i in self._known.issues.values())

    # ------------------------------------------------------------------ writes

    def viewer_id(self) -> str:
        """The id of the user the API key belongs to (the author of the bot's comments)."""
        if self._viewer_id is None:
            self._viewer_id = str(self.client.execute("Viewer", q.VIEWER)["viewer"]["id"])
        return self._viewer_id

    def state_id(self, team: str, state: str) -> str:
        """The id of ``state`` in ``team``'s workflow, cached per team (read again if unknown)."""
        for attempt in range(2):
            states = self._states.get(team)
            if states is None or attempt == 1:
                nodes = self.client.execute("TeamStates", q.TEAM_STATES, {"teamKey": team})[
                    "workflowStates"
                ]["nodes"]
                states = {str(n["name"]): str(n["id"]) for n in nodes}
                self._states[team] = states
            if state in states:
                return states[state]
        raise ValueError(
            f"tracker: Linear team {team} has no workflow state named {state!r} "
            f"(it has {', '.join(sorted(self._states.get(team, {}))) or 'none'})"
        )

    def set_tracker_state(self, ref: IssueRef, state: str) -> None:
        """Move the issue to the workflow state named ``state``."""
        issue = self.issue(ref)
        if issue.state == state:
            return
        state_id = self.state_id(ref.repo, state)
        data = self.client.execute(
            "SetState", q.SET_STATE, {"id": issue.id, "stateId": state_id}, write=True
        )
        answered = data["issueUpdate"]["issue"]
        moved = _replace_state(issue, answered)
        with self._lock:
            self._fresh = False
            if self._interesting(moved):
                self._known.issues[ref] = moved
            else:
                self._known.issues.pop(ref, None)
        log.info("linear_state_set", issue=issue.identifier, state=state)

    def find_workpad(self, ref: IssueRef) -> WorkpadComment | None:
        """The bot's workpad comment on the issue: the oldest one with the marker it wrote."""
        issue = self.issue(ref)
        viewer = self.viewer_id()
        found: WorkpadComment | None = None
        for page in self.client.pages(
            "IssueComments", q.ISSUE_COMMENTS, {"id": issue.id}, ("issue", "comments")
        ):
            for node in page:
                body = str(node.get("body") or "")
                author = (node.get("user") or {}).get("id")
                if author == viewer and is_workpad_comment(body):
                    # Pages are newest first: the last match is the oldest comment.
                    found = WorkpadComment(str(node["id"]), body)
        if found is not None:
            self._workpads[ref] = found
        else:
            self._workpads.pop(ref, None)
        return found

    def upsert_workpad(self, ref: IssueRef, body: str) -> WorkpadComment:
        """Write the workpad: update the bot's comment, or create it when there is none.

        A create whose answer was lost may have happened: the comments are read
        again before it is tried once more, so the issue keeps one workpad.
        """
        if not is_workpad_comment(body):
            raise ValueError("a workpad body must start with the workpad marker line")
        issue = self.issue(ref)
        current = self._workpads.get(ref) or self.find_workpad(ref)
        if current is not None:
            return self._update_workpad(ref, current, body)
        try:
            data = self.client.execute(
                "CreateComment", q.CREATE_COMMENT, {"issueId": issue.id, "body": body}, write=True
            )
        except LinearError as error:
            if not error.retryable:
                raise
            log.warning("linear_workpad_unknown", issue=issue.identifier, code=error.code)
            current = self.find_workpad(ref)
            if current is not None:
                return self._update_workpad(ref, current, body)
            data = self.client.execute(
                "CreateComment", q.CREATE_COMMENT, {"issueId": issue.id, "body": body}, write=True
            )
        comment = data["commentCreate"]["comment"]
        created = WorkpadComment(str(comment["id"]), body)
        self._workpads[ref] = created
        log.info("linear_workpad_created", issue=issue.identifier)
        return created

    def _update_workpad(self, ref: IssueRef, current: WorkpadComment, body: str) -> WorkpadComment:
        if current.body == body:
            return current
        self.client.execute(
            "UpdateComment", q.UPDATE_COMMENT, {"id": current.id, "body": body}, write=True
        )
        updated = WorkpadComment(current.id, body)
        self._workpads[ref] = updated
        return updated

    def link_pull_request(
        self,
        ref: IssueRef,
        url: str,
        title: str,
        *,
        subtitle: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> str:
        """Link the pull request at ``url`` as the issue's attachment; its id.

        Linear keeps one attachment per issue and URL, so linking again (after a
        lost answer, or to change the subtitle) updates it.
        """
        issue = self.issue(ref)
        variables = {
            "issueId": issue.id,
            "url": url,
            "title": title,
            "subtitle": subtitle,
            "metadata": metadata,
        }
        try:
            data = self.client.execute(
                "LinkPullRequest", q.LINK_PULL_REQUEST, variables, write=True
            )
        except LinearError as error:
            if not error.retryable:
                raise
            data = self.client.execute(
                "LinkPullRequest", q.LINK_PULL_REQUEST, variables, write=True
            )
        attachment_id = str(data["attachmentCreate"]["attachment"]["id"])
        self._attachments[(ref, url)] = attachment_id
        return attachment_id


def _replace_state(issue: LinearIssue, answered: dict[str, Any]) -> LinearIssue:
    state = answered.get("state") or {}
    return replace(
        issue,
        state=str(state.get("name") or issue.state),
        state_type=str(state.get("type") or issue.state_type),
        updated_at=str(answered.get("updatedAt") or issue.updated_at),
    )
