"""A human's approval of a pull request's head, evaluated once per issue and plan.

An approval counts only from a qualified human (write permission, not a bot,
not the daemon) and only for the head it was given on: an approval label added
after the head appeared, or an approving review of exactly that head that is
its author's latest verdict. Which of the two counts is the policy's
``merge.approval_source``; a writer's outstanding change request, or a review
list that could not be read to the end, blocks the merge whatever the source.

:func:`approval_view` says all of it in one :class:`ApprovalView`: the
``human_approval`` gate, who approved and through which labels (the merge
carries them and :func:`approval_lapsed` re-checks them on facts read right
before it), the labels that went stale, and when the latest approval was given.
Label names compare as GitHub compares them (:mod:`orchestrator.domain.labels`).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from types import MappingProxyType

from orchestrator.domain.accounts import account_key, same_account
from orchestrator.domain.labels import fold, folded
from orchestrator.domain.phases import GateValue
from orchestrator.domain.policy import FlowPolicy
from orchestrator.domain.snapshot import (
    Actor,
    HeadSighting,
    IssueSnapshot,
    LabelAction,
    LabelEvent,
    PullRequest,
    ReviewVerdict,
)


def qualifies_as_human(actor: Actor, self_login: str | None) -> bool:
    """A human with write permission who is not the daemon itself."""
    if actor.is_bot or not actor.can_write:
        return False
    return not same_account(actor.login, self_login)


def head_sighting(item: IssueSnapshot) -> HeadSighting | None:
    """Since when the pull request's current head is known (GitHub's clock), if it is known.

    The record's sighting holds while the head is the same; a head the record has
    not seen yet dates from this read's ``updatedAt``, which is never earlier than
    the push that made it the head.
    """
    pr = item.pr
    if pr is None or not pr.head_sha:
        return None
    seen = item.record.head_seen if item.record is not None else None
    if seen is not None and seen.sha == pr.head_sha:
        return seen
    if pr.updated_at is None:
        return None
    return HeadSighting(pr.head_sha, pr.updated_at)


def latest_verdicts(
    pr: PullRequest | None, self_login: str | None
) -> dict[str, tuple[ReviewVerdict, str]]:
    """Each qualified human's latest verdict (comments aside) and the commit it was given on."""
    latest: dict[str, tuple[ReviewVerdict, str]] = {}
    if pr is None or not pr.reviews:
        return latest
    for review in sorted(pr.reviews, key=lambda r: r.submitted_at):
        if review.verdict is ReviewVerdict.COMMENTED:
            continue
        if qualifies_as_human(review.author, self_login):
            latest[account_key(review.author.login)] = (review.verdict, review.commit_sha)
    return latest


def outstanding_change_requests(pr: PullRequest | None, self_login: str | None) -> frozenset[str]:
    """Writers whose latest verdict, on any head, requests changes (not approved, not dismissed)."""
    return frozenset(
        login
        for login, (verdict, _) in latest_verdicts(pr, self_login).items()
        if verdict is ReviewVerdict.CHANGES_REQUESTED
    )


@dataclass(frozen=True, slots=True)
class StaleApproval:
    """An approval label still present although it was added before the current head appeared."""

    # "issue" or "pr": where the label is.
    place: str
    # The label's name as it is there.
    label: str
    # Its latest addition.
    added: LabelEvent


@dataclass(frozen=True, slots=True)
class ApprovalView:
    """The approval of one issue's current head under the policy.

    ``approvers`` are the qualified humans whose approval covers the head through
    the policy's source, ``labels`` the approval labels through which they gave it
    (both go with the merge, which re-checks them); ``given_at`` is when the latest
    of those approvals was given (GitHub's clock); ``stale`` lists approval labels
    added before the head appeared, whatever the source.
    """

    gate: GateValue
    approvers: tuple[str, ...] = ()
    labels: tuple[str, ...] = ()
    stale: tuple[StaleApproval, ...] = ()
    given_at: datetime | None = None

    def given_after(self, moment: datetime) -> bool:
        """A counted approval of the head was given after ``moment`` (GitHub's clock)."""
        return self.given_at is not None and self.given_at > moment


_NO_LABEL_EVENTS: tuple[LabelEvent, ...] = ()


def _approval_labels_on(
    item: IssueSnapshot, approving: frozenset[str]
) -> list[tuple[str, str, tuple[LabelEvent, ...]]]:
    """(place, the label as it is there, that place's label events) for each approval label."""
    found: list[tuple[str, str, tuple[LabelEvent, ...]]] = []
    places = [("issue", item.issue.labels, item.issue.label_events)]
    if item.pr is not None:
        places.append(("pr", item.pr.labels, item.pr.label_events))
    for place, labels, events in places:
        if approving.isdisjoint(folded(labels)):
            continue
        for label in sorted(labels):
            if fold(label) in approving:
                found.append((place, label, events))
    return found


