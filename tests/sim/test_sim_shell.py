"""`orchestrator sim issue | label | comment | review | check | push | pr | protect | merge |
state` against a real emulator over HTTP, and their errors."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from orchestrator.cli import cli
from orchestrator_sim.control import ControlClient
from orchestrator_sim.testing import SimWorld, make_token, running_world


@pytest.fixture
def world(tmp_path: Path) -> Iterator[SimWorld]:
    with running_world(tmp_path / "sim", mergeability_delay=0) as running:
        yield running


def sim(world_or_url: SimWorld | str, *args: str) -> Result:
    """Run ``orchestrator sim ARGS`` against the emulator, without the caller's settings."""
    url = world_or_url if isinstance(world_or_url, str) else world_or_url.url
    env = {"ORCHESTRATOR_SIM_URL": url, "ORCHESTRATOR_SIM_AS": None}
    return CliRunner().invoke(cli, ["sim", *args], env=env)


def ok(result: Result) -> str:
    assert result.exit_code == 0, result.output
    return result.stdout


def failed(result: Result) -> str:
    """The one-line error of a failed command (no traceback)."""
    assert result.exit_code != 0, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output
    lines = [line for line in result.stderr.splitlines() if line.startswith("Error:")]
    assert len(lines) == 1, result.stderr
    return lines[0]


def rest(world: SimWorld, path: str, token: str | None = None) -> Any:
    import httpx

    headers = {"Authorization": f"token {token or world.human.token}"}
    return httpx.get(f"{world.url}{path}", headers=headers, timeout=10).json()


def open_pull(world: SimWorld, branch: str = "feature") -> tuple[int, str]:
    """A pull request by the bot from ``branch`` (one commit); its number and head SHA."""
    sha = world.control.push(
        world.repo, branch, {"src/feature.py": "FEATURE = 1\n"}, as_user=world.bot.login
    )
    number = world.control.create_pull(
        world.repo, "Add the feature", branch, as_user=world.bot.login
    )
    return number, sha


def unused_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


# ------------------------------------------------------------------- issues


def test_issue_create_prints_the_number_and_url_and_labels_it(world: SimWorld) -> None:
    out = ok(
        sim(
            world,
            "issue",
            "create",
            world.repo,
            "--title",
            "Add a spinner",
            "--body",
            "Spinners show progress.",
            "--label",
            "orchestrator",
            "--label",
            "ui",
        )
    )
    assert out.strip() == f"acme/widgets#1 {world.url}/acme/widgets/issues/1"
    issue = rest(world, "/repos/acme/widgets/issues/1")
    assert issue["title"] == "Add a spinner"
    assert issue["body"] == "Spinners show progress."
    assert issue["user"]["login"] == world.human.login
    assert [label["name"] for label in issue["labels"]] == ["orchestrator", "ui"]


def test_a_reader_s_labels_are_dropped_with_a_warning(world: SimWorld) -> None:
    world.control.create_user("bob", make_token())
    world.control.set_permission(world.repo, "bob", "read")
    result = sim(
        world, "issue", "create", world.repo, "--title", "Hi", "--label", "x", "--as", "bob"
    )
    assert ok(result).startswith("acme/widgets#1 ")
    assert "bob may not label issues in acme/widgets; dropped: x" in result.stderr
    issue = rest(world, "/repos/acme/widgets/issues/1")
    assert issue["user"]["login"] == "bob" and issue["labels"] == []


# ------------------------------------------------------------------- labels


