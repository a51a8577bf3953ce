"""The named gates of an issue, evaluated from its record, its pull request and the policy.

Merging needs every gate to pass (or not apply) on one and the same head commit;
the workpad and the dashboard show the gates so an operator sees why nothing happens.
The kill-switch rule lives here (:func:`kill_switch_active`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from functools import lru_cache
from types import MappingProxyType
from typing import NamedTuple

from orchestrator.domain.accounts import account_key, same_account
from orchestrator.domain.labels import has_label
from orchestrator.domain.phases import GateValue
from orchestrator.domain.policy import ApprovalSource, FlowPolicy
from orchestrator.domain.snapshot import (
    Actor,
    ChecksSummary,
    HeadSighting,
    IssueSnapshot,
    KillSwitches,
    LabelAction,
    LabelEvent,
    PRStatus,
    PullRequest,
    ReviewVerdict,
)
from orchestrator.domain.workpad import ReviewState

PASS = GateValue.PASS
PENDING = GateValue.PENDING
FAIL = GateValue.FAIL
REQUIRED = GateValue.REQUIRED
NOT_APPLICABLE = GateValue.NOT_APPLICABLE
_SATISFIED = frozenset({PASS, NOT_APPLICABLE})


class GateName(StrEnum):
    """The gates, by the names operators see."""

    OWNERSHIP = "ownership"
    KILL_SWITCH = "kill_switch"
    CHECKS = "checks"
    HUMAN_APPROVAL = "human_approval"
    MERGEABILITY = "mergeability"
    HEAD_MATCH = "head_match"
    REVIEW = "review"


# Field order of Gates, by gate name.
_GATE_ORDER = (
    GateName.OWNERSHIP,
    GateName.KILL_SWITCH,
    GateName.CHECKS,
    GateName.HUMAN_APPROVAL,
    GateName.MERGEABILITY,
    GateName.HEAD_MATCH,
    GateName.REVIEW,
)


class Gates(NamedTuple):
    """The value of every gate for one issue at one moment."""

    ownership: GateValue
    kill_switch: GateValue
    checks: GateValue
    human_approval: GateValue
    mergeability: GateValue
    head_match: GateValue
    review: GateValue

    def as_mapping(self) -> Mapping[str, GateValue]:
        """The gates by name, for the workpad observation."""
        return _mapping_of(self)

    @property
    def merge_ready(self) -> bool:
        """Every gate passes or does not apply: a merge of the current head is allowed."""
        return (
            self.ownership is PASS
            and self.kill_switch is PASS
            and self.checks in _SATISFIED
            and self.human_approval in _SATISFIED
            and self.mergeability is PASS
            and self.head_match in _SATISFIED
            and self.review in _SATISFIED
        )

    def blocking(self) -> tuple[str, ...]:
        """Names of the gates that keep a merge from happening now."""
        names = []
        for name, value in self.as_mapping().items():
            if name in (GateName.OWNERSHIP, GateName.KILL_SWITCH, GateName.MERGEABILITY):
                if value is not PASS:
                    names.append(name)
            elif value not in _SATISFIED:
                names.append(name)
        return tuple(names)


@lru_cache(maxsize=1024)
def _mapping_of(gates: Gates) -> Mapping[str, GateValue]:
    # Few distinct combinations exist; sharing one read-only mapping per combination
    # keeps a large tick from allocating one per issue.
    return MappingProxyType(dict(zip(_GATE_ORDER, gates, strict=True)))


def qualifies_as_human(actor: Actor, self_login: str | None) -> bool:
    """A human with write permission who is not the daemon itself."""
    if actor.is_bot or not actor.can_write:
        return False
    return not same_account(actor.login, self_login)


def checks_state(checks: ChecksSummary | None, head_sha: str, required: Iterable[str]) -> GateValue:
    """Pass, pending or fail for the checks reported on ``head_sha``."""
    if checks is None or checks.head_sha != head_sha:
        return PENDING
    wanted = required if isinstance(required, frozenset) else frozenset(required)
    if wanted:
        if wanted & checks.failing:
            return FAIL
        if wanted <= checks.passed:
            return PASS
        return PENDING
    if checks.failing:
        return FAIL
    if checks.pending or not checks.passed:
        return PENDING
    return PASS


def carries_stop_label(labels: Iterable[str], policy: FlowPolicy) -> bool:
    """Whether ``labels`` hold the policy's stop label, in any case (as GitHub compares names).

    The one kill-switch label rule: the planner, the cancelling of running turns and
    the side-effect gate all ask it.
    """
    return has_label(labels, policy.kill_switch_label)


def kill_switch_active(item: IssueSnapshot, policy: FlowPolicy, switches: KillSwitches) -> bool:
    """A kill switch covers the issue: the local file, a switch on its repository, or the
    stop label on the issue or on its pull request."""
    pr = item.pr
    return (
        switches.covers_repo(item.issue.ref.repo)
        or carries_stop_label(item.issue.labels, policy)
        or (pr is not None and carries_stop_label(pr.labels, policy))
    )


def _latest_event(label: str, events: Iterable[LabelEvent]) -> LabelEvent | None:
    latest: LabelEvent | None = None
    for event in events:
        if event.label == label and (latest is None or event.at >= latest.at):
            latest = event
    return latest


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


def _label_approves_head(
    label: str,
    events: Iterable[LabelEvent],
    self_login: str | None,
    sighting: HeadSighting | None,
) -> bool:
    latest = _latest_event(label, events)
    return (
        latest is not None
        and sighting is not None
        and latest.action is LabelAction.ADDED
        and latest.at > sighting.since
        and qualifies_as_human(latest.actor, self_login)
    )


def _label_places(item: IssueSnapshot) -> list[tuple[str, frozenset[str], tuple[LabelEvent, ...]]]:
    places = [("issue", item.issue.labels, item.issue.label_events)]
    if item.pr is not None:
        places.append(("pr", item.pr.labels, item.pr.label_events))
    return places


def approved_by_label(item: IssueSnapshot, policy: FlowPolicy, self_login: str | None) -> bool:
    """An approval label is present, added by a qualified human after the current head appeared."""
    wanted = policy.approval_labels
    pr_labels = item.pr.labels if item.pr is not None else frozenset()
    if wanted.isdisjoint(item.issue.labels) and wanted.isdisjoint(pr_labels):
        return False
    sighting = head_sighting(item)
    for _, labels, events in _label_places(item):
        for label in wanted & labels:
            if _label_approves_head(label, events, self_login, sighting):
                return True
    return False


def stale_approval_labels(
    item: IssueSnapshot, policy: FlowPolicy
) -> tuple[tuple[str, str, LabelEvent], ...]:
    """Approval labels still present although they were added before the current head appeared.

    Each entry is (``"issue"`` or ``"pr"``, the label, its latest addition). Only labels
    whose addition was read are listed: an unreadable event history never removes a label.
    """
    sighting = head_sighting(item)
    if sighting is None:
        return ()
    stale = []
    for place, labels, events in _label_places(item):
        for label in sorted(policy.approval_labels & labels):
            latest = _latest_event(label, events)
            if (
                latest is not None
                and latest.action is LabelAction.ADDED
                and latest.at <= sighting.since
            ):
                stale.append((place, label, latest))
    return tuple(stale)


def _latest_verdicts(
    pr: PullRequest, self_login: str | None
) -> dict[str, tuple[ReviewVerdict, str]]:
    """Each qualified human's latest verdict (comments aside) and the commit it was given on."""
    latest: dict[str, tuple[ReviewVerdict, str]] = {}
    for review in sorted(pr.reviews, key=lambda r: r.submitted_at):
        if review.verdict is ReviewVerdict.COMMENTED:
            continue
        if qualifies_as_human(review.author, self_login):
            latest[account_key(review.author.login)] = (review.verdict, review.commit_sha)
    return latest


