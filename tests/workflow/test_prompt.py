"""The prompt: built-in prompts per agent phase, operator templates, strict rendering."""

from __future__ import annotations

import json
import re

import pytest

from orchestrator.domain.agent_files.fix_summary import FixStatus, parse_fix_summary
from orchestrator.domain.agent_files.review import Review, parse_review
from orchestrator.domain.phases import Phase
from orchestrator.workflow import PromptRenderError
from orchestrator.workflow.loader import Workflow
from orchestrator.workflow.prompt import (
    PROMPT_PHASES,
    PromptIssue,
    PromptWorkspace,
    default_prompt_source,
    policy_variables,
)
from orchestrator.workflow.prompt_samples import render_samples, sample_issue, sample_workspace
from tests.workflow.conftest import ENV, MINIMAL, TOKEN, check

SHA = "0123456789abcdef0123456789abcdef01234567"


def load(text: str, env: dict[str, str] | None = None) -> Workflow:
    result = check(text, env=env)
    assert result.workflow is not None, [str(p) for p in result.problems]
    return result.workflow


def test_an_empty_body_uses_the_built_in_prompts() -> None:
    workflow = load(MINIMAL)
    assert workflow.prompt.is_default
    rendered = render_samples(workflow.prompt, workflow.policy)
    assert (
        set(rendered)
        == set(PROMPT_PHASES)
        == {
            Phase.IMPLEMENTING,
            Phase.REVIEWING,
            Phase.REWORK,
        }
    )
    assert len(set(rendered.values())) == 3


@pytest.mark.parametrize("phase", PROMPT_PHASES)
def test_every_built_in_prompt_states_the_contract(phase: Phase) -> None:
    workflow = load(MINIMAL)
    text = render_samples(workflow.prompt, workflow.policy, (phase,))[phase]
    issue = sample_issue()
    assert issue.identifier in text and issue.title in text and issue.body in text
    assert sample_workspace(workflow.policy).branch in text
    assert f"Phase: {phase}" in text
    assert "no GitHub credentials" in text
    assert "push" in text and "never commit that folder" in text
    assert ".orchestrator/blocked.md" in text
    assert "{{" not in text and "{%" not in text


def test_the_implementing_prompt_asks_for_a_description_and_tests() -> None:
    workflow = load(MINIMAL)
    text = render_samples(workflow.prompt, workflow.policy, (Phase.IMPLEMENTING,))[
        Phase.IMPLEMENTING
    ]
    assert ".orchestrator/pr-description.md" in text
    assert "tests" in text and "Commit your work" in text
    assert "orchestrator-blocked-reason" in text


def test_the_reviewing_prompt_shows_a_review_the_parser_accepts() -> None:
    workflow = load(MINIMAL)
    text = render_samples(workflow.prompt, workflow.policy, (Phase.REVIEWING,))[Phase.REVIEWING]
    assert "structured_markdown_v1" in text and ".orchestrator/review.md" in text
    example = re.search(r"```\n(<!-- orchestrator-review-head.*?)```", text, re.S)
    assert example is not None
    review = parse_review(
        example.group(1).replace("FULL_40_CHARACTER_SHA_OF_THE_REVIEWED_COMMIT", SHA)
    )
    assert isinstance(review, Review), str(review)
    assert review.head_sha == SHA and [f.id for f in review.findings] == ["F1"]
    assert "P0, P1" in text


def test_the_rework_prompt_carries_the_context_and_a_valid_fix_summary() -> None:
    workflow = load(MINIMAL)
    text = render_samples(workflow.prompt, workflow.policy, (Phase.REWORK,))[Phase.REWORK]
    assert '"PRRT_1"' in text and "widgets/store.py" in text
    assert "## Failing checks on the current head" in text
    assert "## Replies from humans" not in text
    blocks = re.findall(r"```json\n(.*?)```", text, re.S)
    summary = parse_fix_summary(blocks[-1])
    assert not isinstance(summary, Exception) and hasattr(summary, "entries"), str(summary)
    assert [e.status for e in summary.entries] == [FixStatus.FIXED, FixStatus.DISMISSED]