def test_label_add_and_remove_on_an_issue_and_a_pull_request(world: SimWorld) -> None:
    number = world.control.create_issue(world.repo, "Fix it", as_user=world.human.login)
    pull, _sha = open_pull(world)
    assert ok(sim(world, "label", "add", world.repo, str(number), "a", "b")).strip() == (
        "acme/widgets#1 labels: a, b"
    )
    assert ok(sim(world, "label", "remove", world.repo, str(number), "a")).strip() == (
        "acme/widgets#1 labels: b"
    )
    assert ok(sim(world, "label", "add", world.repo, str(pull), "state:merging")).strip() == (
        f"acme/widgets#{pull} labels: state:merging"
    )
    events = rest(world, f"/repos/acme/widgets/issues/{pull}/events")
    assert [(e["event"], e["actor"]["login"]) for e in events] == [("labeled", "alice")]
    out = ok(sim(world, "label", "remove", world.repo, str(pull), "state:merging"))
    assert out.strip() == f"acme/widgets#{pull} labels: (none)"


def test_label_errors_name_the_issue_and_the_label(world: SimWorld) -> None:
    world.control.create_issue(world.repo, "Fix it", as_user=world.human.login, labels=["b"])
    assert failed(sim(world, "label", "add", world.repo, "99", "a")) == (
        "Error: no issue or pull request acme/widgets#99"
    )
    assert failed(sim(world, "label", "remove", world.repo, "1", "a", "b")) == (
        "Error: acme/widgets#1 has no label 'a' (its labels: b)"
    )
    assert rest(world, "/repos/acme/widgets/issues/1")["labels"][0]["name"] == "b"
    world.control.create_user("bob", make_token())
    error = failed(sim(world, "label", "add", world.repo, "1", "a", "--as", "bob"))
    assert error == (
        "Error: cannot label acme/widgets#1 as bob: GitHub answered 403 "
        "Resource not accessible by personal access token"
    )


# ----------------------------------------------------------------- comments


def test_comment_as_a_person(world: SimWorld) -> None:
    world.control.create_issue(world.repo, "Fix it", as_user=world.human.login)
    out = ok(sim(world, "comment", world.repo, "1", "--body", "Any news?"))
    assert out.startswith("comment ") and "by alice: " in out
    comments = rest(world, "/repos/acme/widgets/issues/1/comments")
    assert [(c["user"]["login"], c["body"]) for c in comments] == [("alice", "Any news?")]


# ------------------------------------------------------------------ reviews


def test_review_approve_and_request_changes_on_the_current_head(world: SimWorld) -> None:
    pull, head = open_pull(world)
    out = ok(sim(world, "review", "request-changes", world.repo, str(pull), "--body", "Rename it"))
    assert out.strip() == f"acme/widgets#{pull}: CHANGES_REQUESTED by alice on {head[:12]}"
    out = ok(sim(world, "review", "approve", world.repo, str(pull), "--body", "Fine now"))
    assert out.strip() == f"acme/widgets#{pull}: APPROVED by alice on {head[:12]}"
    reviews = rest(world, f"/repos/acme/widgets/pulls/{pull}/reviews")
    assert [(r["user"]["login"], r["state"], r["commit_id"], r["body"]) for r in reviews] == [
        ("alice", "CHANGES_REQUESTED", head, "Rename it"),
        ("alice", "APPROVED", head, "Fine now"),
    ]


def test_review_errors(world: SimWorld) -> None:
    pull, _head = open_pull(world)
    world.control.create_issue(world.repo, "Fix it", as_user=world.human.login)
    missing = sim(world, "review", "request-changes", world.repo, str(pull))
    assert missing.exit_code == 2 and "Missing option '--body'" in missing.stderr
    assert failed(sim(world, "review", "approve", world.repo, "2")) == (
        "Error: acme/widgets#2 is an issue, not a pull request"
    )
    assert failed(sim(world, "review", "approve", world.repo, "42")) == (
        "Error: no issue or pull request acme/widgets#42"
    )
    own = failed(sim(world, "review", "approve", world.repo, str(pull), "--as", world.bot.login))
    assert own.startswith(f"Error: cannot review acme/widgets#{pull} as orchestrator-bot: ")
    assert "422 Can not approve or request changes on your own pull request" in own


# ------------------------------------------------------------------- checks


