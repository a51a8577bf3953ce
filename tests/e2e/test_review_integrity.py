"""Review-loop integrity: the agent's claims are checked, held threads stay with the human.

Each test drives the daemon against the emulator with the scripted agent and
looks at the pull request as GitHub shows it.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from orchestrator.domain.pr_body import EMPTY_SECTION_NOTE
from orchestrator_sim.testing import SimWorld

from .harness import Flow, default_scenario, flow_for, merge_sections
from .test_review_loop import (
    NO_REVIEW,
    bot,
    comment_on,
    fix_steps,
    prompts,
    rework_runs,
    save_prompt,
    set_rework,
    threads,
    waiting_for_human_with_pr,
)

SELF_REVIEW: dict[str, Any] = {"review": {"enabled": True}}


def hold_for_a_human(flow: Flow, number: int, pr: int, body: str) -> tuple[str, int]:
    """A writer's thread the agent leaves uncertain: answered, open, waiting for the human.

    Returns its GraphQL id and its numeric id (for replies).
    """
    world = flow.world
    (opened,) = world.control.review(
        world.repo,
        pr,
        "COMMENTED",
        as_user=flow.human.login,
        comments=[{"path": "src/feature.py", "line": 1, "body": body}],
    )["threads"]
    held = str(opened["node_id"])
    set_rework(
        flow,
        {
            "steps": fix_steps(
                flow,
                [
                    {
                        "thread": held,
                        "status": "uncertain",
                        "message": "Either start works.",
                        "evidence": "The issue does not say where counting starts.",
                    }
                ],
                commit=False,
            )
        },
    )
    flow.run(lambda: threads(flow, pr)[held]["replies"] != [], what="the thread is held")
    flow.run_to_phase(number, "waiting_for_human")
    return held, int(opened["id"])


def green_again(flow: Flow, number: int, pr: int, before: str) -> None:
    """Wait for the rework's push, make its checks pass and let the issue settle with a human."""
    flow.run(lambda: flow.head(pr) != before, what="the rework is pushed")
    flow.run_to_phase(number, "waiting_for_checks")
    flow.check(pr, "success")
    flow.run_to_phase(number, "waiting_for_human")


def test_a_rework_for_another_thread_cannot_dismiss_a_thread_held_for_a_human(
    tmp_path: Path, world: SimWorld
) -> None:
    with flow_for(tmp_path, world, policy=SELF_REVIEW) as flow:
        number = flow.open_issue()
        pr = waiting_for_human_with_pr(flow, number)
        held, _ = hold_for_a_human(flow, number, pr, "Should FEATURE start at 0?")
        (other,) = comment_on(flow, pr, flow.human.login, "Add a trailing comment.")
        set_rework(
            flow,
            {
                "steps": fix_steps(
                    flow,
                    [
                        {"thread": other, "status": "fixed", "message": "Added.", "commit": "HEAD"},
                        {
                            "thread": held,
                            "status": "dismissed",
                            "message": "Counting starts at 1.",
                            "evidence": "I decided.",
                        },
                    ],
                )
            },
        )
        before = flow.head(pr)
        green_again(flow, number, pr, before)
        flow.run(lambda: threads(flow, pr)[other]["resolved"], what="the other thread answered")

        state = threads(flow, pr)
        assert state[other]["replies"][0].startswith("Addressed in")
        # The held thread keeps the one reply it had, and stays open for its human.
        assert state[held]["resolved"] is False
        assert len(state[held]["replies"]) == 1
        assert state[held]["replies"][0].startswith("Needs a human decision")
        assert flow.phase(number) == "waiting_for_human"
        record = flow.record(number)
        assert record is not None
        assert {e.thread_id for e in record.thread_history if e.iteration == 2} == {other}

        # The human settles it by approving the head: the issue merges with it as it is.
        world.control.review(world.repo, pr, "APPROVED", as_user=flow.human.login)
        flow.approve(number)
        flow.run_to_phase(number, "done")
        assert flow.pull(pr)["merged"]
        assert threads(flow, pr)[held]["resolved"] is False


