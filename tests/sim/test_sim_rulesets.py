"""Repository rulesets: which rules apply to a branch, the REST routes that show and
change them, and how their rules add to branch protection when a pull request merges."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from orchestrator_sim.control import ControlRequestError
from orchestrator_sim.rulesets import targets
from orchestrator_sim.testing import Account, SimWorld
from tests.sim.strict import graphql, manual_world, new_account, open_pull, pull_json, rest

STATE = """query($n: Int!) { repository(owner: "acme", name: "widgets") {
  pullRequest(number: $n) { mergeStateStatus reviewDecision } } }"""
REVIEWS = {"type": "pull_request", "parameters": {"required_approving_review_count": 1}}
CHECKS = {
    "type": "required_status_checks",
    "parameters": {
        "required_status_checks": [{"context": "ci"}],
        "strict_required_status_checks_policy": False,
    },
}
FULL_PULL_REQUEST = {
    "type": "pull_request",
    "parameters": {
        "required_approving_review_count": 2,
        "dismiss_stale_reviews_on_push": False,
        "require_code_owner_review": False,
        "require_last_push_approval": False,
        "required_review_thread_resolution": False,
    },
}


def _merge(
    world: SimWorld, number: int, account: Account | None = None, method: str = "squash"
) -> httpx.Response:
    path = f"/repos/{world.repo}/pulls/{number}/merge"
    return rest(world, "PUT", path, {"merge_method": method}, account)


def _state(world: SimWorld, number: int) -> dict[str, Any]:
    """The pull request's mergeStateStatus and reviewDecision."""
    view: dict[str, Any] = graphql(world, STATE, {"n": number})["data"]["repository"]
    return dict(view["pullRequest"])


@pytest.mark.parametrize(
    ("include", "exclude", "branch", "selected"),
    [
        (["~DEFAULT_BRANCH"], [], "main", True),
        (["~DEFAULT_BRANCH"], [], "dev", False),
        (["~ALL"], ["refs/heads/dev*"], "develop", False),
        (["~ALL"], ["refs/heads/dev*"], "main", True),
        (["refs/heads/release/*"], [], "release/1.0", True),
        (["refs/heads/release/*"], [], "release/1.0/hotfix", False),
        (["refs/heads/release/**"], [], "release/1.0/hotfix", True),
        (["refs/heads/v[0-9]"], [], "v7", True),
        (["refs/heads/v[!0-9]"], [], "v7", False),
        ([], [], "main", False),
    ],
    ids=[
        "default_branch",
        "default_branch_only",
        "exclude_wins",
        "all_branches",
        "star_in_one_segment",
        "star_stops_at_slash",
        "double_star_crosses",
        "character_class",
        "negated_class",
        "nothing_included",
    ],
)
def test_ref_name_conditions_select_branches_as_github_does(
    include: list[str], exclude: list[str], branch: str, selected: bool
) -> None:
    assert targets(include, exclude, branch, "main") is selected


def test_branch_rules_name_their_ruleset_and_skip_unenforced_ones(tmp_path: Path) -> None:
    with manual_world(tmp_path) as (world, _clock):
        active = world.control.create_ruleset(world.repo, "main rules", [REVIEWS, CHECKS])
        world.control.create_ruleset(
            world.repo, "trial", [{"type": "required_signatures"}], enforcement="evaluate"
        )
        world.control.create_ruleset(
            world.repo, "off", [{"type": "non_fast_forward"}], enforcement="disabled"
        )

        rules = rest(world, "GET", f"/repos/{world.repo}/rules/branches/main").json()
        other = rest(world, "GET", f"/repos/{world.repo}/rules/branches/feature").json()

        assert [rule["type"] for rule in rules] == ["pull_request", "required_status_checks"]
        for rule in rules:
            assert rule["ruleset_source_type"] == "Repository"
            assert rule["ruleset_source"] == world.repo
            assert rule["ruleset_id"] == active["id"]
        assert rules[0]["parameters"]["required_approving_review_count"] == 1
        assert rules[1]["parameters"] == {
            "required_status_checks": [{"context": "ci"}],
            "strict_required_status_checks_policy": False,
            "do_not_enforce_on_create": False,
        }
        assert other == []


