"""Loading policy files: reading, defaults, warnings, and the mapping onto the domain core."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

import pytest

from orchestrator.domain import policy as domain
from orchestrator.domain.agent_files.review import Severity as FindingSeverity
from orchestrator.domain.phases import Phase, RolloutMode
from orchestrator.workflow import PolicyError, check_workflow, flow_policy, load_workflow
from orchestrator.workflow.catalog import Kind, settings
from orchestrator.workflow.schema import (
    AgentPreset,
    MergeMode,
    Policy,
    ReviewCommentMode,
    TrackerKind,
)
from tests.workflow.conftest import ENV, MINIMAL, check

WritePolicy = Callable[..., Path]

# The defaults the policy issue names, checked on a policy that sets nothing else.
DEFAULTS = [
    ("tracker.kind", TrackerKind.GITHUB),
    ("tracker.endpoint", "https://api.github.com"),
    ("polling.interval_ms", 30_000),
    ("hooks.timeout_ms", 60_000),
    ("agent.preset", AgentPreset.CODEX),
    ("agent.max_concurrent_agents", 10),
    ("agent.max_turns", 20),
    ("agent.max_retry_backoff_ms", 300_000),
    ("agent.first_event_timeout_ms", 0),
    ("agent.stall_timeout_ms", 300_000),
    ("agent.turn_timeout_ms", 3_600_000),
    ("orchestration.default_phase", Phase.IMPLEMENTING),
    ("orchestration.max_rework_cycles", 3),
    ("orchestration.ownership.required_workpad_marker", "## Orchestrator Workpad"),
    ("rollout.mode", RolloutMode.OBSERVE),
    ("pr.review_comment_mode", ReviewCommentMode.UPSERT),
    ("review.max_passes", 2),
    ("review.bounce_threshold", 2),
    ("review.fix_consideration_severities", (FindingSeverity.P0, FindingSeverity.P1)),
    ("merge.mode", MergeMode.DISABLED),
    ("merge.require_head_match", True),
    ("server.host", "127.0.0.1"),
]


def value_at(policy: Policy, path: str) -> object:
    value: object = policy
    for part in path.split("."):
        value = getattr(value, part)
    return value


@pytest.mark.parametrize(("path", "expected"), DEFAULTS, ids=[d[0] for d in DEFAULTS])
def test_defaults(path: str, expected: object) -> None:
    result = check(MINIMAL)
    assert result.workflow is not None, result.problems
    assert value_at(result.workflow.policy, path) == expected
    assert settings()[path].default == expected or settings()[path].type.kind is Kind.PATH


def test_every_setting_is_documented_in_the_schema() -> None:
    for spec in settings().values():
        assert spec.doc.strip(), spec.path


def test_the_policy_is_frozen() -> None:
    result = check(MINIMAL)
    assert result.workflow is not None
    policy = result.workflow.policy
    with pytest.raises(dataclasses.FrozenInstanceError):
        policy.agent.max_turns = 3  # type: ignore[misc]
    with pytest.raises(TypeError):
        policy.tracker.state_labels["Todo"] = "x"  # type: ignore[index]


def test_load_reads_a_file_with_crlf_and_a_byte_order_mark(write_policy: WritePolicy) -> None:
    path = write_policy("")
    path.write_bytes(
        b"\xef\xbb\xbf---\r\ntracker:\r\n  repo: acme/widgets\r\nagent:\r\n  max_turns: 4\r\n"
        b"---\r\nDo {{ issue.title }}.\r\n"
    )
    workflow = load_workflow(path, env=ENV)
    assert workflow.policy.agent.max_turns == 4
    assert workflow.prompt.body == "Do {{ issue.title }}.\n"
    assert workflow.prompt.first_line == 7
    assert str(workflow.origins["agent.max_turns"]) == f"file {path}:5:3"


def test_relative_paths_resolve_against_the_policy_folder(write_policy: WritePolicy) -> None:
    path = write_policy(
        "---\ntracker:\n  repo: acme/widgets\nworkspace:\n  root: state/ws\n"
        "rollout:\n  kill_switch_file: ../STOP\ndatabase:\n  url: sqlite:///state/o.db\n---\n"
    )
    policy = load_workflow(path, env=ENV).policy
    assert policy.workspace.root == path.parent / "state" / "ws"
    assert policy.rollout.kill_switch_file == path.parent.parent / "STOP"
    assert policy.database.url == f"sqlite:///{path.parent}/state/o.db"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"---\ntracker:\n  repo: caf\xe9/widgets\n---\n", "{path}:3: not valid UTF-8 at byte 24"),
        (b"x" * 1_000_001, "{path}: larger than 1000000 bytes"),
    ],
    ids=["not UTF-8", "too large"],
)
def test_unreadable_files(write_policy: WritePolicy, content: bytes, message: str) -> None:
    path = write_policy("")
    path.write_bytes(content)
    result = check_workflow(path, env=ENV)
    assert [str(p) for p in result.problems] == [message.format(path=path)]


def test_missing_file_and_directory(tmp_path: Path) -> None:
    missing = tmp_path / "nope.md"
    with pytest.raises(PolicyError) as raised:
        load_workflow(missing, env=ENV)
    assert str(raised.value) == f"{missing}: file not found"
    result = check_workflow(tmp_path, env=ENV)
    assert [str(p) for p in result.problems] == [f"{tmp_path}: is a directory, not a policy file"]


def test_a_tracker_kind_is_one_an_operator_can_run() -> None:
    """No tracker kind exists for tests alone: an in-process one is not a policy's choice."""
    result = check("---\ntracker:\n  kind: memory\n---\n")
    assert result.workflow is None
    assert [str(p) for p in result.errors] == [
        "WORKFLOW.md:3:3: tracker.kind: expected one of github, linear, got 'memory'"
    ]