def test_a_held_thread_is_settled_by_its_humans_reply(tmp_path: Path, world: SimWorld) -> None:
    with flow_for(tmp_path, world, policy=NO_REVIEW) as flow:
        number = flow.open_issue()
        pr = waiting_for_human_with_pr(flow, number)
        held, numeric = hold_for_a_human(flow, number, pr, "Should FEATURE start at 0?")
        runs = rework_runs(flow)
        flow.idle_ticks(3)
        assert rework_runs(flow) == runs, "a held thread starts no turn on its own"

        world.control.reply_thread(
            world.repo, numeric, "Start at 0, please.", as_user=flow.human.login
        )
        set_rework(
            flow,
            {
                "steps": fix_steps(
                    flow,
                    [
                        {
                            "thread": held,
                            "status": "fixed",
                            "message": "Starts at 0.",
                            "commit": "HEAD",
                        }
                    ],
                )
            },
        )
        flow.run(lambda: threads(flow, pr)[held]["resolved"], what="the held thread is fixed")
        assert threads(flow, pr)[held]["replies"][-1].startswith("Addressed in")
        assert "Start at 0, please." in prompts(flow)[-1]


def unproven_claim(flow: Flow, thread: str, commit: str | None) -> list[Any]:
    """A rework that commits a change to another file and claims ``thread`` fixed."""
    entry: dict[str, Any] = {"thread": thread, "status": "fixed", "message": "Done."}
    if commit is not None:
        entry["commit"] = commit
    return [
        save_prompt(flow),
        {"write": {"path": "src/other.py", "content": "# unrelated\n", "append": True}},
        {"commit": "Touch another file"},
        {"fix_summary": [entry]},
    ]


def test_fixed_citing_a_commit_that_does_not_exist_is_never_resolved(
    tmp_path: Path, world: SimWorld
) -> None:
    with flow_for(tmp_path, world, policy=SELF_REVIEW) as flow:
        number = flow.open_issue()
        pr = waiting_for_human_with_pr(flow, number)
        (thread,) = comment_on(flow, pr, flow.human.login, "Add a trailing comment.")
        set_rework(
            flow,
            {
                "steps": unproven_claim(flow, thread, "deadbeefcafe"),
                "attempts": {"2": {"steps": unproven_claim(flow, thread, "deadbeefcafe")}},
            },
        )
        flow.run(lambda: threads(flow, pr)[thread]["replies"] != [], what="the thread answered")

        assert len(prompts(flow)) == 2, "one continuation, told what was wrong"
        assert "deadbeefcafe is not a commit of this turn" in prompts(flow)[1]
        state = threads(flow, pr)[thread]
        assert state["resolved"] is False
        (reply,) = state["replies"]
        assert reply.startswith(
            "Needs a human check: reported fixed, but deadbeefcafe is not a commit of this "
            "turn.\n\nDone."
        )
        flow.check(pr, "success")
        flow.run_to_phase(number, "waiting_for_human")
        flow.idle_ticks(2)
        assert threads(flow, pr)[thread]["resolved"] is False


def test_fixed_citing_the_base_commit_or_an_unrelated_change_is_never_resolved(
    tmp_path: Path, world: SimWorld
) -> None:
    with flow_for(tmp_path, world, policy=NO_REVIEW) as flow:
        number = flow.open_issue()
        pr = waiting_for_human_with_pr(flow, number)
        base = flow.pull(pr)["base"]["sha"]
        (cited, silent) = comment_on(
            flow, pr, flow.human.login, "Add a trailing comment.", "Add a docstring."
        )
        claims = {
            "fix_summary": [
                {"thread": cited, "status": "fixed", "message": "Done.", "commit": base},
                {"thread": silent, "status": "fixed", "message": "Done too."},
            ]
        }
        set_rework(
            flow,
            {
                "steps": [*unproven_claim(flow, cited, base)[:-1], claims],
                "attempts": {"2": {"steps": [*unproven_claim(flow, cited, base)[:-1], claims]}},
            },
        )
        flow.run(lambda: threads(flow, pr)[cited]["replies"] != [], what="the threads answered")

        assert len(prompts(flow)) == 2
        assert f"{base[:12]} is not a commit of this turn" in prompts(flow)[1]
        assert "no commit of this turn changes src/feature.py" in prompts(flow)[1]
        state = threads(flow, pr)
        assert state[cited]["resolved"] is False and state[silent]["resolved"] is False
        assert state[cited]["replies"][0].startswith("Needs a human check: reported fixed, but")
        assert "no commit of this turn changes src/feature.py" in state[silent]["replies"][0]
        flow.check(pr, "success")
        flow.run_to_phase(number, "waiting_for_human")


