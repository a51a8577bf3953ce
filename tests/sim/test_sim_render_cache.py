"""Read routes reuse their rendering while the state is unchanged, and never serve it stale.

The answers here go over HTTP: an unchanged list page keeps its body and ETag
(and answers 304 to it), any change to the state gives a fresh body, each
caller gets the answer its own access allows, and the clock-dependent pull
request (lazy mergeability) is rendered every time.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from orchestrator_sim.render_cache import RenderCache, Rendered
from orchestrator_sim.testing import SimWorld, make_token, running_world
from tests.sim.strict import manual_world, open_pull


@pytest.fixture
def world(tmp_path: Path) -> Iterator[SimWorld]:
    with running_world(tmp_path / "sim") as running:
        yield running


def _get(world: SimWorld, path: str, token: str, etag: str | None = None) -> httpx.Response:
    headers = {"Authorization": f"token {token}"}
    if etag is not None:
        headers["If-None-Match"] = etag
    return httpx.get(world.url + path, headers=headers, timeout=10)


def test_an_unchanged_page_keeps_its_body_and_etag_and_answers_304(world: SimWorld) -> None:
    human = world.human.login
    for n in range(5):
        world.control.create_issue(world.repo, f"task {n}", as_user=human, labels=["agent"])
    path = f"/repos/{world.repo}/issues?labels=agent&per_page=2&page=2"
    first = _get(world, path, world.bot.token)
    again = _get(world, path, world.bot.token)
    assert first.status_code == again.status_code == 200
    assert again.content == first.content
    assert again.headers["etag"] == first.headers["etag"]
    assert [i["title"] for i in first.json()] == ["task 2", "task 1"]
    assert "page=3" in first.headers["link"]
    unchanged = _get(world, path, world.bot.token, first.headers["etag"])
    assert unchanged.status_code == 304
    assert unchanged.content == b""
    assert unchanged.headers["etag"] == first.headers["etag"]


@pytest.mark.parametrize("change", ["label", "comment", "close", "check run"])
def test_any_change_to_the_state_renders_afresh(world: SimWorld, change: str) -> None:
    human = world.human.login
    number = world.control.create_issue(world.repo, "watched", as_user=human, labels=["agent"])
    paths = [
        f"/repos/{world.repo}/issues?state=all",
        f"/repos/{world.repo}/issues/{number}",
        f"/repos/{world.repo}/issues/{number}/comments",
        f"/repos/{world.repo}/commits/main/check-runs",
    ]
    before = {path: _get(world, path, world.bot.token) for path in paths}
    if change == "label":
        world.control.add_labels(world.repo, number, ["blocked"], as_user=human)
    elif change == "comment":
        world.control.comment(world.repo, number, "a question", as_user=human)
    elif change == "close":
        world.control.update_issue(world.repo, number, as_user=human, state="closed")
    else:
        world.control.check_run(world.repo, ref="main", name="ci", conclusion="success")
    changed = 0
    for path, old in before.items():
        new = _get(world, path, world.bot.token, old.headers["etag"])
        fresh = _get(world, path, world.bot.token)
        assert fresh.status_code == 200
        if new.status_code == 304:
            assert fresh.content == old.content
        else:
            assert new.status_code == 200
            assert new.content == fresh.content != old.content
            changed += 1
    assert changed >= 1


def test_each_caller_gets_what_its_own_access_allows(world: SimWorld) -> None:
    control = world.control
    control.create_repo("acme/secret", permissions={world.human.login: "admin"}, private=True)
    control.create_issue("acme/secret", "hidden", as_user=world.human.login)
    path = "/repos/acme/secret/issues"
    assert _get(world, path, world.human.token).status_code == 200
    assert _get(world, path, world.human.token).status_code == 200
    assert _get(world, path, world.bot.token).status_code == 404
    outsider = make_token()
    control.create_user("mallory", outsider)
    assert _get(world, path, outsider).status_code == 404


def test_the_pull_request_is_rendered_each_time_as_its_mergeability_settles(
    tmp_path: Path,
) -> None:
    with manual_world(tmp_path) as (world, clock):
        pull = open_pull(world)
        path = f"/repos/{world.repo}/pulls/{pull.number}"
        assert _get(world, path, world.bot.token).json()["mergeable"] is None
        clock.advance(world.server.emulator.state.mergeability_delay)
        assert _get(world, path, world.bot.token).json()["mergeable"] is True


def test_the_cache_keeps_one_version_per_request_within_its_budget() -> None:
    cache = RenderCache(budget=10)
    page = Rendered(200, b"12345", {}, 'W/"a"')
    cache.put("page 1", 7, page)
    assert cache.get("page 1", 7) is page
    assert cache.get("page 1", 8) is None
    cache.put("page 2", 7, Rendered(200, b"123456", {}, 'W/"b"'))
    assert cache.get("page 1", 7) is None
    assert cache.get("page 2", 7) is not None
    cache.put("huge", 7, Rendered(200, b"x" * 11, {}, 'W/"c"'))
    assert cache.get("huge", 7) is None
    assert cache.get("page 2", 7) is not None
