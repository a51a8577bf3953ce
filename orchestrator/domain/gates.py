"""The named gates of an issue, evaluated from its record, its pull request and the policy.

Merging needs every gate to pass (or not apply) on one and the same head commit;
the workpad and the dashboard show the gates so an operator sees why nothing happens.
The kill-switch rule lives here (:func:`kill_switch_active`), the approval rule in
:mod:`orchestrator.domain.approval`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from enum import StrEnum
from functools import lru_cache
from types import MappingProxyType
from typing import NamedTuple

from orchestrator.domain.approval import ApprovalView, approval_view
from orchestrator.domain.labels import has_label
from orchestrator.domain.phases import GateValue
from orchestrator.domain.policy import FlowPolicy
from orchestrator.domain.snapshot import ChecksSummary, IssueSnapshot, KillSwitches, PRStatus
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


_NO_REVIEW = ReviewState()

# GitHub's mergeStateStatus values that say "not yet" although the branches merge cleanly:
# protection rules are not satisfied, the branch must be brought up to date, or unknown.
_MERGE_STATES_WAITING = frozenset({"BLOCKED", "BEHIND", "UNKNOWN"})


def evaluate_gates(
    item: IssueSnapshot,
    policy: FlowPolicy,
    switches: KillSwitches,
    self_login: str | None,
    approval: ApprovalView | None = None,
) -> Gates:
    """Every gate of one issue (written as one pass: it runs for every tracked issue each tick).

    ``approval`` is the issue's :func:`approval_view` when the caller has it already.
    """
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
        human_approval=(approval or approval_view(item, policy, self_login)).gate,
        mergeability=mergeability,
        head_match=head_match,
        review=review_value,
    )