def test_a_rejected_fix_summary_names_its_cause_in_the_workpad_and_the_blocked_comment(
    tmp_path: Path, world: SimWorld
) -> None:
    policy = {
        **NO_REVIEW,
        "agent": {"max_retry_backoff_ms": 1000},
        "orchestration": {"max_failed_attempts": 2},
    }
    with flow_for(tmp_path, world, policy=policy) as flow:
        number = flow.open_issue()
        pr = waiting_for_human_with_pr(flow, number)
        (thread,) = comment_on(flow, pr, flow.human.login, "Rename FEATURE.")
        blank = [
            {"thread": thread, "status": "dismissed", "message": "No.", "evidence": "  \n "},
        ]
        steps = fix_steps(flow, blank, commit=False)
        set_rework(flow, {"steps": steps, "attempts": {"2": {"steps": steps}}})
        flow.run_to_phase(number, "blocked")
        flow.idle_ticks(2)

        cause = "fix-summary.json: entries[0].evidence: status dismissed needs evidence"
        (comment,) = flow.bot_comments(number, "<!-- orchestrator-blocked-question -->")
        assert "**The agent needs a human (missing_context).**" in comment["body"]
        assert cause in comment["body"]
        (workpad,) = flow.workpads(number)
        assert f'detail: "2 failed turns: {cause}"' in workpad["body"]
        assert f"**Why:** 2 failed turns: {cause}" in workpad["body"]
        assert threads(flow, pr)[thread] == {"resolved": False, "replies": []}


PR_TEMPLATE = "## Summary\n\n<!-- what and why -->\n\n## Testing\n\n## Risk\n"


def test_the_description_keeps_the_template_closes_only_its_issue_and_keeps_a_persons_edit(
    tmp_path: Path, world: SimWorld
) -> None:
    world.control.push(
        world.repo,
        "main",
        {".github/pull_request_template.md": PR_TEMPLATE},
        as_user=world.human.login,
        message="Add a pull request template",
    )
    scenario = merge_sections(
        default_scenario(),
        {
            "phases": {
                "implementing": {
                    "steps": [
                        *default_scenario()["steps"][:-1],
                        {"pr_description": "## Summary\n\nAdds it. Closes #999, Fixes #12."},
                    ]
                },
                "rework": {
                    "steps": [
                        *default_scenario()["phases"]["rework"]["steps"],
                        {"pr_description": "## Summary\n\nAdds it, and fixes the check."},
                    ]
                },
            }
        },
    )
    with flow_for(tmp_path, world, policy=NO_REVIEW, scenario=scenario) as flow:
        number = flow.open_issue()
        flow.run_to_phase(number, "waiting_for_checks")
        pr = flow.pr_number(number)
        body = flow.pull(pr)["body"]
        assert "Refs #999, Refs #12." in body
        assert "Closes #999" not in body and "Fixes #12" not in body
        assert body.rstrip().endswith(f"Closes #{number}")
        assert f"## Testing\n\n{EMPTY_SECTION_NOTE}" in body
        assert f"## Risk\n\n{EMPTY_SECTION_NOTE}" in body
        (workpad,) = flow.workpads(number)
        assert "dropped the closing keyword of 'Closes #999'" in workpad["body"]
        assert "restored the template heading '## Risk', left empty" in workpad["body"]

        # A reviewer adds notes to the description between two turns.
        edited = body + "\n\n## Reviewer notes\n\nCheck the cache first."
        flow.rest("PATCH", f"/repos/{world.repo}/pulls/{pr}", {"body": edited})
        before = flow.head(pr)
        flow.check(pr, "failure")
        flow.run(lambda: flow.head(pr) != before, what="the rework is pushed")
        flow.run(
            lambda: "fixes the check" in flow.pull(pr)["body"], what="the description rewritten"
        )
        body = flow.pull(pr)["body"]
        assert "## Reviewer notes\n\nCheck the cache first." in body
        assert f"Closes #{number}" in body and "## Testing" in body
        flow.run(
            lambda: (
                "kept the section 'reviewer notes' a person added"
                in flow.workpads(number)[0]["body"]
            ),
            what="the workpad says the edit was kept",
        )


