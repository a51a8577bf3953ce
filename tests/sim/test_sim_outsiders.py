"""Outside accounts, bots and review threads as GitHub treats them: outdated threads,
permission reads that need push access, collaborators-only review requests, comments on
the diff only, and a bot's two spellings of its login."""

from __future__ import annotations

from pathlib import Path

from tests.sim.strict import WIDGETS, graphql, manual_world, new_account, open_pull, rest

THREADS = """query($n: Int!) {
  repository(owner: "acme", name: "widgets") { pullRequest(number: $n) {
  reviewThreads(first: 10) { nodes { path isOutdated line originalLine
    comments(first: 5) { nodes { line originalLine } } } } } } }"""

THREE_LINES = "one = 1\ntwo = 2\nthree = 3\n"


def test_a_push_changing_the_line_outdates_the_thread(tmp_path: Path) -> None:
    with manual_world(tmp_path) as (world, _clock):
        pull = open_pull(world, {"src/lines.py": THREE_LINES})
        review = world.control.review(
            world.repo,
            pull.number,
            "COMMENTED",
            as_user="alice",
            comments=[
                {"path": "src/lines.py", "line": 1, "body": "on one"},
                {"path": "src/lines.py", "line": 3, "body": "on three"},
            ],
        )
        assert len(review["threads"]) == 2
        # Line 1 changes; a line inserted above line 3 moves it to line 4.
        world.control.push(
            world.repo,
            pull.branch,
            {"src/lines.py": "ONE = 1\ntwo = 2\ninserted = 0\nthree = 3\n"},
            as_user="alice",
        )

        answer = graphql(world, THREADS, {"n": pull.number})
        nodes = answer["data"]["repository"]["pullRequest"]["reviewThreads"]["nodes"]
        assert [(t["isOutdated"], t["line"], t["originalLine"]) for t in nodes] == [
            (True, None, 1),
            (False, 4, 3),
        ]
        assert nodes[0]["comments"]["nodes"] == [{"line": None, "originalLine": 1}]
        comments = rest(world, "GET", f"/repos/{world.repo}/pulls/{pull.number}/comments").json()
        outdated, moved = comments
        assert (outdated["position"], outdated["line"], outdated["original_line"]) == (
            None,
            None,
            1,
        )
        assert outdated["commit_id"] == pull.head == outdated["original_commit_id"]
        assert (moved["line"], moved["original_line"]) == (4, 3)
        assert moved["position"] is not None
        assert moved["commit_id"] != pull.head


def test_deleting_the_file_outdates_its_threads(tmp_path: Path) -> None:
    with manual_world(tmp_path) as (world, _clock):
        pull = open_pull(world, {"src/lines.py": THREE_LINES})
        world.control.review(
            world.repo,
            pull.number,
            "COMMENTED",
            as_user="alice",
            comments=[{"path": "src/lines.py", "line": 2, "body": "hm"}],
        )
        world.control.push(world.repo, pull.branch, {"src/lines.py": None}, as_user="alice")
        answer = graphql(world, THREADS, {"n": pull.number})
        thread = answer["data"]["repository"]["pullRequest"]["reviewThreads"]["nodes"][0]
        assert (thread["isOutdated"], thread["line"], thread["originalLine"]) == (True, None, 2)


def test_reading_a_collaborators_permission_needs_push_access(tmp_path: Path) -> None:
    with manual_world(tmp_path) as (world, _clock):
        reader = new_account(world, "read")
        path = f"/repos/{world.repo}/collaborators/alice/permission"

        refused = rest(world, "GET", path, account=reader)
        allowed = rest(world, "GET", path)

        assert refused.status_code == 403
        assert refused.json()["message"] == "Must have push access to view collaborator permission."
        assert allowed.status_code == 200 and allowed.json()["permission"] == "admin"