def test_check_set_on_a_pull_request_a_branch_and_a_commit(world: SimWorld) -> None:
    pull, head = open_pull(world)
    out = ok(sim(world, "check", "set", world.repo, str(pull), "--name", "tests"))
    assert out.strip() == f"tests: success on {head[:12]} (head of acme/widgets#{pull})"
    out = ok(
        sim(
            world,
            "check",
            "set",
            world.repo,
            "feature",
            "--name",
            "lint",
            "--status",
            "in_progress",
        )
    )
    assert out.strip() == f"lint: in_progress on {head[:12]} (feature)"
    out = ok(
        sim(
            world, "check", "set", world.repo, head[:9], "--name", "lint", "--conclusion", "failure"
        )
    )
    assert out.strip() == f"lint: failure on {head[:12]} ({head[:9]})"
    runs = rest(world, f"/repos/acme/widgets/commits/{head}/check-runs")["check_runs"]
    assert sorted((r["name"], r["status"], r["conclusion"]) for r in runs) == [
        ("lint", "completed", "failure"),
        ("tests", "completed", "success"),
    ]


def test_check_set_errors(world: SimWorld) -> None:
    open_pull(world)
    world.control.create_issue(world.repo, "Fix it", as_user=world.human.login)
    assert failed(sim(world, "check", "set", world.repo, "nowhere", "--name", "ci")) == (
        "Error: 'nowhere' is neither a pull request number, a commit nor a branch of acme/widgets"
    )
    assert failed(sim(world, "check", "set", world.repo, "2", "--name", "ci")) == (
        "Error: acme/widgets#2 is an issue, not a pull request"
    )
    both = sim(
        world, "check", "set", world.repo, "main", "--name", "ci", "--status", "queued",
        "--conclusion", "success",
    )  # fmt: skip
    assert both.exit_code == 2 and "a queued check run has no conclusion" in both.stderr
    bad = sim(world, "check", "set", world.repo, "main", "--name", "ci", "--conclusion", "green")
    assert bad.exit_code == 2 and "'green' is not one of" in bad.stderr


# --------------------------------------------------------------------- push


