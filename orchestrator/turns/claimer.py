"""Turn claims between replicas: the leader queues the turns it plans, every replica runs them.

The polling leader's executor queues each planned turn in the database instead
of starting it; every replica (the leader too, at once after its tick) claims
queued turns up to its free worker threads with a compare-and-set lease,
renews the lease from its heartbeat while the turn runs, and closes the claim
when the turn and the push of its commits are over. The turn's push and record
are fenced by the claim's epoch; a claim that could not be renewed in time
(another replica may take it) is lost: its agent is cancelled and its result
discarded. A turn that ended while the database was out of reach keeps its
claim and is applied when the database returns; a claim the database says
this replica holds but no local turn backs (its worker died with the
database connection) is handed back at once, so no issue waits on it. The leader counts every
open claim as a running turn, so nothing is planned for an issue while any
replica works on it. A cancellation is written on the claim; the replica
holding it stops the agent at its next claim pass. One claimer serves every
repository of the daemon: a claim is run with the parts of its repository
(:class:`RepoWork`), and a claim of a repository the daemon no longer tracks
is closed unrun.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from orchestrator.agent import RepoSource
from orchestrator.agent.turn import new_run_id
from orchestrator.domain.actions import Dispatch
from orchestrator.domain.phases import Phase
from orchestrator.domain.snapshot import IssueRef, PullRequest, RunningAgent, TrackedIssue
from orchestrator.logs import bind_context, get_logger, issue_key
from orchestrator.store.claims import Claimed
from orchestrator.store.database import Database
from orchestrator.store.fencing import Fence
from orchestrator.store.outage import is_unreachable
from orchestrator.store.records import RecordStore
from orchestrator.turns.handoff import HandoffError, TurnInputs, decode_inputs, encode_inputs
from orchestrator.turns.job import HeldTurn, TurnJob
from orchestrator.turns.pool import TurnSlot, WorkerPool
from orchestrator.turns.runner import TurnRunner
from orchestrator.wiring.agents import AgentWiring
from orchestrator.wiring.policy_view import PolicyView

log = get_logger(__name__)


@dataclass(frozen=True)
class RepoWork:
    """What a turn of one repository runs with: the policy's view of it, where its
    workspaces clone from, and the turn runner that pushes and records to it."""

    view: PolicyView
    source: RepoSource
    turns: TurnRunner


# The parts of a repository, by its name (None: the daemon does not track it now).
WorkFor = Callable[[str], RepoWork | None]


class TurnClaimer:
    """Queues planned turns, claims them for this replica's pool, and passes cancellations on."""

    def __init__(
        self,
        *,
        db: Database,
        records: RecordStore,
        pool: WorkerPool,
        replica_id: str,
        lease_ttl: Callable[[], timedelta],
        clock: Callable[[], datetime],
    ) -> None:
        self.db = db
        self.records = records
        self.pool = pool
        self.replica_id = replica_id
        self.lease_ttl = lease_ttl
        self.clock = clock
        # The claims this replica's workers run now: claim id -> (slot, epoch).
        self._held: dict[int, tuple[TurnSlot, int]] = {}
        # Turns that ended while the database was away, and claims not closed yet.
        self._holding: dict[int, tuple[HeldTurn, int]] = {}
        self._unfinished: dict[int, tuple[TurnSlot, int]] = {}
        self._held_lock = threading.Lock()
        # Claiming and the orphan check exclude each other (a fresh claim is not an orphan).
        self._claiming = threading.Lock()

    # ------------------------------------------------------------ the leader

    def queue(
        self, dispatch: Dispatch, *, issue_id: int, issue: TrackedIssue, pr: PullRequest | None
    ) -> bool:
        """Queue a planned turn; False when the issue already has one open."""
        ref = dispatch.issue
        queued = self.db.claims.enqueue(
            issue_id=issue_id,
            repo=ref.repo,
            number=ref.number,
            phase=dispatch.phase.value,
            attempt=dispatch.attempt,
            payload=encode_inputs(TurnInputs(dispatch=dispatch, issue=issue, pr=pr)),
            now=self.clock(),
        )
        return queued is not None

    def running(self, repo: str) -> tuple[RunningAgent, ...]:
        """Every open claim of the repository, whichever replica holds it, as running turns."""
        local = {agent.issue: agent for agent in self.pool.running()}
        agents = []
        for claim in self.db.claims.open(repo):
            ref = IssueRef(claim.repo, claim.number)
            mine = local.get(ref)
            agents.append(
                RunningAgent(
                    issue=ref,
                    phase=Phase(claim.phase),
                    run_id=claim.run_id or f"queued-{claim.id}",
                    started_at=claim.claimed_at or claim.queued_at,
                    last_event_at=mine.last_event_at if mine is not None else None,
                )
            )
        return tuple(agents)

    def cancel(self, ref: IssueRef, reason: str) -> bool:
        """Stop the issue's turn wherever it runs; False when none was open."""
        asked = self.db.claims.request_cancel(ref.repo, ref.number, reason, now=self.clock())
        local = self.pool.cancel(ref, reason)
        return bool(asked) or local

    # ------------------------------------------------------------ every replica

    def pass_cancellations(self) -> int:
        """Stop the local turns whose claims someone asked to cancel."""
        return sum(
            self.pool.cancel(IssueRef(repo, number), reason)
            for repo, number, reason in self.db.claims.cancelled(self.replica_id)
        )

    def claim_ready(self, *, agents: AgentWiring, work_for: WorkFor) -> int:
        """Claim queued turns up to the free worker threads and start them; returns how many."""
        self.apply_held(work_for)
        now = self.clock()
        started = 0
        for claim_id in self.db.claims.claimable(now=now, limit=self.pool.free):
            with self._claiming:
                claimed = self.db.claims.claim(
                    claim_id, self.replica_id, run_id=new_run_id(), ttl=self.lease_ttl(), now=now
                )
                if claimed is None:
                    continue
                work = work_for(claimed.repo)
                if work is None:
                    log.warning(
                        "claim_dropped",
                        issue=issue_key(claimed.repo, claimed.number),
                        reason="the repository is not tracked any more",
                    )
                    self.db.claims.finish(claimed.claim_id, self.replica_id, now=now)
                    continue
                if self._start(claimed, agents=agents, work=work):
                    started += 1
        return started

    def apply_held(self, work_for: WorkFor) -> int:
        """Apply the turns held during a database outage and close their claims; how many."""
        with self._held_lock:
            holding = list(self._holding.items())
            unfinished = list(self._unfinished.items())
        applied = 0
        for claim_id, (held, epoch) in holding:
            work = work_for(held.slot.ref.repo)
            if work is not None and work.turns.conclude(held) is not None:
                return applied  # still away: try again at the next pass
            with self._held_lock:
                self._holding.pop(claim_id, None)
                self._unfinished[claim_id] = (held.slot, epoch)
            applied += 1
        for claim_id, (slot, epoch) in unfinished:
            self._finish(claim_id, epoch, slot)
        return applied

    def _finish(self, claim_id: int, epoch: int, slot: TurnSlot) -> None:
        """Close the claim; kept for later while the database is away."""
        try:
            finished = self.db.claims.finish(
                claim_id, self.replica_id, now=self.clock(), epoch=epoch
            )
        except Exception as error:
            if not is_unreachable(error):
                raise
            with self._held_lock:
                self._unfinished[claim_id] = (slot, epoch)
            return
        with self._held_lock:
            self._unfinished.pop(claim_id, None)
            self._held.pop(claim_id, None)
        if not finished:
            log.warning("claim_lost", run_id=slot.run_id, issue=str(slot.ref))

    def _start(self, claimed: Claimed, *, agents: AgentWiring, work: RepoWork) -> bool:
        now = self.clock()
        bind_context(replica=self.replica_id)
        if claimed.previous_run_id is not None:
            # The previous holder stopped renewing its lease: its run ends here.
            self.db.runs.interrupt(
                claimed.previous_run_id, now=now, error="the replica running it stopped"
            )
            log.warning(
                "claim_taken_over",
                issue=issue_key(claimed.repo, claimed.number),
                run_id=claimed.run_id,
                previous_run_id=claimed.previous_run_id,
            )
        try:
            inputs = decode_inputs(claimed.payload)
        except HandoffError as error:
            log.error(
                "claim_unreadable", issue=issue_key(claimed.repo, claimed.number), error=str(error)
            )
            self.db.claims.finish(claimed.claim_id, self.replica_id, now=now)
            return False
        row = self.records.get_by_id(claimed.issue_id)
        if row is None:
            self.db.claims.finish(claimed.claim_id, self.replica_id, now=now)
            return False
        recorded = row.record.last_outcome
        if recorded is not None and (
            recorded.run_id == claimed.previous_run_id or recorded.claim_id == claimed.claim_id
        ):
            # A previous holder recorded the turn and died before closing the claim: the
            # turn is done. Running it again would repeat the agent's work (and its commits);
            # the leader plans what comes next from the record. The recording holder need
            # not be the last one (a holder that took the claim over may have died before
            # closing it, leaving its own run id), so the claim the outcome was recorded
            # under counts too. Never judged by time: the replicas' clocks may disagree.
            log.info(
                "claim_already_recorded",
                issue=issue_key(claimed.repo, claimed.number),
                run_id=claimed.previous_run_id,
            )
            self.db.claims.finish(claimed.claim_id, self.replica_id, now=now)
            return False
        dispatch = inputs.dispatch
        job = TurnJob(
            dispatch=dispatch,
            issue_id=claimed.issue_id,
            issue=inputs.issue,
            record=row.record,
            pr=inputs.pr,
            view=work.view,
            agents=agents,
            source=work.source,
            fence=Fence.claim(claimed.claim_id, self.replica_id, claimed.epoch),
        )
        slot = TurnSlot(
            ref=dispatch.issue,
            issue_id=claimed.issue_id,
            phase=dispatch.phase,
            run_id=claimed.run_id,
            attempt=dispatch.attempt,
            started_at=now,
        )
        run = functools.partial(self._work, work.turns, job, claimed.claim_id, claimed.epoch)
        with self._held_lock:
            self._held[claimed.claim_id] = (slot, claimed.epoch)
        if not self.pool.submit(slot, run):
            with self._held_lock:
                self._held.pop(claimed.claim_id, None)
            self.db.claims.release_one(claimed.claim_id, self.replica_id)
            return False
        log.info(
            "turn_claimed",
            issue=str(dispatch.issue),
            run_id=claimed.run_id,
            dispatched_phase=dispatch.phase.value,
            attempt=dispatch.attempt,
        )
        return True

    def _work(
        self, turns: TurnRunner, job: TurnJob, claim_id: int, epoch: int, slot: TurnSlot
    ) -> None:
        held: HeldTurn | None = None
        try:
            held = turns.run(job, slot)
        finally:
            if held is not None:
                # The claim stays this replica's (renewed) until the turn is applied.
                with self._held_lock:
                    self._holding[claim_id] = (held, epoch)
            else:
                self._finish(claim_id, epoch, slot)

    def renew(self) -> int:
        """Extend the claims this replica holds; cancel the turns whose claim is lost.

        Returns how many claims are still held. A claim is lost when its lease
        expired before this renewal (the process stalled, or the database was
        out of reach for longer than the lease): another replica may already
        run the turn again, so this one stops its agent, and the fence keeps
        its result from being pushed or recorded.
        """
        with self._claiming:
            with self._held_lock:
                local = set(self._held) | set(self._holding) | set(self._unfinished)
            held = self.db.claims.renew(self.replica_id, ttl=self.lease_ttl(), now=self.clock())
            orphans = held - local
            if orphans:
                released = self.db.claims.release_ids(self.replica_id, orphans)
                log.warning("claims_released", count=released, reason="no local turn backs them")
        with self._held_lock:
            lost = [(cid, slot) for cid, (slot, _) in self._held.items() if cid not in held]
        for claim_id, slot in lost:
            if self.pool.cancel(slot.ref, "claim_lost"):
                log.warning(
                    "claim_lost", run_id=slot.run_id, issue=str(slot.ref), claim_id=claim_id
                )
        return len(held & local)

    def release(self) -> int:
        """Give back the claims still held (on shutdown) so another replica continues them."""
        return self.db.claims.release(self.replica_id)
