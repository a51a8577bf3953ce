"""Side effects of a policy with ``tracker.kind: linear``: the issue's side goes to Linear.

The code's side is GitHub's as always (push, pull request, review comment,
threads, merge): :class:`~orchestrator.effects.writes.GitHubWrites` does it. What
belongs to the issue goes to Linear through the tracker port
(:class:`~orchestrator.tracker.linear_bridge.LinearIssues`), and what Linear changes
in the writes is :class:`LinearIssueWrites`:

- the workpad is the bot's comment on the Linear issue (found before created);
- a state label the planner sets on the issue is the Linear workflow state it
  stands for (``tracker.state_labels`` read backwards; a policy without state
  labels moves no state until the merge), except while the issue sits in an
  approval state: that is a person's approval, kept as GitHub keeps approval
  labels beside the phase's label;
- a stale approval (given before the pull request's head appeared) is
  withdrawn: an approval label comes off the Linear issue, and an issue still
  in the approval state goes back to the state its phase shows, with a comment
  that asks for a new approval;
- a merge re-reads the Linear history right before it: each Linear approver
  must still be the one who last put the issue in its approval state (or added
  its approval label) and still be trusted;
- closing the issue moves it to ``merge.completion_state`` (Done);
- the opened pull request is linked as the issue's attachment (one per URL), and
  its body links the Linear issue instead of ``Closes #N``, which names a GitHub
  issue;
- a comment for the issue (an approval withdrawn, a question) is a Linear comment,
  found by its hidden marker before it is written again.

Every one of them still passes the gate first: rollout mode, outbox and kill switches.
"""

from __future__ import annotations

from orchestrator.domain.effects import PHASE_STATE
from orchestrator.domain.labels import shared_labels
from orchestrator.domain.pr_body import ClosingScope
from orchestrator.domain.record_updates import EffectResult
from orchestrator.domain.side_effects import (
    MergePR,
    SetLabels,
)
from orchestrator.effects.issue_writes import TrackerApproval, WriteTarget
from orchestrator.logs import get_logger
from orchestrator.tracker.base import IssueTracker
from orchestrator.tracker.linear_approval import LinearApproval, linear_approval
from orchestrator.tracker.linear_bridge import LinearIssues
from orchestrator.tracker.linear_people import is_linear_login
from orchestrator.wiring.access import GitHubAccess
from orchestrator.wiring.policy_view import PolicyView

log = get_logger(__name__)


# The idempotency key of the comment that asks for a new approval (domain.effects).
WITHDRAWN = ":approval-withdrawn:"


def _approval(view: PolicyView) -> LinearApproval:
    return linear_approval(view.flow, view.policy.tracker.approvers)


def linear_link(identifier: str, url: str) -> str:
    """The line of a pull request's body that links its Linear issue."""
    return f"Linear: [{identifier}]({url})"


def with_linear_link(body: str, number: int, identifier: str, url: str) -> str:
    """``body`` naming the Linear issue: the default ``Work on #N`` names it, and the
    link is added once."""
    text = body.replace(f"Work on #{number}:", f"Work on {identifier}:", 1)
    # ``Closes #N`` would name a GitHub issue of the same number: never the Linear one.
    closing = f"Closes #{number}"
    text = "\n".join(line for line in text.split("\n") if line.strip() != closing).rstrip()
    link = linear_link(identifier, url)
    return text if link in text else f"{text}\n\n{link}"


