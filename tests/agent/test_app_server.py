"""The ``codex-app-server`` preset: the JSON-RPC client through the runner.

The recorded sessions (tests/fixtures/agents/codex-app-server-0.169.0, real
``codex app-server`` transcripts) are played back by tests/support/replay_app_server.py,
which speaks the server's side and checks that the client sends what the real
client sent; hostile servers are small scripts that break the protocol.
"""

from __future__ import annotations

import json
import shlex
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from orchestrator.agent import TurnOutcome, TurnRequest, TurnResult
from orchestrator.agent.app_server import AppServerClient
from orchestrator.agent.events import EventKind, TokenUsage
from orchestrator.agent.presets import (
    build_command,
    new_mapper,
    permissions_summary,
    supports_resume,
)
from orchestrator.agent.settings import AgentPreset, AgentSettings
from orchestrator.domain.phases import Phase

from .conftest import SIM_AGENT, Harness, write_scenario

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "agents"
TRANSCRIPTS = FIXTURES / "codex-app-server-0.169.0"
REPLAY = Path(__file__).resolve().parents[1] / "support" / "replay_app_server.py"
PROMPT = "Add src/feature.py and commit it."


def settings(command: str, **values: Any) -> AgentSettings:
    base: dict[str, Any] = {
        "preset": "codex-app-server",
        "command": command,
        "stall_timeout_ms": 20_000,
        "turn_timeout_ms": 60_000,
        "grace_period_ms": 300,
    }
    base.update(values)
    return AgentSettings(**base)


def run(
    harness: Harness,
    command: str,
    *,
    resume: str | None = None,
    baseline: TokenUsage | None = None,
    **values: Any,
) -> TurnResult:
    runner = harness.runner(settings(command, **values))
    return runner.run(
        TurnRequest(
            workspace=harness.workspace(),
            prompt=PROMPT,
            phase=Phase.IMPLEMENTING,
            resume_session_id=resume,
            usage_baseline=baseline,
        )
    )


def replay(
    harness: Harness, transcript: Path, *, speed: float = 20.0, **kwargs: Any
) -> tuple[TurnResult, list[dict[str, Any]]]:
    """Play ``transcript``'s server side to the client; the turn and what the client sent."""
    record = harness.tmp / f"{transcript.stem}.sent.json"
    command = " ".join(
        shlex.quote(p)
        for p in (sys.executable, str(REPLAY), str(transcript), "--speed", str(speed))
    )
    env = {"REPLAY_RECORD": str(record)}
    result = run(harness, command, extra_env=env, **kwargs)
    sent = json.loads(record.read_text(encoding="utf-8")) if record.exists() else []
    return result, sent


def script(harness: Harness, name: str, body: str) -> str:
    """A hostile stand-in server: a Python program, as a shell command."""
    path = harness.tmp / f"{name}.py"
    path.write_text(body, encoding="utf-8")
    return f"{shlex.quote(sys.executable)} {shlex.quote(str(path))}"


def transcript(harness: Harness, name: str, lines: list[tuple[str, dict[str, Any]]]) -> Path:
    path = harness.tmp / f"{name}.jsonl"
    with path.open("w", encoding="utf-8") as handle:
        for side, message in lines:
            handle.write(json.dumps({"t": 0, "from": side, "message": message}) + "\n")
    return path


def _methods(sent: list[dict[str, Any]]) -> list[str]:
    return [m.get("method", "answer") for m in sent]


# --------------------------------------------------------------- recorded sessions


def test_a_recorded_session_completes_with_its_thread_usage_and_message(
    harness: Harness,
) -> None:
    result, sent = replay(harness, TRANSCRIPTS / "success.jsonl")
    assert result.outcome is TurnOutcome.COMPLETED, result.message
    assert result.exit_code == 0, "the replayer exits at the end of its input"
    assert result.session_id is not None and len(result.session_id) == 36
    assert result.usage == TokenUsage(3000, 600, 150)
    assert result.last_message == "Added src/feature.py and committed it."
    assert _methods(sent) == ["initialize", "initialized", "thread/start", "turn/start"]
    workspace = str(harness.workspace().path)
    start, turn = sent[2]["params"], sent[3]["params"]
    assert start == {
        "cwd": workspace,
        "approvalPolicy": "never",
        "sandbox": "danger-full-access",
    }
    assert turn["threadId"] == result.session_id
    assert turn["input"] == [{"type": "text", "text": PROMPT, "text_elements": []}]
    assert turn["cwd"] == workspace
    assert turn["sandboxPolicy"] == {"type": "dangerFullAccess"}


