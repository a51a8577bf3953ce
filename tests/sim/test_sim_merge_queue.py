"""The merge queue: a ruleset's merge_queue rule refuses direct merges; pull requests are
queued, tested in merge groups and merged by the queue, or removed when their group fails."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from orchestrator_sim.state import SimState
from orchestrator_sim.testing import Account, SimWorld
from tests.sim.strict import Pull, graphql, manual_world, new_account, open_pull, pull_json, rest

QUEUE_RULES: list[dict[str, Any]] = [
    {"type": "merge_queue", "parameters": {"merge_method": "MERGE"}},
    {
        "type": "required_status_checks",
        "parameters": {
            "required_status_checks": [{"context": "ci"}],
            "strict_required_status_checks_policy": False,
        },
    },
]
ENQUEUE = """mutation($id: ID!, $oid: GitObjectID, $jump: Boolean) {
  enqueuePullRequest(input: {pullRequestId: $id, expectedHeadOid: $oid, jump: $jump}) {
    mergeQueueEntry { id position state jump pullRequest { number } } } }"""
DEQUEUE = """mutation($id: ID!) { dequeuePullRequest(input: {id: $id}) {
  mergeQueueEntry { position pullRequest { number } } } }"""
ENTRY = """query($n: Int!) { repository(owner: "acme", name: "widgets") {
  pullRequest(number: $n) { state isInMergeQueue isMergeQueueEnabled mergeCommit { oid }
    mergeQueueEntry { position state enqueuedAt enqueuer { login }
      headCommit { oid } baseCommit { oid } } } } }"""
QUEUE = """{ repository(owner: "acme", name: "widgets") { mergeQueue(branch: "main") {
  configuration { mergeMethod mergingStrategy maximumEntriesToBuild checkResponseTimeout }
  entries(first: 10) { totalCount nodes { position state pullRequest { number } } } } } }"""
MERGE = """mutation($id: ID!) { mergePullRequest(input: {pullRequestId: $id, mergeMethod: SQUASH}) {
  pullRequest { merged } } }"""


def _ready(world: SimWorld, files: dict[str, str] | None = None) -> tuple[Pull, str]:
    """A pull request whose own head passed ``ci``, and its node id."""
    pull = open_pull(world, files)
    world.control.check_run(world.repo, sha=pull.head, name="ci", conclusion="success")
    world.settle_mergeability()
    return pull, str(pull_json(world, pull.number)["node_id"])


def _enqueue(
    world: SimWorld, node: str, oid: str | None = None, *, jump: bool = False
) -> dict[str, Any]:
    return graphql(world, ENQUEUE, {"id": node, "oid": oid, "jump": jump})


def _entry(world: SimWorld, number: int) -> dict[str, Any]:
    answer = graphql(world, ENTRY, {"n": number})
    pull: dict[str, Any] = answer["data"]["repository"]["pullRequest"]
    return pull


def _main(world: SimWorld) -> str:
    return str(rest(world, "GET", f"/repos/{world.repo}/branches/main").json()["commit"]["sha"])


def test_direct_merges_are_refused_where_a_merge_queue_is_required(tmp_path: Path) -> None:
    with manual_world(tmp_path) as (world, _clock):
        world.control.create_ruleset(world.repo, "queue", QUEUE_RULES)
        pull, node = _ready(world)

        by_rest = rest(world, "PUT", f"/repos/{world.repo}/pulls/{pull.number}/merge", {})
        by_graphql = graphql(world, MERGE, {"id": node})

        assert (by_rest.status_code, by_rest.json()["message"]) == (
            405,
            "Changes must be made through the merge queue",
        )
        assert by_graphql["data"] == {"mergePullRequest": None}
        assert by_graphql["errors"][0]["message"] == "Changes must be made through the merge queue"
        assert pull_json(world, pull.number)["merged"] is False


def test_merge_pull_request_merges_where_no_queue_is_required(tmp_path: Path) -> None:
    with manual_world(tmp_path) as (world, _clock):
        pull, node = _ready(world)
        answer = graphql(world, MERGE, {"id": node})
        assert answer["data"] == {"mergePullRequest": {"pullRequest": {"merged": True}}}
        assert pull_json(world, pull.number)["merged"] is True


def test_a_queued_pull_request_merges_through_its_merge_group(tmp_path: Path) -> None:
    with manual_world(tmp_path) as (world, _clock):
        world.control.create_ruleset(world.repo, "queue", QUEUE_RULES)
        pull, node = _ready(world)
        base = _main(world)

        stale = _enqueue(world, node, "0" * 40)
        queued = _enqueue(world, node, pull.head)
        assert stale["errors"][0]["message"] == (
            "Head branch was modified. Review and try the merge again."
        )
        entry = queued["data"]["enqueuePullRequest"]["mergeQueueEntry"]
        assert (entry["position"], entry["pullRequest"]["number"]) == (1, pull.number)

        view = _entry(world, pull.number)
        group = view["mergeQueueEntry"]
        assert (view["isInMergeQueue"], view["isMergeQueueEnabled"]) == (True, True)
        assert (group["state"], group["position"], group["baseCommit"]) == (
            "AWAITING_CHECKS",
            1,
            {"oid": base},
        )
        ref = f"gh-readonly-queue/main/pr-{pull.number}-{base}"
        branch = rest(world, "GET", f"/repos/{world.repo}/branches/{ref}").json()
        assert branch["commit"]["sha"] == group["headCommit"]["oid"]
        commit = rest(world, "GET", f"/repos/{world.repo}/commits/{ref}").json()
        assert [p["sha"] for p in commit["parents"]] == [base, pull.head]
        queue = graphql(world, QUEUE)["data"]["repository"]["mergeQueue"]
        assert queue["configuration"] == {
            "mergeMethod": "MERGE",
            "mergingStrategy": "ALLGREEN",
            "maximumEntriesToBuild": 5,
            "checkResponseTimeout": 60,
        }
        assert queue["entries"]["nodes"] == [
            {"position": 1, "state": "AWAITING_CHECKS", "pullRequest": {"number": pull.number}}
        ]
        # Merging directly is refused while it waits in the queue.
        refused = rest(world, "PUT", f"/repos/{world.repo}/pulls/{pull.number}/merge", {})
        assert refused.json()["message"] == "Pull Request is in the merge queue"

        world.control.check_run(world.repo, ref=ref, name="ci", conclusion="success")

        merged = pull_json(world, pull.number)
        assert (merged["merged"], merged["state"]) == (True, "closed")
        assert merged["merge_commit_sha"] == group["headCommit"]["oid"] == _main(world)
        assert merged["merged_by"]["login"] == "github-merge-queue[bot]"
        after = _entry(world, pull.number)
        assert (after["state"], after["mergeQueueEntry"]) == ("MERGED", None)
        assert after["mergeCommit"] == {"oid": group["headCommit"]["oid"]}
        gone = rest(world, "GET", f"/repos/{world.repo}/branches/{ref}")
        assert gone.status_code == 404


def test_a_failing_group_leaves_its_pull_request_open_and_the_queue_is_rebuilt(
    tmp_path: Path,
) -> None:
    with manual_world(tmp_path) as (world, _clock):
        world.control.create_ruleset(world.repo, "queue", QUEUE_RULES)
        first, first_node = _ready(world, {"one.txt": "1\n"})
        second, second_node = _ready(world, {"two.txt": "2\n"})
        base = _main(world)
        _enqueue(world, first_node)
        _enqueue(world, second_node)
        groups = [_entry(world, n)["mergeQueueEntry"] for n in (first.number, second.number)]
        assert groups[1]["baseCommit"] == groups[0]["headCommit"]

        world.control.check_run(
            world.repo, sha=groups[0]["headCommit"]["oid"], name="ci", conclusion="failure"
        )

        dropped = _entry(world, first.number)
        assert (dropped["state"], dropped["mergeQueueEntry"]) == ("OPEN", None)
        rebuilt = _entry(world, second.number)["mergeQueueEntry"]
        assert (rebuilt["position"], rebuilt["baseCommit"]) == (1, {"oid": base})
        assert rebuilt["headCommit"] != groups[1]["headCommit"]
        events = rest(world, "GET", f"/repos/{world.repo}/issues/{first.number}/events").json()
        assert [e["event"] for e in events][-2:] == [
            "added_to_merge_queue",
            "removed_from_merge_queue",
        ]

        world.control.check_run(
            world.repo, sha=rebuilt["headCommit"]["oid"], name="ci", conclusion="success"
        )
        assert pull_json(world, second.number)["merged"] is True
        assert _main(world) == rebuilt["headCommit"]["oid"]
        commit = rest(world, "GET", f"/repos/{world.repo}/commits/{_main(world)}").json()
        assert [p["sha"] for p in commit["parents"]] == [base, second.head]
        assert pull_json(world, first.number)["merged"] is False


def test_the_emulated_ci_tests_merge_groups_and_pushes_dequeue(tmp_path: Path) -> None:
    with manual_world(tmp_path) as (world, _clock):
        world.control.create_ruleset(world.repo, "queue", QUEUE_RULES)
        world.control.set_merge_settings(world.repo, merge_group_checks={"ci": "success"})
        pushed, pushed_node = _ready(world, {"one.txt": "1\n"})
        green, green_node = _ready(world, {"two.txt": "2\n"})
        world.control.set_merge_settings(world.repo, merge_group_checks={"ci": "in_progress"})
        _enqueue(world, pushed_node)
        world.control.push(world.repo, pushed.branch, {"one.txt": "1b\n"}, as_user="alice")
        assert _entry(world, pushed.number)["isInMergeQueue"] is False

        world.control.set_merge_settings(world.repo, merge_group_checks={"ci": "success"})
        _enqueue(world, green_node)
        assert pull_json(world, green.number)["merged"] is True


def test_jump_dequeue_and_who_may_queue(tmp_path: Path) -> None:
    with manual_world(tmp_path) as (world, _clock):
        world.control.create_ruleset(world.repo, "queue", QUEUE_RULES)
        reader: Account = new_account(world, "read")
        first, first_node = _ready(world, {"one.txt": "1\n"})
        second, second_node = _ready(world, {"two.txt": "2\n"})

        forbidden = graphql(world, ENQUEUE, {"id": first_node}, reader)
        assert forbidden["errors"][0]["type"] == "FORBIDDEN"
        _enqueue(world, first_node)
        jumped = _enqueue(world, second_node, jump=True)
        assert jumped["data"]["enqueuePullRequest"]["mergeQueueEntry"]["position"] == 1
        nodes = graphql(world, QUEUE)["data"]["repository"]["mergeQueue"]["entries"]["nodes"]
        assert [n["pullRequest"]["number"] for n in nodes] == [second.number, first.number]

        removed = graphql(world, DEQUEUE, {"id": second_node})
        assert removed["data"]["dequeuePullRequest"]["mergeQueueEntry"] == {
            "position": 1,
            "pullRequest": {"number": second.number},
        }
        again = graphql(world, DEQUEUE, {"id": second_node})
        assert again["errors"][0]["message"] == "Pull request is not in the merge queue"
        assert _entry(world, first.number)["mergeQueueEntry"]["position"] == 1


def test_entries_need_passing_checks_and_time_out_without_group_checks(tmp_path: Path) -> None:
    with manual_world(tmp_path) as (world, clock):
        rules = [
            {"type": "merge_queue", "parameters": {"check_response_timeout_minutes": 1}},
            QUEUE_RULES[1],
        ]
        world.control.create_ruleset(world.repo, "queue", rules)
        pull = open_pull(world)
        world.settle_mergeability()
        node = str(pull_json(world, pull.number)["node_id"])

        unchecked = _enqueue(world, node)
        assert unchecked["errors"][0]["message"] == 'Required status check "ci" is expected.'

        world.control.check_run(world.repo, sha=pull.head, name="ci", conclusion="success")
        _enqueue(world, node)
        assert _entry(world, pull.number)["mergeQueueEntry"]["state"] == "AWAITING_CHECKS"
        clock.advance(61)
        assert _entry(world, pull.number)["mergeQueueEntry"] is None
        assert pull_json(world, pull.number)["state"] == "open"


def test_rulesets_queue_entries_and_auto_merges_survive_a_snapshot(tmp_path: Path) -> None:
    with manual_world(tmp_path) as (world, _clock):
        world.control.create_ruleset(world.repo, "queue", QUEUE_RULES)
        world.control.set_merge_settings(
            world.repo, allow_auto_merge=True, merge_group_checks={"ci": "in_progress"}
        )
        queued, queued_node = _ready(world, {"one.txt": "1\n"})
        waiting = open_pull(world, {"two.txt": "2\n"})
        world.settle_mergeability()
        _enqueue(world, queued_node)
        world.control.enable_auto_merge(world.repo, waiting.number, as_user=world.bot.login)
        assert _entry(world, queued.number)["mergeQueueEntry"]["state"] == "AWAITING_CHECKS"

        state = world.server.emulator.state
        saved = state.to_json()
        copy = SimState()
        copy.load_json(saved)

        assert copy.to_json() == saved
        repo = copy.repo(world.owner, world.name)
        assert [entry.number for entry in repo.merge_queue] == [queued.number]
        assert list(repo.auto_merges) == [waiting.number]
        assert [rule.type for rule in next(iter(repo.rulesets.values())).rules] == [
            "merge_queue",
            "required_status_checks",
        ]
