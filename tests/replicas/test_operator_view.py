"""Two ``orchestrator run`` processes on one PostgreSQL, as an operator watches them.

Both are ready, both name the same leader and list each other, exactly one
says it leads in its metrics and only that one exports the cluster's gauges;
after a SIGKILL of the leader the other one leads and lists the dead one.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner
from prometheus_client.parser import text_string_to_metric_families

from orchestrator import __version__
from orchestrator.cli import cli
from orchestrator.store import migrate
from orchestrator_sim.testing import SimWorld
from tests.e2e.harness import flow_for
from tests.replicas import test_replicas as cluster
from tests.web.test_cluster_views import CLUSTER_FAMILIES

# Generous: the outcome matters, not how fast it came (the lease is three seconds).
DEADLINE_S = 90


def web_url(replica: cluster.Replica) -> str | None:
    for entry in replica.events("web_started"):
        if entry.get("url"):
            return str(entry["url"])
    return None


def get(url: str) -> httpx.Response | None:
    try:
        return httpx.get(url, timeout=5)
    except httpx.HTTPError:
        return None


def ready(url: str) -> bool:
    response = get(f"{url}/readyz")
    return response is not None and response.status_code == 200


def state(url: str) -> dict[str, Any]:
    response = httpx.get(f"{url}/api/v1/state", timeout=10)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def metrics(url: str) -> tuple[set[str], dict[tuple[str, tuple[tuple[str, str], ...]], float]]:
    text = httpx.get(f"{url}/metrics", timeout=10).text
    families = list(text_string_to_metric_families(text))
    values = {
        (s.name, tuple(sorted(s.labels.items()))): s.value for f in families for s in f.samples
    }
    return {f.name for f in families}, values


def leads(url: str, name: str) -> float | None:
    return metrics(url)[1].get(("orchestrator_leader", (("replica", name),)))


@pytest.mark.slow
def test_two_replicas_are_ready_agree_on_the_leader_and_survive_its_sigkill(
    tmp_path: Path, world: SimWorld, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `orchestrator status` reads no preferences of the machine's user.
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    policy = {"polling": {"interval_ms": 500}, "database": {"url": pg_url}}
    names = ["r1", "r2"]
    with (
        flow_for(tmp_path, world, mode="mutate", policy=policy, start=False) as flow,
        cluster.replicas(flow, pg_url, names) as running,
    ):
        migrate.upgrade(pg_url)
        flow.open_issue("Add the feature")
        for replica in running.values():
            replica.start()
        urls: dict[str, str] = {}

        def serving() -> bool:
            for name, replica in running.items():
                assert replica.alive, f"{name} exited; see {replica.log_path}"
                url = web_url(replica)
                if url:
                    urls[name] = url
            return len(urls) == len(names)

        cluster.wait_for(serving, "both dashboards serving", DEADLINE_S)
        # A follower never ticks: it is ready all the same.
        cluster.wait_for(lambda: all(ready(url) for url in urls.values()), "both ready", DEADLINE_S)
        cluster.wait_for(
            lambda: sorted(leads(urls[n], n) or 0 for n in names) == [0, 1],
            "exactly one replica exporting orchestrator_leader 1",
            DEADLINE_S,
        )
        leader = next(n for n in names if leads(urls[n], n) == 1)
        follower = next(n for n in names if n != leader)

        for name in names:
            body = state(urls[name])
            assert body["leader"] == leader, (name, body["leader"])
            assert body["daemon"]["leader"] == leader
            assert body["daemon"]["replica_id"] == name
            assert body["daemon"]["role"] == ("leader" if name == leader else "follower")
            replicas = {r["replica_id"]: r for r in body["replicas"]}
            assert set(replicas) == set(names)
            assert all(r["alive"] and r["version"] == __version__ for r in replicas.values())
            assert replicas[leader]["leader"] and replicas[leader]["leads"] == [world.repo]
            assert not replicas[follower]["leader"] and replicas[follower]["leads"] == []
            assert all(r["heartbeat_at"] for r in replicas.values())

        # The leader's database gauges, once it tracked the issue; none on the follower.
        cluster.wait_for(
            lambda: any(key[0] == "orchestrator_issues" for key in metrics(urls[leader])[1]),
            "the issue counted by the leader",
            DEADLINE_S,
        )
        leader_families, leader_values = metrics(urls[leader])
        follower_families, follower_values = metrics(urls[follower])
        assert leader_families >= CLUSTER_FAMILIES
        assert not follower_families & CLUSTER_FAMILIES
        assert ("orchestrator_ticks_total", ()) in follower_values
        assert (
            leader_values[
                ("orchestrator_replica_alive", (("replica", follower), ("version", __version__)))
            ]
            == 1
        )
        first_epoch = leader_values[("orchestrator_leader_epoch", (("repo", world.repo),))]

        page = httpx.get(f"{urls[follower]}/", timeout=10).text
        assert f"follower of <b>{leader}</b>" in page and "last tick:" not in page
        assert f'id="replica-{leader}"' in page and f'id="replica-{follower}"' in page
        shown = CliRunner().invoke(cli, ["status", "--url", urls[follower]])
        assert shown.exit_code == 0, shown.output
        assert f"replica {follower}: follower of {leader}" in shown.output
        assert f"leader: {leader}" in shown.output

        # A follower that has run for a day without a tick is still ready (readiness probes
        # must not evict healthy followers): tests/web/test_cluster_views.py, on a set clock.
        assert ready(urls[follower])
        assert state(urls[follower])["daemon"]["role"] == "follower"

        running[leader].kill()

        def took_over() -> bool:
            body = state(urls[follower])
            replicas = {r["replica_id"]: r for r in body["replicas"]}
            return body["leader"] == follower and not replicas[leader]["alive"]

        cluster.wait_for(took_over, f"{follower} leading, {leader} listed dead", DEADLINE_S)
        body = state(urls[follower])
        replicas = {r["replica_id"]: r for r in body["replicas"]}
        assert replicas[follower]["alive"] and replicas[follower]["leads"] == [world.repo]
        assert not replicas[leader]["leads"] and replicas[leader]["stopped_at"] is None
        cluster.wait_for(
            lambda: leads(urls[follower], follower) == 1 and ready(urls[follower]),
            f"{follower} exporting orchestrator_leader 1 and ready",
            DEADLINE_S,
        )
        families, values = metrics(urls[follower])
        assert families >= CLUSTER_FAMILIES
        assert values[("orchestrator_leader_epoch", (("repo", world.repo),))] > first_epoch
        assert (
            values[("orchestrator_replica_alive", (("replica", leader), ("version", __version__)))]
            == 0
        )
        from_database = CliRunner().invoke(cli, ["status", "--db", pg_url, "--format", "json"])
        assert from_database.exit_code == 0, from_database.output
        assert json.loads(from_database.output)["leader"] == follower
        assert running[follower].stop() == 0
