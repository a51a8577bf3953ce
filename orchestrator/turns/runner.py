"""One agent turn as a worker runs it: workspace, prompt, the turn itself, and its record.

The worker never decides what comes next. It renders the prompt, runs the
turn, records the run (start, first event, end, tokens, the prompt) and folds
the outcome into the issue's record; the tick it then asks for plans from
there. The one exception is the push of the turn's commits: the push needs the
workspace, which lives where the turn ran, so the worker asks the pure planner
about this one issue and applies the push it plans through its own gate, under
the same idempotency key the polling leader's tick would use (the leader then
finds it done in the outbox), before the turn's claim is released. So a
replica stopped with SIGTERM pushes what finished before it exits, and no
other replica ever needs its workspace. The record and the push are fenced by
the turn's claim: a worker whose claim was lost (another replica took the
turn over) records nothing and pushes nothing, and says so
(``turn_result_discarded``).

A turn that ends while the database is out of reach is held in memory
(:class:`HeldTurn`, log event ``turn_held``) with its claim, and applied
(closed, recorded, pushed) when the database answers again (``turn_applied``).

Commits a previous life of the turn left unpushed (the daemon was killed
between the agent's commit and the push) are this turn's work: the turn's
starting point is the last pushed commit (the pull request's head, or where
the branch left its base), not the workspace's HEAD, so those commits are
pushed and are never taken for someone else's push. Any failure before the agent ran
(workspace, hook, prompt) is recorded as a failed turn, so the planner's retry
policy applies to it like any other. So is any unexpected exception while the
turn is run, its results read or its outcome recorded: it is logged once
(``turn_crashed``, ``turn_record_failed``, with the error's type, text and
innermost frame, no traceback) and becomes a failed attempt with its backoff,
counted toward ``orchestration.max_failed_attempts``, never a turn the next
tick dispatches again at once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from typing import Any

from orchestrator.agent import IssueRef as WorkspaceIssue
from orchestrator.agent import TurnRequest, Workspace
from orchestrator.agent.errors import AgentLayerError
from orchestrator.agent.events import TokenUsage
from orchestrator.domain.record_updates import record_outcome
from orchestrator.domain.snapshot import (
    AgentOutcome,
    OutcomeKind,
)
from orchestrator.effects.gate import SideEffectGate
from orchestrator.effects.switches import SwitchBoard
from orchestrator.github.errors import GitHubError, RateLimited
from orchestrator.logs import bind_context, error_fields, get_logger
from orchestrator.store.database import Database
from orchestrator.store.fencing import FenceKind, FenceLost
from orchestrator.store.outage import DatabaseHealth, is_unreachable
from orchestrator.store.records import RecordRow, RecordStore
from orchestrator.turns.job import HeldTurn, TurnJob, issue_branch
from orchestrator.turns.pool import TurnSlot, WorkerPool
from orchestrator.turns.pr_template import with_pr_template
from orchestrator.turns.prompt import render_prompt
from orchestrator.turns.push import PushParts, push_after_turn
from orchestrator.turns.turn_commits import with_turn_commits
from orchestrator.turns.workspace_sync import adopt_unpushed_work, sync_to_head
from orchestrator.wiring.access import GitHubAccess
from orchestrator.workflow import PromptRenderError

log = get_logger(__name__)

# Dispatch reasons that start an agent afresh rather than continue its session.
FRESH_START_REASONS = frozenset({"claim", "start"})


class TurnRunner:
    """Runs turn jobs in the worker threads of a :class:`WorkerPool`."""

    def __init__(
        self,
        *,
        db: Database,
        records: RecordStore,
        github: GitHubAccess,
        gate: SideEffectGate,
        switches: SwitchBoard,
        pool: WorkerPool,
        replica_id: str,
        clock: Callable[[], datetime],
        health: DatabaseHealth | None = None,
    ) -> None:
        self.db = db
        self.records = records
        self.github = github
        self.gate = gate
        self.switches = switches
        self.pool = pool
        self.replica_id = replica_id
        self.clock = clock
        self.health = health
        self._push_parts = PushParts(records, github, gate, switches, clock)

    def run(self, job: TurnJob, slot: TurnSlot) -> HeldTurn | None:
        """The body of one worker: prepare, run, record, push.

        Never raises for the turn's failures. Returns the turn, held, when the
        database could not be reached to record it: :meth:`conclude` applies it
        once the database answers again (the agent's work is not lost).
        """
        ref = job.dispatch.issue
        phase = job.dispatch.phase
        bind_context(
            repo=ref.repo,
            issue=str(ref),
            phase=phase.value,
            run_id=slot.run_id,
            replica=self.replica_id,
        )
        started_at = self.clock()
        run_started = False
        outcome: AgentOutcome
        run_close: dict[str, Any] | None = None
        try:
            workspace = self._workspace(job, slot)
            prompt = render_prompt(self.github, job, workspace)
            if slot.cancel_event.is_set():
                outcome = self._bare_outcome(job, slot, OutcomeKind.CANCELLED, started_at)
            else:
                resume = None
                if job.dispatch.reason not in FRESH_START_REASONS:
                    resume = self.db.runs.last_session(job.issue_id, phase.value)
                baseline = None
                if resume is not None:
                    spent = self.db.runs.session_usage(job.issue_id, resume)
                    baseline = TokenUsage(*spent)
                request = TurnRequest(
                    workspace=workspace,
                    prompt=prompt,
                    phase=phase,
                    attempt=job.dispatch.attempt,
                    run_id=slot.run_id,
                    resume_session_id=resume,
                    usage_baseline=baseline,
                )
                turn = job.agents.runner.prepare(request)
                self.db.runs.start(
                    slot.run_id,
                    issue_id=job.issue_id,
                    phase=phase.value,
                    attempt=job.dispatch.attempt,
                    now=self.clock(),
                    replica_id=self.replica_id,
                    prompt=prompt,
                )
                run_started = True
                self.pool.attach(slot, turn)
                result = turn.run()
                outcome = adopt_unpushed_work(
                    result.to_agent_outcome(), job, workspace, result.head_before
                )
                outcome = with_turn_commits(
                    outcome,
                    job.pr.threads if job.pr is not None else (),
                    workspace,
                    job.agents.workspaces.git,
                )
                outcome = with_pr_template(
                    outcome,
                    job.agents.workspaces.mirrors,
                    job.source,
                    job.view.policy.pr.base_branch,
                )
                run_close = {
                    "outcome": result.outcome.value,
                    "now": self.clock(),
                    "error": None if result.succeeded else result.message,
                    "input_tokens": result.usage.input_tokens,
                    "cached_input_tokens": result.usage.cached_input_tokens,
                    "output_tokens": result.usage.output_tokens,
                    "total_tokens": result.usage.total_tokens,
                    "session_id": result.session_id,
                    "cost_usd": result.cost_usd,
                }
        except (AgentLayerError, PromptRenderError, GitHubError, RateLimited, OSError) as error:
            kind = OutcomeKind.CANCELLED if slot.cancel_event.is_set() else OutcomeKind.FAILED
            log.warning("turn_not_run", error=str(error), outcome=kind.value)
            outcome = self._bare_outcome(job, slot, kind, started_at)
            if run_started:
                run_close = {"outcome": kind.value, "now": self.clock(), "error": str(error)}
        except Exception as error:
            # A bug, or agent-written content nothing anticipated: still one failed attempt,
            # with its backoff, never an unrecorded turn the next tick dispatches again at once.
            kind = OutcomeKind.CANCELLED if slot.cancel_event.is_set() else OutcomeKind.FAILED
            fields = error_fields(error)
            log.error("turn_crashed", outcome=kind.value, run_started=run_started, **fields)
            outcome = self._bare_outcome(job, slot, kind, started_at)
            if run_started:
                error_text = f"{fields['error_type']}: {fields['error']}"
                run_close = {"outcome": kind.value, "now": self.clock(), "error": error_text}
        return self.conclude(HeldTurn(job, slot, outcome, run_close))

    def conclude(self, held: HeldTurn) -> HeldTurn | None:
        """Close the run, record the outcome, push; the turn back when the database is away.

        Each step is done once: a turn held after its record was written only
        pushes when it is concluded again.
        """
        job, slot, outcome = held.job, held.slot, held.outcome
        try:
            if held.run_close is not None:
                self._close_run(slot, held.run_close)
                held.run_close = None
            if not held.recorded:
                if not self._record(job, outcome):
                    return None
                held.recorded = True
            if outcome.kind is OutcomeKind.SUCCEEDED and not slot.cancel_event.is_set():
                try:
                    push_after_turn(self._push_parts, job)
                except Exception as error:
                    if is_unreachable(error):
                        raise
                    # The outcome is stored: the leader's next tick plans the push again.
                    log.error("turn_push_failed", **error_fields(error))
        except Exception as error:
            if not is_unreachable(error):
                raise
            if self.health is not None:
                self.health.failed(error, where="turn")
            if not held.announced:
                held.announced = True
                log.warning(
                    "turn_held",
                    outcome=outcome.kind.value,
                    recorded=held.recorded,
                    reason="the database is out of reach; the result is applied when it returns",
                )
            return held
        if held.announced:
            log.info("turn_applied", outcome=outcome.kind.value)
        return None

    def _close_run(self, slot: TurnSlot, values: dict[str, Any]) -> None:
        """Close the run's row; a store error other than an outage is logged, not raised."""
        try:
            self.db.runs.finish(slot.run_id, **values)
        except Exception as problem:
            if is_unreachable(problem):
                raise
            log.error("turn_run_not_closed", **error_fields(problem))

    # ----------------------------------------------------------------- steps

    def _workspace(self, job: TurnJob, slot: TurnSlot) -> Workspace:
        ref = job.dispatch.issue
        issue = WorkspaceIssue(
            f"{ref.repo}#{ref.number}",
            ref.number,
            job.title,
            branch=issue_branch(job.record, job.view, ref.number),
        )
        workspace = job.agents.workspaces.ensure(issue, job.source, cancel=slot.cancel_event)
        if job.pr is not None and job.pr.head_sha:
            last = job.record.last_outcome
            discard = last.head_after if last is not None and last.discarded else None
            sync_to_head(job.agents.workspaces, workspace, job.source, job.pr.head_sha, discard)
        return workspace

    def _bare_outcome(
        self, job: TurnJob, slot: TurnSlot, kind: OutcomeKind, started_at: datetime
    ) -> AgentOutcome:
        return AgentOutcome(
            run_id=slot.run_id,
            phase=job.dispatch.phase,
            kind=kind,
            started_at=started_at,
            finished_at=self.clock(),
        )

    def _record(self, job: TurnJob, outcome: AgentOutcome) -> bool:
        """Fold the outcome into the record; if that raises, record a bare failure instead.

        The fallback keeps the run, phase, times and heads but none of the
        agent's result files, so the failure counts toward
        ``orchestration.max_failed_attempts`` and waits its backoff. Returns
        False when the turn's claim was lost: nothing is recorded then (the
        replica that took the turn over records its own).
        """
        try:
            updated = self._store(job, outcome)
        except FenceLost as lost:
            log.warning("turn_result_discarded", outcome=outcome.kind.value, reason=str(lost))
            return False
        except Exception as error:
            if is_unreachable(error):
                raise
            log.error("turn_record_failed", outcome=outcome.kind.value, **error_fields(error))
            outcome = AgentOutcome(
                run_id=outcome.run_id,
                phase=outcome.phase,
                kind=OutcomeKind.FAILED,
                started_at=outcome.started_at,
                finished_at=outcome.finished_at,
                head_before=outcome.head_before,
                head_after=outcome.head_after,
            )
            try:
                updated = self._store(job, outcome)
            except FenceLost as lost:
                log.warning("turn_result_discarded", outcome=outcome.kind.value, reason=str(lost))
                return False
            except Exception as second:
                if is_unreachable(second):
                    raise
                log.error("turn_record_lost", **error_fields(second))
                return True
        log.info(
            "turn_recorded",
            outcome=outcome.kind.value,
            committed=outcome.committed,
            head_after=outcome.head_after,
            retry_due_at=(
                updated.record.retry_due_at.isoformat()
                if updated is not None and updated.record.retry_due_at
                else None
            ),
        )
        return True

    def _store(self, job: TurnJob, outcome: AgentOutcome) -> RecordRow | None:
        threads = job.pr.threads if job.pr is not None else ()
        flow = job.view.flow
        if job.fence is not None and job.fence.kind is FenceKind.CLAIM:
            outcome = replace(outcome, claim_id=int(job.fence.key))
        if outcome.visit is None:
            outcome = replace(outcome, visit=job.record.phase_since)
        return self.records.update(
            job.issue_id,
            lambda record: record_outcome(record, outcome, flow, threads, self.github.login),
            now=self.clock(),
            fence=job.fence,
        )