def test_reviews_may_only_be_requested_from_collaborators(tmp_path: Path) -> None:
    with manual_world(tmp_path) as (world, _clock):
        pull = open_pull(world)
        outsider = new_account(world, None)
        collaborator = new_account(world, "read")
        path = f"/repos/{world.repo}/pulls/{pull.number}/requested_reviewers"

        refused = rest(world, "POST", path, {"reviewers": [outsider.login]})
        allowed = rest(world, "POST", path, {"reviewers": [collaborator.login]})

        assert refused.status_code == 422
        assert refused.json()["message"] == (
            "Reviews may only be requested from collaborators. One or more of the users or "
            "teams you specified is not a collaborator of the acme/widgets repository."
        )
        assert allowed.status_code == 201
        assert [u["login"] for u in allowed.json()["requested_reviewers"]] == [collaborator.login]


def test_review_comments_must_be_on_the_diff(tmp_path: Path) -> None:
    with manual_world(tmp_path) as (world, _clock):
        pull = open_pull(world, {"src/widgets.py": WIDGETS})
        comments = f"/repos/{world.repo}/pulls/{pull.number}/comments"
        reviews = f"/repos/{world.repo}/pulls/{pull.number}/reviews"
        outside = {"path": "README.md", "line": 1, "body": "unrelated"}

        single = rest(world, "POST", comments, {**outside, "commit_id": pull.head})
        batch = rest(world, "POST", reviews, {"event": "COMMENT", "comments": [outside]})
        inside = rest(
            world,
            "POST",
            comments,
            {"path": "src/widgets.py", "line": 2, "body": "ok", "commit_id": pull.head},
        )

        assert single.status_code == 422
        assert single.json()["errors"][0]["field"] == "pull_request_review_thread.line"
        assert single.json()["errors"][0]["message"] == (
            "pull_request_review_thread.line must be part of the diff"
        )
        assert batch.status_code == 422
        assert batch.json()["errors"] == [
            "Pull request review thread line must be part of the diff and "
            "Pull request review thread diff hunk can't be blank"
        ]
        assert inside.status_code == 201
        listed = rest(world, "GET", reviews).json()
        assert [r["state"] for r in listed] == ["COMMENTED"]


def test_a_bot_has_two_spellings_of_its_login(tmp_path: Path) -> None:
    with manual_world(tmp_path) as (world, _clock):
        created = world.control.create_user("renovate[bot]", "ghp_" + "b" * 36)
        assert (created["login"], created["graphql_login"], created["type"]) == (
            "renovate[bot]",
            "renovate",
            "Bot",
        )
        ci = new_account(world, "write", bot=True)
        assert ci.login.endswith("[bot]")
        world.control.set_permission(world.repo, "renovate", "write")
        pull = open_pull(world)
        # Either spelling names the account in the control API.
        world.control.comment(world.repo, pull.number, "bumped", as_user="renovate[bot]")
        world.control.review(world.repo, pull.number, "COMMENTED", as_user=ci.login, body="ok")

        user = rest(world, "GET", "/users/renovate[bot]").json()
        assert (user["login"], user["type"]) == ("renovate[bot]", "Bot")
        assert rest(world, "GET", "/users/renovate").json()["login"] == "renovate[bot]"
        comment = rest(world, "GET", f"/repos/{world.repo}/issues/{pull.number}/comments").json()
        assert comment[0]["user"]["login"] == "renovate[bot]"
        permission = rest(
            world, "GET", f"/repos/{world.repo}/collaborators/renovate[bot]/permission"
        ).json()
        assert permission["permission"] == "write"

        query = """query($n: Int!) { repository(owner: "acme", name: "widgets") {
          pullRequest(number: $n) {
            comments(first: 5) { nodes { author { __typename login } } }
            reviews(first: 5) { nodes { author { __typename login } } } } } }"""
        node = graphql(world, query, {"n": pull.number})["data"]["repository"]["pullRequest"]
        assert node["comments"]["nodes"][0]["author"] == {"__typename": "Bot", "login": "renovate"}
        assert node["reviews"]["nodes"][0]["author"] == {
            "__typename": "Bot",
            "login": ci.login.removesuffix("[bot]"),
        }
        viewer = graphql(world, "{ viewer { login } }", account=ci)
        assert viewer["data"]["viewer"]["login"] == ci.login.removesuffix("[bot]")
        requested = rest(
            world,
            "POST",
            f"/repos/{world.repo}/pulls/{pull.number}/requested_reviewers",
            {"reviewers": ["renovate[bot]"]},
        )
        assert requested.status_code == 201
