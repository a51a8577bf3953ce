from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from pathlib import Path

import pytest

from orchestrator.daemon.polling_status import PollingStatus, ResourceCost
from orchestrator.daemon.status import BudgetStatus, RuntimeStatus
from orchestrator.domain.phases import Phase, WaitingReason
from orchestrator.store.database import Database
from orchestrator.tick.sweep import SweepStatus
from orchestrator.turns.pool import RunningTurn
from orchestrator.web.server import WebHandle, start_web
from orchestrator.workflow.schema import DEFAULT_HEADER_TIMEOUT_MS, DEFAULT_MAX_CONNECTIONS

NOW = datetime.now(UTC).replace(microsecond=0)


@dataclass
class Control:
    """The daemon's controls as the web layer sees them: a pending tick, the brake file."""

    brake_file: Path
    pending: bool = False
    requests: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def request_tick(self) -> bool:
        with self.lock:
            self.requests += 1
            if self.pending:
                return False
            self.pending = True
            return True

    def set_brake(self, active: bool) -> None:
        if active:
            self.brake_file.touch()
        else:
            self.brake_file.unlink(missing_ok=True)


@dataclass
class Live:
    status: RuntimeStatus

    def __call__(self) -> RuntimeStatus:
        return self.status


def populate(db: Database) -> None:
    first = db.issues.ensure(
        "acme/app",
        7,
        title="Add <b>x</b>",
        phase=Phase.IMPLEMENTING,
        now=NOW - timedelta(minutes=30),
        labels=["orchestrator"],
    )
    db.issues.transition(
        first.id,
        Phase.IMPLEMENTING,
        Phase.WAITING_FOR_CHECKS,
        reason="pr opened",
        now=NOW - timedelta(minutes=20),
        waiting_reason=WaitingReason.CHECKS_PENDING.value,
    )
    db.issues.update_fields(
        first.id,
        now=NOW,
        pr_number=12,
        pr_head_sha="a" * 40,
        tracker_state="In Review",
        observation={
            "last_observed_at": NOW.isoformat(),
            "next_intended_action": "wait for checks on aaaaaaaa",
            "rollout_mode": "mutate",
            "gates": {
                "ownership": "pass",
                "kill_switch": "pass",
                "checks": "pending",
                "human_approval": "required",
                "mergeability": "pass",
                "head_match": "pass",
            },
        },
    )
    db.outbox.intend(
        "acme/app#7:create_pr:b",
        kind="create_pr",
        payload={"head": "b"},
        issue_id=first.id,
        rollout_mode="mutate",
        now=NOW,
    )
    db.outbox.complete("acme/app#7:create_pr:b", result={"number": 12}, now=NOW)
    db.runs.start(
        "run-1", issue_id=first.id, phase="implementing", attempt=1, now=NOW - timedelta(minutes=29)
    )
    db.runs.finish(
        "run-1",
        outcome="completed",
        now=NOW - timedelta(minutes=21),
        input_tokens=1000,
        cached_input_tokens=400,
        output_tokens=234,
        total_tokens=1234,
        cost_usd=0.25,
    )
    second = db.issues.ensure("acme/app", 9, title="Fix y", phase=Phase.IMPLEMENTING, now=NOW)
    db.outbox.refuse(
        "acme/app#9:merge_pr:c",
        status=_refused_by_mode(),
        kind="merge_pr",
        payload={},
        issue_id=second.id,
        rollout_mode="mutate",
        reason="merge needs rollout mode merge",
        now=NOW,
    )


def _refused_by_mode():  # type: ignore[no-untyped-def]
    from orchestrator.store.models import SideEffectStatus

    return SideEffectStatus.REFUSED_BY_MODE