WARNINGS = [
    (
        "merge under another rollout mode",
        "rollout:\n  mode: mutate\nmerge:\n  mode: auto\n",
        "WORKFLOW.md:7:3: merge.mode: warning: merge disabled by rollout mode: merge.mode is auto "
        "but rollout.mode is mutate, so nothing is merged until rollout.mode is merge",
    ),
    (
        "dashboard open to the network",
        "server:\n  host: 0.0.0.0\n",
        "WORKFLOW.md:5:3: server.host: warning: 0.0.0.0 exposes the dashboard and API beyond this "
        "machine without server.token",
    ),
    (
        "plain http to a remote API",
        "  endpoint: http://ghe.internal/api/v3\n",
        "WORKFLOW.md:4:3: tracker.endpoint: warning: plain http to a host other than this machine "
        "sends the token unencrypted",
    ),
    (
        "visible review marker",
        "pr:\n  review_comment_marker: Orchestrator review\n",
        "WORKFLOW.md:5:3: pr.review_comment_marker: warning: is visible in the comment; an HTML "
        "comment such as <!-- orchestrator-review --> stays hidden",
    ),
    (
        "phase limit above the global limit",
        "agent:\n  max_concurrent_agents: 2\n  max_concurrent_agents_by_phase:\n    rework: 3\n",
        "WORKFLOW.md:7:5: agent.max_concurrent_agents_by_phase.rework: warning: 3 is above "
        "agent.max_concurrent_agents (2), which still applies",
    ),
    (
        "auto merge without green checks",
        "rollout:\n  mode: merge\nmerge:\n  mode: auto\n  require_green_checks: false\n",
        "WORKFLOW.md:8:3: merge.require_green_checks: warning: is false: heads merge with failing "
        "checks",
    ),
]


@pytest.mark.parametrize(
    ("body", "warning"), [w[1:] for w in WARNINGS], ids=[w[0] for w in WARNINGS]
)
def test_warnings_do_not_stop_a_policy(body: str, warning: str) -> None:
    result = check("---\ntracker:\n  repo: acme/widgets\n" + body + "---\n")
    assert result.workflow is not None, [str(p) for p in result.problems]
    assert [str(w) for w in result.warnings] == [warning]
    assert result.workflow.warnings == result.warnings


def test_flow_policy_maps_every_value_the_core_reads() -> None:
    result = check(
        "---\ntracker:\n  repo: acme/widgets\nrollout:\n  mode: merge\n"
        "  observe_label: hold\nmerge:\n  mode: auto\n  approval_source: either\n"
        "  approval_label: ship-it\norchestration:\n  max_failed_attempts: 2\n"
        "  passive_phases: [waiting_for_checks, waiting_for_human, blocked, ready_to_merge]\n"
        "agent:\n  max_concurrent_agents_by_phase:\n    reviewing: 1\n"
        "review:\n  fix_consideration_severities: [P0, P1, P2]\npr:\n  reviewers: [alice]\n---\n"
    )
    assert result.workflow is not None, result.problems
    flow = flow_policy(result.workflow.policy)
    assert flow.rollout_mode is RolloutMode.MERGE
    assert dict(flow.mode_labels) == {
        "hold": RolloutMode.OBSERVE,
        "orchestrator:mutate": RolloutMode.MUTATE,
    }
    assert flow.merge.mode is domain.MergeMode.RUNTIME
    assert flow.merge.approval_source is domain.ApprovalSource.LABEL_OR_REVIEW
    # One enum: the policy schema takes the core's own choices.
    assert result.workflow.policy.merge.approval_source is flow.merge.approval_source
    assert flow.approval_labels == frozenset({"state:merging", "ship-it"})
    assert flow.max_failed_attempts == 2
    assert Phase.READY_TO_MERGE in flow.passive_phases
    assert flow.phase_limit(Phase.REVIEWING) == 1
    assert flow.review.fix_consideration_severities == frozenset(
        {FindingSeverity.P0, FindingSeverity.P1, FindingSeverity.P2}
    )
    assert flow.pr.reviewers == ("alice",)
    assert flow.max_concurrent_agents == 10


def test_disabled_merging_means_a_human_merges() -> None:
    result = check(MINIMAL)
    assert result.workflow is not None
    assert flow_policy(result.workflow.policy).merge.mode is domain.MergeMode.EXTERNAL


def test_the_default_state_folder_follows_xdg_state_home(
    write_policy: WritePolicy, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The unit and the container set XDG_STATE_HOME: the defaults land there, where
    # deploy/README.md's backup section looks for the database.
    state = tmp_path / "xdg-state"
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    policy = load_workflow(write_policy(MINIMAL), env=ENV).policy
    assert policy.database.url == f"sqlite:///{state}/orchestrator/orchestrator.db"
    assert policy.workspace.root == state / "orchestrator" / "workspaces"
    assert policy.rollout.kill_switch_file == state / "orchestrator" / "STOP"

    monkeypatch.delenv("XDG_STATE_HOME")
    policy = load_workflow(write_policy(MINIMAL), env=ENV).policy
    home_state = Path.home() / ".local" / "state" / "orchestrator"
    assert policy.database.url == f"sqlite:///{home_state}/orchestrator.db"
    assert policy.workspace.root == home_state / "workspaces"