def test_push_by_a_person_moves_the_pull_request_head(world: SimWorld, tmp_path: Path) -> None:
    pull, old_head = open_pull(world)
    local = tmp_path / "notes.md"
    local.write_text("Some notes.\n")
    out = ok(
        sim(
            world,
            "push",
            world.repo,
            "feature",
            "--file",
            "src/feature.py=FEATURE = 2\\n",
            "--from-file",
            f"docs/notes.md={local}",
            "--delete",
            "README.md",
            "-m",
            "Tweak the feature",
        )
    )
    sha = out.split()[0]
    assert out.strip() == f"{sha} pushed to acme/widgets:feature by alice"
    pr = rest(world, f"/repos/acme/widgets/pulls/{pull}")
    assert pr["head"]["sha"] == sha != old_head
    commit = rest(world, f"/repos/acme/widgets/commits/{sha}")
    assert commit["commit"]["message"] == "Tweak the feature"
    assert commit["commit"]["author"]["name"] == "Alice Example"
    emulator = world.server.emulator
    bare = emulator.repo_path(emulator.state.repo(world.owner, world.name))
    changed = subprocess.run(
        ["git", f"--git-dir={bare}", "show", "--name-status", "--format=", sha],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert changed == ["D", "README.md", "A", "docs/notes.md", "M", "src/feature.py"]
    out = ok(sim(world, "push", world.repo, "fresh", "--file", "a.txt=a", "-m", "New branch"))
    assert out.strip().endswith("created acme/widgets:fresh by alice")


def test_push_errors(world: SimWorld) -> None:
    world.control.create_user("bob", make_token())
    world.control.set_permission(world.repo, "bob", "triage")
    refused = sim(world, "push", world.repo, "main", "--file", "a=b", "-m", "x", "--as", "bob")
    assert failed(refused) == (
        "Error: bob may not push to acme/widgets: pushing needs write access (theirs: triage)"
    )
    nothing = sim(world, "push", world.repo, "main", "-m", "Nothing")
    assert nothing.exit_code == 2 and "nothing to commit" in nothing.stderr
    bad = sim(world, "push", world.repo, "main", "--file", "no-equals-sign", "-m", "x")
    assert bad.exit_code == 2 and "expected PATH=CONTENT, got 'no-equals-sign'" in bad.stderr


# ------------------------------------------------------------ pull requests


def test_pr_create_and_show(world: SimWorld) -> None:
    world.control.push(world.repo, "topic", {"t.txt": "t\n"}, as_user=world.human.login)
    out = ok(
        sim(world, "pr", "create", world.repo, "--head", "topic", "--title", "Topic", "--body", "x")
    )
    assert out.strip() == f"acme/widgets#1 {world.url}/acme/widgets/pull/1"
    pull, head = open_pull(world)
    world.control.add_labels(world.repo, pull, ["orchestrator"], as_user=world.human.login)
    world.control.check_run(world.repo, sha=head, name="tests", conclusion="success")
    world.control.review(world.repo, pull, "APPROVED", as_user=world.human.login)
    lines = ok(sim(world, "pr", "show", world.repo, str(pull))).splitlines()
    assert lines == [
        f"acme/widgets#{pull}  Add the feature",
        f"  url:        {world.url}/acme/widgets/pull/{pull}",
        "  state:      open, not merged",
        "  author:     orchestrator-bot",
        "  branch:     feature -> main",
        f"  head:       {head}",
        "  labels:     orchestrator",
        "  mergeable:  yes (clean)",
        "  checks:     tests success",
        "  reviews:    alice APPROVED (this head)",
    ]
    view = json.loads(ok(sim(world, "pr", "show", world.repo, str(pull), "--format", "json")))
    assert view["head_sha"] == head and view["merged"] is False
    assert view["checks"] == [{"name": "tests", "status": "completed", "conclusion": "success"}]
    assert view["reviews"] == [
        {"user": "alice", "state": "APPROVED", "commit_id": head, "on_head": True}
    ]
    assert failed(sim(world, "pr", "create", world.repo, "--head", "nope", "--title", "x")) == (
        "Error: --head: acme/widgets has no branch 'nope'"
    )


# ------------------------------------------------------ protection and merge


def test_protect_then_merge_when_the_rules_are_met(world: SimWorld) -> None:
    pull, head = open_pull(world)
    out = ok(
        sim(
            world,
            "protect",
            world.repo,
            "main",
            "--required-check",
            "tests",
            "--required-approvals",
            "1",
            "--enforce-admins",
        )
    )
    assert out.strip() == (
        "acme/widgets:main protected: required checks tests; approvals 1; admins included"
    )
    refused = failed(sim(world, "merge", world.repo, str(pull)))
    assert refused.startswith(
        f"Error: cannot merge acme/widgets#{pull} as alice: GitHub answered 405"
    )
    assert "At least 1 approving review is required by reviewers with write access." in refused
    ok(sim(world, "check", "set", world.repo, str(pull), "--name", "tests"))
    ok(sim(world, "review", "approve", world.repo, str(pull)))
    out = ok(sim(world, "merge", world.repo, str(pull), "--method", "squash"))
    assert out.startswith(f"acme/widgets#{pull} merged by alice: ")
    pr = rest(world, f"/repos/acme/widgets/pulls/{pull}")
    assert pr["merged"] and pr["merged_by"]["login"] == "alice"
    assert failed(sim(world, "merge", world.repo, str(pull))) == (
        f"Error: acme/widgets#{pull} is merged already"
    )
    shown = ok(sim(world, "pr", "show", world.repo, str(pull)))
    assert f"  state:      merged by alice as {pr['merge_commit_sha'][:12]}" in shown
    assert "mergeable:" not in shown and head in shown
    assert ok(sim(world, "protect", world.repo, "main", "--remove")).strip() == (
        "acme/widgets:main is no longer protected"
    )
    assert failed(sim(world, "protect", world.repo, "nope")) == (
        "Error: acme/widgets has no branch 'nope' (branches: feature, main)"
    )


# -------------------------------------------------------------------- state


def test_state_summarises_issues_and_pull_requests(world: SimWorld) -> None:
    world.control.create_issue(world.repo, "Open one", as_user=world.human.login, labels=["x"])
    closed = world.control.create_issue(world.repo, "Done one", as_user=world.human.login)
    world.control.update_issue(world.repo, closed, as_user=world.human.login, state="closed")
    pull, head = open_pull(world)
    merged, _ = open_pull(world, branch="other")
    world.control.merge(world.repo, merged, as_user=world.human.login)
    world.control.check_run(world.repo, sha=head, name="ci", conclusion="failure")
    lines = ok(sim(world, "state", world.repo)).splitlines()
    assert lines[:7] == [
        "acme/widgets",
        "  open issues (1):",
        "    #1 Open one  [x]",
        "  open pull requests (1):",
        f"    #{pull} Add the feature",
        f"      feature -> main at {head[:12]}, mergeable state unstable",
        "      checks: ci failure; reviews: (none)",
    ]
    assert lines[7] == "  merged pull requests (1):"
    assert lines[8].startswith(f"    #{merged} Add the feature (merged 20")
    assert lines[9:] == ["  closed issues (1):", "    #2 Done one, completed"]
    world.control.create_user("carol", make_token())
    world.control.create_repo("carol/notes", {"n.md": "n\n"})
    everything = ok(sim(world, "state"))
    assert everything.startswith("acme/widgets\n") and "\n\ncarol/notes\n" in everything
    document = json.loads(ok(sim(world, "state", "carol/notes", "--format", "json")))
    assert document == {
        "repos": [
            {
                "repo": "carol/notes",
                "open_issues": [],
                "open_pulls": [],
                "merged_pulls": [],
                "closed_issues": [],
            }
        ]
    }


def test_state_limits_each_list(world: SimWorld) -> None:
    for title in ("one", "two", "three"):
        world.control.create_issue(world.repo, title, as_user=world.human.login)
    open_pull(world)
    document = json.loads(ok(sim(world, "state", world.repo, "--limit", "2", "--format", "json")))
    (state,) = document["repos"]
    assert [item["title"] for item in state["open_issues"]] == ["three", "two"]
    assert [view["number"] for view in state["open_pulls"]] == [4]


# ------------------------------------------------------- who acts, and errors


def test_the_default_actor_is_the_most_trusted_person(world: SimWorld) -> None:
    control = world.control
    control.create_user("zed", make_token())
    control.create_user("ci-app", make_token(), bot=True)
    control.create_user("nokey")
    control.create_repo(
        "acme/tools",
        {"a": "a\n"},
        permissions={"ci-app": "admin", "zed": "write", "nokey": "admin"},
    )
    ok(sim(world, "issue", "create", "acme/tools", "--title", "Who?"))
    assert rest(world, "/repos/acme/tools/issues/1", token=None)["user"]["login"] == "zed"
    error = failed(sim(world, "issue", "create", "acme/tools", "--title", "x", "--as", "nokey"))
    assert error == (
        "Error: --as nokey: the account has no token, so it cannot use the REST API "
        '(give it a "token" where it is created)'
    )
    assert failed(sim(world, "issue", "create", world.repo, "--title", "x", "--as", "nobody")) == (
        "Error: --as nobody: no such account in the emulator"
    )


def test_unknown_repository_and_bad_repository_name(world: SimWorld) -> None:
    assert failed(sim(world, "issue", "create", "acme/nope", "--title", "x")) == (
        f"Error: no repository acme/nope in the emulator at {world.url}"
    )
    bad = sim(world, "pr", "show", "widgets", "1")
    assert bad.exit_code == 2
    assert "Invalid value for REPO: expected OWNER/NAME, got 'widgets'" in bad.stderr
    assert failed(sim(world, "pr", "show", world.repo, "5")) == (
        "Error: no issue or pull request acme/widgets#5"
    )


@pytest.mark.parametrize(
    "args",
    [
        ("issue", "create", "acme/widgets", "--title", "x"),
        ("label", "add", "acme/widgets", "1", "a"),
        ("check", "set", "acme/widgets", "1", "--name", "ci"),
        ("push", "acme/widgets", "main", "--file", "a=b", "-m", "x"),
        ("protect", "acme/widgets", "main"),
        ("pr", "show", "acme/widgets", "1"),
        ("state",),
    ],
    ids=lambda args: " ".join(args[:2]),
)
def test_an_unreachable_emulator_is_one_line(args: tuple[str, ...]) -> None:
    url = f"http://127.0.0.1:{unused_port()}"
    error = failed(sim(url, *args))
    assert error.startswith(f"Error: cannot reach the emulator at {url} (")
    assert "start it with `orchestrator sim serve`" in error


def test_a_url_that_is_not_http_is_refused() -> None:
    assert failed(sim("ftp://x", "state")) == "Error: --url must be an http(s) URL, got 'ftp://x'"


def test_the_control_api_answers_accounts_and_repositories(world: SimWorld) -> None:
    control = ControlClient(world.url)
    account = control.request("GET", f"/users/{world.human.login}")
    assert account == {
        "login": "alice",
        "graphql_login": "alice",
        "type": "User",
        "token": world.human.token,
    }
    assert control.request("GET", "/repos") == {"repos": ["acme/widgets"]}


def test_every_command_has_help() -> None:
    runner = CliRunner()
    for args in (
        ["issue", "create"],
        ["label", "add"],
        ["label", "remove"],
        ["comment"],
        ["review", "approve"],
        ["review", "request-changes"],
        ["check", "set"],
        ["push"],
        ["pr", "create"],
        ["pr", "show"],
        ["protect"],
        ["merge"],
        ["state"],
    ):
        result = runner.invoke(cli, ["sim", *args, "--help"])
        assert result.exit_code == 0, result.output
        assert "--url URL" in result.stdout and "ORCHESTRATOR_SIM_URL" in result.stdout


def test_the_shell_commands_load_only_when_used() -> None:
    code = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from orchestrator.cli import cli\n"
        "for args in (['--help'], ['sim', 'serve', '--help']):\n"
        "    result = CliRunner().invoke(cli, args)\n"
        "    assert result.exit_code == 0, result.output\n"
        "loaded = [name for name in sys.modules if name.startswith('orchestrator_sim.shell')]\n"
        "assert not loaded, loaded\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


def test_python_dash_m_orchestrator_is_the_command_line() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "orchestrator", "sim", "state", "--help"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Usage: orchestrator sim state [OPTIONS] [REPO]")


@pytest.mark.parametrize(
    "args",
    [
        ("label", "add", "acme/widgets", "7", "a"),
        ("label", "remove", "acme/widgets", "7", "a"),
        ("comment", "acme/widgets", "7", "--body", "hi"),
        ("review", "approve", "acme/widgets", "7"),
        ("review", "request-changes", "acme/widgets", "7", "--body", "no"),
        ("check", "set", "acme/widgets", "7", "--name", "ci"),
        ("merge", "acme/widgets", "7"),
        ("pr", "show", "acme/widgets", "7"),
    ],
    ids=lambda args: " ".join(args[:2]),
)
def test_an_unknown_issue_is_named(world: SimWorld, args: tuple[str, ...]) -> None:
    assert failed(sim(world, *args)) == "Error: no issue or pull request acme/widgets#7"