def test_rulesets_are_written_by_admins_with_githubs_validation(tmp_path: Path) -> None:
    with manual_world(tmp_path) as (world, _clock):
        path = f"/repos/{world.repo}/rulesets"
        body: dict[str, Any] = {
            "name": "protect main",
            "target": "branch",
            "enforcement": "active",
            "conditions": {"ref_name": {"include": ["~DEFAULT_BRANCH"], "exclude": []}},
            "rules": [FULL_PULL_REQUEST, {"type": "non_fast_forward"}],
            "bypass_actors": [
                {"actor_id": 5, "actor_type": "RepositoryRole", "bypass_mode": "always"}
            ],
        }
        as_writer = rest(world, "POST", path, body)
        incomplete = dict(body, rules=[REVIEWS])
        missing = rest(world, "POST", path, incomplete, world.human)
        unmodelled = dict(body, rules=[{"type": "workflows", "parameters": {}}])
        unknown_type = rest(world, "POST", path, unmodelled, world.human)
        created = rest(world, "POST", path, body, world.human)
        again = rest(world, "POST", path, body, world.human)

        assert as_writer.status_code == 403
        assert missing.status_code == 422
        assert (
            "Invalid property /rules/0/parameters/dismiss_stale_reviews_on_push"
            in (missing.json()["message"])
        )
        assert "rule type 'workflows' is not modelled" in unknown_type.json()["message"]
        assert created.status_code == 201
        ruleset = created.json()
        assert again.json()["message"].endswith("Name must be unique: protect main")
        assert ruleset["current_user_can_bypass"] == "always"

        listed = rest(world, "GET", path).json()
        as_bot = rest(world, "GET", f"{path}/{ruleset['id']}").json()
        assert [item["name"] for item in listed] == ["protect main"]
        assert "rules" not in listed[0]
        assert "bypass_actors" not in as_bot
        assert as_bot["current_user_can_bypass"] == "never"
        assert as_bot["conditions"]["ref_name"]["include"] == ["~DEFAULT_BRANCH"]

        changed = rest(
            world, "PUT", f"{path}/{ruleset['id']}", {"enforcement": "disabled"}, world.human
        )
        assert changed.json()["enforcement"] == "disabled"
        assert changed.json()["rules"] == ruleset["rules"]
        assert rest(world, "GET", f"/repos/{world.repo}/rules/branches/main").json() == []

        assert rest(world, "DELETE", f"{path}/{ruleset['id']}", account=world.human).status_code
        assert rest(world, "GET", f"{path}/{ruleset['id']}").status_code == 404


def test_a_merge_must_satisfy_both_protection_and_rulesets(tmp_path: Path) -> None:
    with manual_world(tmp_path) as (world, clock):
        world.control.protect(world.repo, "main", required_checks=["ci"])
        world.control.create_ruleset(world.repo, "reviews", [REVIEWS])
        pull = open_pull(world)
        clock.advance(1)

        world.control.check_run(world.repo, sha=pull.head, name="ci", conclusion="success")
        short = _merge(world, pull.number)
        view = _state(world, pull.number)
        assert (short.status_code, short.json()["message"]) == (
            405,
            "At least 1 approving review is required by reviewers with write access.",
        )
        assert view == {"mergeStateStatus": "BLOCKED", "reviewDecision": "REVIEW_REQUIRED"}

        world.control.review(world.repo, pull.number, "APPROVED", as_user="alice")
        world.control.check_run(world.repo, sha=pull.head, name="ci", conclusion="failure")
        failing = _merge(world, pull.number)
        assert failing.json()["message"] == 'Required status check "ci" is failing.'

        world.control.check_run(world.repo, sha=pull.head, name="ci", conclusion="success")
        assert pull_json(world, pull.number)["mergeable_state"] == "clean"
        assert _merge(world, pull.number).status_code == 200


def test_ruleset_status_checks_and_strict_policy(tmp_path: Path) -> None:
    with manual_world(tmp_path) as (world, clock):
        strict = {
            "type": "required_status_checks",
            "parameters": {
                "required_status_checks": [{"context": "ci"}, {"context": "lint"}],
                "strict_required_status_checks_policy": True,
            },
        }
        world.control.create_ruleset(world.repo, "checks", [strict])
        pull = open_pull(world)
        clock.advance(1)
        assert _merge(world, pull.number).json()["message"] == (
            "2 of 2 required status checks are expected."
        )
        for name in ("ci", "lint"):
            world.control.check_run(world.repo, sha=pull.head, name=name, conclusion="success")
        world.control.push(world.repo, "main", {"NEWS.md": "news\n"}, as_user="alice")
        clock.advance(1)

        behind = _merge(world, pull.number)
        assert (behind.status_code, behind.json()["message"]) == (
            405,
            "Head branch is out of date. Review and try the merge again.",
        )
        assert pull_json(world, pull.number)["mergeable_state"] == "behind"


def test_bypass_actors_merge_past_the_rules(tmp_path: Path) -> None:
    with manual_world(tmp_path) as (world, clock):
        writer = new_account(world, "write")
        world.control.create_ruleset(
            world.repo,
            "reviews",
            [REVIEWS],
            bypass_actors=[
                {"actor_type": "RepositoryRole", "actor_id": 5, "bypass_mode": "pull_request"}
            ],
        )
        pull = open_pull(world)
        clock.advance(1)

        assert _merge(world, pull.number, writer).status_code == 405
        assert _merge(world, pull.number, world.human).status_code == 200


