"""The worker pool: agent turns in threads, with a registry the tick and the signals can see.

A dispatch registers its turn here before the worker thread starts, so the very
next tick counts it as running; any thread may cancel it (reconciliation, the
kill switch, shutdown), even before the agent process exists. The pool is
sized by ``agent.max_concurrent_agents``; the planner already keeps dispatches
within the global and per-phase limits.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime

from orchestrator.agent import AgentTurn
from orchestrator.agent.events import AgentEvent
from orchestrator.domain.phases import Phase
from orchestrator.domain.snapshot import IssueRef, RunningAgent
from orchestrator.logs import error_fields, get_logger, in_current_context

log = get_logger(__name__)

_EVENT_PREVIEW = 120


@dataclass
class TurnSlot:
    """One dispatched turn: who it is for, and how to stop it."""

    ref: IssueRef
    issue_id: int
    phase: Phase
    run_id: str
    attempt: int
    started_at: datetime
    cancel_event: threading.Event = field(default_factory=threading.Event)
    cancel_reason: str | None = None
    turn: AgentTurn | None = None
    last_event_at: datetime | None = None
    last_event: str | None = None
    first_event_seen: bool = False


@dataclass(frozen=True, slots=True)
class RunningTurn:
    """An agent turn in progress."""

    repo: str
    number: int
    phase: str
    run_id: str
    attempt: int
    started_at: datetime
    last_event_at: datetime | None = None
    # A short description of the last event (its kind and a bounded preview).
    last_event: str | None = None


class WorkerPool:
    """Runs turn jobs in threads and keeps the registry of running turns. Thread-safe."""

    def __init__(self, size: int, *, clock: Callable[[], datetime]) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._slots: dict[IssueRef, TurnSlot] = {}
        self._futures: set[Future[None]] = set()
        self._size = size
        self._executor = ThreadPoolExecutor(max_workers=size, thread_name_prefix="agent")
        self._accepting = True
        # Called once per run when its first event arrives (records it in the store).
        self.on_first_event: Callable[[TurnSlot, datetime], None] | None = None
        # Called after a turn left the registry (asks for the tick that plans what follows).
        self.on_finished: Callable[[], object] | None = None

    # -------------------------------------------------------------- registry

    def running(self) -> tuple[RunningAgent, ...]:
        """The running turns as the planner sees them."""
        with self._lock:
            return tuple(
                RunningAgent(
                    issue=slot.ref,
                    phase=slot.phase,
                    run_id=slot.run_id,
                    started_at=slot.started_at,
                    last_event_at=slot.last_event_at,
                )
                for slot in self._slots.values()
            )

    def turns(self) -> tuple[RunningTurn, ...]:
        """The running turns for the status page."""
        with self._lock:
            return tuple(
                RunningTurn(
                    repo=slot.ref.repo,
                    number=slot.ref.number,
                    phase=slot.phase.value,
                    run_id=slot.run_id,
                    attempt=slot.attempt,
                    started_at=slot.started_at,
                    last_event_at=slot.last_event_at,
                    last_event=slot.last_event,
                )
                for slot in self._slots.values()
            )

    def slot(self, ref: IssueRef) -> TurnSlot | None:
        with self._lock:
            return self._slots.get(ref)

    @property
    def busy(self) -> int:
        with self._lock:
            return len(self._slots)

    @property
    def free(self) -> int:
        """Threads not running a turn (none once the pool stopped accepting)."""
        with self._lock:
            return max(0, self._size - len(self._slots)) if self._accepting else 0

    # ------------------------------------------------------------ dispatching

    def submit(self, slot: TurnSlot, job: Callable[[TurnSlot], None]) -> bool:
        """Register ``slot`` and run ``job(slot)`` in a worker; False when refused."""
        with self._lock:
            if not self._accepting or slot.ref in self._slots:
                return False
            self._slots[slot.ref] = slot
            wrapped = in_current_context(self._run)
            future = self._executor.submit(wrapped, slot, job)
            self._futures.add(future)
        future.add_done_callback(self._forget_future)
        return True

    def _run(self, slot: TurnSlot, job: Callable[[TurnSlot], None]) -> None:
        try:
            job(slot)
        except Exception as error:
            log.error("turn_job_failed", run_id=slot.run_id, **error_fields(error))
        finally:
            with self._lock:
                if self._slots.get(slot.ref) is slot:
                    del self._slots[slot.ref]
            finished = self.on_finished
            if finished is not None:
                finished()

    def _forget_future(self, future: Future[None]) -> None:
        with self._lock:
            self._futures.discard(future)

    def attach(self, slot: TurnSlot, turn: AgentTurn) -> None:
        """Make the prepared turn cancellable; a cancel requested earlier reaches it now."""
        with self._lock:
            slot.turn = turn
            reason = slot.cancel_reason if slot.cancel_event.is_set() else None
        if reason is not None:
            turn.cancel(reason)

    def cancel(self, ref: IssueRef, reason: str) -> bool:
        """Stop the issue's turn (idempotent); False when nothing runs for it."""
        with self._lock:
            slot = self._slots.get(ref)
            if slot is None:
                return False
            if slot.cancel_reason is None:
                slot.cancel_reason = reason
            slot.cancel_event.set()
            turn = slot.turn
        log.info("turn_cancel", run_id=slot.run_id, reason=reason, phase=slot.phase.value)
        if turn is not None:
            turn.cancel(reason)
        return True

    def cancel_all(self, reason: str) -> int:
        with self._lock:
            refs = list(self._slots)
        return sum(self.cancel(ref, reason) for ref in refs)

    # ----------------------------------------------------------------- events

    def on_event(self, run_id: str, event: AgentEvent) -> None:
        """The runner's listener: keep the last event for the status page."""
        now = self._clock()
        first = False
        with self._lock:
            slot = next((s for s in self._slots.values() if s.run_id == run_id), None)
            if slot is None:
                return
            slot.last_event_at = now
            text = f": {event.text[:_EVENT_PREVIEW]}" if event.text else ""
            slot.last_event = f"{event.kind.value}{text}"
            if not slot.first_event_seen:
                slot.first_event_seen = first = True
        callback = self.on_first_event
        if first and callback is not None:
            callback(slot, now)

    # --------------------------------------------------------------- lifecycle

    def resize(self, size: int) -> None:
        """Use ``size`` threads for new turns (running turns finish in the old threads)."""
        with self._lock:
            if size == self._size or not self._accepting:
                return
            old, self._executor = (
                self._executor,
                ThreadPoolExecutor(max_workers=size, thread_name_prefix="agent"),
            )
            self._size = size
        old.shutdown(wait=False)

    def stop_accepting(self) -> None:
        with self._lock:
            self._accepting = False

    def wait_idle(self, timeout_s: float) -> bool:
        """Wait until no turn runs; False on timeout."""
        with self._lock:
            futures = list(self._futures)
        done = threading.Event()
        if not futures:
            return True
        remaining = set(futures)
        guard = threading.Lock()

        def finished(future: Future[None]) -> None:
            with guard:
                remaining.discard(future)
                if not remaining:
                    done.set()

        for future in futures:
            future.add_done_callback(finished)
        return done.wait(timeout_s)

    def shutdown(self) -> None:
        with self._lock:
            self._accepting = False
            executor = self._executor
        executor.shutdown(wait=False, cancel_futures=False)
