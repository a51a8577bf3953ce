"""The emulator's GitHub App routes answer what GitHub's OpenAPI description says.

Each case makes a real request (with the App's JSON web token or an
installation token) and validates the answer against the schema GitHub
publishes for that operation and status.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest

from orchestrator_sim import rest_apps
from orchestrator_sim.testing import SimWorld, running_world
from tests.contract.openapi_contract import assert_is_basic_error, assert_matches_openapi


@dataclass(frozen=True)
class AppScene:
    world: SimWorld
    app_id: int
    private_key: str
    installation_id: int

    def jwt(self, exp_in: int = 300) -> str:
        now = int(time.time())
        payload = {"iat": now - 60, "exp": now + exp_in, "iss": str(self.app_id)}
        return jwt.encode(payload, self.private_key, algorithm="RS256")

    def send(self, method: str, path: str, authorization: str, body: Any = None) -> tuple[int, Any]:
        answer = httpx.request(
            method,
            f"{self.world.url}{path}",
            json=body,
            headers={"Authorization": authorization, "Accept": "application/vnd.github+json"},
            timeout=30,
        )
        text = answer.content.strip()
        return answer.status_code, json.loads(text) if text else None

    def installation_token(self) -> str:
        status, body = self.send(
            "POST",
            f"/app/installations/{self.installation_id}/access_tokens",
            f"Bearer {self.jwt()}",
        )
        assert status == 201
        return str(body["token"])


@pytest.fixture(scope="module")
def scene(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppScene]:
    with running_world(Path(tmp_path_factory.mktemp("app-contract")) / "sim") as world:
        created = world.control.create_app("contract-bot", owner="acme")
        installed = world.control.install_app("contract-bot", [world.repo])
        yield AppScene(world, int(created["id"]), created["private_key"], int(installed["id"]))


def test_get_app(scene: AppScene) -> None:
    status, body = scene.send("GET", "/app", f"Bearer {scene.jwt()}")
    assert status == 200
    assert_matches_openapi("GET", "/app", 200, body)


def test_get_app_with_a_bad_jwt_is_a_basic_error(scene: AppScene) -> None:
    status, body = scene.send("GET", "/app", f"Bearer {scene.jwt(exp_in=3600)}")
    assert status == 401
    assert_is_basic_error(body)


def test_create_installation_token(scene: AppScene) -> None:
    path = "/app/installations/{installation_id}/access_tokens"
    status, body = scene.send(
        "POST",
        f"/app/installations/{scene.installation_id}/access_tokens",
        f"Bearer {scene.jwt()}",
        {"permissions": {"issues": "write"}},
    )
    assert status == 201
    assert body["permissions"] == {"issues": "write"}
    assert_matches_openapi("POST", path, 201, body)


def test_create_installation_token_beyond_the_apps_permissions(scene: AppScene) -> None:
    path = "/app/installations/{installation_id}/access_tokens"
    status, body = scene.send(
        "POST",
        f"/app/installations/{scene.installation_id}/access_tokens",
        f"Bearer {scene.jwt()}",
        {"permissions": {"administration": "write"}},
    )
    assert status == 422
    assert_matches_openapi("POST", path, 422, body)


def test_unknown_installation_is_not_found(scene: AppScene) -> None:
    path = "/app/installations/{installation_id}/access_tokens"
    status, body = scene.send(
        "POST", "/app/installations/999999/access_tokens", f"Bearer {scene.jwt()}"
    )
    assert status == 404
    assert_matches_openapi("POST", path, 404, body)


def test_get_repo_installation(scene: AppScene) -> None:
    status, body = scene.send(
        "GET", f"/repos/{scene.world.repo}/installation", f"Bearer {scene.jwt()}"
    )
    assert status == 200
    assert body["id"] == scene.installation_id
    assert_matches_openapi("GET", "/repos/{owner}/{repo}/installation", 200, body)


def test_list_installation_repositories(scene: AppScene) -> None:
    status, body = scene.send(
        "GET", "/installation/repositories", f"token {scene.installation_token()}"
    )
    assert status == 200
    assert body["total_count"] == 1
    assert_matches_openapi("GET", "/installation/repositories", 200, body)


def test_user_refuses_an_installation_token(scene: AppScene) -> None:
    status, body = scene.send("GET", "/user", f"token {scene.installation_token()}")
    assert status == 403
    assert_matches_openapi("GET", "/user", 403, body)


def test_every_app_route_has_a_case() -> None:
    served = {(spec.method, spec.path) for spec in rest_apps.JWT_ROUTES + rest_apps.ROUTES}
    assert served == {
        ("GET", "/app"),
        ("POST", "/app/installations/{installation_id:int}/access_tokens"),
        ("GET", "/repos/{owner}/{repo}/installation"),
        ("GET", "/installation/repositories"),
    }