def test_merge_methods_history_and_signatures(tmp_path: Path) -> None:
    with manual_world(tmp_path) as (world, clock):
        rules: list[dict[str, Any]] = [
            {"type": "pull_request", "parameters": {"allowed_merge_methods": ["squash", "merge"]}},
            {"type": "required_linear_history"},
            {"type": "required_signatures"},
        ]
        world.control.create_ruleset(world.repo, "history", rules)
        pull = open_pull(world)
        clock.advance(1)

        rebase = _merge(world, pull.number, method="rebase")
        merge = _merge(world, pull.number, method="merge")
        assert rebase.json()["message"] == "Merge method rebase is not allowed on this branch."
        assert merge.json()["message"] == "This branch must not contain merge commits."
        # GitHub signs the squash commit it writes itself.
        assert _merge(world, pull.number, method="squash").status_code == 200


def test_unsigned_commits_cannot_come_in_by_a_merge_commit(tmp_path: Path) -> None:
    with manual_world(tmp_path) as (world, clock):
        world.control.create_ruleset(world.repo, "signed", [{"type": "required_signatures"}])
        pull = open_pull(world)
        clock.advance(1)

        refused = _merge(world, pull.number, method="merge")
        assert (refused.status_code, refused.json()["message"]) == (
            405,
            "Commits must have verified signatures.",
        )


def test_a_merge_queue_needs_an_organization_owned_repository(tmp_path: Path) -> None:
    with manual_world(tmp_path) as (world, _clock):
        world.control.create_repo("alice/solo", permissions={})
        with pytest.raises(ControlRequestError) as refused:
            world.control.create_ruleset("alice/solo", "queue", [{"type": "merge_queue"}])
        assert "owned by an organization" in refused.value.message


def test_a_pull_request_rule_dismisses_stale_approvals(tmp_path: Path) -> None:
    with manual_world(tmp_path) as (world, clock):
        rule = {
            "type": "pull_request",
            "parameters": {
                "required_approving_review_count": 1,
                "dismiss_stale_reviews_on_push": True,
            },
        }
        world.control.create_ruleset(world.repo, "reviews", [rule])
        pull = open_pull(world)
        world.control.review(world.repo, pull.number, "APPROVED", as_user="alice")
        world.control.push(world.repo, pull.branch, {"more.txt": "x\n"}, as_user="alice")
        clock.advance(1)

        reviews = rest(world, "GET", f"/repos/{world.repo}/pulls/{pull.number}/reviews").json()
        assert [review["state"] for review in reviews] == ["DISMISSED"]
        assert _merge(world, pull.number).json()["message"] == (
            "At least 1 approving review is required by reviewers with write access."
        )


def test_a_pull_request_rule_asks_for_code_owners_and_the_last_push_as_protection_does(
    tmp_path: Path,
) -> None:
    with manual_world(tmp_path) as (world, clock):
        world.control.push(
            world.repo, "main", {".github/CODEOWNERS": "*.py @alice\n"}, as_user="alice"
        )
        owners = {"require_code_owner_review": True, "require_last_push_approval": True}
        rule = {"type": "pull_request", "parameters": owners}
        world.control.create_ruleset(world.repo, "owners", [rule])
        writer = new_account(world)
        pull = open_pull(world, {"src/widgets.py": "changed\n"})  # pushed by alice
        clock.advance(1)
        world.control.review(world.repo, pull.number, "APPROVED", as_user=writer.login)
        by_writer = (_merge(world, pull.number).json()["message"], _state(world, pull.number))
        world.control.review(world.repo, pull.number, "APPROVED", as_user="alice")
        # The owner approved, but she pushed the head: the writer's approval covers that.
        assert _merge(world, pull.number).status_code == 200

        assert by_writer == (
            "Waiting on code owner review from alice.",
            {"mergeStateStatus": "BLOCKED", "reviewDecision": "REVIEW_REQUIRED"},
        )


def test_a_pull_request_rule_wants_an_approval_of_the_last_push_by_someone_else(
    tmp_path: Path,
) -> None:
    with manual_world(tmp_path) as (world, clock):
        rule = {"type": "pull_request", "parameters": {"require_last_push_approval": True}}
        world.control.create_ruleset(world.repo, "last push", [rule])
        pull = open_pull(world)  # pushed by alice
        clock.advance(1)
        world.control.review(world.repo, pull.number, "APPROVED", as_user="alice")

        refused = _merge(world, pull.number)

        assert refused.json()["message"] == (
            "New changes require approval from someone other than the last pusher."
        )
        assert _state(world, pull.number)["reviewDecision"] == "REVIEW_REQUIRED"