def pass_on_rerun(flow: Flow, pr: int) -> None:
    """Once the rework turn runs, the failing check passes on a rerun (as a CI would)."""
    deadline = time.monotonic() + 60
    while rework_runs(flow) == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)
    flow.check(pr, "success")


def test_a_rework_whose_failing_check_passed_meanwhile_is_discarded_and_not_counted(
    tmp_path: Path, world: SimWorld
) -> None:
    with flow_for(tmp_path, world, policy=NO_REVIEW) as flow:
        number = flow.open_issue()
        flow.run_to_phase(number, "waiting_for_checks")
        pr = flow.pr_number(number)
        head = flow.head(pr)
        check_fixed = [{"check": "ci", "status": "fixed", "message": "Fixed.", "commit": "HEAD"}]
        slow = fix_steps(flow, check_fixed)
        set_rework(flow, {"steps": [*slow[:-2], {"sleep_ms": 2500}, *slow[-2:]]})
        flow.check(pr, "failure")
        rerun = threading.Thread(target=pass_on_rerun, args=(flow, pr))
        rerun.start()
        flow.run(lambda: rework_runs(flow) == 1, what="the rework turn ran")
        rerun.join()
        flow.run_to_phase(number, "waiting_for_human")

        assert flow.head(pr) == head, "the discarded fix was not pushed"
        record = flow.record(number)
        assert record is not None and record.rework_cycles == 0
        assert record.last_outcome is not None and record.last_outcome.discarded

        # The next rework starts from the pull request's head, not from the discarded commit.
        set_rework(flow, {"steps": fix_steps(flow, check_fixed)})
        flow.check(pr, "failure")
        flow.run(lambda: flow.head(pr) != head, what="the next rework is pushed")
        pushed = flow.rest("GET", f"/repos/{world.repo}/commits/{flow.head(pr)}")
        assert [p["sha"] for p in pushed["parents"]] == [head]
        record = flow.record(number)
        assert record is not None and record.rework_cycles == 1


BOT_REVIEWS: dict[str, Any] = {
    "review": {"enabled": False, "act_on": "anyone", "bounce_threshold": 2},
    "orchestration": {"max_rework_cycles": 10},
}
TWO_FILES = merge_sections(
    default_scenario(),
    {
        "phases": {
            "implementing": {
                "steps": [
                    {"write": {"path": "src/model.py", "content": "NAME = None\n"}},
                    *default_scenario()["steps"],
                ]
            }
        }
    },
)


def open_thread_ids(
    flow: Flow, pr: int, login: str, body: str, path: str = "src/feature.py"
) -> tuple[str, int]:
    """Open a thread on line 1 of ``path`` as ``login``: its GraphQL id and numeric id."""
    world = flow.world
    review = world.control.review(
        world.repo,
        pr,
        "COMMENTED",
        as_user=login,
        comments=[{"path": path, "line": 1, "body": body}],
    )
    opened = review["threads"][0]
    return str(opened["node_id"]), int(opened["id"])


