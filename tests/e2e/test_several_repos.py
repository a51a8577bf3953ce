"""One daemon, several repositories: each polled on its own, all through one credential.

The daemon runs as a GitHub App installed on two repositories of the emulator
(``tracker.repos``), or on those of its installation that carry the opt-in
label (``tracker.repo_opt_in_label``). Installation tokens are ended mid-flow;
each repository's issue still reaches its merge with no refused write and no
duplicate, each repository has its own poll lease and repository-wide stop
label, and the rate budget is the installation's one.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from sqlalchemy import text

from orchestrator.daemon.daemon import DaemonError
from orchestrator_sim.testing import DEFAULT_FILES, SimWorld, add_app

from .harness import REPO_STOP_LABEL, Flow, flow_for
from .test_github_app import app_policy, as_app

SECOND = "acme/gadgets"
THIRD = "acme/gizmos"


def add_repo(world: SimWorld, repo: str) -> None:
    """Another repository of the same owner, protected as the first one is: the human its
    administrator, the product's account a writer."""
    world.control.create_repo(
        repo,
        dict(DEFAULT_FILES),
        permissions={world.human.login: "admin", world.bot.login: "write"},
    )
    world.control.protect(
        repo, "main", required_checks=["ci"], dismiss_stale_reviews=True, enforce_admins=True
    )


def as_human(world: SimWorld, method: str, path: str, body: object = None) -> None:
    status, _, raw = world.github(world.human).requester.requestJson(method, path, input=body)
    assert status in (200, 201, 204), (status, raw)


def second_flow(flow: Flow, repo: str) -> Flow:
    """The same daemon, seen from another of its repositories."""
    return dataclasses.replace(flow, world=dataclasses.replace(flow.world, repo=repo))


def leases(flow: Flow) -> list[tuple[str, str]]:
    with flow.d.db.engine.begin() as conn:
        rows = conn.execute(text("SELECT name, owner FROM leases ORDER BY name")).all()
    return [(str(name), str(owner)) for name, owner in rows]


def test_an_app_merges_one_issue_in_each_of_two_repositories_through_expiring_tokens(
    tmp_path: Path, world: SimWorld
) -> None:
    add_repo(world, SECOND)
    app = add_app(world, repos=[world.repo, SECOND])
    policy = app_policy(app, tmp_path)
    policy["tracker"] = {**policy["tracker"], "repos": [SECOND]}  # type: ignore[dict-item]
    with flow_for(tmp_path, as_app(world, app), mode="merge", policy=policy) as first:
        second = second_flow(first, SECOND)
        assert first.d.repos == (world.repo, SECOND)
        one, two = first.open_issue(), second.open_issue()

        def both(phase: str) -> bool:
            return first.phase(one) == phase and second.phase(two) == phase

        first.run(lambda: both("waiting_for_checks"), what="both PRs open")
        pr_one, pr_two = first.pr_number(one), second.pr_number(two)
        ended = world.control.expire_app_tokens()
        assert ended == 1
        first.check(pr_one, "success")
        second.check(pr_two, "success")
        first.run(lambda: both("waiting_for_human"), what="both waiting for a human")
        ended += world.control.expire_app_tokens()
        first.approve(one)
        second.approve(two)
        first.step()
        ended += world.control.expire_app_tokens()
        first.run(lambda: both("done"), what="both merged")
        assert ended == 3

        for flow, number, pr in ((first, one, pr_one), (second, two, pr_two)):
            assert flow.pull(pr)["merged"], flow.world.repo
            assert len(flow.pulls()) == 1, flow.world.repo
            assert len(flow.workpads(number)) == 1, flow.world.repo
        writes = first.bot_writes()
        assert {w["path"].split("/")[3] for w in writes if "/repos/" in w["path"]} >= {
            "widgets",
            "gadgets",
        }
        assert [w for w in writes if w["status"] >= 400] == []
        for flow, number in ((first, one), (second, two)):
            row = flow.d.parts.records.get(flow.ref(number))
            assert row is not None
            effects = flow.d.db.outbox.for_issue(row.issue_id)
            assert effects and [e for e in effects if e.status == "failed"] == []
        # Each repository has its own poll lease, both held by this replica.
        replica = first.d.replica_id
        assert leases(first) == [(f"poll:{SECOND}", replica), (f"poll:{world.repo}", replica)]
        # One credential: one installation budget, one new token per expiry (not one per
        # repository).
        route = "POST /app/installations/{installation_id:int}/access_tokens"
        assert world.control.counters()["routes"][route]["requests"] == 1 + ended
        budgets = {b.resource for b in first.d.status().budgets}
        assert "core" in budgets
        assert first.d.status().repos == (world.repo, SECOND)


