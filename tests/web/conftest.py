from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from orchestrator.domain.phases import Phase, WaitingReason
from orchestrator.runtime.polling_status import PollingStatus, ResourceCost
from orchestrator.runtime.status import BudgetStatus, RunningTurn, RuntimeStatus
from orchestrator.runtime.sweep import SweepStatus
from orchestrator.store.database import Database
from orchestrator.web.server import WebHandle, start_web

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
        )
        started.append((handle, db))
        return Site(handle, db, control, live, tmp_path)

    yield start
    for handle, db in started:
        handle.stop()
        db.close()
