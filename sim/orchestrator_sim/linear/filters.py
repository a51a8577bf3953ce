"""Linear's filter inputs (``IssueFilter``, ``WorkflowStateFilter`` ...) applied to records.

Each filter is a dict of field name to comparator (``{"eq": ...}``) or nested
filter; every given field must match. A comparator the subset schema accepts
but the emulator cannot evaluate raises `LinearInputError` naming it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from orchestrator_sim.clock import parse_time
from orchestrator_sim.linear.records import IssueLabel, LinearIssue, Team, WorkflowState
from orchestrator_sim.linear.state import LinearInputError, LinearState

_DURATION = re.compile(
    r"^(?P<sign>-)?P(?:(?P<weeks>\d+)W)?(?:(?P<days>\d+)D)?"
    r"(?:T(?:(?P<hours>\d+)H)?(?:(?P<minutes>\d+)M)?(?:(?P<seconds>\d+)S)?)?$"
)


def moment(value: Any, now: datetime) -> datetime:
    """A ``DateTimeOrDuration``: an ISO timestamp, or an ISO 8601 duration from now (``-P2W``)."""
    text = str(value)
    found = _DURATION.match(text)
    if found and text not in ("P", "-P"):
        parts = {k: int(v) for k, v in found.groupdict().items() if v and k != "sign"}
        delta = timedelta(**parts)
        return now - delta if found.group("sign") else now + delta
    try:
        return parse_time(text)
    except ValueError:
        raise LinearInputError(
            f"{text!r} is neither a date-time nor an ISO 8601 duration"
        ) from None


def compare(value: Any, comparator: dict[str, Any], now: datetime, *, dates: bool = False) -> bool:
    """Whether ``value`` satisfies a comparator (``dates``: values are DateTimeOrDuration)."""
    for op, wanted in comparator.items():
        if wanted is None:
            continue
        left: Any = value
        right: Any = wanted
        if dates:
            left = parse_time(value) if value else None
            right = (
                [moment(w, now) for w in wanted]
                if isinstance(wanted, list)
                else moment(wanted, now)
            )
        if op == "eq" and left != right:
            return False
        if op == "neq" and left == right:
            return False
        if op == "in" and left not in right:
            return False
        if op == "nin" and left in right:
            return False
        if op == "eqIgnoreCase" and str(left).lower() != str(right).lower():
            return False
        if op in ("gt", "gte", "lt", "lte"):
            if left is None:
                return False
            ok = {
                "gt": left > right,
                "gte": left >= right,
                "lt": left < right,
                "lte": left <= right,
            }[op]
            if not ok:
                return False
    return True


def _match(
    fields: dict[str, Callable[[Any], Any]],
    flt: dict[str, Any] | None,
    item: Any,
    where: str,
    now: datetime,
) -> bool:
    if not flt:
        return True
    for name, condition in flt.items():
        if condition is None:
            continue
        getter = fields.get(name)
        if getter is None:
            raise LinearInputError(f"{where}.{name}: filter not supported by the emulator")
        if not getter(item)(condition, f"{where}.{name}", now):
            return False
    return True


def _value(getter: Callable[[Any], Any], *, dates: bool = False) -> Callable[[Any], Any]:
    return lambda item: lambda cond, _where, now: compare(getter(item), cond, now, dates=dates)


def team_matches(flt: dict[str, Any] | None, team: Team | None, now: datetime) -> bool:
    if team is None:
        return not flt
    fields = {
        "id": _value(lambda t: t.id),
        "key": _value(lambda t: t.key),
        "name": _value(lambda t: t.name),
    }
    return _match(fields, flt, team, "team", now)


def state_matches(
    world: LinearState, flt: dict[str, Any] | None, state: WorkflowState, now: datetime
) -> bool:
    fields = {
        "id": _value(lambda s: s.id),
        "name": _value(lambda s: s.name),
        "type": _value(lambda s: s.type),
        "team": lambda s: (
            lambda cond, where, now_: team_matches(cond, world.teams.get(s.team_id), now_)
        ),
    }
    return _match(fields, flt, state, "state", now)


def label_matches(flt: dict[str, Any] | None, label: IssueLabel, now: datetime) -> bool:
    fields = {"id": _value(lambda lab: lab.id), "name": _value(lambda lab: lab.name)}
    return _match(fields, flt, label, "labels", now)


def _labels_match(
    world: LinearState, flt: dict[str, Any], issue: LinearIssue, now: datetime
) -> bool:
    labels = [world.labels[i] for i in issue.label_ids if i in world.labels]
    for op, condition in flt.items():
        if condition is None:
            continue
        if op == "some" and not any(label_matches(condition, lab, now) for lab in labels):
            return False
        if op == "every" and not all(label_matches(condition, lab, now) for lab in labels):
            return False
        if op in ("id", "name") and not any(
            label_matches({op: condition}, lab, now) for lab in labels
        ):
            return False
    return True


def _project_match(
    world: LinearState, flt: dict[str, Any], issue: LinearIssue, now: datetime
) -> bool:
    project = world.projects.get(issue.project_id or "")
    if flt.get("null") is not None and (project is None) != bool(flt["null"]):
        return False
    rest = {k: v for k, v in flt.items() if k != "null"}
    if not rest:
        return True
    if project is None:
        return False
    fields = {
        "id": _value(lambda p: p.id),
        "slugId": _value(lambda p: p.slug_id),
        "name": _value(lambda p: p.name),
    }
    return _match(fields, rest, project, "project", now)


def _assignee_match(
    world: LinearState, flt: dict[str, Any], issue: LinearIssue, now: datetime, viewer_id: str
) -> bool:
    user = world.users.get(issue.assignee_id or "")
    if flt.get("null") is not None and (user is None) != bool(flt["null"]):
        return False
    rest = {k: v for k, v in flt.items() if k != "null"}
    if not rest:
        return True
    if user is None:
        return False
    fields = {
        "id": _value(lambda u: u.id),
        "email": _value(lambda u: u.email),
        "isMe": _value(lambda u: u.id == viewer_id),
    }
    return _match(fields, rest, user, "assignee", now)


def issue_matches(
    world: LinearState,
    flt: dict[str, Any] | None,
    issue: LinearIssue,
    now: datetime,
    viewer_id: str,
) -> bool:
    """Whether an issue passes an ``IssueFilter`` (the caller holds ``world.lock``)."""

    def nested(
        check: Callable[[dict[str, Any], LinearIssue, datetime], bool],
    ) -> Callable[[Any], Any]:
        return lambda item: lambda cond, where, now_: check(cond, item, now_)

    fields = {
        "id": _value(lambda i: i.id),
        "team": nested(lambda c, i, n: team_matches(c, world.teams.get(i.team_id), n)),
        "state": nested(lambda c, i, n: state_matches(world, c, world.states[i.state_id], n)),
        "project": nested(lambda c, i, n: _project_match(world, c, i, n)),
        "labels": nested(lambda c, i, n: _labels_match(world, c, i, n)),
        "assignee": nested(lambda c, i, n: _assignee_match(world, c, i, n, viewer_id)),
        "updatedAt": _value(lambda i: i.updated_at, dates=True),
        "createdAt": _value(lambda i: i.created_at, dates=True),
        "number": _value(lambda i: i.number),
    }
    return _match(fields, flt, issue, "filter", now)
