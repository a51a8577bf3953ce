"""The one gate every side effect passes: kill switches, rollout mode, outbox, write, record.

:meth:`SideEffectGate.apply` is the only way the daemon writes to GitHub or the
git remote. Right before each write it (a) re-checks the kill switches (the
local file on disk; the issue, pull request and repository labels, read again
when older than a few seconds), (b) checks the issue's effective rollout mode,
(c) records the intent in the outbox under the effect's idempotency key (a key
already done is not repeated; one left without a result by a crash is retried
through find-before-create helpers), (d) performs the write, and (e) records the
result in the outbox and folds it into the issue's stored record. Refusals are
recorded too (``refused_by_mode``, ``refused_by_kill_switch``).

Every write is fenced: the caller names the poll lease (a tick) or the turn
claim (a worker's push) it acts under, with its epoch, and (c) checks that it
is still held in the same transaction that records the intent. A replica that
lost it writes nothing (``fenced``, logged as ``side_effect_fenced``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from enum import StrEnum
from types import MappingProxyType
from typing import Any

from orchestrator.domain.actions import SideEffect, SideEffectKind, allowed_in
from orchestrator.domain.gates import carries_stop_label
from orchestrator.domain.phases import RolloutMode
from orchestrator.domain.record_updates import EffectResult, apply_effect_result, new_record
from orchestrator.domain.rollout import effective_mode
from orchestrator.domain.side_effects import CreatePR, UpsertWorkpad, payload_json
from orchestrator.domain.workpad import parse_workpad, render_workpad
from orchestrator.effects.issue_writes import WriteTarget
from orchestrator.effects.switches import IssueLabels, SwitchBoard
from orchestrator.effects.writes import GitHubWrites
from orchestrator.github.errors import GitHubError, RateLimited
from orchestrator.logs import get_logger
from orchestrator.store.database import Database
from orchestrator.store.fencing import Fence, FenceLost
from orchestrator.store.models import SideEffectStatus
from orchestrator.store.records import RecordRow, RecordStore
from orchestrator.tracker.base import TrackerError
from orchestrator.wiring.access import GitHubAccess
from orchestrator.wiring.policy_view import PolicyView

log = get_logger(__name__)


class Verdict(StrEnum):
    """What the gate did with one side effect."""

    DONE = "done"
    # The outbox already had it done (a repeated plan after a crash): nothing was written.
    ALREADY_DONE = "already_done"
    FAILED = "failed"
    REFUSED_BY_MODE = "refused_by_mode"
    REFUSED_BY_KILL_SWITCH = "refused_by_kill_switch"
    # The lease or claim the write was to be made under is no longer held: nothing written.
    FENCED = "fenced"


@dataclass(frozen=True)
class GateOutcome:
    """The verdict, the effect's result when it ran, and the issue's row afterwards."""

    verdict: Verdict
    row: RecordRow | None
    result: EffectResult | None = None
    reason: str = ""


class SideEffectGate:
    """Applies side effects one at a time, each checked right before it is written."""

    def __init__(
        self,
        *,
        db: Database,
        records: RecordStore,
        switches: SwitchBoard,
        writes: GitHubWrites,
        github: GitHubAccess,
        clock: Callable[[], datetime],
    ) -> None:
        self.db = db
        self.records = records
        self.switches = switches
        self.writes = writes
        self.github = github
        self.clock = clock

    def apply(
        self,
        effect: SideEffect,
        *,
        view: PolicyView,
        row: RecordRow | None,
        title: str,
        fence: Fence | None = None,
    ) -> GateOutcome:
        """Check, record, perform and fold one side effect; raises RateLimited to stop the tick."""
        if (
            row is not None
            and row.recovery is not None
            and isinstance(effect.payload, UpsertWorkpad)
        ):
            effect = _with_recovery_note(effect, effect.payload, row, view)
        request = _Request(effect, view, row, title, payload_json(effect.payload))
        key = effect.idempotency_key
        kind = effect.kind.value

        # (a) kill switches, right now.
        try:
            stop = self._kill_switch(effect, view, row)
        except (GitHubError, TrackerError) as error:
            reason = f"could not re-check the kill switch labels: {error}"
            log.warning("side_effect_unchecked", **_fields(effect), error=reason)
            return GateOutcome(Verdict.FAILED, row, reason=reason)
        labels = self.switches.issue_labels(effect.issue)
        mode = effective_mode(view.flow, *((labels.issue, labels.pr) if labels is not None else ()))
        if stop is not None:
            return self._refuse(request, SideEffectStatus.REFUSED_BY_KILL_SWITCH, stop, mode)
        # (b) the issue's rollout mode.
        if not allowed_in(effect.kind, mode):
            reason = f"{kind} needs a higher rollout mode than {mode.value}"
            return self._refuse(request, SideEffectStatus.REFUSED_BY_MODE, reason, mode)
        # (c) the outbox, under the fence.
        try:
            intent = self.db.outbox.intend(
                key,
                kind=kind,
                payload=request.payload,
                issue_id=request.issue_id,
                rollout_mode=mode.value,
                now=self.clock(),
                fence=fence,
            )
        except FenceLost as lost:
            log.warning(
                "side_effect_fenced", **_fields(effect, Verdict.FENCED, mode), reason=str(lost)
            )
            return GateOutcome(Verdict.FENCED, row, reason=str(lost))
        # The workpad comment is upserted whatever the outbox says: the same text may be
        # wanted again after other versions were written (upserting an equal body is free).
        if intent.already_done and effect.kind is not SideEffectKind.UPSERT_WORKPAD:
            done = EffectResult(ok=True, data=MappingProxyType(dict(intent.result or {})))
            log.info(
                "side_effect_skipped",
                **_fields(effect, Verdict.ALREADY_DONE, mode),
                reason="already done",
            )
            return GateOutcome(Verdict.ALREADY_DONE, self._fold(request, done), done)
        if intent.maybe_applied:
            log.warning("side_effect_recheck", **_fields(effect), attempts=intent.attempts)
        # (d) the write.
        target = WriteTarget(
            repo=effect.issue.repo,
            number=effect.issue.number,
            title=title,
            record=row.record if row is not None else None,
        )
        try:
            result = self.writes.perform(effect, target, view)
        except RateLimited as limited:
            self.db.outbox.fail(
                key,
                error={"error": str(limited), "rate_limited_until": limited.reset_at.isoformat()},
                now=self.clock(),
            )
            raise
        # (e) the result, logged before it is recorded: GitHub has it even if the database
        # went away meanwhile (the intent then stays open and is re-checked before a retry).
        verdict = Verdict.DONE if result.ok else Verdict.FAILED
        facts = _facts(effect, result)
        if result.ok:
            log.info("side_effect", **_fields(effect, verdict, mode), **facts)
            self.db.outbox.complete(key, result=dict(result.data), now=self.clock())
        else:
            log.warning(
                "side_effect_failed", **_fields(effect, verdict, mode), **facts, error=result.error
            )
            self.db.outbox.fail(key, error={"error": result.error}, now=self.clock())
        return GateOutcome(verdict, self._fold(request, result), result, result.error or "")

    # ------------------------------------------------------------ kill switches

    def _kill_switch(
        self, effect: SideEffect, view: PolicyView, row: RecordRow | None
    ) -> str | None:
        """Why a kill switch stops this effect now, or None."""
        if self.switches.local_file_active():
            return f"the local kill-switch file {self.switches.kill_switch_file} exists"
        # A merge cannot be undone: its switches are read from GitHub right now, always.
        force = effect.kind is SideEffectKind.MERGE_PR
        repo = effect.issue.repo
        state = self.switches.repo_switch(repo)
        if force or state is None or not _is_fresh(state.read_at, self.switches.max_age_s):
            read_at = time.monotonic()
            self.switches.note_repo(repo, self._repo_stopped(repo, view), read_at=read_at)
            state = self.switches.repo_switch(repo)
        if state is not None and state.stopped:
            label = view.flow.repo_kill_switch_label
            return f"an open issue carries the repository stop label {label}"
        labels = self.switches.issue_labels(effect.issue)
        if force or labels is None or not labels.fresh(self.switches.max_age_s):
            labels = self._read_labels(effect, row)
        if carries_stop_label(labels.issue, view.flow):
            return f"the issue carries the stop label {view.flow.kill_switch_label}"
        if carries_stop_label(labels.pr, view.flow):
            return f"the pull request carries the stop label {view.flow.kill_switch_label}"
        return None

    def _repo_stopped(self, repo: str, view: PolicyView) -> bool:
        # A tracker beyond the repository's issues is polled now: its stop label stops too.
        if self.github.tracker.repo_stopped(fresh=True):
            return True
        return bool(
            self.github.gateway.open_issues_labelled(repo, view.flow.repo_kill_switch_label)
        )

    def _read_labels(self, effect: SideEffect, row: RecordRow | None) -> IssueLabels:
        ref = effect.issue
        read_at = time.monotonic()
        # The issue's labels are its tracker's, read now; the pull request's GitHub's.
        issue = self.github.tracker.labels_now(ref)
        pr_ref = row.record.workpad.pr if row is not None else None
        pr = (
            self.github.gateway.issue_labels(ref.repo, pr_ref.number)
            if pr_ref is not None
            else frozenset()
        )
        self.switches.note_issue(ref, issue, pr, read_at=read_at)
        return IssueLabels(issue, pr, read_at)

    # ------------------------------------------------------------- recording

    def _refuse(
        self, request: _Request, status: SideEffectStatus, reason: str, mode: RolloutMode
    ) -> GateOutcome:
        effect = request.effect
        self.db.outbox.refuse(
            effect.idempotency_key,
            status=status,
            kind=effect.kind.value,
            payload=request.payload,
            issue_id=request.issue_id,
            rollout_mode=mode.value,
            reason=reason,
            now=self.clock(),
        )
        verdict = (
            Verdict.REFUSED_BY_MODE
            if status is SideEffectStatus.REFUSED_BY_MODE
            else Verdict.REFUSED_BY_KILL_SWITCH
        )
        log.warning("side_effect_refused", **_fields(effect, verdict, mode), reason=reason)
        return GateOutcome(verdict, request.row, reason=reason)

    def _fold(self, request: _Request, result: EffectResult) -> RecordRow | None:
        """Fold the result into the issue's record (creating it after a first workpad write)."""
        effect, row, now = request.effect, request.row, self.clock()
        columns: dict[str, Any] = {}
        if effect.kind is SideEffectKind.UPSERT_WORKPAD and result.ok:
            comment = result.data.get("comment_id")
            if isinstance(comment, int):
                columns["workpad_comment_id"] = comment
            columns["workpad_hash"] = effect.idempotency_key.rsplit(":", 1)[-1][:64]
        if row is None:
            if not result.ok or effect.kind is not SideEffectKind.UPSERT_WORKPAD:
                return None
            # An observed issue without a record keeps one in the default phase from now on.
            fresh = new_record(request.view.flow.default_phase, now)
            created = self.records.create(
                effect.issue,
                title=request.title,
                record=apply_effect_result(fresh, effect, result, now),
                now=now,
                reason="observed",
            )
            return self.records.update(created.issue_id, lambda r: r, now=now, **columns)
        return self.records.update(
            row.issue_id,
            lambda record: apply_effect_result(record, effect, result, now),
            now=now,
            **columns,
        )