def make_status(**overrides: object) -> RuntimeStatus:
    base = RuntimeStatus(
        as_of=NOW,
        replica_id="replica-a",
        started_at=NOW - timedelta(hours=1),
        rollout_mode="mutate",
        policy_path="WORKFLOW.md",
        repos=("acme/app",),
        last_tick_at=datetime.now(UTC),
        last_tick_duration_s=0.05,
        ticks=42,
        poll_interval_s=1.0,
        # A daemon alone leads its repository; tests of a follower override this.
        leading=("acme/app",),
        leader_epoch=1,
        running=(
            RunningTurn(
                "acme/app",
                9,
                "implementing",
                "run-2",
                1,
                NOW - timedelta(seconds=30),
                NOW,
                "tool_call: pytest",
            ),
        ),
        budgets=(BudgetStatus("core", 4990, 5000, NOW + timedelta(minutes=40)),),
        github_units_spent=10,
        dispatches=3,
        polling=PollingStatus(
            interval_s=1.0,
            issues=2000,
            costs=(
                ResourceCost("core", 1.0, 4990, None),
                ResourceCost("graphql", 4.0, 400, NOW + timedelta(seconds=100)),
            ),
            sweep=SweepStatus(
                passive=1500, read_this_pass=300, spread=10, last_pass_ticks=11, behind=True
            ),
            catching_up=("workpad comments to recover: 40 left, 10 per tick, about 0 min",),
        ),
    )
    return replace(base, **overrides)  # type: ignore[arg-type]


@dataclass
class Site:
    handle: WebHandle
    db: Database
    control: Control
    live: Live
    tmp: Path

    @property
    def url(self) -> str:
        return self.handle.url


@pytest.fixture
def site_factory(tmp_path: Path) -> Iterator[object]:
    started: list[tuple[WebHandle, Database]] = []

    def start(
        token: str | None = None,
        *,
        metrics_token: str | None = None,
        host: str = "127.0.0.1",
        allowed_hosts: tuple[str, ...] = (),
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        header_timeout_s: float = DEFAULT_HEADER_TIMEOUT_MS / 1000,
    ) -> Site:
        db = Database.open(f"sqlite:///{tmp_path}/db/orchestrator.db")
        populate(db)
        control = Control(tmp_path / "brake")
        live = Live(make_status())
        handle = start_web(
            host,
            0,
            db=db,
            status=live,
            control=control,
            token=token,
            metrics_token=metrics_token,
            allowed_hosts=allowed_hosts,
            html_base="http://github.test",
            max_connections=max_connections,
            header_timeout_s=header_timeout_s,
        )
        started.append((handle, db))
        return Site(handle, db, control, live, tmp_path)

    yield start
    for handle, db in started:
        handle.stop()
        db.close()


FINISHED = 11
MERGE_COMMIT = "c0ffee" + "c" * 34
FINISHED_HEAD = "b" * 40
LONG_ERROR = "agent exited with code 1: " + "Traceback (most recent call last) " * 20


