"""The review-feedback and CI-failure loop, end to end: triage, bounces, checks, upkeep."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from orchestrator_sim.testing import SimWorld

from .harness import Flow, agent_home, default_scenario, flow_for, merge_sections

NO_REVIEW: dict[str, Any] = {"review": {"enabled": False}}
# The reviewers below are bots: their threads are work only with review.act_on: anyone.
BOT_REVIEWS: dict[str, Any] = {"review": {"enabled": False, "act_on": "anyone"}}
THREADS_QUERY = """
query($owner: String!, $name: String!, $number: Int!) {
  repository(owner: $owner, name: $name) {
    pullRequest(number: $number) {
      reviewThreads(first: 50) {
        nodes { id isResolved comments(first: 20) { nodes { body author { login } } } }
      }
    }
  }
}
"""
TEMPLATE = "## Summary\n\n{summary}\n\n## Testing\n\npytest passes.\n"


def bot(world: SimWorld, login: str) -> str:
    world.control.create_user(login, f"token-{login}", bot=True)
    world.control.set_permission(world.repo, login, "read")
    return login


def comment_on(flow: Flow, pr: int, login: str, *bodies: str) -> list[str]:
    """Open one thread per body on src/feature.py as ``login``; their GraphQL ids."""
    review = flow.world.control.review(
        flow.world.repo,
        pr,
        "COMMENTED",
        as_user=login,
        comments=[{"path": "src/feature.py", "line": 1, "body": body} for body in bodies],
    )
    return [str(t["node_id"]) for t in review["threads"]]


def threads(flow: Flow, pr: int) -> dict[str, dict[str, Any]]:
    owner, name = flow.world.repo.split("/")
    gh = flow.world.github(flow.human)
    _headers, data = gh.requester.graphql_query(
        THREADS_QUERY, {"owner": owner, "name": name, "number": pr}
    )
    nodes = data["data"]["repository"]["pullRequest"]["reviewThreads"]["nodes"]
    return {
        n["id"]: {
            "resolved": n["isResolved"],
            "replies": [c["body"] for c in n["comments"]["nodes"][1:]],
        }
        for n in nodes
    }


def set_rework(flow: Flow, rework: dict[str, Any]) -> None:
    """Replace what the scripted agent does in rework (read again at every turn)."""
    scenario = merge_sections(default_scenario(), {"phases": {"rework": rework}})
    scenario["phases"]["rework"] = rework
    flow.scenario_path.write_text(json.dumps(scenario), encoding="utf-8")


def save_prompt(flow: Flow) -> dict[str, str]:
    """A step keeping the turn's prompt under a name of its own, in the order of turns.

    The folder is in the agents' home: a sandboxed agent writes nowhere else.
    """
    folder = agent_home(flow.tmp) / "prompts"
    folder.mkdir(exist_ok=True)
    count = len(list(folder.glob("*.md"))) + len(list(folder.glob("*.name")))
    (folder / f"{count:03d}.name").write_text("", encoding="utf-8")
    return {"save_prompt": str(folder / f"{count:03d}.md")}


def fix_steps(flow: Flow, entries: list[dict[str, Any]], *, commit: bool = True) -> list[Any]:
    steps: list[Any] = [save_prompt(flow)]
    if commit:
        steps += [
            {"write": {"path": "src/feature.py", "content": "# fix\n", "append": True}},
            {"commit": "Address the review"},
        ]
    steps += [
        {"fix_summary": entries},
        {"pr_description": TEMPLATE.format(summary="Adds the feature; reviewed.")},
    ]
    return steps


def prompts(flow: Flow) -> list[str]:
    folder = agent_home(flow.tmp) / "prompts"
    files = (
        sorted(folder.glob("*.md"), key=lambda p: p.stat().st_mtime_ns) if folder.exists() else []
    )
    return [p.read_text(encoding="utf-8") for p in files]


def rework_runs(flow: Flow) -> int:
    return sum(1 for r in flow.d.db.runs.for_issue(1) if str(r.phase) in ("rework", "Phase.REWORK"))


def waiting_for_human_with_pr(flow: Flow, number: int) -> int:
    flow.run_to_phase(number, "waiting_for_checks")
    pr = flow.pr_number(number)
    flow.check(pr, "success")
    flow.run_to_phase(number, "waiting_for_human")
    return pr


def test_bot_suggestions_are_triaged_fixed_dismissed_and_uncertain(
    tmp_path: Path, world: SimWorld
) -> None:
    with flow_for(tmp_path, world, policy=BOT_REVIEWS) as flow:
        number = flow.open_issue()
        pr = waiting_for_human_with_pr(flow, number)
        body_before = flow.pull(pr)["body"]
        reviewer = bot(world, "lint-bot")
        right, wrong, unsure = comment_on(
            flow,
            pr,
            reviewer,
            "FEATURE should be a constant tuple.",
            "Rename FEATURE to feature: constants are lowercase here.",
            "Maybe FEATURE should start at 0?",
        )
        set_rework(
            flow,
            {
                "steps": fix_steps(
                    flow,
                    [
                        {
                            "thread": right,
                            "status": "fixed",
                            "message": "Made it a tuple.",
                            "commit": "HEAD",
                        },
                        {
                            "thread": wrong,
                            "status": "dismissed",
                            "message": "Module constants are upper case.",
                            "evidence": "PEP 8, section Constants; tests/test_names.py checks it.",
                        },
                        {
                            "thread": unsure,
                            "status": "uncertain",
                            "message": "Either start works.",
                            "evidence": "The issue does not say where counting starts.",
                        },
                    ],
                )
            },
        )
        # The rework turn may run in the very tick that sees the threads (the issue
        # moved), so the head to compare with is the one before it.
        first_head = flow.head(pr)
        flow.run(lambda: flow.head(pr) != first_head, what="the fix is pushed")
        flow.check(pr, "success")
        flow.run(
            lambda: (
                flow.phase(number) == "waiting_for_human"
                and threads(flow, pr)[right]["replies"] != []
            ),
            what="threads answered, back with a human",
        )
        new_head = flow.head(pr)
        state = threads(flow, pr)
        assert state[right]["resolved"] is True
        assert state[right]["replies"][0].startswith(
            f"Addressed in {new_head[:12]}: Made it a tuple."
        )
        assert state[wrong]["resolved"] is True
        assert state[wrong]["replies"][0].startswith("Dismissed: Module constants are upper case.")
        assert "PEP 8" in state[wrong]["replies"][0]
        assert state[unsure]["resolved"] is False
        assert state[unsure]["replies"][0].startswith("Needs a human decision: Either start works.")
        record = flow.record(number)
        assert record is not None and record.waiting_reason is not None
        assert record.waiting_reason.value == "human_approval_required"

        # The description is the runtime's write, with the template's headings kept.
        body = flow.pull(pr)["body"]
        assert body != body_before
        assert "## Summary" in body and "## Testing" in body and f"Closes #{number}" in body
        # The threads' author is a bot: GitHub takes review requests from people only.
        requested = flow.rest("GET", f"/repos/{world.repo}/pulls/{pr}/requested_reviewers")
        assert reviewer and requested["users"] == []

        # The rework context carried every thread with its author, bot flag and line.
        prompt = prompts(flow)[-1]
        for thread_id in (right, wrong, unsure):
            assert thread_id in prompt
        assert '"author_is_bot": true' in prompt and '"line": 1' in prompt


def test_failing_check_enters_rework_with_annotations_and_log_but_not_while_running(
    tmp_path: Path, world: SimWorld
) -> None:
    with flow_for(tmp_path, world, policy=NO_REVIEW) as flow:
        number = flow.open_issue()
        flow.run_to_phase(number, "waiting_for_checks")
        pr = flow.pr_number(number)
        set_rework(
            flow,
            {
                "steps": fix_steps(
                    flow,
                    [{"check": "ci", "status": "fixed", "message": "Fixed.", "commit": "HEAD"}],
                )
            },
        )
        running = world.control.check_run(
            world.repo, sha=flow.head(pr), name="ci", status="in_progress"
        )
        runs = len(flow.d.db.runs.for_issue(1))
        flow.idle_ticks(3)
        assert flow.phase(number) == "waiting_for_checks"
        assert len(flow.d.db.runs.for_issue(1)) == runs, "no fix while a check runs"

        world.control.check_run(
            world.repo,
            sha=flow.head(pr),
            name="ci",
            conclusion="failure",
            summary="1 test failed",
            annotations=[
                {
                    "path": "src/feature.py",
                    "start_line": 1,
                    "end_line": 1,
                    "annotation_level": "failure",
                    "message": "assert FEATURE == 2",
                }
            ],
            log="collecting tests\nFAILED test_feature.py::test_it - assert 1 == 2\n",
            run_id=running["id"],
        )
        flow.run_to_phase(number, "rework")
        flow.run(lambda: bool(prompts(flow)), what="the rework turn")
        prompt = prompts(flow)[-1]
        assert "assert FEATURE == 2" in prompt
        assert "FAILED test_feature.py::test_it - assert 1 == 2" in prompt
        context_files = list((tmp_path / "workspaces").rglob(".orchestrator/context.json"))
        assert context_files
        context = json.loads(context_files[0].read_text(encoding="utf-8"))
        (failing,) = context["failing_checks"]
        assert failing["name"] == "ci"
        assert failing["annotations"][0]["message"] == "assert FEATURE == 2"
        assert "FAILED test_feature.py::test_it" in failing["log_tail"]


def test_flaky_failure_passing_on_rerun_is_not_a_rework_cycle(
    tmp_path: Path, world: SimWorld
) -> None:
    with flow_for(tmp_path, world, policy=NO_REVIEW) as flow:
        number = flow.open_issue()
        flow.run_to_phase(number, "waiting_for_checks")
        pr = flow.pr_number(number)
        flow.check(pr, "failure")
        flow.run_to_phase(number, "rework")
        record = flow.record(number)
        assert record is not None and record.rework_cycles == 1
        flow.check(pr, "success")  # the rerun passes before any fix ran
        flow.run_to_phase(number, "waiting_for_human")
        record = flow.record(number)
        assert record is not None and record.rework_cycles == 0
        assert rework_runs(flow) == 0


def test_human_reply_between_turns_reaches_the_next_turn(tmp_path: Path, world: SimWorld) -> None:
    with flow_for(tmp_path, world, policy=BOT_REVIEWS) as flow:
        number = flow.open_issue()
        pr = waiting_for_human_with_pr(flow, number)
        reviewer = bot(world, "order-bot")
        opened = world.control.review(
            world.repo,
            pr,
            "COMMENTED",
            as_user=reviewer,
            comments=[{"path": "src/feature.py", "line": 1, "body": "Sort the output?"}],
        )["threads"]
        thread, numeric = str(opened[0]["node_id"]), [int(opened[0]["id"])]
        set_rework(
            flow,
            {
                "steps": fix_steps(
                    flow,
                    [
                        {
                            "thread": thread,
                            "status": "uncertain",
                            "message": "Sorting changes the API.",
                            "evidence": "No spec says.",
                        }
                    ],
                    commit=False,
                )
            },
        )
        flow.run(lambda: bool(threads(flow, pr)[thread]["replies"]), what="the question")
        flow.run_to_phase(number, "waiting_for_human")
        world.control.reply_thread(
            world.repo, numeric[0], "Keep the order: clients rely on it.", as_user=flow.human.login
        )
        set_rework(
            flow,
            {
                "steps": fix_steps(
                    flow,
                    [{"thread": thread, "status": "skipped", "message": "Order kept, as asked."}],
                    commit=False,
                )
            },
        )
        flow.run(lambda: len(prompts(flow)) == 2, what="the next rework turn")
        prompt = prompts(flow)[-1]
        assert "Keep the order: clients rely on it." in prompt
        flow.run(lambda: threads(flow, pr)[thread]["resolved"], what="settled")


def test_commit_without_report_gets_one_continuation(tmp_path: Path, world: SimWorld) -> None:
    with flow_for(tmp_path, world, policy=BOT_REVIEWS) as flow:
        number = flow.open_issue()
        pr = waiting_for_human_with_pr(flow, number)
        (thread,) = comment_on(flow, pr, bot(world, "nit-bot"), "Add a trailing comment.")
        set_rework(
            flow,
            {
                "steps": [
                    save_prompt(flow),
                    {"write": {"path": "src/feature.py", "content": "# nit\n", "append": True}},
                    {"commit": "Add the comment"},
                ],
                "attempts": {
                    "2": {
                        "steps": [
                            save_prompt(flow),
                            {
                                "fix_summary": [
                                    {
                                        "thread": thread,
                                        "status": "fixed",
                                        "message": "Added.",
                                        "commit": "HEAD",
                                    }
                                ]
                            },
                        ]
                    }
                },
            },
        )
        head = flow.head(pr)
        flow.run(lambda: threads(flow, pr)[thread]["resolved"], what="the continuation reports")
        assert len(prompts(flow)) == 2
        assert "left no fix-summary.json" in prompts(flow)[1]
        assert flow.head(pr) != head, "the first turn's commit was pushed"
        assert threads(flow, pr)[thread]["replies"][0].startswith(
            f"Addressed in {flow.head(pr)[:12]}"
        )
        record = flow.record(number)
        assert record is not None and record.rework_cycles == 1


def test_report_without_commit_continues_once_then_blocks(tmp_path: Path, world: SimWorld) -> None:
    with flow_for(tmp_path, world, policy=BOT_REVIEWS) as flow:
        number = flow.open_issue()
        pr = waiting_for_human_with_pr(flow, number)
        (thread,) = comment_on(flow, pr, bot(world, "nit-bot"), "Add a trailing comment.")
        claim = [{"thread": thread, "status": "fixed", "message": "Added.", "commit": "HEAD"}]
        first = fix_steps(flow, claim, commit=False)
        set_rework(
            flow,
            {"steps": first, "attempts": {"2": {"steps": fix_steps(flow, claim, commit=False)}}},
        )
        flow.run_to_phase(number, "blocked")
        assert len(prompts(flow)) == 2
        assert "marked fixed, but the turn made no commit" in prompts(flow)[1]
        record = flow.record(number)
        assert record is not None and record.waiting_reason is not None
        assert record.waiting_reason.value == "missing_context"
        assert record.rework_cycles == 1 and record.resume_phase is not None
        assert record.resume_phase.value == "rework"
        notes = [
            c
            for c in flow.comments(number)
            if "marked fixed, but the turn made no commit" in c["body"]
            and not c["body"].startswith("<!-- orchestrator-workpad -->")
        ]
        assert len(notes) == 1
        # The workpad names the cause too.
        (workpad,) = flow.workpads(number)
        assert "**Why:** the agent's results do not match its work twice" in workpad["body"]
        assert threads(flow, pr)[thread]["resolved"] is False


def test_rework_limit_blocks_with_a_summary_comment(tmp_path: Path, world: SimWorld) -> None:
    policy = {**NO_REVIEW, "orchestration": {"max_rework_cycles": 1}}
    with flow_for(tmp_path, world, policy=policy) as flow:
        number = flow.open_issue()
        flow.run_to_phase(number, "waiting_for_checks")
        pr = flow.pr_number(number)
        flow.check(pr, "failure")
        flow.run_to_phase(number, "rework")
        first = flow.head(pr)
        flow.run(lambda: flow.head(pr) != first, what="the rework is pushed")
        flow.run_to_phase(number, "waiting_for_checks")
        flow.check(pr, "failure")
        flow.run_to_phase(number, "blocked")
        flow.idle_ticks(1)
        record = flow.record(number)
        assert record is not None and record.waiting_reason is not None
        assert record.waiting_reason.value == "rework_limit_exceeded"
        assert record.rework_cycles == 1
        (summary,) = flow.bot_comments(number, "<!-- orchestrator-rework-limit -->")
        assert "Rework limit reached" in summary["body"]
        assert "Failing checks: ci" in summary["body"]


def test_two_reviewer_ping_pong_stops_at_the_bounce_threshold(
    tmp_path: Path, world: SimWorld
) -> None:
    """Two bots ask for opposite changes; the thread is escalated, not fixed forever."""
    policy = {
        "review": {"enabled": False, "bounce_threshold": 2, "act_on": "anyone"},
        "orchestration": {"max_rework_cycles": 10},
    }
    with flow_for(tmp_path, world, policy=policy) as flow:
        number = flow.open_issue()
        pr = waiting_for_human_with_pr(flow, number)
        optional_bot, required_bot = bot(world, "style-bot"), bot(world, "schema-bot")
        optional, required = "Make the name field optional.", "Make the name field required."
        rounds = [
            (optional_bot, optional),
            (required_bot, required),
            (optional_bot, optional),
            (required_bot, required),
        ]
        for who, body in rounds:
            (thread,) = comment_on(flow, pr, who, body)
            set_rework(
                flow,
                {
                    "steps": fix_steps(
                        flow,
                        [{"thread": thread, "status": "fixed", "message": body, "commit": "HEAD"}],
                    )
                },
            )
            before = flow.head(pr)
            flow.run(lambda: flow.head(pr) != before, what="the fix is pushed")  # noqa: B023
            flow.check(pr, "success")
            flow.run(
                lambda: (
                    flow.phase(number) == "waiting_for_human"
                    and threads(flow, pr)[thread]["resolved"]  # noqa: B023
                ),
                what="the thread is answered and resolved",
            )
        cycles_before = rework_runs(flow)

        # "Optional" comes back a second time after being fixed: a human decides now.
        (third,) = comment_on(flow, pr, optional_bot, optional)
        flow.run(
            lambda: threads(flow, pr)[third]["replies"] != [],
            what="the bouncing thread is answered",
        )
        flow.idle_ticks(3)
        state = threads(flow, pr)[third]
        assert state["replies"][0].startswith("Needs a human decision")
        assert state["resolved"] is False
        assert flow.phase(number) == "waiting_for_human"
        assert rework_runs(flow) == cycles_before
        record = flow.record(number)
        assert record is not None and record.rework_cycles == 4
