"""Symphony's and pi-symphony's WORKFLOW.md: they load with warnings, and migrate to clean files.

The fixtures are the projects' real files (tests/fixtures/symphony/README.md).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from orchestrator.cli import cli
from orchestrator.domain.phases import Phase
from orchestrator.domain.policy import ApprovalSource as DomainApprovalSource
from orchestrator.domain.policy import FlowPolicy
from orchestrator.domain.selection import issue_priority
from orchestrator.tracker.linear_approval import linear_approval
from orchestrator.wiring.policy_view import WiringError, policy_repo
from orchestrator.workflow import flow_policy
from orchestrator.workflow.catalog import groups, suggestion
from orchestrator.workflow.import_symphony.keys import FOREIGN_KEYS
from orchestrator.workflow.import_symphony.migrate import migrate_text
from orchestrator.workflow.loader import check_workflow
from orchestrator.workflow.prompt import PromptIssue, PromptWorkspace
from orchestrator.workflow.schema import AgentPreset, TrackerKind
from orchestrator_sim.testing import running_world
from tests.workflow.conftest import check

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "symphony"
FILES = sorted(p.name for p in FIXTURES.glob("*.md") if p.name != "README.md")
ENV = {
    "GITHUB_TOKEN": "ghp_" + "Symph0ny" * 4,
    "LINEAR_API_KEY": "lin_api_" + "K3y" * 8,
    "PI_SYMPHONY_WORKSPACE_ROOT": "/var/tmp/pi-workspaces",
}


def test_there_are_five_fixtures() -> None:
    assert len(FILES) == 5


@pytest.mark.parametrize("name", FILES)
def test_a_symphony_file_validates_with_warnings_only(name: str) -> None:
    path = FIXTURES / name
    result = check_workflow(path, env=ENV)
    assert result.errors == ()
    assert result.workflow is not None
    assert result.warnings, "a Symphony file differs from a native one somewhere"
    for warning in result.warnings:
        # Located at file:line, and never a did-you-mean for another product's key.
        assert warning.location.source.endswith(name)
        assert warning.location.line is not None
        assert "did you mean" not in str(warning)
    assert result.workflow.policy.tracker.kind is TrackerKind.LINEAR


@pytest.mark.parametrize("name", FILES)
def test_without_the_environment_only_the_variables_are_errors(name: str) -> None:
    result = check_workflow(FIXTURES / name, env={})
    assert result.errors
    for error in result.errors:
        assert "environment variable" in error.message, str(error)


def test_the_keys_are_read_as_ours() -> None:
    pi = check_workflow(FIXTURES / "pi-symphony-WORKFLOW.md", env=ENV).workflow
    assert pi is not None
    agent = pi.policy.agent
    assert agent.preset is AgentPreset.PI
    assert agent.extra_args == (
        "--provider",
        "openai-codex",
        "--model",
        "gpt-5.5",
        "--thinking",
        "xhigh",
        "--no-extensions",
        "--no-themes",
    )
    assert agent.turn_timeout_ms == 3_600_000
    assert pi.policy.tracker.repo == "tmustier/pi-symphony"
    assert pi.policy.tracker.team_key == "SYM"
    assert pi.policy.tracker.api_key == ENV["LINEAR_API_KEY"]
    assert pi.policy.tracker.endpoint == "https://api.linear.app/graphql"
    assert pi.policy.orchestration.max_failed_attempts == 10
    codex = check_workflow(FIXTURES / "symphony-elixir.WORKFLOW.md", env=ENV).workflow
    assert codex is not None
    # Symphony speaks to `codex app-server`: its command runs unchanged under that preset.
    assert codex.policy.agent.preset is AgentPreset.CODEX_APP_SERVER
    assert codex.policy.agent.command is not None
    assert codex.policy.agent.command.startswith(
        "codex --config shell_environment_policy.inherit=all --config"
    )
    assert codex.policy.agent.command.endswith("model_reasoning_effort=xhigh app-server")
    assert codex.policy.agent.extra_args == ()
    assert codex.policy.tracker.project_slug == "symphony-0c79b11b75ea"


def test_a_key_with_no_equivalent_says_why_and_where() -> None:
    result = check_workflow(FIXTURES / "pi-symphony-WORKFLOW.md", env=ENV)
    messages = {p.key: str(p) for p in result.warnings}
    assert messages["worker.runtime"].endswith(
        "pi-symphony-WORKFLOW.md:24:3: worker.runtime: warning: pi-symphony's key, "
        "read as agent.preset: pi; write agent.preset instead"
    )
    assert "read as orchestration.max_failed_attempts" in messages["agent.max_retries"]
    merge = messages["merge.executor"]
    assert "no equivalent here, ignored" in merge and "merges through the GitHub API" in merge
    assert ":93:3: merge.executor" in merge


@pytest.mark.parametrize(
    ("text", "key", "wanted"),
    [
        ("worker:\n  ssh_hosts: [a, b]\n", "worker.ssh_hosts", "no equivalent"),
        ("agent:\n  max_retries: 4\n", "agent.max_retries", "orchestration.max_failed_attempts"),
    ],
)
def test_a_foreign_key_gets_no_wrong_suggestion(text: str, key: str, wanted: str) -> None:
    result = check("---\ntracker:\n  repo: acme/widgets\n" + text + "---\n")
    assert result.errors == ()
    found = [p for p in result.warnings if p.key == key]
    assert len(found) == 1
    assert wanted in found[0].message
    assert "did you mean" not in found[0].message


def test_a_negative_stall_timeout_turns_stall_detection_off() -> None:
    text = "---\ntracker:\n  repo: acme/widgets\ncodex:\n  stall_timeout_ms: -1\n---\n"
    result = check(text)
    assert result.errors == ()
    assert result.workflow is not None
    assert result.workflow.policy.agent.stall_timeout_ms == 0


def test_our_own_key_wins_over_theirs() -> None:
    text = (
        "---\ntracker:\n  repo: acme/widgets\nagent:\n  preset: pi\n  extra_args: [--x]\n"
        "pi:\n  thinking_level: high\npr:\n  repo_slug: other/repo\n---\n"
    )
    result = check(text)
    assert result.workflow is not None
    assert result.workflow.policy.agent.extra_args == ("--x",)
    assert result.workflow.policy.tracker.repo == "acme/widgets"
    assert [str(p) for p in result.warnings] == [
        "WORKFLOW.md:8:3: pi.thinking_level: warning: pi-symphony's key, ignored: the file also "
        "sets agent.extra_args",
        "WORKFLOW.md:10:3: pr.repo_slug: warning: pi-symphony's key, ignored: the file also sets "
        "tracker.repo",
    ]


def test_a_suggestion_needs_real_similarity() -> None:
    assert suggestion("worker", groups()[""]) == ""
    assert suggestion("max_retries", groups()["agent"]) == ""
    assert suggestion("agnet", groups()[""]) == "; did you mean 'agent'?"
    assert suggestion("max_turn", groups()["agent"]) == "; did you mean 'max_turns'?"
    result = check("---\ntracker:\n  repo: acme/widgets\nworkers:\n  x: 1\n---\n")
    assert [str(p) for p in result.errors] == ["WORKFLOW.md:4:1: workers: unknown section"]


def test_every_foreign_key_is_not_one_of_ours() -> None:
    from orchestrator.workflow.catalog import settings

    assert not set(FOREIGN_KEYS) & set(settings())


# ------------------------------------------------------------------ the prompt

SYMPHONY_PROMPT = """---
tracker:
  repo: acme/widgets
