"""Precedence, one key of every section: flag > environment > file > default, with provenance."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from orchestrator.domain.phases import RolloutMode
from orchestrator.workflow.catalog import settings
from orchestrator.workflow.provenance import OriginKind
from orchestrator.workflow.schema import MergeMethod, Policy
from tests.workflow.conftest import ENV, check

BASE = Path("/srv/policy")


@dataclass(frozen=True)
class Layers:
    """A key, the YAML text the file gives it, the env text and the flag value, and the results."""

    path: str
    file_yaml: str
    env_text: str
    flag: object
    default: object
    from_file: object
    from_env: object
    from_flag: object


ROWS = [
    Layers(
        "tracker.endpoint",
        "https://ghe.example.com/api/v3",
        "http://127.0.0.1:9999",
        "http://127.0.0.1:7777",
        "https://api.github.com",
        "https://ghe.example.com/api/v3",
        "http://127.0.0.1:9999",
        "http://127.0.0.1:7777",
    ),
    Layers("polling.interval_ms", "60000", "5000", 1000, 30_000, 60_000, 5_000, 1_000),
    Layers(
        "workspace.root",
        "ws",
        "/var/tmp/env-ws",
        "~/flag-ws",
        Path("~/.local/state/orchestrator/workspaces").expanduser(),
        BASE / "ws",
        Path("/var/tmp/env-ws"),
        Path("~/flag-ws").expanduser(),
    ),
    Layers("hooks.timeout_ms", "120000", "90000", "30000", 60_000, 120_000, 90_000, 30_000),
    Layers("agent.max_turns", "7", "5", 3, 20, 7, 5, 3),
    Layers("orchestration.max_rework_cycles", "1", "2", "0", 3, 1, 2, 0),
    Layers(
        "orchestration.ownership.required_label",
        "bot",
        "env-bot",
        "flag-bot",
        "orchestrator",
        "bot",
        "env-bot",
        "flag-bot",
    ),
    Layers(
        "rollout.mode",
        "mutate",
        "merge",
        "observe",
        RolloutMode.OBSERVE,
        RolloutMode.MUTATE,
        RolloutMode.MERGE,
        RolloutMode.OBSERVE,
    ),
    Layers("pr.required_labels", "[a]", "b, c", "[d]", (), ("a",), ("b", "c"), ("d",)),
    Layers("review.max_passes", "3", "4", 1, 2, 3, 4, 1),
    Layers(
        "merge.method",
        "rebase",
        "merge",
        "squash",
        MergeMethod.SQUASH,
        MergeMethod.REBASE,
        MergeMethod.MERGE,
        MergeMethod.SQUASH,
    ),
    Layers("server.port", "9000", "9001", 0, 8080, 9000, 9001, 0),
    Layers(
        "database.url",
        "sqlite:///state.db",
        "postgresql+psycopg://orch@db/orch",
        "sqlite:////var/tmp/flag.db",
        "sqlite:///" + str(Path("~/.local/state/orchestrator/orchestrator.db").expanduser()),
        "sqlite:////srv/policy/state.db",
        "postgresql+psycopg://orch@db/orch",
        "sqlite:////var/tmp/flag.db",
    ),
]


def value_at(policy: Policy, path: str) -> object:
    value: object = policy
    for part in path.split("."):
        value = getattr(value, part)
    return value


def file_with(path: str, yaml_value: str) -> tuple[str, int]:
    """A policy setting ``path`` to ``yaml_value``, and the line the key is on."""
    parts = path.split(".")
    lines = ["---", "tracker:", "  repo: acme/widgets"]
    if parts[0] != "tracker":
        lines.append(f"{parts[0]}:")
    for depth, part in enumerate(parts[1:-1], start=1):
        lines.append("  " * depth + f"{part}:")
    lines.append("  " * (len(parts) - 1) + f"{parts[-1]}: {yaml_value}")
    return "\n".join([*lines, "---", ""]), len(lines)


def test_every_section_has_a_row() -> None:
    sections = {spec.section for spec in settings().values()}
    assert sections == {row.path.split(".")[0] for row in ROWS}


@pytest.mark.parametrize("row", ROWS, ids=[row.path for row in ROWS])
def test_default_file_env_flag(row: Layers) -> None:
    spec = settings()[row.path]
    text, line = file_with(row.path, row.file_yaml)
    column = 2 * (row.path.count(".")) + 1
    env_override = {**ENV, spec.env_name: row.env_text}

    default = check("---\ntracker:\n  repo: acme/widgets\n---\n")
    assert default.workflow is not None, default.problems
    assert value_at(default.workflow.policy, row.path) == row.default
    assert default.workflow.origins[row.path].kind is OriginKind.DEFAULT

    from_file = check(text)
    assert from_file.workflow is not None, from_file.problems
    assert value_at(from_file.workflow.policy, row.path) == row.from_file
    origin = from_file.workflow.origins[row.path]
    assert origin.kind is OriginKind.FILE
    assert str(origin) == f"file WORKFLOW.md:{line}:{column}"

    from_env = check(text, env=env_override)
    assert from_env.workflow is not None, from_env.problems
    assert value_at(from_env.workflow.policy, row.path) == row.from_env
    assert str(from_env.workflow.origins[row.path]) == f"env {spec.env_name}"

    from_flag = check(text, env=env_override, flags={row.path: row.flag})
    assert from_flag.workflow is not None, from_flag.problems
    assert value_at(from_flag.workflow.policy, row.path) == row.from_flag
    assert from_flag.workflow.origins[row.path].kind is OriginKind.FLAG


def test_env_names_use_double_underscores_between_levels() -> None:
    names = {spec.env_name for spec in settings().values()}
    assert "ORCHESTRATOR_AGENT__MAX_TURNS" in names
    assert "ORCHESTRATOR_ORCHESTRATION__OWNERSHIP__REQUIRED_LABEL" in names
    assert "ORCHESTRATOR_AGENT__MAX_CONCURRENT_AGENTS_BY_PHASE" in names


def test_other_orchestrator_variables_are_not_overrides() -> None:
    result = check(
        "---\ntracker:\n  repo: acme/widgets\n---\n",
        env={**ENV, "ORCHESTRATOR_LOG_LEVEL": "debug", "ORCHESTRATOR_DEMO_DIR": "/tmp/x"},
    )
    assert result.workflow is not None, result.problems


def test_mapping_override_from_the_environment() -> None:
    result = check(
        "---\ntracker:\n  repo: acme/widgets\n---\n",
        env={**ENV, "ORCHESTRATOR_AGENT__MAX_CONCURRENT_AGENTS_BY_PHASE": "{reviewing: 2}"},
    )
    assert result.workflow is not None, result.problems
    limits = result.workflow.policy.agent.max_concurrent_agents_by_phase
    assert dict(limits) == {"reviewing": 2}


def test_boolean_and_null_overrides_from_text() -> None:
    result = check(
        "---\ntracker:\n  repo: acme/widgets\npr:\n  draft: false\n---\n",
        env={**ENV, "ORCHESTRATOR_PR__DRAFT": "true"},
        flags={"merge.approval_label": "null", "review.enabled": "off"},
    )
    assert result.workflow is not None, result.problems
    policy = result.workflow.policy
    assert policy.pr.draft is True
    assert policy.merge.approval_label is None
    assert policy.review.enabled is False


def test_a_flag_may_carry_a_reference() -> None:
    result = check(
        "---\ntracker:\n  repo: acme/widgets\n---\n",
        env={**ENV, "DASH": "s3cr3t-dashboard"},
        flags={"server.token": "$DASH"},
    )
    assert result.workflow is not None, result.problems
    assert result.workflow.policy.server.token == "s3cr3t-dashboard"
    assert str(result.workflow.origins["server.token"]) == "flag via $DASH"