def _latest_event(label: str, events: Iterable[LabelEvent]) -> LabelEvent | None:
    wanted = fold(label)
    latest: LabelEvent | None = None
    for event in events:
        if fold(event.label) == wanted and (latest is None or event.at >= latest.at):
            latest = event
    return latest


def _gate(
    pr: PullRequest | None,
    policy: FlowPolicy,
    verdicts: Mapping[str, tuple[ReviewVerdict, str]],
    approved: bool,
) -> GateValue:
    if pr is not None and (
        "reviews" in pr.incomplete
        or any(verdict is ReviewVerdict.CHANGES_REQUESTED for verdict, _ in verdicts.values())
    ):
        return GateValue.REQUIRED
    if not policy.merge.require_human_approval:
        return GateValue.NOT_APPLICABLE
    return GateValue.PASS if approved else GateValue.REQUIRED


@dataclass(slots=True)
class _Approvals:
    """The approvals that count, as they are found."""

    logins: set[str] = field(default_factory=set)
    labels: set[str] = field(default_factory=set)
    given_at: datetime | None = None

    def add(self, login: str, at: datetime) -> None:
        self.logins.add(login)
        if self.given_at is None or at > self.given_at:
            self.given_at = at


def approval_view(item: IssueSnapshot, policy: FlowPolicy, self_login: str | None) -> ApprovalView:
    """The approval of the issue's current head: the gate, approvers, labels, stale labels."""
    pr = item.pr
    verdicts = latest_verdicts(pr, self_login)
    on_item = _approval_labels_on(item, folded(policy.approval_labels))
    if not on_item and not verdicts:
        # Most issues: nothing that could approve (this runs for every issue each tick).
        return ApprovalView(_gate(pr, policy, verdicts, approved=False))
    source = policy.merge.approval_source
    sighting = head_sighting(item)
    found = _Approvals()
    stale: list[StaleApproval] = []
    for place, label, events in on_item:
        latest = _latest_event(label, events)
        if latest is None or latest.action is not LabelAction.ADDED or sighting is None:
            continue
        if latest.at <= sighting.since:
            stale.append(StaleApproval(place, label, latest))
        elif source.by_label and qualifies_as_human(latest.actor, self_login):
            found.add(latest.actor.login, latest.at)
            found.labels.add(label)
    if source.by_review and pr is not None and verdicts:
        _add_review_approvals(found, pr, verdicts)
    return ApprovalView(
        gate=_gate(pr, policy, verdicts, approved=bool(found.logins)),
        approvers=tuple(sorted(found.logins)),
        labels=tuple(sorted(found.labels)),
        stale=tuple(stale),
        given_at=found.given_at,
    )


def _add_review_approvals(
    found: _Approvals, pr: PullRequest, verdicts: Mapping[str, tuple[ReviewVerdict, str]]
) -> None:
    """Approving reviews of the head count while no writer's latest verdict requests changes."""
    if any(verdict is ReviewVerdict.CHANGES_REQUESTED for verdict, _ in verdicts.values()):
        return
    approving = {
        login
        for login, (verdict, sha) in verdicts.items()
        if verdict is ReviewVerdict.APPROVED and sha == pr.head_sha
    }
    for review in pr.reviews:
        login = account_key(review.author.login)
        if (
            login in approving
            and review.verdict is ReviewVerdict.APPROVED
            and review.commit_sha == pr.head_sha
        ):
            found.add(login, review.submitted_at)


# ------------------------------------------------------------- before a merge


@dataclass(frozen=True, slots=True)
class ApprovalRecheck:
    """What was read again right before a merge about the approval the plan saw."""

    # Recorded approvers whose approval no longer counts, each with why.
    lost: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    # The labels the issue and its pull request carry now.
    labels: frozenset[str] = frozenset()


def approval_lapsed(
    approvers: Sequence[str],
    labels: Collection[str],
    *,
    required: bool,
    recheck: ApprovalRecheck,
) -> str | None:
    """Why the approval the plan saw (``approvers`` through ``labels``) no longer holds.

    None when it holds: every approver still counts, and one of the approval labels
    it was given through is still on the issue or its pull request.
    """
    if required and not approvers:
        return "no approver is recorded for this head"
    for login in approvers:
        why = recheck.lost.get(login)
        if why is not None:
            return why
    if labels and folded(recheck.labels).isdisjoint(fold(label) for label in labels):
        return "the approval label was removed"
    return None