class LinearIssueWrites:
    """What Linear changes in the writes (module docstring)."""

    def __init__(self, github: GitHubAccess, linear: LinearIssues) -> None:
        self.github = github
        self.linear = linear
        self.tracker: IssueTracker = linear

    def pr_body(self, body: str, target: WriteTarget, view: PolicyView) -> str:
        ref = target.ref
        linked = with_linear_link(
            body, target.number, self.linear.identifier(ref), self.linear.url(ref)
        )
        # What is left naming a GitHub issue by keyword names one this issue is not.
        return self.closing_scope(target, view).honest(linked).text

    def closing_scope(self, target: WriteTarget, view: PolicyView) -> ClosingScope:
        """No GitHub issue may be closed by keyword: the issue is Linear's, and its number
        names another issue on GitHub."""
        return ClosingScope(target.repo, None, view.flow.pr.web_base)

    def pr_opened(self, target: WriteTarget, url: str, title: str) -> None:
        self.linear.link_pull_request(target.ref, url, title)

    def comment_text(self, text: str, key: str, view: PolicyView) -> str:
        if WITHDRAWN in key:
            # On Linear an approval state is a state: name it, not the label the gates saw.
            for state, label in view.flow.state_labels.items():
                text = text.replace(f"`{label}`", f"`{state}`")
        return text

    def set_labels(self, payload: SetLabels, target: WriteTarget, view: PolicyView) -> EffectResult:
        approval = _approval(view)
        added, removed = payload.add, payload.remove
        approving = set(approval.states.values()) | approval.labels
        withdrawn = [label for label in removed if label in approving]
        if withdrawn:
            return self._withdraw(target, view, approval, withdrawn)
        by_label = {label: state for state, label in view.flow.state_labels.items()}
        states = [by_label[label] for label in added if label in by_label]
        if not states:
            # Linear's labels on the issue are people's (stop, approval): not the runtime's.
            return EffectResult.done(changed=0)
        if len(states) > 1:
            return EffectResult.failed(
                f"more than one tracker state to set at once: {', '.join(states)}"
            )
        ref = target.ref
        # Read now: a person may have just moved the issue into an approval state.
        current = self.linear.read_now(ref) if approval.states else None
        if current is not None and current.state in approval.states and current.state != states[0]:
            log.info(
                "linear_approval_state_kept",
                issue=current.identifier,
                state=current.state,
                phase_state=states[0],
            )
            return EffectResult.done(changed=0, kept=current.state)
        self.linear.set_tracker_state(ref, states[0])
        return EffectResult.done(changed=1)

    def _withdraw(
        self, target: WriteTarget, view: PolicyView, approval: LinearApproval, labels: list[str]
    ) -> EffectResult:
        """Withdraw a stale approval: its labels come off the Linear issue, and an issue
        still in the approval state goes back to the state its phase shows."""
        ref = target.ref
        issue = self.linear.read_now(ref)
        changed = self.linear.remove_labels(
            ref, [name for name in labels if name in approval.labels]
        )
        if approval.states.get(issue.state) not in labels:
            return EffectResult.done(changed=changed)
        phase = target.record.phase if target.record is not None else None
        back = PHASE_STATE.get(phase) if phase is not None else None
        if back is None or back not in view.flow.state_labels or back in approval.states:
            # Nowhere the policy shows: the state stays, and the gates do not count it.
            log.warning(
                "linear_stale_approval_state_kept", issue=issue.identifier, state=issue.state
            )
            return EffectResult.done(changed=changed, kept=issue.state)
        self.linear.set_tracker_state(ref, str(back))
        log.info(
            "linear_stale_approval_withdrawn", issue=issue.identifier, state=issue.state, to=back
        )
        return EffectResult.done(changed=changed + 1, moved_to=str(back))

    def recheck_approval(
        self, payload: MergePR, target: WriteTarget, view: PolicyView
    ) -> TrackerApproval:
        """The approval's facts read again now, from Linear's history.

        A Linear approver must still be the one who last moved the issue into its approval
        state or added its approval label, and still be trusted; GitHub approvers are the
        GitHub side's to check, as without Linear.
        """
        approval = _approval(view)
        on_linear = set(approval.states.values()) | approval.labels
        owned = frozenset(login for login in payload.approvers if is_linear_login(login))
        if not owned and not shared_labels(on_linear, payload.approval_labels):
            return TrackerApproval()
        evidence = self.linear.approval(target.ref, approval, fresh=True)
        trusted = {event.actor.login for event in evidence.events if event.actor.can_write}
        lost = {
            login: (
                f"{login} no longer approves on Linear (the issue left the approval "
                "state or lost the label, someone else set it again, or the user is no "
                "longer trusted)"
            )
            for login in owned
            if login not in trusted
        }
        labels = evidence.labels if payload.approval_labels else frozenset()
        return TrackerApproval(owned=owned, lost=lost, labels=frozenset(labels))
