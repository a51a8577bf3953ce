"""One daemon and 1,000 issues waiting for a human: no change missed, the budget kept.

The world is the scale benchmark's (benchmarks.scale_world): one issue
brought to waiting for a human by the real flow, 999 more seeded like it. The
daemon runs as ``orchestrator run``. Everything here is counted in ticks and
units, never in seconds.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.scale_world import (
    APPROVAL,
    CHECK,
    DaemonProcess,
    insert_records,
    make_template,
    post_workpads,
    seed_pulls,
    wait_for,
    write_policy,
)
from orchestrator.domain.snapshot import IssueRef
from orchestrator.store.database import Database
from orchestrator.store.records import RecordStore
from orchestrator.tick.sweep import DEFAULT_SWEEP_SPREAD
from orchestrator_sim.testing import running_world

SIZE = 1000
INTERVAL_MS = 500


@pytest.mark.slow
def test_a_thousand_waiting_pull_requests_miss_no_change_and_keep_the_budget(
    tmp_path: Path,
) -> None:
    with running_world(tmp_path / "sim") as world:
        control, human, repo = world.control, world.human.login, world.repo
        for resource in ("core", "graphql"):
            control.set_rate_limit(
                login=world.bot.login, resource=resource, limit=10**7, remaining=10**7
            )
        policy = write_policy(tmp_path, INTERVAL_MS)
        db_url = f"sqlite:///{tmp_path / 'scale.db'}"
        template = make_template(world, policy, db_url, tmp_path / "template.log")
        seeded = seed_pulls(world, template, SIZE - 1)

        def url_of(pr: int) -> str:
            return f"{world.url}/{repo}/pull/{pr}"

        comments = post_workpads(world, template, seeded, url_of)
        db = Database.open(db_url)
        insert_records(
            db, repo=repo, template=template, seeded=seeded, url_of=url_of, comments=comments
        )
        records = RecordStore(db)
        daemon = DaemonProcess(policy, world, tmp_path / "daemon.log")

        def ticks() -> int:
            return len(daemon.whole_ticks())

        def wait_ticks(count: int) -> None:
            goal = ticks() + count
            wait_for(f"{count} ticks", lambda: ticks() >= goal, 60 + count * 10)

        def phase(number: int) -> str | None:
            row = records.get(IssueRef(repo, number))
            return row.record.phase.value if row is not None else None

        def billed() -> int:
            token = control.counters()["tokens"].get(world.bot.login, {})
            return int(token.get("billed", 0))

        daemon.start()
        try:
            # Every pull request read once (the seeded database has no state of them), with a
            # large budget; then GitHub's default budget for a token, a whole pass of the
            # sweep, and the cost of one more.
            wait_for(
                "the first read of every pull request",
                lambda: (
                    bool(daemon.whole_ticks()) and daemon.whole_ticks()[-1]["catching_up"] is None
                ),
                600,
            )
            for resource in ("core", "graphql"):
                control.set_rate_limit(
                    login=world.bot.login, resource=resource, limit=5000, remaining=5000
                )
            wait_ticks(DEFAULT_SWEEP_SPREAD + 2)
            writes, before = len(control.writes()), billed()
            first = ticks()
            wait_ticks(DEFAULT_SWEEP_SPREAD)
            cycles = ticks() - first
            per_cycle = (billed() - before) / cycles
            assert per_cycle <= SIZE * 0.01, f"{per_cycle:.1f} units per cycle"
            assert len(control.writes()) == writes, "nothing to write while all wait"
            planned = daemon.whole_ticks()[-1]
            assert planned["issues"] == SIZE and planned["catching_up"] is None

            # 1%: a failing check on the head (no updated_at moves: the sweep finds them);
            # two approvals (the feed sees the labels at once).
            failing, approved = seeded[:10], seeded[500:502]
            for item in failing:
                control.check_run(repo, sha=item.head_sha, name=CHECK, conclusion="failure")
            for item in approved:
                control.add_labels(repo, item.number, [APPROVAL], as_user=human)
            wait_ticks(DEFAULT_SWEEP_SPREAD + 3)
            missed = [item.number for item in failing if phase(item.number) == "waiting_for_human"]
            assert missed == [], f"failing checks not seen on {missed}"
            pulls = world.github().get_repo(repo)
            wait_for(
                "the approved pull requests merged",
                lambda: all(pulls.get_pull(item.pr).merged for item in approved),
                120,
            )
            assert not daemon.events("rate_limited")
            assert not daemon.events("tick_failed")
        finally:
            daemon.stop()
            db.close()
