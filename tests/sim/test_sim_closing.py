"""Commits that reach the default branch close the issues their messages name, as on GitHub.

A merge, a squash or a rebase of a pull request, or a push to the default
branch: the commits that land there are read for closing keywords, and the
issues they name are closed (with the commit in the ``closed`` event) in every
repository the merger can write. A squash without ``commit_message`` lists the
branch's commit messages, as GitHub's default does.
"""

from __future__ import annotations

from typing import Any

import pytest

from orchestrator_sim.closing import ClosedReference, closing_references
from orchestrator_sim.testing import DEFAULT_FILES, SimWorld

GADGETS = "acme/gadgets"
SECRET = "other/secret"


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("Closes #3", [ClosedReference(None, 3)]),
        ("fixes: acme/gadgets#1", [ClosedReference(GADGETS, 1)]),
        ("**Closes** acme/gadgets#1", [ClosedReference(GADGETS, 1)]),
        ("_Resolved_ GH-4", [ClosedReference(None, 4)]),
        ("Fixes\u00a0acme/gadgets#1", [ClosedReference(GADGETS, 1)]),
        ("Closes&nbsp;#2", [ClosedReference(None, 2)]),
        ("Closes <b>#2</b>", [ClosedReference(None, 2)]),
        ("Fixes www.github.com/acme/gadgets/issues/1", [ClosedReference(GADGETS, 1)]),
        ("Fixes http://127.0.0.1:9/acme/gadgets/pull/5", [ClosedReference(GADGETS, 5)]),
        ("Fixes acme/my_repo#5", [ClosedReference("acme/my_repo", 5)]),
        ("Refs #3, prefixes #4, Fixes issue #5", []),
    ],
)
def test_closing_references_read_every_form(message: str, expected: list[ClosedReference]) -> None:
    assert closing_references(message) == expected


def as_bot(world: SimWorld, method: str, path: str, body: Any = None) -> Any:
    _, data = world.github().requester.requestJsonAndCheck(method, path, input=body)
    return data


def two_repositories(world: SimWorld) -> tuple[int, int]:
    """acme/gadgets (the bot may write) and other/secret (it may not), one issue each."""
    control = world.control
    control.create_user("other", "token-other")
    for repo, permission in ((GADGETS, "write"), (SECRET, "read")):
        control.create_repo(
            repo,
            dict(DEFAULT_FILES),
            permissions={world.human.login: "admin", world.bot.login: permission},
        )
    gadget = control.create_issue(GADGETS, "Gadget bug", as_user=world.human.login)
    secret = control.create_issue(SECRET, "Secret bug", as_user=world.human.login)
    return gadget, secret


def open_pull(world: SimWorld, message: str) -> tuple[int, int]:
    """An issue of acme/widgets and a pull request whose one commit says ``message``."""
    control = world.control
    issue = control.create_issue(world.repo, "Local bug", as_user=world.human.login)
    control.push(
        world.repo, "feature", {"src/x.py": "x = 1\n"}, as_user=world.bot.login, message=message
    )
    pull = control.create_pull(world.repo, "Add x", "feature", as_user=world.bot.login)
    world.settle_mergeability()
    return issue, pull


def state(world: SimWorld, repo: str, number: int) -> tuple[str, list[tuple[str, Any]]]:
    issue = as_bot(world, "GET", f"/repos/{repo}/issues/{number}")
    events = as_bot(world, "GET", f"/repos/{repo}/issues/{number}/events")
    return issue["state"], [(e["event"], e["commit_id"]) for e in events]


@pytest.mark.parametrize("method", ["merge", "rebase", "squash"])
def test_a_merged_commit_closes_what_it_names_where_the_merger_can_write(
    sim_world: SimWorld, method: str
) -> None:
    gadget, secret = two_repositories(sim_world)
    issue, pull = open_pull(
        sim_world,
        f"Add x\n\nCloses acme/gadgets#{gadget}\nFixes other/secret#{secret}\nResolves #1",
    )
    merged = as_bot(
        sim_world,
        "PUT",
        f"/repos/{sim_world.repo}/pulls/{pull}/merge",
        {"merge_method": method},
    )
    main = as_bot(sim_world, "GET", f"/repos/{sim_world.repo}/commits/main")
    landed = {main["sha"], merged["sha"]}
    closed_gadget = state(sim_world, GADGETS, gadget)
    assert closed_gadget[0] == "closed"
    assert closed_gadget[1][-1][0] == "closed" and closed_gadget[1][-1][1] is not None
    if method != "merge":
        assert closed_gadget[1][-1][1] in landed
    # The bot may only read other/secret: GitHub leaves its issue alone.
    assert state(sim_world, SECRET, secret) == ("open", [])
    assert state(sim_world, sim_world.repo, issue)[0] == "closed"


def test_a_squash_lists_the_commit_messages_unless_told_what_to_say(
    sim_world: SimWorld,
) -> None:
    gadget, _ = two_repositories(sim_world)
    _, pull = open_pull(sim_world, f"Add x\n\nCloses acme/gadgets#{gadget}")
    as_bot(
        sim_world,
        "PUT",
        f"/repos/{sim_world.repo}/pulls/{pull}/merge",
        {
            "merge_method": "squash",
            "commit_title": "Add x (#2)",
            "commit_message": f"Refs acme/gadgets#{gadget}",
        },
    )
    head = as_bot(sim_world, "GET", f"/repos/{sim_world.repo}/commits/main")
    assert head["commit"]["message"] == f"Add x (#2)\n\nRefs acme/gadgets#{gadget}"
    assert state(sim_world, GADGETS, gadget) == ("open", [])

    sim_world.control.push(
        sim_world.repo, "second", {"src/y.py": "y = 1\n"}, as_user="alice", message="Add y"
    )
    second = sim_world.control.create_pull(sim_world.repo, "Add y", "second", as_user="alice")
    sim_world.settle_mergeability()
    as_bot(
        sim_world,
        "PUT",
        f"/repos/{sim_world.repo}/pulls/{second}/merge",
        {"merge_method": "squash"},
    )
    head = as_bot(sim_world, "GET", f"/repos/{sim_world.repo}/commits/main")
    assert head["commit"]["message"] == f"Add y (#{second})\n\n* Add y"


def test_a_push_to_the_default_branch_closes_but_one_to_another_branch_does_not(
    sim_world: SimWorld,
) -> None:
    gadget, _ = two_repositories(sim_world)
    message = f"Tidy\n\nFixes acme/gadgets#{gadget}"
    sim_world.control.push(
        sim_world.repo, "topic", {"t.txt": "t\n"}, as_user=sim_world.bot.login, message=message
    )
    assert state(sim_world, GADGETS, gadget)[0] == "open"
    sha = sim_world.control.push(
        sim_world.repo, "main", {"t.txt": "t\n"}, as_user=sim_world.bot.login, message=message
    )
    assert state(sim_world, GADGETS, gadget) == ("closed", [("closed", sha)])
