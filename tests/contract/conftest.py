"""The scene the REST contract cases run in (`tests.contract.rest_scene`)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from orchestrator_sim.clock import ManualClock
from orchestrator_sim.testing import Account, make_token, running_world
from tests.contract.openapi_contract import load_contract
from tests.contract.rest_scene import Scene


@pytest.fixture(scope="module")
def scene(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Scene]:
    load_contract()  # fail early, and with the `make contracts` hint, when the file is missing
    # A manual clock: pull requests stay "mergeability unknown" until a case settles them.
    with running_world(tmp_path_factory.mktemp("contract"), clock=ManualClock()) as world:
        control = world.control
        human = world.human.login
        reader = Account("reader", make_token())
        control.create_user(reader.login, reader.token)
        control.set_permission(world.repo, reader.login, "read")
        issue = control.create_issue(
            world.repo, "Widgets break on empty names", as_user=human, labels=["bug"]
        )
        comment_id = control.comment(world.repo, issue, "Seen on main too.", as_user=human)
        head = control.push(
            world.repo,
            "fix-empty-names",
            {"src/widgets.py": 'def greet(name: str) -> str:\n    return f"hello {name or 1}"\n'},
            as_user=human,
        )
        pull = control.create_pull(
            world.repo, "Handle empty names", "fix-empty-names", as_user=world.bot.login
        )
        review = control.review(
            world.repo,
            pull,
            "CHANGES_REQUESTED",
            as_user=human,
            body="One thing",
            comments=[{"path": "src/widgets.py", "line": 2, "body": "Use a default name"}],
        )
        run = control.check_run(
            world.repo,
            sha=head,
            name="tests",
            conclusion="failure",
            title="1 failed",
            summary="test_greet failed",
            annotations=[
                {
                    "path": "src/widgets.py",
                    "start_line": 2,
                    "end_line": 2,
                    "annotation_level": "failure",
                    "message": "AssertionError",
                }
            ],
            log="FAILED test_greet\n",
        )
        control.status(world.repo, "pending", as_user=human, sha=head, context="deploy")
        yield Scene(
            world=world,
            reader=reader,
            issue=issue,
            pull=pull,
            head=head,
            review_id=int(review["id"]),
            review_comment_id=int(review["threads"][0]["comment_id"]),
            comment_id=comment_id,
            check_run_id=int(run["id"]),
            job_id=int(run["job_id"]),
        )