def test_a_continuation_resumes_the_thread_and_counts_only_its_own_tokens(
    harness: Harness,
) -> None:
    first, _ = replay(harness, TRANSCRIPTS / "resume_turn1.jsonl")
    assert first.outcome is TurnOutcome.COMPLETED, first.message
    assert first.usage == TokenUsage(2000, 400, 100)
    second, sent = replay(
        harness,
        TRANSCRIPTS / "resume_turn2.jsonl",
        resume=first.session_id,
        baseline=first.usage,
    )
    assert second.outcome is TurnOutcome.COMPLETED, second.message
    assert _methods(sent) == ["initialize", "initialized", "thread/resume", "turn/start"]
    assert sent[2]["params"]["threadId"] == first.session_id
    assert second.session_id == first.session_id
    # The server reports the thread's running total (4000/800/200).
    assert second.usage == TokenUsage(2000, 400, 100)


def test_a_refused_model_api_fails_the_turn_naming_the_cause(harness: Harness) -> None:
    result, _ = replay(harness, TRANSCRIPTS / "unauthorized.jsonl")
    assert result.outcome is TurnOutcome.FAILED
    assert result.message.startswith("codex-app-server: auth: unexpected status 401 Unauthorized")


# ----------------------------------------------------------------- the protocol


def test_approval_requests_are_answered_at_once_and_the_turn_goes_on(harness: Harness) -> None:
    answer = {"id": 0, "result": {}}
    path = transcript(
        harness,
        "approvals",
        [
            ("client", {"id": 1, "method": "initialize"}),
            ("server", {"id": 1, "result": {"userAgent": "x"}}),
            ("client", {"method": "initialized"}),
            ("client", {"id": 2, "method": "thread/start"}),
            ("server", {"id": 2, "result": {"thread": {"id": "thread-1"}}}),
            ("client", {"id": 3, "method": "turn/start"}),
            ("server", {"id": 3, "result": {"turn": {"id": "turn-1", "status": "inProgress"}}}),
            (
                "server",
                {
                    "id": 90,
                    "method": "item/commandExecution/requestApproval",
                    "params": {
                        "threadId": "thread-1",
                        "turnId": "turn-1",
                        "itemId": "i",
                        "command": "git commit",
                    },
                },
            ),
            ("client", answer),
            (
                "server",
                {
                    "id": "f",
                    "method": "item/fileChange/requestApproval",
                    "params": {"threadId": "thread-1", "turnId": "turn-1", "itemId": "j"},
                },
            ),
            ("client", answer),
            (
                "server",
                {
                    "id": 92,
                    "method": "item/tool/requestUserInput",
                    "params": {"questions": [{"id": "q"}]},
                },
            ),
            ("client", answer),
            ("server", {"id": 93, "method": "account/chatgptAuthTokens/refresh", "params": {}}),
            ("client", answer),
            (
                "server",
                {
                    "method": "turn/completed",
                    "params": {
                        "threadId": "thread-1",
                        "turn": {"id": "turn-1", "status": "completed"},
                    },
                },
            ),
        ],
    )
    result, sent = replay(harness, path)
    assert result.outcome is TurnOutcome.COMPLETED, result.message
    answers = {m["id"]: m for m in sent if "method" not in m}
    assert answers[90]["result"] == {"decision": "accept"}
    assert answers["f"]["result"] == {"decision": "accept"}
    assert answers[92]["result"] == {"answers": {}}
    assert answers[93]["error"]["code"] == -32601
    assert result.session_id == "thread-1"


def test_a_refused_thread_start_fails_naming_the_request(harness: Harness) -> None:
    path = transcript(
        harness,
        "refused",
        [
            ("client", {"id": 1, "method": "initialize"}),
            ("server", {"id": 1, "result": {}}),
            ("client", {"method": "initialized"}),
            ("client", {"id": 2, "method": "thread/start"}),
            ("server", {"id": 2, "error": {"code": -32600, "message": "cwd is not a directory"}}),
        ],
    )
    result, _ = replay(harness, path)
    assert result.outcome is TurnOutcome.FAILED
    assert result.message == (
        "codex-app-server: error: thread/start was refused: cwd is not a directory"
    )


def test_a_thread_that_cannot_be_resumed_is_replaced_by_a_new_one(harness: Harness) -> None:
    path = transcript(
        harness,
        "gone",
        [
            ("client", {"id": 1, "method": "initialize"}),
            ("server", {"id": 1, "result": {}}),
            ("client", {"method": "initialized"}),
            ("client", {"id": 2, "method": "thread/resume"}),
            ("server", {"id": 2, "error": {"code": -32600, "message": "no rollout found"}}),
            ("client", {"id": 3, "method": "thread/start"}),
            ("server", {"id": 3, "result": {"thread": {"id": "thread-2"}}}),
            ("client", {"id": 4, "method": "turn/start"}),
            (
                "server",
                {
                    "method": "turn/completed",
                    "params": {"threadId": "thread-2", "turn": {"status": "completed"}},
                },
            ),
        ],
    )
    result, _ = replay(harness, path, resume="thread-1")
    assert result.outcome is TurnOutcome.COMPLETED, result.message
    assert result.session_id == "thread-2"