def test_rework_lists_threads_that_bounced_as_do_not_change() -> None:
    workflow = load(MINIMAL)
    text = workflow.prompt.render(
        phase=Phase.REWORK,
        issue=sample_issue(),
        attempt=2,
        policy=workflow.policy,
        workspace=sample_workspace(workflow.policy),
        context={
            "do_not_change": [{"id": "PRRT_9", "path": "widgets/store.py", "bounces": 2}],
            "human_replies": [{"author": "maintainer", "body": "Keep it required."}],
        },
    )
    assert "## Do not change these again" in text and "PRRT_9" in text
    assert "Keep it required." in text
    assert "Phase: rework (attempt 2)" in text


def test_a_custom_template_branches_on_phase() -> None:
    workflow = load(
        MINIMAL
        + "{% case phase %}{% when 'implementing' %}Build {{ issue.title }}."
        + "{% when 'reviewing' %}Review {{ workspace.head_sha }}."
        + "{% else %}Answer {{ context.review_threads | size }} threads."
        + "{% endcase %}\n"
    )
    rendered = render_samples(workflow.prompt, workflow.policy)
    assert rendered[Phase.IMPLEMENTING] == f"Build {sample_issue().title}.\n"
    assert rendered[Phase.REVIEWING] == f"Review {sample_workspace(workflow.policy).head_sha}.\n"
    assert rendered[Phase.REWORK] == "Answer 1 threads.\n"


def test_the_policy_is_visible_without_its_secrets() -> None:
    workflow = load(
        "---\ntracker:\n  repo: acme/widgets\nserver:\n  token: $DASH\n---\n"
        "Base {{ policy.pr.base_branch }}, {{ policy.tracker.state_labels['In Review'] }}.\n",
        env={**ENV, "DASH": "s3cr3t-dashboard"},
    )
    variables = policy_variables(workflow.policy)
    tracker = variables["tracker"]
    server = variables["server"]
    assert isinstance(tracker, dict) and isinstance(server, dict)
    assert "token" not in tracker and "token" not in server
    assert "database" not in variables
    agent = variables["agent"]
    assert isinstance(agent, dict) and "env" not in agent
    assert TOKEN not in json.dumps(variables)
    text = render_samples(workflow.prompt, workflow.policy, (Phase.IMPLEMENTING,))
    assert text[Phase.IMPLEMENTING] == "Base main, state:in-review.\n"


def test_a_field_missing_at_render_time_is_a_located_error() -> None:
    workflow = load(
        MINIMAL + "Intro\n{% for t in context.review_threads %}{{ t.path }}{% endfor %}\n"
    )
    with pytest.raises(PromptRenderError) as raised:
        workflow.prompt.render(
            phase=Phase.REWORK,
            issue=sample_issue(),
            attempt=1,
            policy=workflow.policy,
            workspace=PromptWorkspace(path="/w", branch="b"),
            context={"review_threads": [{"id": "T1"}]},
        )
    assert str(raised.value) == "WORKFLOW.md:6:41: prompt: t.path is undefined"


def test_a_loop_field_the_sample_lacks_fails_at_load() -> None:
    result = check(
        MINIMAL + "Threads: {% for t in context.review_threads %}{{ t.nope }}{% endfor %}\n"
    )
    assert [str(p) for p in result.errors] == [
        "WORKFLOW.md:5:50: prompt: t.nope is undefined (rendering phase rework for a sample issue)"
    ]


def test_rendering_a_phase_without_an_agent_is_refused() -> None:
    workflow = load(MINIMAL)
    with pytest.raises(PromptRenderError, match="no agent runs in phase merging"):
        workflow.prompt.render(
            phase=Phase.MERGING,
            issue=sample_issue(),
            attempt=1,
            policy=workflow.policy,
            workspace=PromptWorkspace(path="/w", branch="b"),
        )


def test_the_json_filter_and_plain_values() -> None:
    workflow = load(MINIMAL + "{{ issue.labels | json }} {{ attempt }} {{ phase }}\n")
    text = workflow.prompt.render(
        phase=Phase.IMPLEMENTING,
        issue=PromptIssue(
            number=1,
            identifier="o/r#1",
            title="t",
            body="b",
            url="u",
            state="Todo",
            labels=("bug", "ui"),
        ),
        attempt=3,
        policy=workflow.policy,
        workspace=PromptWorkspace(path="/w", branch="b"),
    )
    assert text == '[\n  "bug",\n  "ui"\n] 3 implementing\n'


def test_built_in_prompt_sources_are_shipped_for_each_agent_phase() -> None:
    for phase in PROMPT_PHASES:
        assert "{{ issue.title }}" in default_prompt_source(phase)
