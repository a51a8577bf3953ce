"""Running as a GitHub App: installation tokens from the emulator, renewed before they expire
and when GitHub refuses them, for REST, GraphQL and git alike."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from orchestrator.agent.git import RepoSource
from orchestrator.agent.mirror import MirrorStore
from orchestrator.github.client import GitHubClient
from orchestrator.github.credentials import AppInstallationTokens
from orchestrator.github.errors import GitHubError
from orchestrator.github.retry import RetryPolicy
from orchestrator.logs import redact_text
from orchestrator_sim.testing import AppAccount, SimWorld, add_app, running_world


@pytest.fixture
def app(world: SimWorld) -> AppAccount:
    return add_app(world)


@pytest.fixture
def tokens(world: SimWorld, app: AppAccount) -> AppInstallationTokens:
    return AppInstallationTokens(
        endpoint=world.url, app_id=app.id, private_key=app.private_key, repo=world.repo
    )


def client_for(world: SimWorld, tokens: AppInstallationTokens) -> GitHubClient:
    return GitHubClient(world.url, tokens, retry=RetryPolicy(max_attempts=2, base_delay_s=0.01))


def test_the_installation_is_found_from_the_repository(
    app: AppAccount, tokens: AppInstallationTokens
) -> None:
    assert tokens.installation_id == app.installation_id


def test_the_daemons_login_is_the_apps_bot_without_asking_get_user(
    world: SimWorld, app: AppAccount, tokens: AppInstallationTokens
) -> None:
    client = client_for(world, tokens)

    assert client.login == "orchestrator-app[bot]" == app.login
    routes = world.control.counters()["routes"]
    assert "GET /user" not in routes


def test_a_token_is_replaced_some_minutes_before_it_expires(
    world: SimWorld, app: AppAccount
) -> None:
    now = [datetime.now(UTC)]
    tokens = AppInstallationTokens(
        endpoint=world.url,
        app_id=app.id,
        private_key=app.private_key,
        repo=world.repo,
        clock=lambda: now[0],
    )
    first = tokens.token()
    now[0] += timedelta(minutes=45)
    assert tokens.token() == first
    now[0] += timedelta(minutes=6)  # within ten minutes of the hour's end

    second = tokens.token()

    assert second != first
    assert redact_text(f"x {second} y") != f"x {second} y"


def test_a_refused_token_is_replaced_and_the_write_made_once(
    world: SimWorld, tokens: AppInstallationTokens
) -> None:
    client = client_for(world, tokens)
    number = world.control.create_issue(world.repo, "Do it", as_user=world.human.login)
    client.request("GET", f"/repos/{world.repo}")
    first = tokens.token()

    assert world.control.expire_app_tokens() == 1
    made = client.request(
        "POST", f"/repos/{world.repo}/issues/{number}/comments", body={"body": "hello"}
    )

    assert made.data["user"]["login"] == "orchestrator-app[bot]"
    assert tokens.token() != first
    comments = client.paginate(f"/repos/{world.repo}/issues/{number}/comments")
    assert [c["body"] for c in comments] == ["hello"]


def test_graphql_renews_a_refused_token(world: SimWorld, tokens: AppInstallationTokens) -> None:
    client = client_for(world, tokens)
    owner, name = world.repo.split("/")
    query = "query($o:String!,$n:String!){repository(owner:$o,name:$n){name}}"
    client.graphql(query, {"o": owner, "n": name})
    world.control.expire_app_tokens()

    data = client.graphql(query, {"o": owner, "n": name})

    assert data["repository"]["name"] == name


def test_git_fetch_and_push_renew_a_refused_token(
    tmp_path: Path, world: SimWorld, tokens: AppInstallationTokens
) -> None:
    mirrors = MirrorStore(tmp_path / "mirrors", timeout_s=60)
    source = RepoSource(world.server.git_url(world.owner, world.name), token=tokens)
    first = tokens.token()
    world.control.expire_app_tokens()

    mirror = mirrors.update(source)

    assert (mirror / "HEAD").exists()
    assert tokens.token() != first
    assert mirrors.default_branch(mirror) == "main"


def test_a_wrong_installation_is_a_clear_error(world: SimWorld, app: AppAccount) -> None:
    tokens = AppInstallationTokens(
        endpoint=world.url,
        app_id=app.id,
        private_key=app.private_key,
        repo=world.repo,
        installation_id=999_999,
    )
    with pytest.raises(GitHubError) as caught:
        tokens.token()
    assert caught.value.status == 404
    assert "access_tokens" in caught.value.route


@pytest.fixture
def world(tmp_path: Path) -> Iterator[SimWorld]:
    with running_world(tmp_path / "sim") as running:
        yield running
