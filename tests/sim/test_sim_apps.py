"""GitHub Apps in the emulator: JWT rules, installation tokens, expiry, bot identity, budgets."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest
from github import Auth, GithubIntegration

from orchestrator_sim.testing import SimWorld, running_world


@dataclass(frozen=True)
class AppWorld:
    world: SimWorld
    app_id: int
    slug: str
    private_key: str
    installation_id: int

    def jwt(self, *, iat: int | None = None, exp: int | None = None, key: str | None = None) -> str:
        now = int(time.time())
        payload = {
            "iat": now - 60 if iat is None else iat,
            "exp": now + 300 if exp is None else exp,
            "iss": str(self.app_id),
        }
        return jwt.encode(payload, key or self.private_key, algorithm="RS256")

    def call(self, method: str, path: str, token: str, scheme: str = "token", **kw: Any) -> Any:
        return httpx.request(
            method,
            f"{self.world.url}{path}",
            headers={"Authorization": f"{scheme} {token}"},
            timeout=30,
            **kw,
        )

    def installation_token(self) -> str:
        answer = self.call(
            "POST",
            f"/app/installations/{self.installation_id}/access_tokens",
            self.jwt(),
            scheme="Bearer",
        )
        assert answer.status_code == 201, answer.text
        return str(answer.json()["token"])


@pytest.fixture
def app_world(tmp_path: Path) -> Iterator[AppWorld]:
    with running_world(tmp_path / "sim") as world:
        created = world.control.create_app("widget-bot", owner="acme", name="Widget Bot")
        installed = world.control.install_app("widget-bot", [world.repo])
        yield AppWorld(
            world, int(created["id"]), "widget-bot", created["private_key"], int(installed["id"])
        )


def test_control_creates_an_app_with_its_key_once(app_world: AppWorld) -> None:
    assert app_world.private_key.startswith("-----BEGIN RSA PRIVATE KEY-----")
    again = app_world.world.control.request(
        "POST", "/apps/widget-bot/installations", {"repositories": [app_world.world.repo]}
    )
    assert again["id"] == app_world.installation_id
    assert "private_key" not in again


def test_pygithub_integration_reads_the_app_and_its_installation(app_world: AppWorld) -> None:
    integration = GithubIntegration(
        base_url=app_world.world.url,
        auth=Auth.AppAuth(app_world.app_id, app_world.private_key),
    )
    assert integration.get_app().slug == "widget-bot"
    owner, name = app_world.world.repo.split("/")
    installation = integration.get_repo_installation(owner, name)
    assert installation.id == app_world.installation_id
    token = integration.get_access_token(app_world.installation_id)
    assert token.token.startswith("ghs_")
    assert 3500 < (token.expires_at.timestamp() - time.time()) <= 3600


@pytest.mark.parametrize(
    ("offsets", "message"),
    [
        ({"exp": 900}, "too far in the future"),
        ({"iat": -60, "exp": 601}, "too far in the future"),
        ({"iat": 300, "exp": 400}, "must be in the past"),
        ({"iat": -600, "exp": -10}, "in the future"),
    ],
    ids=["exp_beyond_ten_minutes_after_iat", "exp_beyond_ten_minutes", "iat_ahead", "expired"],
)
def test_jwt_time_rules(app_world: AppWorld, offsets: dict[str, int], message: str) -> None:
    # Seconds from now, taken when the test runs (not when the suite was collected).
    now = int(time.time())
    claims = {name: now + offset for name, offset in offsets.items()}
    token = app_world.jwt(iat=claims.get("iat"), exp=claims.get("exp"))
    answer = app_world.call("GET", "/app", token, scheme="Bearer")

    assert answer.status_code == 401
    assert message in answer.json()["message"]


def test_jwt_signed_by_another_key_is_refused(app_world: AppWorld) -> None:
    other = app_world.world.control.create_app("other-bot", owner="acme")["private_key"]
    answer = app_world.call("GET", "/app", app_world.jwt(key=other), scheme="Bearer")
    assert answer.status_code == 401
    assert app_world.call("GET", "/app", app_world.jwt(), scheme="Bearer").status_code == 200


def test_installation_token_works_on_repo_apis_and_graphql_but_not_user(
    app_world: AppWorld,
) -> None:
    token = app_world.installation_token()
    repo = app_world.world.repo

    assert app_world.call("GET", f"/repos/{repo}", token).status_code == 200
    me = app_world.call("GET", "/user", token)
    assert me.status_code == 403
    assert me.json()["message"] == "Resource not accessible by integration"
    listed = app_world.call("GET", "/installation/repositories", token).json()
    assert [r["full_name"] for r in listed["repositories"]] == [repo]
    human = app_world.call("GET", "/installation/repositories", app_world.world.human.token)
    assert human.status_code == 403


def test_app_bot_identity_in_rest_and_graphql(app_world: AppWorld) -> None:
    token = app_world.installation_token()
    repo = app_world.world.repo
    number = app_world.world.control.create_issue(repo, "Do it", as_user="alice")
    made = app_world.call(
        "POST", f"/repos/{repo}/issues/{number}/comments", token, json={"body": "hello"}
    ).json()
    assert made["user"]["login"] == "widget-bot[bot]"
    assert made["user"]["type"] == "Bot"
    owner, name = repo.split("/")
    query = (
        "query($o:String!,$n:String!,$i:Int!){repository(owner:$o,name:$n){issue(number:$i)"
        "{comments(first:5){nodes{author{__typename login}}}}}}"
    )
    answer = app_world.call(
        "POST",
        "/graphql",
        token,
        json={"query": query, "variables": {"o": owner, "n": name, "i": number}},
    ).json()
    nodes = answer["data"]["repository"]["issue"]["comments"]["nodes"]
    assert nodes == [{"author": {"__typename": "Bot", "login": "widget-bot"}}]


def test_expired_token_is_refused_and_a_new_one_works(app_world: AppWorld) -> None:
    token = app_world.installation_token()
    repo = app_world.world.repo
    assert app_world.call("GET", f"/repos/{repo}", token).status_code == 200

    assert app_world.world.control.expire_app_tokens("widget-bot") == 1

    refused = app_world.call("GET", f"/repos/{repo}", token)
    assert refused.status_code == 401
    assert refused.json()["message"] == "Bad credentials"
    assert (
        app_world.call("GET", f"/repos/{repo}", app_world.installation_token()).status_code == 200
    )


def test_aging_tokens_moves_their_expiry(app_world: AppWorld) -> None:
    token = app_world.installation_token()
    app_world.world.control.expire_app_tokens(age_s=3000)
    assert app_world.call("GET", f"/repos/{app_world.world.repo}", token).status_code == 200
    app_world.world.control.expire_app_tokens(age_s=700)
    assert app_world.call("GET", f"/repos/{app_world.world.repo}", token).status_code == 401


def test_installation_budget_is_shared_by_its_tokens(app_world: AppWorld) -> None:
    first, second = app_world.installation_token(), app_world.installation_token()
    repo = app_world.world.repo
    one = app_world.call("GET", f"/repos/{repo}", first)
    two = app_world.call("GET", f"/repos/{repo}", second)

    assert one.headers["x-ratelimit-limit"] == "5000"
    assert int(two.headers["x-ratelimit-used"]) == int(one.headers["x-ratelimit-used"]) + 1
    counters = app_world.world.control.counters()["tokens"]
    assert counters["widget-bot[bot]"]["requests"] >= 2


def test_installation_budget_grows_past_twenty_repositories(tmp_path: Path) -> None:
    with running_world(tmp_path / "sim") as world:
        repos = [world.repo]
        for index in range(24):
            name = f"acme/extra-{index}"
            world.control.create_repo(name, {"README.md": "x\n"})
            repos.append(name)
        world.control.create_app("big-bot", owner="acme")
        installed = world.control.install_app("big-bot", repos)

    # 25 repositories: 5,000 + 50 for each of them (GitHub's documented figures).
    assert installed["rate_limit"] == 5000 + 50 * 25
