"""The daemon runs as a GitHub App: its bot writes everything, tokens expire mid-flow.

The emulator ends the App's installation tokens at several moments of the
flow (before a tick's reads, before a push, before the merge); the daemon
takes a new one each time, and the issue still reaches a merge with no
refused write, one pull request, one workpad and one review comment.
"""

from __future__ import annotations

import dataclasses
import io
from pathlib import Path

from orchestrator.logs import configure_logging
from orchestrator_sim.testing import Account, AppAccount, SimWorld, add_app, make_token

from .harness import APPROVAL_LABEL, flow_for


def app_policy(app: AppAccount, tmp: Path) -> dict[str, object]:
    return {
        "tracker": {
            "auth": "app",
            "token": None,
            "app_id": app.id,
            "private_key_file": str(app.key_file(tmp / "app-key")),
        }
    }


def as_app(world: SimWorld, app: AppAccount) -> SimWorld:
    """The world as the harness reads it: the product's account is the App's bot."""
    return dataclasses.replace(world, bot=Account(app.login, make_token()))


def test_the_daemon_merges_as_an_app_through_expiring_tokens(
    tmp_path: Path, world: SimWorld
) -> None:
    # The log is read from a stream of this test's own (earlier tests in the process
    # may have routed it elsewhere), through the product's processors (redaction too).
    stream = io.StringIO()
    configure_logging("json", "info", stream=stream)
    try:
        app = add_app(world)
        app_world = as_app(world, app)
        with flow_for(tmp_path, app_world, mode="merge", policy=app_policy(app, tmp_path)) as flow:
            assert flow.d.parts.repo_set.first.parts.github.login == "orchestrator-app[bot]"
            number = flow.open_issue()
            flow.run_to_phase(number, "waiting_for_checks")
            pr = flow.pull(flow.pr_number(number))
            assert pr["user"] == {**pr["user"], "login": app.login, "type": "Bot"}

            # Expired before the tick that reads the failure and the rework turn's push.
            assert world.control.expire_app_tokens() == 1
            flow.check(pr["number"], "failure")
            flow.run_to_phase(number, "rework")
            world.control.expire_app_tokens()
            flow.run_to_phase(number, "waiting_for_checks")
            assert flow.head(pr["number"]) != pr["head"]["sha"]

            world.control.expire_app_tokens()
            flow.check(pr["number"], "success")
            flow.run_to_phase(number, "waiting_for_human")
            world.control.expire_app_tokens()
            flow.approve(number)
            flow.run_to_phase(number, "done")

            assert flow.pull(pr["number"])["merged"]
            assert len(flow.pulls()) == 1
            assert len(flow.workpads(number)) == 1
            assert len(flow.review_comments(pr["number"])) == 1
            writes = flow.bot_writes()
            assert writes, "the App's bot made the writes"
            assert [w for w in writes if w["status"] >= 400] == []
            effects = flow.d.db.outbox.for_issue(1)
            assert effects and [(e.kind, e.status) for e in effects if e.status == "failed"] == []
            # One token at start, and a new one after each of the four expiries.
            route = "POST /app/installations/{installation_id:int}/access_tokens"
            assert world.control.counters()["routes"][route]["requests"] >= 5
        # No installation token (GitHub's ghs_ prefix) in the database or the logs.
        for stored in tmp_path.glob("orchestrator.db*"):
            assert b"ghs_" not in stored.read_bytes(), stored
    finally:
        configure_logging()
    logged = stream.getvalue()
    assert "app_token_issued" in logged
    assert "ghs_" not in logged


def test_an_app_bots_approval_label_is_not_a_human_approval(
    tmp_path: Path, world: SimWorld
) -> None:
    app = add_app(world)
    other = add_app(world, "helper-app")
    with flow_for(
        tmp_path, as_app(world, app), mode="merge", policy=app_policy(app, tmp_path)
    ) as flow:
        number, pr = flow.to_waiting_for_human()
        helper_token = installation_token(world, other)
        for token in (helper_token, installation_token(world, app)):
            flow.wait_past_head(number)
            github = world.github(Account("app", token))
            status, _, raw = github.requester.requestJson(
                "POST",
                f"/repos/{world.repo}/issues/{number}/labels",
                input={"labels": [APPROVAL_LABEL]},
            )
            assert status == 200, raw
            flow.idle_ticks(3)
            assert flow.phase(number) == "waiting_for_human"
            record = flow.record(number)
            assert record is not None
            assert record.workpad.observation.gates["human_approval"].value == "required"
            world.control.remove_label(world.repo, number, APPROVAL_LABEL, as_user="alice")
        # A review approval by another App's bot does not count either.
        github = world.github(Account("app", helper_token))
        status, _, raw = github.requester.requestJson(
            "POST",
            f"/repos/{world.repo}/pulls/{pr}/reviews",
            input={"event": "APPROVE", "body": "LGTM"},
        )
        assert status == 200, raw
        flow.idle_ticks(3)
        assert flow.phase(number) == "waiting_for_human"

        flow.approve(number)
        flow.run_to_phase(number, "done")


def installation_token(world: SimWorld, app: AppAccount) -> str:
    from github import Auth, GithubIntegration

    integration = GithubIntegration(base_url=world.url, auth=Auth.AppAuth(app.id, app.private_key))
    return str(integration.get_access_token(app.installation_id).token)