def populate_finished(db: Database) -> None:
    """acme/app#11: merged and closed after a long life (40 workpad updates, a long PR body)."""
    from orchestrator.domain.phases import GateValue, RolloutMode
    from orchestrator.domain.workpad import (
        MergeState,
        Observation,
        PRRef,
        ReviewState,
        WorkpadRecord,
    )
    from orchestrator.store.codec import encode_workpad

    start = NOW - timedelta(hours=2)
    row = db.issues.ensure(
        "acme/app",
        FINISHED,
        title="Render the long report",
        phase=Phase.IMPLEMENTING,
        now=start,
        reason="claimed",
    )
    path = (
        Phase.IMPLEMENTING,
        Phase.REVIEWING,
        Phase.WAITING_FOR_CHECKS,
        Phase.WAITING_FOR_HUMAN,
        Phase.READY_TO_MERGE,
        Phase.MERGING,
        Phase.DONE,
    )
    for step, (before, after) in enumerate(pairwise(path), start=1):
        db.issues.transition(
            row.id, before, after, reason=f"step {step}", now=start + timedelta(minutes=10 * step)
        )
    gates = {
        "ownership": GateValue.PASS,
        "kill_switch": GateValue.PASS,
        "checks": GateValue.PASS,
        "human_approval": GateValue.PASS,
        "mergeability": GateValue.PENDING,
        "head_match": GateValue.PASS,
    }
    workpad = encode_workpad(
        WorkpadRecord(
            phase=Phase.DONE,
            branch="orchestrator/issue-11",
            pr=PRRef(21, "http://github.test/acme/app/pull/21", FINISHED_HEAD),
            review=ReviewState(55, 1, FINISHED_HEAD),
            merge=MergeState(
                last_attempted_at=NOW - timedelta(minutes=5),
                last_attempted_head_sha=FINISHED_HEAD,
                last_merge_commit_sha=MERGE_COMMIT,
                last_merged_head_sha=FINISHED_HEAD,
            ),
            observation=Observation(NOW, "nothing: done", RolloutMode.MERGE, gates),
        )
    )
    db.issues.update_fields(
        row.id,
        now=NOW,
        workpad=workpad,
        observation=workpad["observation"],
        tracker_state="Done",
        labels=["orchestrator", "state:in-review", "state:merging"],
        branch="orchestrator/issue-11",
        pr_number=21,
        pr_head_sha=FINISHED_HEAD,
    )
    moment = [start]

    def effect(kind: str, suffix: str, result: dict[str, object], failed: bool = False) -> None:
        moment[0] += timedelta(seconds=40)
        key = f"acme/app#{FINISHED}:{kind}:{suffix}"
        payload = {"heading": "## Orchestrator Workpad"} if kind == "upsert_workpad" else {}
        db.outbox.intend(
            key, kind=kind, payload=payload, issue_id=row.id, rollout_mode="merge", now=moment[0]
        )
        if failed:
            db.outbox.fail(key, error=result, now=moment[0])
        else:
            db.outbox.complete(key, result=result, now=moment[0])

    updates = iter(range(100))

    def workpads(count: int) -> None:
        for _ in range(count):
            effect(
                "upsert_workpad", f"{next(updates):016x}", {"action": "updated", "comment_id": 77}
            )

    effect("set_labels", f"state:in-progress@{start.isoformat()}", {})
    workpads(1)
    effect(
        "push_branch", FINISHED_HEAD, {"branch": "orchestrator/issue-11", "head_sha": FINISHED_HEAD}
    )
    effect(
        "create_pr",
        "orchestrator/issue-11",
        {
            "number": 21,
            "url": "http://github.test/acme/app/pull/21/" + "a-very-long-path-segment/" * 8,
            "head_sha": FINISHED_HEAD,
            "body": "## Summary\n\nRenders the long report. " + "More words about it. " * 40,
        },
    )
    workpads(12)
    effect("upsert_workpad", "f" * 16, {"error": "502 Bad Gateway from GitHub"}, failed=True)
    workpads(15)
    effect(
        "merge_pr",
        f"{FINISHED_HEAD}:{MERGE_COMMIT}",
        {"merged": True, "merge_commit_sha": MERGE_COMMIT},
    )
    workpads(11)
    effect("close_issue", f"merged:{MERGE_COMMIT}", {"changed": 1})
    workpads(1)
    db.runs.start(
        "run-11a",
        issue_id=row.id,
        phase="implementing",
        attempt=1,
        now=start + timedelta(minutes=1),
        replica_id="replica-a",
    )
    db.runs.finish(
        "run-11a",
        outcome="failed",
        now=start + timedelta(minutes=3),
        error=LONG_ERROR,
    )
    db.runs.start(
        "run-11b",
        issue_id=row.id,
        phase="implementing",
        attempt=2,
        now=start + timedelta(minutes=4),
        replica_id="replica-b",
    )
    db.runs.finish(
        "run-11b",
        outcome="completed",
        now=start + timedelta(minutes=9, seconds=30),
        input_tokens=120_000,
        cached_input_tokens=80_000,
        output_tokens=3_456,
        total_tokens=123_456,
        cost_usd=1.5,
    )
