"""Mergeability is worked out lazily, as on GitHub: unknown for a while after a pull request
opens or its head or base moves, and a merge in that window is refused."""

from __future__ import annotations

from pathlib import Path

from tests.sim.strict import graphql, manual_world, open_pull, pull_json, rest

MERGE_STATE = """query($n: Int!) { repository(owner: "acme", name: "widgets") {
  pullRequest(number: $n) { mergeable mergeStateStatus } } }"""


def _graphql_state(world, number):  # type: ignore[no-untyped-def]
    answer = graphql(world, MERGE_STATE, {"n": number})
    node = answer["data"]["repository"]["pullRequest"]
    return node["mergeable"], node["mergeStateStatus"]


def test_new_pull_is_unknown_until_the_delay_passes(tmp_path: Path) -> None:
    with manual_world(tmp_path) as (world, clock):
        pull = open_pull(world)

        rest_view = pull_json(world, pull.number)
        assert (rest_view["mergeable"], rest_view["mergeable_state"]) == (None, "unknown")
        assert _graphql_state(world, pull.number) == ("UNKNOWN", "UNKNOWN")

        clock.advance(0.29)
        assert pull_json(world, pull.number)["mergeable"] is None
        clock.advance(0.02)
        settled = pull_json(world, pull.number)
        # Without branch protection a pull request nobody reviewed yet is clean.
        assert (settled["mergeable"], settled["mergeable_state"]) == (True, "clean")
        assert _graphql_state(world, pull.number) == ("MERGEABLE", "CLEAN")


def test_merge_while_unknown_is_refused_then_works(tmp_path: Path) -> None:
    with manual_world(tmp_path) as (world, clock):
        pull = open_pull(world)
        path = f"/repos/{world.repo}/pulls/{pull.number}/merge"

        refused = rest(world, "PUT", path, {"sha": pull.head})

        assert refused.status_code == 405
        assert refused.json()["message"] == (
            "Base branch was modified. Review and try the merge again."
        )
        assert pull_json(world, pull.number)["merged"] is False
        clock.advance(1)
        merged = rest(world, "PUT", path, {"sha": pull.head})
        assert merged.status_code == 200 and merged.json()["merged"] is True


def test_a_push_to_the_head_or_the_base_makes_it_unknown_again(tmp_path: Path) -> None:
    with manual_world(tmp_path) as (world, clock):
        pull = open_pull(world)
        clock.advance(1)
        assert pull_json(world, pull.number)["mergeable"] is True

        world.control.push(world.repo, pull.branch, {"notes.txt": "1\n"}, as_user="alice")
        assert pull_json(world, pull.number)["mergeable"] is None
        clock.advance(1)
        assert pull_json(world, pull.number)["mergeable"] is True

        world.control.push(world.repo, "main", {"other.txt": "2\n"}, as_user="alice")
        assert pull_json(world, pull.number)["mergeable_state"] == "unknown"
        clock.advance(1)
        assert pull_json(world, pull.number)["mergeable"] is True


def test_a_conflict_shows_once_worked_out(tmp_path: Path) -> None:
    with manual_world(tmp_path) as (world, clock):
        pull = open_pull(world)
        world.control.push(world.repo, "main", {"src/widgets.py": "clash\n"}, as_user="alice")
        assert _graphql_state(world, pull.number) == ("UNKNOWN", "UNKNOWN")
        clock.advance(1)
        assert _graphql_state(world, pull.number) == ("CONFLICTING", "DIRTY")
        answer = rest(world, "PUT", f"/repos/{world.repo}/pulls/{pull.number}/merge", {})
        assert (answer.status_code, answer.json()["message"]) == (
            405,
            "Pull Request is not mergeable",
        )


def test_delay_is_a_control_and_zero_turns_it_off(tmp_path: Path) -> None:
    with manual_world(tmp_path) as (world, clock):
        world.control.set_mergeability_delay(5)
        pull = open_pull(world)
        clock.advance(4)
        assert pull_json(world, pull.number)["mergeable"] is None
        clock.advance(1)
        assert pull_json(world, pull.number)["mergeable"] is True

        world.control.set_mergeability_delay(0)
        second = open_pull(world)
        assert pull_json(world, second.number)["mergeable"] is True
        assert world.control.request("GET", "/mergeability") == {"seconds": 0.0}


def test_an_explicit_override_answers_at_once(tmp_path: Path) -> None:
    with manual_world(tmp_path) as (world, _clock):
        pull = open_pull(world)
        world.control.set_mergeable(world.repo, pull.number, False)
        assert pull_json(world, pull.number)["mergeable"] is False
        world.control.set_mergeable(world.repo, pull.number, True)
        view = pull_json(world, pull.number)
        assert (view["mergeable"], view["mergeable_state"]) == (True, "clean")
        world.control.set_mergeable(world.repo, pull.number, None)
        assert pull_json(world, pull.number)["mergeable"] is None