def open_thread(flow: Flow, pr: int, login: str, body: str, path: str = "src/feature.py") -> str:
    return open_thread_ids(flow, pr, login, body, path)[0]


def fixed_round(flow: Flow, number: int, pr: int, login: str, body: str, path: str) -> str:
    """A thread opened by ``login``, fixed by a rework, answered and resolved."""
    thread = open_thread(flow, pr, login, body, path)
    entry = {"thread": thread, "status": "fixed", "message": "Done.", "commit": "HEAD"}
    steps = fix_steps(flow, [entry])
    steps[1] = {"write": {"path": path, "content": f"# {body}\n", "append": True}}
    set_rework(flow, {"steps": steps})
    before = flow.head(pr)
    flow.run(lambda: flow.head(pr) != before, what="the fix is pushed")
    flow.check(pr, "success")
    flow.run(
        lambda: flow.phase(number) == "waiting_for_human" and threads(flow, pr)[thread]["resolved"],
        what="the thread is answered and resolved",
    )
    return thread


def escalations(flow: Flow, pr: int, thread: str) -> list[str]:
    return [
        r for r in threads(flow, pr)[thread]["replies"] if r.startswith("Needs a human decision")
    ]


def test_a_bots_reworded_request_on_another_file_counts_as_a_bounce(
    tmp_path: Path, world: SimWorld
) -> None:
    with flow_for(tmp_path, world, policy=BOT_REVIEWS, scenario=TWO_FILES) as flow:
        number = flow.open_issue()
        pr = waiting_for_human_with_pr(flow, number)
        style = bot(world, "style-bot")
        fixed_round(flow, number, pr, style, "Make the name field optional.", "src/model.py")
        fixed_round(
            flow, number, pr, style, "Please make the name field optional.", "src/feature.py"
        )
        runs = rework_runs(flow)

        # The same request a third time, reworded, on the first file: a human decides now.
        third, numeric = open_thread_ids(
            flow, pr, style, "nit: make the name field optional please", "src/model.py"
        )
        flow.run(lambda: escalations(flow, pr, third) != [], what="the bounce is escalated")
        flow.idle_ticks(3)
        assert rework_runs(flow) == runs
        assert threads(flow, pr)[third]["resolved"] is False
        assert flow.phase(number) == "waiting_for_human"

        # The bot insists in the thread, and a rework for another reason claims the
        # thread fixed: it is escalated once, never answered again.
        world.control.reply_thread(world.repo, numeric, "Still applies.", as_user=style)
        other = open_thread(flow, pr, flow.human.login, "Add a trailing comment.")
        entries = [
            {"thread": other, "status": "fixed", "message": "Added.", "commit": "HEAD"},
            {"thread": third, "status": "fixed", "message": "Optional again.", "commit": "HEAD"},
        ]
        set_rework(flow, {"steps": fix_steps(flow, entries)})
        flow.run(lambda: threads(flow, pr)[other]["resolved"], what="the other thread answered")
        flow.idle_ticks(2)
        assert len(escalations(flow, pr, third)) == 1
        assert threads(flow, pr)[third]["resolved"] is False


def test_a_writer_changing_their_mind_is_a_new_instruction_not_a_bounce(
    tmp_path: Path, world: SimWorld
) -> None:
    policy = {**NO_REVIEW, "review": {"enabled": False, "bounce_threshold": 1}}
    with flow_for(tmp_path, world, policy=policy) as flow:
        number = flow.open_issue()
        pr = waiting_for_human_with_pr(flow, number)
        human = flow.human.login
        fixed_round(flow, number, pr, human, "Make the name field optional.", "src/feature.py")
        fixed_round(flow, number, pr, human, "Make the name field required.", "src/feature.py")
        again = fixed_round(
            flow, number, pr, human, "Make the name field optional.", "src/feature.py"
        )
        assert threads(flow, pr)[again]["replies"][0].startswith("Addressed in")
        assert escalations(flow, pr, again) == []
        record = flow.record(number)
        assert record is not None and record.rework_cycles == 3
