"""Side effects of a policy with ``tracker.kind: linear``: the issue's side goes to Linear.

The code's side is GitHub's as always (push, pull request, review comment,
threads, merge): :class:`GitHubWrites` does it. What belongs to the issue goes
to Linear through :class:`~orchestrator.tracker.linear_bridge.LinearIssues`:

- the workpad is the bot's comment on the Linear issue (found before created);
- a state label the planner sets on the issue is the Linear workflow state it
  stands for (``tracker.state_labels`` read backwards; a policy without state
  labels moves no state until the merge);
- closing the issue moves it to ``merge.completion_state`` (Done);
- the opened pull request is linked as the issue's attachment (one per URL), and
  its body links the Linear issue instead of ``Closes #N``, which names a GitHub
  issue;
- a comment for the issue (an approval withdrawn, a question) is a Linear comment,
  found by its hidden marker before it is written again.

Every one of them still passes the gate first: rollout mode, outbox and kill switches.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from types import MappingProxyType

from orchestrator.agent import RepoSource
from orchestrator.domain.actions import SideEffect
from orchestrator.domain.record_updates import EffectResult
from orchestrator.domain.snapshot import IssueRef
from orchestrator.runtime.wiring import AgentWiring, GitHubAccess, PolicyView
from orchestrator.runtime.writes import (
    GitHubWrites,
    WriteTarget,
    _failed,
    _names,
    _ok,
    _text,
    effect_marker,
)
from orchestrator.tracker.linear_bridge import LinearIssues
from orchestrator.tracker.linear_client import LinearError


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


class LinearWrites(GitHubWrites):
    """GitHub writes for the code, Linear writes for the issue (module docstring)."""

    def __init__(
        self,
        github: GitHubAccess,
        linear: LinearIssues,
        agents: Callable[[], AgentWiring],
        source: Callable[[], RepoSource],
    ) -> None:
        super().__init__(github, agents, source)
        self.linear = linear

    def _linked_body(self, body: str, target: WriteTarget) -> str:
        ref = self._ref(target)
        return with_linear_link(
            body, target.number, self.linear.identifier(ref), self.linear.url(ref)
        )

    @staticmethod
    def _ref(target: WriteTarget) -> IssueRef:
        return IssueRef(target.repo, target.number)

    def perform(self, effect: SideEffect, target: WriteTarget, view: PolicyView) -> EffectResult:
        try:
            return super().perform(effect, target, view)
        except LinearError as error:
            return _failed(f"Linear: {error.operation}: {error.code}: {error.message}")

    # --------------------------------------------------------- pull requests

    def _create_pr(self, effect: SideEffect, target: WriteTarget, view: PolicyView) -> EffectResult:
        body = self._linked_body(_text(effect.payload, "body"), target)
        linked = replace(effect, payload=MappingProxyType({**effect.payload, "body": body}))
        result = super()._create_pr(linked, target, view)
        url = result.data.get("url")
        if result.ok and isinstance(url, str):
            title = _text(effect.payload, "title")
            self.linear.link_pull_request(self._ref(target), url, title)
        return result

    def _update_pr_body(
        self, effect: SideEffect, target: WriteTarget, view: PolicyView
    ) -> EffectResult:
        body = self._linked_body(_text(effect.payload, "body"), target)
        linked = replace(effect, payload=MappingProxyType({**effect.payload, "body": body}))
        # The pull request links the Linear issue; no ``Closes #N`` is added back.
        policy = view.policy
        unclosing = replace(
            view,
            workflow=replace(
                view.workflow, policy=replace(policy, pr=replace(policy.pr, closes_issue=False))
            ),
        )
        return super()._update_pr_body(linked, target, unclosing)

    def _labelled(self, target: WriteTarget, pr_number: int) -> set[int]:
        """Only the pull request: the number of a Linear issue names no GitHub issue."""
        return {pr_number}

    # ---------------------------------------------------------------- issues

    def _upsert_workpad(
        self, effect: SideEffect, target: WriteTarget, view: PolicyView
    ) -> EffectResult:
        comment = self.linear.upsert_workpad(self._ref(target), _text(effect.payload, "body"))
        return _ok(linear_comment_id=comment.id, action="upserted")

    def _set_labels(
        self, effect: SideEffect, target: WriteTarget, view: PolicyView
    ) -> EffectResult:
        on = effect.payload.get("on_number")
        if isinstance(on, int) and on > 0 and on != target.number:
            return super()._set_labels(effect, target, view)  # a label on the pull request
        if _names(effect.payload, "remove") and not _names(effect.payload, "add"):
            # Taking a label off the Linear issue (a stale approval) is a person's to do.
            return _ok(changed=0)
        by_label = {label: state for state, label in view.policy.tracker.state_labels.items()}
        states = [by_label[label] for label in _names(effect.payload, "add") if label in by_label]
        if not states:
            # Linear's labels on the issue are people's (stop, approval): not the runtime's.
            return _ok(changed=0)
        if len(states) > 1:
            return _failed(f"more than one tracker state to set at once: {', '.join(states)}")
        self.linear.set_tracker_state(self._ref(target), states[0])
        return _ok(changed=1)

    def _post_comment(
        self, effect: SideEffect, target: WriteTarget, view: PolicyView
    ) -> EffectResult:
        marker = effect_marker(effect.idempotency_key)
        body = f"{_text(effect.payload, 'body')}\n\n{marker}"
        comment_id = self.linear.upsert_comment(self._ref(target), marker, body)
        return _ok(linear_comment_id=comment_id)

    def _close_issue(
        self, effect: SideEffect, target: WriteTarget, view: PolicyView
    ) -> EffectResult:
        state = view.policy.merge.completion_state
        self.linear.set_tracker_state(self._ref(target), state)
        return _ok(changed=1)