def test_a_server_that_exits_mid_turn_fails_with_its_last_words(harness: Harness) -> None:
    command = script(
        harness,
        "quits",
        "import sys\n"
        "sys.stdin.readline()\n"
        "print('not json at all', flush=True)\n"
        "print('[1, 2]', flush=True)\n"
        "sys.stderr.write('panicked at codex-rs/core: boom\\n')\n"
        "sys.exit(101)\n",
    )
    result = run(harness, command)
    assert result.outcome is TurnOutcome.FAILED
    assert result.message == (
        "codex-app-server ended before the turn did (exit code 101): "
        "panicked at codex-rs/core: boom"
    )
    assert result.malformed_lines == 2


def test_a_silent_server_is_ended_by_the_stall_watchdog(harness: Harness) -> None:
    command = script(harness, "silent", "import time\ntime.sleep(60)\n")
    started = time.monotonic()
    result = run(harness, command, stall_timeout_ms=1_000)
    assert result.outcome is TurnOutcome.STALLED, result.message
    assert time.monotonic() - started < 10


def test_a_server_that_never_reads_fails_instead_of_blocking(harness: Harness) -> None:
    # It answers initialize, then floods requests (each refusal names the long method)
    # without reading the answers: more than MAX_PENDING_BYTES wait.
    command = script(
        harness,
        "deaf",
        "import json, sys, time\n"
        "sys.stdin.readline()\n"
        "print(json.dumps({'id': 1, 'result': {}}), flush=True)\n"
        "line = json.dumps({'id': 5, 'method': 'x' * 60000})\n"
        "for i in range(120):\n"
        "    print(line, flush=True)\n"
        "time.sleep(60)\n",
    )
    result = run(harness, command, stall_timeout_ms=10_000)
    assert result.outcome is TurnOutcome.FAILED, result.message
    assert "stopped reading its input" in result.message


def test_cancel_ends_a_running_turn(harness: Harness) -> None:
    command = script(
        harness,
        "busy",
        "import json, sys, time\n"
        "sys.stdin.readline()\n"
        "print(json.dumps({'id': 1, 'result': {}}), flush=True)\n"
        "while True:\n"
        "    print(json.dumps({'method': 'item/agentMessage/delta', 'params': {}}), flush=True)\n"
        "    time.sleep(0.1)\n",
    )
    turn = harness.runner(settings(command)).prepare(
        TurnRequest(workspace=harness.workspace(), prompt=PROMPT, phase=Phase.IMPLEMENTING)
    )
    timer = threading.Timer(1.0, turn.cancel, args=("shutdown",))
    timer.start()
    result = turn.run()
    timer.join()
    assert result.outcome is TurnOutcome.CANCELLED
    assert result.message == "cancelled: shutdown"


def test_garbled_messages_are_events_not_crashes() -> None:
    client = AppServerClient(prompt="p", cwd=Path("/w"))
    first = client.outgoing()
    assert json.loads(first[0])["method"] == "initialize"
    for junk in (
        {},
        {"id": 1},
        {"id": [1], "result": {}},
        {"method": 5},
        {"method": "turn/completed", "params": "x"},
        {"id": None, "method": "item/fileChange/requestApproval"},
        {"method": "thread/tokenUsage/updated", "params": {"tokenUsage": {"total": "many"}}},
        {"method": "error", "params": {"error": {"message": 7}, "willRetry": True}},
    ):
        event = client.map(junk)
        assert event.kind in (EventKind.OTHER, EventKind.ERROR, EventKind.TURN_COMPLETED)
    # A turn/completed without a turn counts: the turn is over either way.
    assert client.turn_over