def outstanding_change_requests(pr: PullRequest | None, self_login: str | None) -> frozenset[str]:
    """Writers whose latest verdict, on any head, requests changes (not approved, not dismissed)."""
    if pr is None or not pr.reviews:
        return frozenset()
    return frozenset(
        login
        for login, (verdict, _) in _latest_verdicts(pr, self_login).items()
        if verdict is ReviewVerdict.CHANGES_REQUESTED
    )


def approved_by_review(pr: PullRequest | None, self_login: str | None) -> bool:
    """A qualified human's latest review approves exactly the current head."""
    if pr is None or not pr.reviews:
        return False
    latest = _latest_verdicts(pr, self_login)
    approvals = [sha for verdict, sha in latest.values() if verdict is ReviewVerdict.APPROVED]
    blocked = any(v is ReviewVerdict.CHANGES_REQUESTED for v, _ in latest.values())
    return not blocked and pr.head_sha in approvals


@dataclass(frozen=True, slots=True)
class Approval:
    """Who approved the current head, and through which labels (re-checked before a merge)."""

    approvers: tuple[str, ...] = ()
    labels: tuple[str, ...] = ()


def current_approval(item: IssueSnapshot, policy: FlowPolicy, self_login: str | None) -> Approval:
    """The qualified humans whose approval covers the current head under the policy's source."""
    source = policy.merge.approval_source
    logins: set[str] = set()
    labels: set[str] = set()
    if source in (ApprovalSource.LABEL, ApprovalSource.LABEL_OR_REVIEW):
        sighting = head_sighting(item)
        for _, present, events in _label_places(item):
            for label in policy.approval_labels & present:
                if _label_approves_head(label, events, self_login, sighting):
                    latest = _latest_event(label, events)
                    assert latest is not None
                    logins.add(latest.actor.login)
                    labels.add(label)
    pr = item.pr
    if (
        source in (ApprovalSource.REVIEW, ApprovalSource.LABEL_OR_REVIEW)
        and pr is not None
        and approved_by_review(pr, self_login)
    ):
        for login, (verdict, sha) in _latest_verdicts(pr, self_login).items():
            if verdict is ReviewVerdict.APPROVED and sha == pr.head_sha:
                logins.add(login)
    return Approval(tuple(sorted(logins)), tuple(sorted(labels)))


