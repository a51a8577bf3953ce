"""The presets against the real CLIs' recorded output (tests/fixtures/agents/).

Each capture is replayed by tests/support/replay_agent.py (its stdout lines at
the recorded pace, faster where the test says so; its stderr; its exit code)
through the agent runner with the preset's own mapper and command line, so the
outcome, reason, usage, cost and session are judged on what Codex 0.169.0,
Claude Code 2.1.197 and Pi 0.73.1 really print.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

from orchestrator.agent import TurnOutcome, TurnRequest, TurnResult
from orchestrator.agent.events import TokenUsage
from orchestrator.agent.settings import AgentSettings
from orchestrator.domain.phases import Phase

from .conftest import Harness

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "agents"
REPLAY = Path(__file__).resolve().parents[1] / "support" / "replay_agent.py"
CODEX = FIXTURES / "codex-0.169.0"
CLAUDE = FIXTURES / "claude-2.1.197"
PI = FIXTURES / "pi-0.73.1"


def replay(
    harness: Harness,
    preset: str,
    folder: Path,
    scenario: str,
    *,
    speed: float = 20.0,
    baseline: TokenUsage | None = None,
    resume: str | None = None,
    **settings: Any,
) -> tuple[TurnResult, dict[str, Any]]:
    """Run one recorded capture through the preset; the turn and what the CLI was given."""
    record = harness.tmp / f"{preset}-{scenario}.argv.json"
    command = " ".join(
        shlex.quote(part)
        for part in (sys.executable, str(REPLAY), str(folder), scenario, "--speed", str(speed))
    )
    values: dict[str, Any] = {
        "preset": preset,
        "command": command,
        "stall_timeout_ms": 20_000,
        "turn_timeout_ms": 60_000,
        "grace_period_ms": 300,
        "extra_env": {"REPLAY_RECORD": str(record)},
    }
    values.update(settings)
    runner = harness.runner(AgentSettings(**values))
    result = runner.run(
        TurnRequest(
            workspace=harness.workspace(),
            prompt="Add src/feature.py and commit it.",
            phase=Phase.IMPLEMENTING,
            resume_session_id=resume,
            usage_baseline=baseline,
        )
    )
    given = json.loads(record.read_text(encoding="utf-8")) if record.exists() else {}
    return result, given


# ------------------------------------------------------------------ codex


def test_codex_success_reports_its_thread_and_usage(harness: Harness) -> None:
    result, given = replay(harness, "codex", CODEX, "success")
    assert result.outcome is TurnOutcome.COMPLETED, result.message
    assert result.session_id is not None and len(result.session_id) == 36
    assert result.usage.output_tokens > 0
    assert given["argv"][:4] == ["exec", "--json", "--sandbox", "danger-full-access"]
    assert given["stdin"].startswith("Add src/feature.py")


def test_a_resumed_codex_turn_records_only_its_own_tokens(harness: Harness) -> None:
    first, _ = replay(harness, "codex", CODEX, "resume_turn1")
    assert first.usage == TokenUsage(2000, 400, 100)
    second, given = replay(
        harness, "codex", CODEX, "resume_turn2", baseline=first.usage, resume=first.session_id
    )
    # turn.completed says 4000/800/200: the thread's running total, not this turn's.
    assert second.usage == TokenUsage(2000, 400, 100)
    assert given["argv"][-3:] == ["resume", first.session_id, "-"]


def test_codex_refused_by_its_api_fails_naming_the_cause(harness: Harness) -> None:
    result, _ = replay(harness, "codex", CODEX, "unauthorized")
    assert result.outcome is TurnOutcome.FAILED
    assert "auth: unexpected status 401 Unauthorized" in result.message


def test_codex_without_network_stalls_naming_the_network_not_the_turn_timeout(
    harness: Harness,
) -> None:
    # The capture: "Reconnecting... waiting for network" at 3.6, 11.7, 24.8, 48.0 and 91.1 s,
    # and no exit. At 10x, those lines come every 0.8 to 4.3 s; the stall limit is 3 s.
    result, _ = replay(harness, "codex", CODEX, "no_network", speed=10.0, stall_timeout_ms=3_000)
    assert result.outcome is TurnOutcome.STALLED, result.message
    assert result.message.startswith("stalled: no progress for 3000 ms")
    assert "last error: network: Reconnecting... waiting for network" in result.message
    assert result.duration_s < 10


# ----------------------------------------------------------------- claude


def test_claude_success_records_usage_and_cost(harness: Harness) -> None:
    result, given = replay(harness, "claude", CLAUDE, "success")
    assert result.outcome is TurnOutcome.COMPLETED, result.message
    assert result.cost_usd is not None and result.cost_usd > 0
    assert result.usage.input_tokens > 0 and result.session_id is not None
    assert "--allowedTools" in given["argv"]


def test_claude_denied_tools_fail_the_turn_naming_them(harness: Harness) -> None:
    result, _ = replay(harness, "claude", CLAUDE, "permission_denied")
    assert result.outcome is TurnOutcome.FAILED
    assert result.message.startswith("claude was refused the tools Bash and made no commit")


def test_claude_with_a_bad_key_fails_with_its_message(harness: Harness) -> None:
    result, _ = replay(harness, "claude", CLAUDE, "unauthorized")
    assert result.outcome is TurnOutcome.FAILED
    assert "Invalid API key" in result.message


# --------------------------------------------------------------------- pi


def test_pi_gets_the_prompt_once_and_resumes_its_session(harness: Harness) -> None:
    result, given = replay(harness, "pi", PI, "success")
    assert result.outcome is TurnOutcome.COMPLETED, result.message
    assert given["argv"] == ["--mode", "json"]
    assert given["stdin"].count("Add src/feature.py") == 1
    assert result.cost_usd is not None and result.usage.output_tokens > 0
    again, given = replay(harness, "pi", PI, "resume_turn2", resume=result.session_id)
    assert again.outcome is TurnOutcome.COMPLETED, again.message
    assert given["argv"] == ["--mode", "json", "--session", result.session_id]


def test_pi_exiting_0_after_a_401_is_a_failed_turn_with_the_reason(harness: Harness) -> None:
    result, _ = replay(harness, "pi", PI, "unauthorized")
    assert result.exit_code == 0
    assert result.outcome is TurnOutcome.FAILED
    assert result.message.startswith("pi: 401")
    assert "invalid x-api-key" in result.message


def test_pi_retrying_a_server_error_is_no_progress_and_ends_failed(harness: Harness) -> None:
    # Pi retries at 2, 4 and 8 s, then gives up and exits 0: each retry is no progress,
    # so with a 1.5 s stall limit at 5x (gaps up to 1.6 s) the stall watchdog fires first.
    result, _ = replay(harness, "pi", PI, "server_error", speed=5.0, stall_timeout_ms=1_500)
    assert result.outcome in (TurnOutcome.STALLED, TurnOutcome.FAILED), result.message
    assert "500" in result.message or "retry" in result.message.lower()
    finished, _ = replay(harness, "pi", PI, "server_error", speed=20.0)
    assert finished.outcome is TurnOutcome.FAILED
    assert finished.message.startswith("pi: ")


def test_a_nonzero_exit_names_the_last_line_of_stderr(harness: Harness, tmp_path: Path) -> None:
    fake = tmp_path / "no-key"
    fake.mkdir()
    (fake / "captures.json").write_text(json.dumps({"run": {"exit_code": 1}}))
    (fake / "run.jsonl").write_text("")
    (fake / "run.stderr.txt").write_text("Warning: something\nNo API key found for anthropic.\n\n")
    result, _ = replay(harness, "pi", fake, "run")
    assert result.outcome is TurnOutcome.FAILED
    assert result.message == "agent exited with code 1: No API key found for anthropic."