def test_usage_events_are_differences_and_retries_are_no_progress() -> None:
    client = AppServerClient(TokenUsage(100, 0, 10), prompt="p", cwd=Path("/w"))

    def usage(total: int) -> dict[str, Any]:
        breakdown = {"inputTokens": total, "cachedInputTokens": 0, "outputTokens": total // 10}
        return {
            "method": "thread/tokenUsage/updated",
            "params": {"tokenUsage": {"total": breakdown}},
        }

    assert client.map(usage(100)).usage == TokenUsage()
    assert client.map(usage(300)).usage == TokenUsage(200, 0, 20)
    assert client.usage == TokenUsage(200, 0, 20)
    retry = client.map(
        {
            "method": "error",
            "params": {"error": {"message": "Reconnecting... 1/5"}, "willRetry": True},
        }
    )
    assert retry.no_progress and retry.text == "error: Reconnecting... 1/5"


def test_the_command_is_used_as_written_with_extra_args_appended() -> None:
    default = AgentSettings(preset=AgentPreset.CODEX_APP_SERVER)
    assert build_command(default, prompt_file=Path("p"), resume_session_id="t") == (
        "codex app-server"
    )
    symphony = AgentSettings(
        preset=AgentPreset.CODEX_APP_SERVER,
        command="npx -y @openai/codex@0.169.0 app-server",
        extra_args=("-c", "model=gpt-5.5"),
    )
    assert build_command(symphony, prompt_file=Path("p"), resume_session_id=None) == (
        "npx -y @openai/codex@0.169.0 app-server -c model=gpt-5.5"
    )


# ------------------------------------------------- the scripted app-server agent


def sim(harness: Harness, scenario: dict[str, Any], name: str) -> str:
    path = write_scenario(harness.tmp / "scenarios", scenario, f"{name}.json")
    return f"{SIM_AGENT} --scenario {shlex.quote(str(path))} --protocol app-server"


def run_sim(harness: Harness, command: str, **kwargs: Any) -> TurnResult:
    """Run the scripted agent of this checkout (the agent's environment drops PYTHONPATH)."""
    return run(harness, command, extra_env={"PYTHONPATH": str(ROOT)}, **kwargs)


def test_the_scripted_app_server_commits_and_reports(harness: Harness) -> None:
    command = sim(
        harness,
        {
            "steps": [
                {"message": "Working on it."},
                {"events": 2},
                {"write": {"path": "src/feature.py", "content": "x = 1\n"}},
                {"commit": "Add the feature"},
                {"usage": {"input_tokens": 500, "cached_input_tokens": 100, "output_tokens": 40}},
                {"pr_description": "## Summary\n\nAdds the feature.\n"},
                {"save_prompt": ".orchestrator/seen-prompt.txt"},
                {"message": "Done."},
            ]
        },
        "commits",
    )
    result = run_sim(harness, command)
    assert result.outcome is TurnOutcome.COMPLETED, result.message
    assert result.committed and result.new_commits == 1
    assert result.usage == TokenUsage(500, 100, 40)
    assert result.session_id == f"sim-thread-{result.run_id}"
    assert result.last_message == "Done."
    assert result.results.pr_description is not None
    seen = harness.workspace().path / ".orchestrator" / "seen-prompt.txt"
    assert seen.read_text() == PROMPT

    more = sim(harness, {"steps": [{"commit": {"message": "More", "allow_empty": True}}]}, "more")
    again = run_sim(harness, more, resume=result.session_id, baseline=result.usage)
    assert again.outcome is TurnOutcome.COMPLETED, again.message
    assert again.session_id == result.session_id


def test_the_scripted_app_server_failing_or_crashing_fails_the_turn(harness: Harness) -> None:
    failed = run_sim(harness, sim(harness, {"steps": [{"message": "no"}], "exit_code": 3}, "fails"))
    assert failed.outcome is TurnOutcome.FAILED
    assert failed.message == ("codex-app-server: error: the scripted turn failed (exit code 3)")
    crashed = run_sim(harness, sim(harness, {"steps": [{"crash": "segfault"}]}, "crashes"))
    assert crashed.outcome is TurnOutcome.FAILED
    assert crashed.message == "codex-app-server ended before the turn did (exit code 1): segfault"


def test_a_raw_approval_request_from_the_scripted_server_is_answered(harness: Harness) -> None:
    request = {
        "id": 7,
        "method": "item/commandExecution/requestApproval",
        "params": {"command": "git push"},
    }
    result = run_sim(harness, sim(harness, {"steps": [{"emit": request}]}, "asks"))
    assert result.outcome is TurnOutcome.COMPLETED, result.message


def test_the_preset_resumes_and_has_no_stream_mapper_of_its_own() -> None:
    assert supports_resume(AgentPreset.CODEX_APP_SERVER)
    with pytest.raises(ValueError, match="codex-app-server has no stream mapper"):
        new_mapper(AgentPreset.CODEX_APP_SERVER)
    summary = permissions_summary(
        AgentSettings(preset=AgentPreset.CODEX_APP_SERVER), sandboxed=True
    )
    assert summary.startswith("edit files, run commands and commit in its workspace")
