"""A human's approval on Linear: who moved the issue into an approval state or added its label.

Symphony's flow has a person approve a merge in Linear: by moving the issue to
an approval state (``Merging``) or by adding an approval label. The gates know
approval as a label added by a qualified human after the pull request's head
appeared (:mod:`orchestrator.domain.approval`), so Linear's evidence is handed to
them in that form:

- an issue in an approval state shows that state's label (``state:merging``),
  and the latest history entry that moved it into the state is that label's
  addition;
- an approval label the issue carries (``merge.approval_label``) is the label,
  and the latest history entry that added it is its addition.

The entry's actor becomes an :class:`~orchestrator.domain.snapshot.Actor`
named ``linear:<display name>`` (:mod:`orchestrator.tracker.linear_people`)
whose ``can_write`` says whether the user is trusted: an active member who is
not a guest, not an app (integration) user and not the API key's own user, and,
when ``tracker.approvers`` lists people, one of them by id or email (never by a
name the user chose: :mod:`orchestrator.domain.linear_accounts`). A change with
no actor (an automation) is nobody's. So the daemon's own state moves, a
guest's and a bot's never approve.

History times are Linear's, head sightings GitHub's. Both services keep NTP
time; GitHub's are whole seconds, so a Linear time is cut to its second before
it is compared: an approval counts only from the second after the one the head
was first seen in, never for a push made in the same second.

The history is read only for an issue that shows an approval label, one
request of at most 25 entries a page (about 190 complexity points), newest
first, until every shown label's latest addition is found, and at most
:data:`MAX_HISTORY_PAGES` pages: a label whose addition is older than that has
no evidence and does not approve (fail closed). An answer of the wrong shape is
a :class:`~orchestrator.tracker.linear_client.LinearError` (code
``BAD_ANSWER``) naming the field.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from orchestrator.domain.policy import FlowPolicy
from orchestrator.domain.snapshot import LabelAction, LabelEvent
from orchestrator.tracker import linear_queries as q
from orchestrator.tracker.linear_client import LinearClient
from orchestrator.tracker.linear_people import Answer

MAX_HISTORY_PAGES = 4
OPERATION = "IssueHistory"


def _frozen(items: Mapping[str, str]) -> Mapping[str, str]:
    return MappingProxyType(dict(items))


@dataclass(frozen=True)
class LinearApproval:
    """What approves a merge on Linear under one policy, and whose approval counts."""

    # Approval state name -> the label the gates see it as.
    states: Mapping[str, str] = field(default_factory=lambda: _frozen({}))
    # Linear labels that approve.
    labels: frozenset[str] = frozenset()
    # User ids or emails (case-insensitive) of the only users who approve; empty: every
    # trusted member. An entry of another shape names nobody (the policy's rules refuse it).
    approvers: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        object.__setattr__(self, "states", _frozen(self.states))
        object.__setattr__(self, "approvers", frozenset(a.casefold() for a in self.approvers))

    @property
    def enabled(self) -> bool:
        """Whether anything on Linear approves."""
        return bool(self.states or self.labels)

    def shown(self, state: str | None, labels: Iterable[str]) -> frozenset[str]:
        """The approval labels an issue in ``state`` carrying ``labels`` shows the gates."""
        found = {self.states[state]} if state is not None and state in self.states else set()
        return frozenset(found | (self.labels & set(labels)))


def linear_approval(flow: FlowPolicy, approvers: Iterable[str] = ()) -> LinearApproval:
    """The policy's approval on Linear: ``merge.approval_states`` (each shown as its state
    label), ``merge.approval_label`` as a Linear label, and ``tracker.approvers``."""
    merge = flow.merge
    return LinearApproval(
        states={s: flow.state_labels[s] for s in merge.approval_states if s in flow.state_labels},
        labels=frozenset({merge.approval_label} if merge.approval_label else ()),
        approvers=frozenset(approvers),
    )


@dataclass(frozen=True)
class ApprovalEvidence:
    """What one read of an issue's history says about its approval."""

    # The issue's state and updatedAt in that read.
    state: str
    updated_at: str
    # The approval labels the issue shows (its approval state's, its approval labels).
    labels: frozenset[str]
    # The latest addition of each shown label that the history held.
    events: tuple[LabelEvent, ...] = ()
    # Whether every shown label's latest addition was found.
    complete: bool = True


# ------------------------------------------------------------------ reading

_ANSWER = Answer(OPERATION)


def read_evidence(
    client: LinearClient, issue: str, viewer_id: str, approval: LinearApproval
) -> ApprovalEvidence:
    """Read ``issue``'s (an id or ``ENG-12``) approval evidence from its history, newest
    first, until every label it shows has its latest addition (module docstring)."""
    after: str | None = None
    found: dict[str, LabelEvent] = {}
    state = updated_at = ""
    shown: frozenset[str] = frozenset()
    complete = True
    for page in range(MAX_HISTORY_PAGES):
        data = client.execute(OPERATION, q.ISSUE_HISTORY, {"id": issue, "after": after})
        node = _ANSWER.get(data, "issue", dict, "data")
        if page == 0:
            state = _ANSWER.get(
                _ANSWER.get(node, "state", dict, "issue"), "name", str, "issue.state"
            )
            updated_at = _ANSWER.get(node, "updatedAt", str, "issue")
            labels = _ANSWER.get(node, "labels", dict, "issue")
            present = _ANSWER.names(
                _ANSWER.get(labels, "nodes", list, "issue.labels"), "issue.labels.nodes"
            )
            shown = approval.shown(state, present)
        history = _ANSWER.get(node, "history", dict, "issue")
        entries = _ANSWER.get(history, "nodes", list, "issue.history")
        for index, entry in enumerate(entries):
            where = f"issue.history.nodes[{index}]"
            for label in _additions(entry, where, state, approval, shown):
                if label not in found:
                    actor = _ANSWER.actor(
                        entry.get("actor"), viewer_id, f"{where}.actor", approval.approvers
                    )
                    at = _ANSWER.moment(
                        _ANSWER.get(entry, "createdAt", str, where), f"{where}.createdAt"
                    )
                    found[label] = LabelEvent(label, LabelAction.ADDED, actor, at)
        info = _ANSWER.get(history, "pageInfo", dict, "issue.history")
        after = _ANSWER.get(info, "endCursor", str, "issue.history.pageInfo", optional=True)
        more = _ANSWER.get(info, "hasNextPage", bool, "issue.history.pageInfo")
        if shown <= set(found) or not more or not after:
            break
    else:
        complete = False
    complete = complete and shown <= set(found)
    return ApprovalEvidence(
        state=state,
        updated_at=updated_at,
        labels=shown,
        events=tuple(found[label] for label in sorted(found)),
        complete=complete,
    )


def _additions(
    entry: object, where: str, state: str, approval: LinearApproval, shown: frozenset[str]
) -> list[str]:
    """The shown approval labels this history entry added (a move into the state, labels)."""
    added: list[str] = []
    target = _ANSWER.get(entry, "toState", dict, where, optional=True)
    if target is not None:
        moved_to = _ANSWER.get(target, "name", str, f"{where}.toState")
        label = approval.states.get(moved_to)
        if moved_to == state and label in shown:
            added.append(label)
    labels = _ANSWER.get(entry, "addedLabels", list, where, optional=True)
    for name in _ANSWER.names(labels, f"{where}.addedLabels"):
        if name in approval.labels and name in shown:
            added.append(name)
    return added