@dataclass(frozen=True)
class _Request:
    """One side effect on its way through the gate."""

    effect: SideEffect
    view: PolicyView
    row: RecordRow | None
    title: str
    payload: dict[str, object]

    @property
    def issue_id(self) -> int | None:
        return self.row.issue_id if self.row is not None else None


def _fields(
    effect: SideEffect, outcome: Verdict | None = None, mode: RolloutMode | None = None
) -> dict[str, str]:
    """The stable keys of a write's log line: what, on which issue, with what verdict, in
    which rollout mode, under which idempotency key."""
    fields = {"kind": effect.kind.value, "issue": str(effect.issue), "repo": effect.issue.repo}
    if outcome is not None:
        fields["outcome"] = outcome.value
    if mode is not None:
        fields["mode"] = mode.value
    fields["key"] = effect.idempotency_key
    return fields


def _facts(effect: SideEffect, result: EffectResult) -> dict[str, Any]:
    """What the write touched, when it names it: the pull request and the branch."""
    payload, data = effect.payload, result.data
    created = data.get("number") if isinstance(payload, CreatePR) else None
    pr = created if created is not None else getattr(payload, "pr_number", None)
    facts: dict[str, Any] = {}
    if isinstance(pr, int):
        facts["pr"] = pr
    branch = getattr(payload, "branch", None) or data.get("branch")
    if isinstance(branch, str):
        facts["branch"] = branch
    return facts


def _is_fresh(read_at: float, max_age_s: float) -> bool:
    return time.monotonic() - read_at <= max_age_s


def _with_recovery_note(
    effect: SideEffect, workpad: UpsertWorkpad, row: RecordRow, view: PolicyView
) -> SideEffect:
    """The workpad text with the untrusted block's raw text kept under a recovery note."""
    marker = view.flow.workpad_marker
    if row.recovery is None:
        return effect
    parsed = parse_workpad(workpad.body, marker=marker, now=row.record.phase_since)
    noted = render_workpad(
        parsed.record,
        marker=marker,
        recovery_raw=row.recovery.raw,
        recovery_problem=row.recovery.problem,
    )
    return replace(effect, payload=replace(workpad, body=noted))