def test_a_repository_wide_stop_label_stops_that_repository_only(
    tmp_path: Path, world: SimWorld
) -> None:
    add_repo(world, SECOND)
    with flow_for(tmp_path, world, mode="merge", policy={"tracker": {"repos": [SECOND]}}) as first:
        second = second_flow(first, SECOND)
        stop = world.control.create_issue(
            SECOND, "Stop everything", as_user=world.human.login, labels=[REPO_STOP_LABEL]
        )
        one, two = first.open_issue(), second.open_issue()
        first.run(lambda: first.phase(one) == "waiting_for_checks", what="the first repo's PR")
        first.idle_ticks(2)
        assert second.record(two) is None or second.phase(two) in (None, "implementing")
        assert second.pulls() == []
        assert [w for w in second.bot_writes() if f"/repos/{SECOND}/" in w["path"]] == []
        assert SECOND in first.d.status().stopped_repos
        # The stop issue closed: the second repository goes on.
        world.control.update_issue(SECOND, stop, as_user=world.human.login, state="closed")
        first.run(lambda: second.phase(two) == "waiting_for_checks", what="the second repo's PR")


def test_repositories_opt_in_by_label_and_a_reload_reads_them_again(
    tmp_path: Path, world: SimWorld
) -> None:
    add_repo(world, SECOND)
    add_repo(world, THIRD)
    app = add_app(world, repos=[world.repo, SECOND, THIRD])
    for repo in (world.repo, THIRD):
        as_human(world, "POST", f"/repos/{repo}/labels", {"name": "orchestrated"})
    policy = app_policy(app, tmp_path)
    policy["tracker"] = {
        **policy["tracker"],  # type: ignore[dict-item]
        "repo": None,
        "repo_opt_in_label": "orchestrated",
        "installation_id": app.installation_id,
    }
    with flow_for(tmp_path, as_app(world, app), mode="merge", policy=policy) as first:
        assert first.d.repos == (THIRD, world.repo)
        third = second_flow(first, THIRD)
        number = third.open_issue()
        first.run(lambda: third.phase(number) == "waiting_for_checks", what="the opted-in PR")
        # SECOND opts in, THIRD opts out: a reload reads the installation again.
        as_human(world, "POST", f"/repos/{SECOND}/labels", {"name": "orchestrated"})
        as_human(world, "DELETE", f"/repos/{THIRD}/labels/orchestrated")
        first.edit_policy({"polling": {"interval_ms": 1500}})
        first.step()
        assert first.d.repos == (SECOND, world.repo)
        # Its poll lease is given back (the row stays: epochs never repeat).
        assert dict(leases(first))[f"poll:{THIRD}"] in ("", None)
        second = second_flow(first, SECOND)
        added = second.open_issue()
        first.run(lambda: second.phase(added) == "waiting_for_checks", what="the added repo")


def test_a_repository_the_credential_cannot_read_stops_the_start_by_name(
    tmp_path: Path, world: SimWorld
) -> None:
    policy = {"tracker": {"repos": ["acme/missing"]}}
    with pytest.raises(DaemonError, match="acme/missing"), flow_for(tmp_path, world, policy=policy):
        pass