codex:
  command: codex app-server
---
{% if attempt %}Retry #{{ attempt }}.{% else %}First run.{% endif %}
{{ issue.description }} {{ issue.id }} p{{ issue.priority }} {{ issue.branch_name }}
{{ issue.blocked_by.size }} {{ issue.created_at }} {{ issue.updated_at }}
"""


def render(text: str, attempt: int) -> str:
    result = check(text)
    assert result.workflow is not None, [str(p) for p in result.problems]
    workflow = result.workflow
    issue = PromptIssue(
        number=7,
        identifier="acme/widgets#7",
        title="T",
        body="The body.",
        url="https://github.com/acme/widgets/issues/7",
        state="Todo",
        labels=("priority:high",),
        id="I_7",
        priority=issue_priority({"priority:high"}, flow_policy(workflow.policy)),
        branch_name="orchestrator/7-t",
        created_at="2026-01-01T00:00:00Z",
        updated_at="2026-01-02T00:00:00Z",
    )
    return workflow.prompt.render(
        phase=Phase.IMPLEMENTING,
        issue=issue,
        attempt=attempt,
        policy=workflow.policy,
        workspace=PromptWorkspace(path="/w", branch="orchestrator/7-t"),
    )


def test_attempt_is_null_on_the_first_run_in_symphony_files() -> None:
    first = render(SYMPHONY_PROMPT, 1)
    assert first.startswith("First run.\n")
    assert "The body. I_7 p2 orchestrator/7-t\n0 2026-01-01T00:00:00Z 2026-01-02T00:00:00Z" in first
    assert render(SYMPHONY_PROMPT, 2).startswith("Retry #2.")


def test_attempt_stays_one_on_the_first_run_in_native_files() -> None:
    native = SYMPHONY_PROMPT.replace("codex:\n  command: codex app-server\n", "")
    assert render(native, 1).startswith("Retry #1.")


def test_priority_comes_from_the_priority_labels() -> None:
    policy = FlowPolicy(priority_labels=("priority:critical", "priority:high"))
    assert issue_priority({"bug", "priority:high"}, policy) == 2
    assert issue_priority({"bug"}, policy) is None
    # As on GitHub, label names compare without regard to case.
    assert issue_priority({"Priority:Critical"}, policy) == 1


# -------------------------------------------------------------- after_create


def test_a_git_clone_in_after_create_is_a_warning() -> None:
    hook = "hooks:\n  after_create: |\n    git clone --depth 1 https://github.com/a/b .\n    make\n"
    result = check("---\ntracker:\n  repo: acme/widgets\n" + hook + "---\n")
    assert [str(p) for p in result.warnings] == [
        "WORKFLOW.md:5:3: hooks.after_create: warning: runs `git clone`, but after_create runs "
        "in the workspace after the runtime has checked out tracker.repo into it: the clone "
        "would fail or nest a second checkout; set hooks.after_create_in_empty_dir: true to run "
        "it first, in an empty folder, as Symphony does, or remove the clone"
    ]
    first = hook.replace("hooks:\n", "hooks:\n  after_create_in_empty_dir: true\n")
    assert check("---\ntracker:\n  repo: acme/widgets\n" + first + "---\n").problems == ()
    commented = hook.replace("    git clone", "    # git clone")
    assert check("---\ntracker:\n  repo: acme/widgets\n" + commented + "---\n").problems == ()


# -------------------------------------------------------------------- Linear


def test_a_linear_tracker_needs_a_project_or_team_and_a_key() -> None:
    result = check("---\ntracker:\n  kind: linear\n---\n", env={"GITHUB_TOKEN": "t"})
    assert [str(p) for p in result.errors] == [
        "WORKFLOW.md:2:1: tracker.api_key: environment variable LINEAR_API_KEY is not set "
        "(the default)"
    ]
    result = check("---\ntracker:\n  kind: linear\n---\n", env={**ENV})
    assert [str(p) for p in result.errors] == [
        "WORKFLOW.md:3:3: tracker.kind: tracker kind linear needs tracker.project_slug or "
        "tracker.team_key (which issues)"
    ]
    result = check("---\ntracker:\n  kind: linear\n  team_key: ENG\n---\n", env={**ENV})
    assert result.problems == ()


def test_the_daemon_needs_the_github_repository_of_a_linear_tracker() -> None:
    workflow = check("---\ntracker:\n  kind: linear\n  team_key: ENG\n---\n", env={**ENV}).workflow
    assert workflow is not None
    with pytest.raises(WiringError, match=r"tracker\.repo: kind linear needs"):
        policy_repo(workflow.policy)
    text = "---\ntracker:\n  kind: linear\n  team_key: ENG\n  repo: acme/widgets\n---\n"
    workflow = check(text, env={**ENV}).workflow
    assert workflow is not None
    assert policy_repo(workflow.policy) == "acme/widgets"


def test_an_unmodified_symphony_file_takes_approval_from_a_move_to_merging_in_linear() -> None:
    workflow = check_workflow(FIXTURES / "symphony-elixir.WORKFLOW.md", env=ENV).workflow
    assert workflow is not None
    flow = flow_policy(workflow.policy)
    # Its prompt's status map: Human Review waits for a person, who moves the issue to
    # Merging to approve; Merging is one of its active states.
    assert flow.merge.require_human_approval
    assert flow.merge.approval_source is DomainApprovalSource.LABEL
    approval = linear_approval(flow, workflow.policy.tracker.approvers)
    assert dict(approval.states) == {"Merging": "state:merging"}
    assert approval.approvers == frozenset()
    assert "Merging" in workflow.policy.tracker.active_states


def test_a_linear_approval_state_without_a_label_gets_one_and_approvers_are_linears() -> None:
    text = (
        "---\ntracker:\n  kind: linear\n  team_key: ENG\n"
        "  active_states: [Todo, Ready to merge]\n"
        "  approvers: [alice@example.com, 5d2c8a8e-6f0b-4c1e-9a57-3e2f1b0c9d84]\n"
        "merge:\n  approval_states: [Ready to merge]\n---\n"
    )
    result = check(text, env={**ENV})
    assert result.problems == ()
    assert result.workflow is not None
    flow = flow_policy(result.workflow.policy)
    assert flow.approval_labels == {"state:ready-to-merge"}
    approval = linear_approval(flow, result.workflow.policy.tracker.approvers)
    assert approval.approvers == {"alice@example.com", "5d2c8a8e-6f0b-4c1e-9a57-3e2f1b0c9d84"}
    github = check("---\ntracker:\n  repo: acme/widgets\n  approvers: [alice]\n---\n", env={**ENV})
    assert [str(p) for p in github.errors] == [
        "WORKFLOW.md:4:3: tracker.approvers: only for tracker kind linear: on GitHub, write "
        "permission on tracker.repo decides whose approval counts"
    ]
    empty = check(
        "---\ntracker:\n  kind: linear\n  team_key: ENG\n  approvers: ['']\n---\n",
        env={**ENV},
    )
    assert [p.key for p in empty.errors] == ["tracker.approvers[0]"]


# ------------------------------------------------------------------ migration


@pytest.mark.parametrize("name", FILES)
def test_the_migrated_file_validates_without_a_warning(name: str, tmp_path: Path) -> None:
    text = (FIXTURES / name).read_text(encoding="utf-8")
    migration = migrate_text(text, source=name, output="OUT.md")
    assert migration.errors == ()
    assert migration.text is not None
    out = tmp_path / "WORKFLOW.md"
    out.write_text(migration.text, encoding="utf-8")
    result = check_workflow(out, env=ENV)
    assert result.problems == (), [str(p) for p in result.problems]
    prompt = migration.text.split("\n---\n", 1)[1]
    assert "{% if attempt %}" not in prompt


def test_the_migration_comments_what_differs() -> None:
    name = "symphony-elixir.WORKFLOW.md"
    migration = migrate_text(
        (FIXTURES / name).read_text(encoding="utf-8"), source=name, output="OUT.md"
    )
    assert migration.text is not None
    lines = migration.text.split("\n")
    assert "#   codex.approval_policy: nothing here ever waits for an approval: " in (
        migration.text
    )
    assert "  # From the `git clone` of hooks.after_create." in lines
    assert "  repo: openai/symphony" in lines
    # Symphony's order is kept: the hook's clone runs as written, in the empty folder.
    assert "    git clone --depth 1 https://github.com/openai/symphony ." in lines
    assert "  after_create_in_empty_dir: true" in lines
    assert "{% if attempt > 1 %}" in migration.text
    flagged = [n for n in migration.notes if n.key == "prompt"]
    assert flagged
    for note in flagged:
        assert note.location.source == "OUT.md"
        line = lines[note.location.line - 1]  # type: ignore[operator]
        assert any(word in line for word in ("gh", "push", "mov", "Linear", "linear")), line
    gh = next(n for n in flagged if "`gh`" in n.message)
    assert "gh pr merge" in lines[gh.location.line - 1]  # type: ignore[operator]


def test_the_migration_refuses_a_file_with_errors() -> None:
    migration = migrate_text("---\nagnet: {}\n---\n", source="W.md", output="O.md")
    assert migration.text is None
    assert [str(p) for p in migration.errors] == [
        "W.md:2:1: agnet: unknown section; did you mean 'agent'?"
    ]


def test_migrate_workflow_command(tmp_path: Path) -> None:
    source = FIXTURES / "pi-symphony-orchestrator-elixir-WORKFLOW.md"
    out = tmp_path / "WORKFLOW.md"
    runner = CliRunner()
    result = runner.invoke(cli, ["migrate-workflow", str(source), "-o", str(out)], env=ENV)
    assert result.exit_code == 0, result.output
    assert "migrated to" in result.output
    assert "codex.approval_policy: warning:" in result.output
    assert out.read_text(encoding="utf-8").startswith("---\n# Native policy written by ")
    validated = runner.invoke(cli, ["validate", "-q", str(out)], env=ENV)
    assert validated.exit_code == 0, validated.output
    assert "valid\n" in validated.output and "warning" not in validated.output
    again = runner.invoke(cli, ["migrate-workflow", str(source), "-o", str(out)], env=ENV)
    assert again.exit_code == 1
    assert "exists; choose another file or add --force" in again.output
    forced = runner.invoke(
        cli, ["migrate-workflow", str(source), "-o", str(out), "--force"], env=ENV
    )
    assert forced.exit_code == 0


def test_validate_points_to_the_migration() -> None:
    source = FIXTURES / "symphony-elixir.WORKFLOW.md"
    result = CliRunner().invoke(cli, ["validate", "-q", str(source)], env=ENV)
    assert result.exit_code == 0, result.output
    assert f"written for Symphony: `orchestrator migrate-workflow {source}`" in result.output


def test_migrate_workflow_to_standard_output(tmp_path: Path) -> None:
    source = FIXTURES / "symphony-elixir.WORKFLOW.md"
    result = CliRunner().invoke(cli, ["migrate-workflow", str(source)], env=ENV)
    assert result.exit_code == 0
    assert "\nagent:\n  # From the codex: section.\n  preset: codex-app-server\n" in result.stdout


def test_migrate_workflow_of_a_broken_file(tmp_path: Path) -> None:
    bad = tmp_path / "W.md"
    bad.write_text("---\nagent:\n  max_turn: 3\n---\n", encoding="utf-8")
    result = CliRunner().invoke(cli, ["migrate-workflow", str(bad)])
    assert result.exit_code == 1
    assert "cannot migrate (1 error)" in result.output
    assert "agent.max_turn: unknown key; did you mean 'max_turns'?" in result.output


def test_run_refuses_a_linear_policy_without_its_github_repository(tmp_path: Path) -> None:
    policy = tmp_path / "WORKFLOW.md"
    policy.write_text("---\ntracker:\n  kind: linear\n  team_key: ENG\n---\n", encoding="utf-8")
    env = {**os.environ, **ENV, "XDG_STATE_HOME": str(tmp_path / "state")}
    command = [sys.executable, "-c", "from orchestrator.cli import main; main()", "run"]
    result = subprocess.run(
        [*command, str(policy)], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode != 0
    assert "tracker.repo: kind linear needs the GitHub repository" in result.stderr


def test_the_docs_map_every_symphony_key() -> None:
    text = (Path(__file__).resolve().parents[2] / "docs" / "workflow.md").read_text("utf-8")
    section = text[text.index("## Symphony and pi-symphony files") :]
    for path, entry in FOREIGN_KEYS.items():
        if entry.section and path not in ("codex", "pi", "tracker.provider"):
            continue
        assert f"| `{path}` | {entry.dialect} | " in section, path


def test_the_linear_key_is_never_given_to_the_agent() -> None:
    text = (
        "---\ntracker:\n  kind: linear\n  team_key: ENG\n"
        "agent:\n  env:\n    LIN: $LINEAR_API_KEY\n---\n"
    )
    result = check(text, env={**ENV})
    assert [str(p) for p in result.errors] == [
        "WORKFLOW.md:7:5: agent.env.LIN: is the Linear API key; the agent must never hold "
        "tracker credentials"
    ]


def test_pr_commands_of_a_linear_policy_read_github(tmp_path: Path) -> None:
    with running_world(tmp_path / "sim") as world:
        policy = tmp_path / "WORKFLOW.md"
        policy.write_text(
            "---\ntracker:\n  kind: linear\n  team_key: ENG\n"
            f"  repo: {world.repo}\n  github_endpoint: {world.url}\n"
            f"  token: {world.bot.token}\n---\n",
            encoding="utf-8",
        )
        result = CliRunner().invoke(
            cli, ["pr", "checks", f"{world.repo}#1", "--workflow", str(policy)], env=ENV
        )
    assert "not available" not in result.output
    assert "404" in result.output, result.output
