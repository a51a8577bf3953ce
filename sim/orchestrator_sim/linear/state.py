"""The emulated Linear workspace and the operations that change it.

The GraphQL resolvers and the control API share these operations, so a state
change made by a test (``set_state``) and one made by the product
(``issueUpdate``) leave the same trace: every change of an issue's state or
labels adds an ``IssueHistory`` entry naming its actor (the API key's user for
a mutation, the user a test acts as, or nobody for an automation).
Operations raise `LinearInputError` (Linear's "invalid input") with a message
naming what was wrong.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from orchestrator_sim.linear.records import (
    DEFAULT_STATES,
    STATE_TYPES,
    Attachment,
    Comment,
    IssueHistory,
    IssueLabel,
    IssueRelation,
    LinearIssue,
    LinearUser,
    Project,
    Team,
    WorkflowState,
    slugify,
)
from orchestrator_sim.linear.store import LinearInputError, LinearStore

__all__ = ["LinearInputError", "LinearState"]


_STATE_COLORS = {
    "triage": "#fc7840",
    "backlog": "#bec2c8",
    "unstarted": "#e2e2e2",
    "started": "#f2c94c",
    "completed": "#5e6ad2",
    "canceled": "#95a2b3",
}


class LinearState(LinearStore):
    """A workspace whose records change only through these operations."""

    def create_user(
        self,
        display_name: str,
        *,
        name: str | None = None,
        email: str | None = None,
        api_key: str | None = None,
        oauth_token: str | None = None,
        git_username: str | None = None,
        guest: bool = False,
        admin: bool = False,
        app: bool = False,
        active: bool = True,
    ) -> LinearUser:
        address = email or f"{display_name.lower()}@example.com"
        with self.lock:
            self._check_display_name(display_name)
            # One account per address: the email is what names a person for good.
            if any(u.email.lower() == address.lower() for u in self.users.values()):
                raise LinearInputError(f"a user with the email {address!r} already exists")
            for secret in (api_key, oauth_token):
                if secret and self._secret_taken(secret):
                    raise LinearInputError("that key is already another user's")
            now = self.now()
            user = LinearUser(
                id=self.new_id(),
                name=name or display_name,
                display_name=display_name,
                email=address,
                created_at=now,
                updated_at=now,
                api_key=api_key,
                oauth_token=oauth_token,
                git_username=git_username,
                guest=guest,
                admin=admin,
                app=app,
                active=active,
            )
            self.users[user.id] = user
            self._changed()
            return user

    def update_user(
        self,
        ref: str,
        changes: dict[str, bool] | None = None,
        *,
        name: str | None = None,
        display_name: str | None = None,
    ) -> LinearUser:
        """Suspend or restore a user, or change its role (``active``, ``guest``, ``admin``);
        or change its full ``name`` or ``display_name``, as Linear lets each user do
        (``userUpdate``). The full name need not be unique; the display name must be, among
        the names held now, so one given up is free for anyone. All or nothing."""
        flags = changes or {}
        unknown = set(flags) - {"active", "guest", "admin"}
        if unknown:
            raise LinearInputError(f"a user's {', '.join(sorted(unknown))} cannot be changed")
        if name is not None and not name.strip():
            raise LinearInputError("a user's name must not be empty")
        with self.lock:
            user = self.user(ref)
            if display_name is not None:
                self._check_display_name(display_name, but=user)
                user.display_name = display_name
            if name is not None:
                user.name = name
            for flag, value in flags.items():
                setattr(user, flag, bool(value))
            user.updated_at = self.now()
            self._changed()
            return user

    def _check_display_name(self, display_name: str, but: LinearUser | None = None) -> None:
        if not display_name.strip():
            raise LinearInputError("a user needs a display name")
        wanted = display_name.lower()
        if any(u is not but and u.display_name.lower() == wanted for u in self.users.values()):
            raise LinearInputError(f"the display name {display_name!r} is another user's")

    def _secret_taken(self, secret: str) -> bool:
        return any(secret in (u.api_key, u.oauth_token) for u in self.users.values())

    def create_team(
        self, key: str, name: str, states: Iterable[tuple[str, str]] | None = None
    ) -> Team:
        """A team and its workflow states (``(name, type)`` pairs; Linear's defaults if None)."""
        if not key.isalnum() or not key.isupper():
            raise LinearInputError(f"team key {key!r} must be upper-case letters and digits")
        wanted = list(states) if states is not None else list(DEFAULT_STATES)
        if not wanted:
            raise LinearInputError("a team needs at least one workflow state")
        for state_name, kind in wanted:
            if kind not in STATE_TYPES:
                raise LinearInputError(
                    f"state {state_name!r}: type must be one of {', '.join(STATE_TYPES)}"
                )
        with self.lock:
            if any(t.key == key for t in self.teams.values()):
                raise LinearInputError(f"team {key} already exists")
            now = self.now()
            team = Team(id=self.new_id(), key=key, name=name, created_at=now, updated_at=now)
            self.teams[team.id] = team
            for position, (state_name, kind) in enumerate(wanted):
                state = WorkflowState(
                    id=self.new_id(),
                    team_id=team.id,
                    name=state_name,
                    type=kind,
                    position=position,
                    color=_STATE_COLORS[kind],
                    created_at=now,
                    updated_at=now,
                )
                self.states[state.id] = state
            self._changed()
            return team

    def create_project(self, name: str, slug_id: str | None = None) -> Project:
        with self.lock:
            now = self.now()
            project_id = self.new_id()
            slug = slug_id or f"{slugify(name, 30)}-{project_id[-12:]}"
            if any(p.slug_id == slug for p in self.projects.values()):
                raise LinearInputError(f"project slug {slug!r} is taken")
            project = Project(project_id, name, slug, now, now)
            self.projects[project.id] = project
            self._changed()
            return project

    def create_label(
        self, name: str, *, color: str = "#bec2c8", team: str | None = None
    ) -> IssueLabel:
        with self.lock:
            team_id = self.team(team).id if team else None
            if any(
                lab.name.lower() == name.lower() and lab.team_id == team_id
                for lab in self.labels.values()
            ):
                raise LinearInputError(f"label {name!r} already exists")
            now = self.now()
            label = IssueLabel(self.new_id(), name, color, now, now, team_id)
            self.labels[label.id] = label
            self._changed()
            return label

    def create_issue(
        self,
        team: str,
        title: str,
        *,
        description: str | None = None,
        state: str | None = None,
        priority: int = 0,
        project: str | None = None,
        labels: Iterable[str] = (),
        assignee: str | None = None,
        creator: str | None = None,
    ) -> LinearIssue:
        """A new issue; ``state`` defaults to the team's first unstarted (else first) state."""
        if not title.strip():
            raise LinearInputError("an issue needs a title")
        if priority not in range(5):
            raise LinearInputError("priority must be 0 (none) to 4 (low)")
        with self.lock:
            found = self.team(team)
            if state is not None:
                chosen = self.state_of(found, state)
            else:
                states = self.team_states(found.id)
                chosen = next((s for s in states if s.type == "unstarted"), states[0])
            label_ids = [self.label(ref, found.id).id for ref in labels]
            found.last_number += 1
            now = self.now()
            issue = LinearIssue(
                id=self.new_id(),
                team_id=found.id,
                number=found.last_number,
                identifier=f"{found.key}-{found.last_number}",
                title=title,
                state_id=chosen.id,
                created_at=now,
                updated_at=now,
                description=description,
                priority=priority,
                project_id=self.project(project).id if project else None,
                assignee_id=self.user(assignee).id if assignee else None,
                creator_id=self.user(creator).id if creator else None,
                label_ids=list(dict.fromkeys(label_ids)),
            )
            self.issues[issue.id] = issue
            self._changed()
            return issue

    # ------------------------------------------------------------ changes

    def update_issue(
        self, ref: str, changes: dict[str, Any], *, actor: LinearUser | None = None
    ) -> LinearIssue:
        """Apply ``issueUpdate``'s input (stateId, labelIds, added/removedLabelIds, title ...).

        A change of state or labels is recorded in the issue's history as ``actor``'s.
        """
        with self.lock:
            issue = self.issue(ref)
            before_state, before_labels = issue.state_id, list(issue.label_ids)
            team = self.teams[issue.team_id]
            if changes.get("stateId") is not None:
                state = self.states.get(changes["stateId"])
                if state is None or state.team_id != team.id:
                    raise LinearInputError(
                        f"stateId {changes['stateId']!r} is not a workflow state of team {team.key}"
                    )
                issue.state_id = state.id
            labels = list(issue.label_ids)
            if changes.get("labelIds") is not None:
                labels = [self._label_id(ref_, team) for ref_ in changes["labelIds"]]
            for ref_ in changes.get("addedLabelIds") or ():
                labels.append(self._label_id(ref_, team))
            removed = {self._label_id(ref_, team) for ref_ in changes.get("removedLabelIds") or ()}
            issue.label_ids = [lab for lab in dict.fromkeys(labels) if lab not in removed]
            if changes.get("title") is not None:
                if not str(changes["title"]).strip():
                    raise LinearInputError("title must not be empty")
                issue.title = str(changes["title"])
            if "description" in changes:
                issue.description = changes["description"]
            if changes.get("priority") is not None:
                if changes["priority"] not in range(5):
                    raise LinearInputError("priority must be 0 (none) to 4 (low)")
                issue.priority = int(changes["priority"])
            if "assigneeId" in changes:
                assignee = changes["assigneeId"]
                issue.assignee_id = self.user(assignee).id if assignee else None
            issue.updated_at = self.now()
            self._record_history(issue, actor, before_state, before_labels)
            self._changed()
            return issue

    def _record_history(
        self,
        issue: LinearIssue,
        actor: LinearUser | None,
        before_state: str,
        before_labels: list[str],
    ) -> None:
        added = [lab for lab in issue.label_ids if lab not in before_labels]
        removed = [lab for lab in before_labels if lab not in issue.label_ids]
        moved = issue.state_id != before_state
        if not (moved or added or removed):
            return
        entry = IssueHistory(
            id=self.new_id(),
            issue_id=issue.id,
            created_at=issue.updated_at,
            updated_at=issue.updated_at,
            actor_id=actor.id if actor is not None else None,
            from_state_id=before_state if moved else None,
            to_state_id=issue.state_id if moved else None,
            added_label_ids=added,
            removed_label_ids=removed,
        )
        self.history[entry.id] = entry

    def _label_id(self, ref: str, team: Team) -> str:
        label = self.label(ref, team.id)
        if label.team_id not in (None, team.id):
            raise LinearInputError(f"label {label.name!r} belongs to another team")
        return label.id

    def set_state(self, ref: str, state: str, *, actor: LinearUser | None = None) -> LinearIssue:
        """Move an issue to a workflow state given by name or id (as ``actor``, if given)."""
        with self.lock:
            issue = self.issue(ref)
            chosen = self.state_of(self.teams[issue.team_id], state)
            return self.update_issue(issue.id, {"stateId": chosen.id}, actor=actor)

    def add_comment(self, ref: str, user: str, body: str) -> Comment:
        if not body.strip():
            raise LinearInputError("a comment needs a body")
        with self.lock:
            issue = self.issue(ref)
            author = self.user(user)
            now = self.now()
            comment = Comment(self.new_id(), issue.id, author.id, body, now, now)
            self.comments[comment.id] = comment
            issue.updated_at = now
            self._changed()
            return comment

    def update_comment(
        self, comment_id: str, body: str, *, by: LinearUser | None = None
    ) -> Comment:
        """Change a comment's body; only its author may (as on Linear)."""
        if not body.strip():
            raise LinearInputError("a comment needs a body")
        with self.lock:
            comment = self.comments.get(comment_id)
            if comment is None:
                raise LinearInputError(f"no comment {comment_id!r}")
            if by is not None and by.id != comment.user_id:
                raise LinearInputError("only the comment's author can edit it")
            now = self.now()
            comment.body = body
            comment.updated_at = now
            comment.edited_at = now
            self._changed()
            return comment

    def upsert_attachment(
        self,
        ref: str,
        url: str,
        title: str,
        *,
        subtitle: str | None = None,
        metadata: dict[str, Any] | None = None,
        icon_url: str | None = None,
        creator: LinearUser | None = None,
    ) -> Attachment:
        """``attachmentCreate``: a new link, or the issue's existing one with that URL updated."""
        if not url.strip():
            raise LinearInputError("an attachment needs a url")
        with self.lock:
            issue = self.issue(ref)
            now = self.now()
            existing = next(
                (a for a in self.attachments.values() if a.issue_id == issue.id and a.url == url),
                None,
            )
            if existing is None:
                existing = Attachment(
                    self.new_id(),
                    issue.id,
                    url,
                    title,
                    now,
                    now,
                    creator_id=creator.id if creator else None,
                )
                self.attachments[existing.id] = existing
            existing.title = title
            existing.subtitle = subtitle if subtitle is not None else existing.subtitle
            existing.icon_url = icon_url if icon_url is not None else existing.icon_url
            if metadata is not None:
                existing.metadata_json = json.dumps(metadata, sort_keys=True)
            existing.updated_at = now
            self._changed()
            return existing

    def relate(self, ref: str, kind: str, related: str) -> IssueRelation:
        """``ref`` relates to ``related``: ``blocks`` makes ``related`` blocked by ``ref``."""
        if kind not in ("blocks", "duplicate", "related", "similar"):
            raise LinearInputError("relation type must be blocks, duplicate, related or similar")
        with self.lock:
            issue, other = self.issue(ref), self.issue(related)
            if issue.id == other.id:
                raise LinearInputError("an issue cannot relate to itself")
            now = self.now()
            relation = IssueRelation(self.new_id(), kind, issue.id, other.id, now, now)
            self.relations[relation.id] = relation
            self._changed()
            return relation
