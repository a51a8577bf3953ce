"""The cluster in the operator views: the leader, every replica, readiness, leader-only gauges.

A real SQLite database holds the replicas, the poll lease and the turn claims
(on SQLite the store judges them on the clock it is given, so the tests pick
which replica is alive); the daemon's live status is a fake, as in the other
web tests.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner
from prometheus_client.parser import text_string_to_metric_families

from orchestrator.cli import cli
from orchestrator.daemon.status import RuntimeStatus
from orchestrator.operator import render
from orchestrator.repos.cluster import poll_lease_name
from orchestrator.store.database import Database
from orchestrator.web.app import readiness_problems
from orchestrator.web.metrics import make_registry, metrics_text
from orchestrator.web.pages import dashboard as dashboard_html
from orchestrator.web.views import dashboard as dashboard_view
from tests.web.conftest import NOW, make_status, populate

REPO = "acme/app"
LIVE = timedelta(days=1)
LEADER = "replica-a"
FOLLOWER = "replica-b"
DEAD = "replica-c"
STOPPED = "replica-d"
# Families read from the shared database: exported by the leader only.
CLUSTER_FAMILIES = {
    "orchestrator_issues",
    "orchestrator_agent_runs",
    "orchestrator_agent_tokens",
    "orchestrator_agent_cost_usd",
    "orchestrator_side_effects",
    "orchestrator_replica_alive",
    "orchestrator_turns_claimed",
    "orchestrator_turns_queued",
}
# What each replica did itself: exported by every replica.
OWN_FAMILIES = {
    "orchestrator_ticks",
    "orchestrator_dispatches",
    "orchestrator_github_units_spent",
    "orchestrator_running_agents",
    "orchestrator_brake_active",
    "orchestrator_leader",
}


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    """Four replicas: a leader and a follower alive, one dead (killed), one stopped cleanly."""
    database = Database.open(f"sqlite:///{tmp_path}/orchestrator.db")
    populate(database)
    for name in (LEADER, FOLLOWER):
        database.replicas.register(name, version="1.2.3", ttl=LIVE, now=NOW)
    database.replicas.register(DEAD, version="1.2.2", ttl=timedelta(seconds=10), now=NOW - LIVE)
    database.replicas.register(STOPPED, version="1.2.3", ttl=LIVE, now=NOW)
    database.replicas.stopped(STOPPED, now=NOW)
    assert database.leases.acquire(poll_lease_name(REPO), LEADER, ttl=LIVE, now=NOW) == 1
    seven, nine = (database.issues.get(REPO, n) for n in (7, 9))
    assert seven is not None and nine is not None
    claims = [
        database.claims.enqueue(
            issue_id=issue.id,
            repo=REPO,
            number=issue.number,
            phase="implementing",
            attempt=1,
            payload={},
            now=NOW,
        )
        for issue in (seven, nine)
    ]
    assert claims[0] is not None and claims[1] is not None
    # One turn runs on the follower, the other waits for a free worker.
    assert database.claims.claim(claims[0], FOLLOWER, run_id="run-7", ttl=LIVE, now=NOW)
    yield database
    database.close()


def follower_status(**overrides: object) -> RuntimeStatus:
    fields: dict[str, object] = {
        "replica_id": FOLLOWER,
        "leading": (),
        "leader_epoch": None,
        "last_tick_at": None,
        "ticks": 0,
    }
    return make_status(**{**fields, **overrides})


def samples(text: bytes) -> tuple[set[str], dict[tuple[str, tuple[tuple[str, str], ...]], float]]:
    families = list(text_string_to_metric_families(text.decode()))
    values = {
        (s.name, tuple(sorted(s.labels.items()))): s.value for f in families for s in f.samples
    }
    return {f.name for f in families}, values


# ------------------------------------------------------------------ cluster view


def test_cluster_lists_every_replica_with_its_role_presence_and_turns(db: Database) -> None:
    cluster = dashboard_view.cluster(db, NOW, REPO)
    assert cluster.leader == LEADER
    by_id = {r.replica_id: r for r in cluster.replicas}
    assert [r.replica_id for r in cluster.replicas] == [LEADER, FOLLOWER, DEAD, STOPPED]
    assert (by_id[LEADER].alive, by_id[LEADER].leads, by_id[LEADER].leader) == (
        True,
        (REPO,),
        True,
    )
    assert (by_id[FOLLOWER].alive, by_id[FOLLOWER].leader, by_id[FOLLOWER].running_turns) == (
        True,
        False,
        1,
    )
    assert not by_id[DEAD].alive and by_id[DEAD].stopped_at is None
    assert not by_id[STOPPED].alive and by_id[STOPPED].stopped_at is not None
    assert by_id[DEAD].version == "1.2.2" and by_id[LEADER].running_turns == 0
    assert cluster.queued_turns == 1
    assert by_id[LEADER].as_json()["leader"] is True
    assert by_id[FOLLOWER].as_json()["heartbeat_at"] == NOW.isoformat()


def test_without_a_repository_the_one_replica_leading_anything_is_the_leader(
    db: Database,
) -> None:
    assert dashboard_view.cluster(db, NOW).leader == LEADER
    # Once its lease expired (judged on the store's clock) nobody leads.
    assert dashboard_view.cluster(db, NOW + LIVE * 2).leader is None
    assert dashboard_view.cluster(db, NOW + LIVE * 2, REPO).leader is None


def test_open_claims_by_owner_count_queued_ones_under_none(db: Database) -> None:
    assert db.claims.open_by_owner() == {FOLLOWER: 1, None: 1}
    assert db.claims.open_by_owner(REPO) == {FOLLOWER: 1, None: 1}
    assert db.claims.open_by_owner("acme/other") == {}


# -------------------------------------------------------------------- readiness


def test_a_follower_with_a_recent_heartbeat_is_ready_though_it_never_ticked(
    db: Database,
) -> None:
    assert readiness_problems(db, follower_status(started_at=NOW - LIVE), NOW) == []


def test_a_follower_whose_heartbeat_stopped_is_not_ready(db: Database) -> None:
    problems = readiness_problems(db, follower_status(replica_id=DEAD), NOW)
    assert len(problems) == 1 and problems[0].startswith("heartbeat is stale (last: ")
    stopping = readiness_problems(db, follower_status(replica_id=STOPPED), NOW)
    assert stopping == [f"replica {STOPPED} is stopping"]
    unknown = readiness_problems(db, follower_status(replica_id="replica-x"), NOW)
    assert unknown == ["replica replica-x is not registered in the replicas table"]


def test_the_leader_keeps_the_last_tick_rule(db: Database) -> None:
    fresh = make_status(replica_id=LEADER, last_tick_at=NOW)
    assert readiness_problems(db, fresh, NOW) == []
    stale = make_status(replica_id=LEADER, last_tick_at=NOW - timedelta(minutes=5))
    problems = readiness_problems(db, stale, NOW)
    assert len(problems) == 1 and problems[0].startswith("last tick is stale")


# ---------------------------------------------------------------------- metrics


def test_the_leader_exports_its_role_and_the_cluster_figures(db: Database) -> None:
    status = make_status(replica_id=LEADER, leader_epoch=4)
    names, values = samples(metrics_text(make_registry(db, lambda: status)))
    assert names >= CLUSTER_FAMILIES | OWN_FAMILIES
    assert values[("orchestrator_leader", (("replica", LEADER),))] == 1
    assert values[("orchestrator_leader_epoch", (("repo", REPO),))] == 4
    assert values[("orchestrator_replica_alive", (("replica", DEAD), ("version", "1.2.2")))] == 0
    assert values[("orchestrator_replica_alive", (("replica", LEADER), ("version", "1.2.3")))] == 1
    assert not any(
        key[0] == "orchestrator_replica_alive" and ("replica", STOPPED) in key[1] for key in values
    )
    assert values[("orchestrator_turns_claimed", (("replica", FOLLOWER),))] == 1
    assert values[("orchestrator_turns_queued", ())] == 1
    assert values[("orchestrator_issues", (("phase", "waiting_for_checks"),))] == 1


def test_a_follower_exports_only_what_it_did_itself(db: Database) -> None:
    status = follower_status(ticks=0, dispatches=0, github_units_spent=7)
    names, values = samples(metrics_text(make_registry(db, lambda: status)))
    assert names >= OWN_FAMILIES
    assert not names & (CLUSTER_FAMILIES | {"orchestrator_leader_epoch"})
    assert values[("orchestrator_leader", (("replica", FOLLOWER),))] == 0
    assert values[("orchestrator_github_units_spent_total", ())] == 7
    assert values[("orchestrator_running_agents", ())] == 1


def test_no_status_no_metrics(db: Database) -> None:
    assert samples(metrics_text(make_registry(db, lambda: None)))[0] == set()


# -------------------------------------------------------------------- dashboard


def test_a_follower_header_names_the_leader_instead_of_a_tick(db: Database) -> None:
    cluster = dashboard_view.cluster(db, NOW, REPO)
    head = dashboard_view.header(follower_status(), cluster.leader)
    assert (head.role, head.leader) == ("follower", LEADER)
    page = dashboard_html.dashboard(head, [], "http://github.test", cluster.replicas)
    assert f"follower of <b>{LEADER}</b>" in page
    assert "last tick:" not in page
    assert '<table class="replicas">' in page
    follower_row = page[page.index(f'id="replica-{FOLLOWER}"') :].split("</tr>")[0]
    assert "(this one)" in follower_row and ">follower<" in follower_row
    assert "<td>1</td>" in follower_row
    leader_row = page[page.index(f'id="replica-{LEADER}"') :].split("</tr>")[0]
    assert f"leader of {REPO}" in leader_row and "1.2.3" in leader_row
    dead_row = page[page.index(f'id="replica-{DEAD}"') :].split("</tr>")[0]
    assert '<span class="fail">no</span>' in dead_row


def test_the_leader_header_keeps_its_last_tick(db: Database) -> None:
    head = dashboard_view.header(make_status(replica_id=LEADER), LEADER)
    page = dashboard_html.dashboard(head, [], "http://github.test")
    assert "last tick: " in page and "(42 ticks)" in page
    assert f"replica: {LEADER} (leader)" in page and "follower of" not in page


def test_a_follower_without_any_leader_says_so() -> None:
    head = dashboard_view.header(follower_status(), None)
    page = dashboard_html.dashboard(head, [], "http://github.test")
    assert "follower (no replica leads now)" in page


# ------------------------------------------------------------ orchestrator status


def test_status_text_names_the_leader_and_lists_the_replicas(db: Database) -> None:
    cluster = dashboard_view.cluster(db, NOW, REPO)
    head = dashboard_view.header(follower_status(), cluster.leader).as_json()
    lines = render.header_lines(head)
    assert f"replica {FOLLOWER}: follower of {LEADER}" in lines[0]
    table = render.replica_lines(cluster.leader, [r.as_json() for r in cluster.replicas])
    assert table[0] == f"leader: {LEADER}"
    assert table[1].split() == ["replica", "role", "alive", "version", "last", "heartbeat", "turns"]
    rows = {line.split()[0]: line.split() for line in table[2:] if line}
    assert rows[LEADER][1:5] == ["leader", "of", REPO, "yes"]
    assert rows[FOLLOWER][1:3] == ["follower", "yes"] and rows[FOLLOWER][-1] == "1"
    assert rows[DEAD][1:3] == ["-", "no"]
    assert rows[STOPPED][1:3] == ["-", "stopped"]
    leader_head = dashboard_view.header(make_status(replica_id=LEADER), LEADER).as_json()
    assert f"replica {LEADER}: leader, last tick: " in render.header_lines(leader_head)[0]


def test_status_command_reads_the_cluster_from_the_database(
    db: Database, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    url = f"sqlite:///{tmp_path}/orchestrator.db"
    text = CliRunner().invoke(cli, ["status", "--db", url], catch_exceptions=False)
    assert text.exit_code == 0, text.output
    assert f"leader: {LEADER}" in text.output
    assert any(line.startswith(FOLLOWER) for line in text.output.splitlines())
    data = json.loads(CliRunner().invoke(cli, ["status", "--db", url, "--format", "json"]).output)
    assert data["leader"] == LEADER
    replicas = {r["replica_id"]: r for r in data["replicas"]}
    assert set(replicas) == {LEADER, FOLLOWER, DEAD, STOPPED}
    assert replicas[LEADER]["heartbeat_at"] == NOW.isoformat()
    assert replicas[FOLLOWER]["running_turns"] == 1 and not replicas[DEAD]["alive"]