def approved_since(
    item: IssueSnapshot, policy: FlowPolicy, self_login: str | None, since: datetime
) -> bool:
    """A qualified human approved the current head after ``since`` (GitHub's clock).

    The approval counts through the policy's approval source, as for the merge:
    an approval label added after the head appeared, or an approving review of
    the head that is its author's latest verdict.
    """
    source = policy.merge.approval_source
    if source in (ApprovalSource.LABEL, ApprovalSource.LABEL_OR_REVIEW):
        sighting = head_sighting(item)
        for _, present, events in _label_places(item):
            for label in policy.approval_labels & present:
                latest = _latest_event(label, events)
                if (
                    latest is not None
                    and latest.at > since
                    and _label_approves_head(label, events, self_login, sighting)
                ):
                    return True
    pr = item.pr
    if source in (ApprovalSource.REVIEW, ApprovalSource.LABEL_OR_REVIEW) and approved_by_review(
        pr, self_login
    ):
        assert pr is not None
        latest_verdicts = _latest_verdicts(pr, self_login)
        return any(
            review.verdict is ReviewVerdict.APPROVED
            and review.commit_sha == pr.head_sha
            and review.submitted_at > since
            and latest_verdicts.get(account_key(review.author.login))
            == (ReviewVerdict.APPROVED, pr.head_sha)
            for review in pr.reviews
        )
    return False


def human_approval_gate(
    item: IssueSnapshot, policy: FlowPolicy, self_login: str | None
) -> GateValue:
    """Pass when the approval policy's source shows a qualified human's approval of this head.

    A writer's outstanding change request, or a review list that could not be read to
    the end, keeps the gate from passing whatever the approval source.
    """
    pr = item.pr
    if pr is not None and (
        "reviews" in pr.incomplete or outstanding_change_requests(pr, self_login)
    ):
        return REQUIRED
    if not policy.merge.require_human_approval:
        return NOT_APPLICABLE
    source = policy.merge.approval_source
    if source in (ApprovalSource.LABEL, ApprovalSource.LABEL_OR_REVIEW) and approved_by_label(
        item, policy, self_login
    ):
        return PASS
    if source in (ApprovalSource.REVIEW, ApprovalSource.LABEL_OR_REVIEW) and approved_by_review(
        pr, self_login
    ):
        return PASS
    return REQUIRED


_NO_REVIEW = ReviewState()

# GitHub's mergeStateStatus values that say "not yet" although the branches merge cleanly:
# protection rules are not satisfied, the branch must be brought up to date, or unknown.
_MERGE_STATES_WAITING = frozenset({"BLOCKED", "BEHIND", "UNKNOWN"})


def evaluate_gates(
    item: IssueSnapshot,
    policy: FlowPolicy,
    switches: KillSwitches,
    self_login: str | None,
) -> Gates:
    """Every gate of one issue (written as one pass: it runs for every tracked issue each tick)."""
    issue = item.issue
    pr = item.pr
    record = item.record
    review = record.workpad.review if record is not None else _NO_REVIEW

    # ownership: the label, and a record that still says it is owned.
    owned = has_label(issue.labels, policy.ownership_label) and (
        record is None or record.workpad.owned
    )

    # checks: green on exactly the current head.
    merge = policy.merge
    if not merge.require_green_checks:
        checks = NOT_APPLICABLE
    elif pr is None or "checks" in pr.incomplete:
        checks = PENDING
    else:
        checks = checks_state(pr.checks, pr.head_sha, merge.required_checks)

    # mergeability: GitHub's flag, pending while unknown, while branch protection is not
    # satisfied or the branch is behind, while the review threads could not all be read,
    # or once the PR is no longer open.
    if (
        pr is None
        or pr.status is not PRStatus.OPEN
        or pr.mergeable is None
        or pr.merge_state in _MERGE_STATES_WAITING
        or "threads" in pr.incomplete
    ):
        mergeability = PENDING
    else:
        mergeability = PASS if pr.mergeable else FAIL

    # head_match: the reviewed head is the current one; review: a pass persisted for it.
    reviewed = review.last_reviewed_head_sha
    if not policy.review.enabled:
        head_match = review_value = NOT_APPLICABLE
    elif pr is None or reviewed is None:
        head_match = review_value = PENDING
    elif reviewed == pr.head_sha:
        head_match = PASS
        review_value = PASS if review.passes_completed > 0 else PENDING
    else:
        head_match = FAIL
        review_value = PENDING

    return Gates(
        ownership=PASS if owned else FAIL,
        kill_switch=FAIL if kill_switch_active(item, policy, switches) else PASS,
        checks=checks,
        human_approval=human_approval_gate(item, policy, self_login),
        mergeability=mergeability,
        head_match=head_match,
        review=review_value,
    )
