"""Presets for codex, claude and pi: the commands they run and how their events are read."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from orchestrator.agent import (
    AgentPreset,
    AgentSettings,
    EventKind,
    TokenUsage,
    TurnOutcome,
    TurnRequest,
)
from orchestrator.agent.events import MAX_TOKEN_COUNT
from orchestrator.agent.presets import (
    ClaudeMapper,
    CodexMapper,
    EventMapper,
    PiMapper,
    build_command,
    new_mapper,
    supports_resume,
    valid_session_id,
)
from orchestrator.domain.phases import Phase

from .conftest import Harness, write_scenario

PROMPT = Path("/work/ws/.orchestrator/prompt.md")

CODEX_STREAM: list[dict[str, Any]] = [
    {"type": "thread.started", "thread_id": "0199a213-81c0-7800-8aa1-bbab2a035a53"},
    {"type": "turn.started"},
    {"type": "item.completed", "item": {"id": "item_0", "type": "reasoning", "text": "Plan"}},
    {
        "type": "item.started",
        "item": {"id": "item_1", "type": "command_execution", "command": "bash -lc ls"},
    },
    {
        "type": "item.completed",
        "item": {"id": "item_1", "type": "command_execution", "command": "bash -lc ls"},
    },
    {"type": "item.completed", "item": {"id": "item_2", "type": "agent_message", "text": "Done."}},
    {
        "type": "turn.completed",
        "usage": {"input_tokens": 24763, "cached_input_tokens": 24448, "output_tokens": 122},
    },
]

CLAUDE_STREAM: list[dict[str, Any]] = [
    {"type": "system", "subtype": "init", "session_id": "5b6f-42", "tools": ["Bash"]},
    {
        "type": "assistant",
        "session_id": "5b6f-42",
        "message": {
            "id": "msg_1",
            "content": [{"type": "text", "text": "Let me look."}],
            "usage": {
                "input_tokens": 10,
                "cache_creation_input_tokens": 200,
                "cache_read_input_tokens": 3000,
                "output_tokens": 5,
            },
        },
    },
    {
        "type": "assistant",
        "session_id": "5b6f-42",
        "message": {
            "id": "msg_1",
            "content": [{"type": "tool_use", "name": "Bash", "input": {"command": "ls"}}],
            "usage": {
                "input_tokens": 10,
                "cache_creation_input_tokens": 200,
                "cache_read_input_tokens": 3000,
                "output_tokens": 5,
            },
        },
    },
    {"type": "user", "session_id": "5b6f-42", "message": {"content": [{"type": "tool_result"}]}},
    {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "result": "All done.",
        "session_id": "5b6f-42",
        "total_cost_usd": 0.01,
        "usage": {
            "input_tokens": 20,
            "cache_creation_input_tokens": 300,
            "cache_read_input_tokens": 6000,
            "output_tokens": 50,
        },
    },
]

PI_STREAM: list[dict[str, Any]] = [
    {"type": "session", "id": "ccd569e0-4e1b", "version": 3, "cwd": "/repo"},
    {"type": "agent_start"},
    {"type": "turn_start"},
    {"type": "message_start", "message": {"role": "user", "content": [{"type": "text"}]}},
    {"type": "message_end", "message": {"role": "user", "content": []}},
    {"type": "tool_execution_start", "toolCallId": "t1", "toolName": "bash", "args": {}},
    {"type": "tool_execution_end", "toolCallId": "t1", "toolName": "bash", "isError": False},
    {
        "type": "message_end",
        "message": {
            "role": "assistant",
            "content": [{"type": "text", "text": "Finished."}],
            "stopReason": "stop",
            "usage": {"input": 100, "output": 20, "cacheRead": 1000, "cacheWrite": 50},
        },
    },
    {
        "type": "message_end",
        "message": {
            "role": "assistant",
            "content": [],
            "stopReason": "stop",
            "usage": {"input": 10, "output": 2, "cacheRead": 0, "cacheWrite": 0},
        },
    },
    {"type": "turn_end", "message": {"role": "assistant"}, "toolResults": []},
    {"type": "agent_end", "messages": []},
]


def _feed(mapper: EventMapper, stream: list[dict[str, Any]]) -> list[EventKind]:
    return [mapper.map(event).kind for event in stream]


def test_codex_events() -> None:
    mapper = CodexMapper()
    kinds = _feed(mapper, CODEX_STREAM)
    assert kinds == [
        EventKind.SESSION,
        EventKind.OTHER,
        EventKind.OTHER,
        EventKind.TOOL,
        EventKind.TOOL,
        EventKind.MESSAGE,
        EventKind.TURN_COMPLETED,
    ]
    assert mapper.session_id == "0199a213-81c0-7800-8aa1-bbab2a035a53"
    assert mapper.usage == TokenUsage(24763, 24448, 122)
    failed = mapper.map({"type": "turn.failed", "error": {"message": "rate limited"}})
    assert (failed.kind, failed.text) == (EventKind.ERROR, "quota: rate limited")
    assert mapper.failure == "quota: rate limited"


def test_claude_events_count_usage_once_per_message_and_prefer_the_total() -> None:
    mapper = ClaudeMapper()
    kinds = _feed(mapper, CLAUDE_STREAM[:-1])
    assert kinds == [EventKind.SESSION, EventKind.MESSAGE, EventKind.TOOL, EventKind.TOOL]
    # One message split over two lines is counted once.
    assert mapper.usage == TokenUsage(3210, 3000, 5)
    final = mapper.map(CLAUDE_STREAM[-1])
    assert final.kind is EventKind.TURN_COMPLETED
    assert final.text == "All done."
    assert mapper.usage == TokenUsage(6320, 6000, 50)
    assert mapper.session_id == "5b6f-42"
    error = ClaudeMapper().map({"type": "result", "subtype": "error_max_turns", "is_error": True})
    assert error.kind is EventKind.ERROR


def test_pi_events() -> None:
    mapper = PiMapper()
    kinds = _feed(mapper, PI_STREAM)
    assert kinds.count(EventKind.TOOL) == 2
    assert kinds[0] is EventKind.SESSION
    assert kinds[-1] is EventKind.TURN_COMPLETED
    assert mapper.session_id == "ccd569e0-4e1b"
    assert mapper.usage == TokenUsage(
        input_tokens=1150 + 10, cached_input_tokens=1000, output_tokens=22
    )
    aborted = mapper.map(
        {
            "type": "message_end",
            "message": {"role": "assistant", "stopReason": "error", "errorMessage": "overloaded"},
        }
    )
    assert (aborted.kind, aborted.text) == (EventKind.ERROR, "overloaded")


def test_the_contract_events() -> None:
    mapper = new_mapper(AgentPreset.COMMAND)
    assert mapper.map({"type": "session", "session_id": "s-1"}).kind is EventKind.SESSION
    assert mapper.map({"type": "message", "text": "hi"}).text == "hi"
    assert mapper.map({"type": "tool", "name": "pytest"}).kind is EventKind.TOOL
    mapper.map({"type": "usage", "input_tokens": 5, "output_tokens": True})
    assert mapper.usage == TokenUsage(5, 0, 0)
    assert mapper.map({"type": "done", "summary": "ok"}).kind is EventKind.TURN_COMPLETED
    assert mapper.map({"type": "error", "message": "x"}).kind is EventKind.ERROR
    assert mapper.map({"weird": 1}).kind is EventKind.OTHER
    assert mapper.session_id == "s-1"


def test_absurd_token_counts_are_clamped_never_raised() -> None:
    mapper = new_mapper(AgentPreset.COMMAND)
    for value in (float("inf"), float("nan"), 10**4000, 1e308, -(10**30)):
        mapper.map({"type": "usage", "input_tokens": value, "output_tokens": value})
    assert mapper.usage.input_tokens == MAX_TOKEN_COUNT
    assert mapper.usage.total_tokens == 2 * MAX_TOKEN_COUNT


@pytest.mark.parametrize("mapper", [EventMapper(), CodexMapper(), ClaudeMapper(), PiMapper()])
def test_odd_shapes_degrade_to_plain_events(mapper: EventMapper) -> None:
    for event in (
        {"type": "item.completed", "item": "not a mapping"},
        {"type": "assistant", "message": ["list"]},
        {"type": "message_end", "message": {"role": "assistant", "usage": "lots", "content": 3}},
        {"type": "turn.completed", "usage": {"input_tokens": -4, "output_tokens": "9"}},
        {"type": 12},
        {"type": "session", "id": "--dangerous-flag"},
    ):
        mapper.map(event)
    assert mapper.session_id is None
    assert mapper.usage.input_tokens >= 0


@pytest.mark.parametrize(
    ("value", "valid"),
    [
        ("0199a213-81c0-7800", True),
        ("sess_1:abc.def", True),
        ("-x", False),
        ("--resume", False),
        ("a b", False),
        ("a;rm -rf /", False),
        ("", False),
        (None, False),
        ("x" * 201, False),
    ],
)
def test_session_ids_are_plain_tokens(value: object, valid: bool) -> None:
    assert (valid_session_id(value) is not None) is valid


def test_preset_commands() -> None:
    codex = AgentSettings(preset=AgentPreset.CODEX)
    assert build_command(codex, prompt_file=PROMPT, resume_session_id=None) == (
        "codex exec --json --sandbox danger-full-access -"
    )
    assert build_command(codex, prompt_file=PROMPT, resume_session_id="th-1") == (
        "codex exec --json --sandbox danger-full-access resume th-1 -"
    )
    full = AgentSettings(preset=AgentPreset.CODEX, permissions="full")
    assert build_command(full, prompt_file=PROMPT, resume_session_id=None) == (
        "codex exec --json --dangerously-bypass-approvals-and-sandbox -"
    )
    claude = AgentSettings(preset="claude", extra_args=("--model", "opus"))
    assert build_command(claude, prompt_file=PROMPT, resume_session_id=None) == (
        "claude -p --output-format stream-json --verbose "
        "--allowedTools Bash,Edit,Write,Read,Glob,Grep --model opus"
    )
    assert build_command(claude, prompt_file=PROMPT, resume_session_id="s-9").endswith(
        "--resume s-9"
    )
    claude_full = AgentSettings(preset="claude", permissions="full")
    assert "--permission-mode bypassPermissions" in build_command(
        claude_full, prompt_file=PROMPT, resume_session_id=None
    )
    pi = AgentSettings(preset="pi", command="/opt/pi/bin/pi")
    # The prompt goes on stdin only: pi joins stdin and @file, so it would get it twice.
    assert build_command(pi, prompt_file=PROMPT, resume_session_id=None) == (
        "/opt/pi/bin/pi --mode json"
    )
    assert build_command(pi, prompt_file=PROMPT, resume_session_id="p-1") == (
        "/opt/pi/bin/pi --mode json --session p-1"
    )
    command = AgentSettings(command="my-agent --fast")
    assert build_command(command, prompt_file=PROMPT, resume_session_id="s") == "my-agent --fast"
    hostile = build_command(codex, prompt_file=PROMPT, resume_session_id="x; rm -rf /")
    assert hostile == "codex exec --json --sandbox danger-full-access -"
    assert supports_resume(AgentPreset.CLAUDE) and not supports_resume(AgentPreset.COMMAND)


def _fake_agent(tmp_path: Path, name: str, stream: list[dict[str, Any]]) -> tuple[str, Path]:
    """An executable that records its arguments and plays ``stream`` through the scripted agent."""
    scenario = write_scenario(
        tmp_path / "fakes", {"steps": [{"emit": event} for event in stream]}, f"{name}.json"
    )
    argv_file = tmp_path / "fakes" / f"{name}.argv"
    program = tmp_path / "fakes" / name
    program.write_text(
        "#!/bin/sh\n"
        f'printf "%s\\n" "$@" > {shlex.quote(str(argv_file))}\n'
        f"exec {shlex.quote(sys.executable)} -m orchestrator_sim.agent "
        f"--scenario {shlex.quote(str(scenario))}\n"
    )
    program.chmod(0o755)
    return str(program), argv_file


CLAUDE_FLAGS = (
    "-p",
    "--output-format",
    "stream-json",
    "--verbose",
    "--allowedTools",
    "Bash,Edit,Write,Read,Glob,Grep",
)


@pytest.mark.parametrize(
    ("preset", "stream", "session", "usage", "argv_first", "argv_resumed"),
    [
        (
            "codex",
            CODEX_STREAM,
            "0199a213-81c0-7800-8aa1-bbab2a035a53",
            TokenUsage(24763, 24448, 122),
            ["exec", "--json", "--sandbox", "danger-full-access", "-"],
            [
                "exec",
                "--json",
                "--sandbox",
                "danger-full-access",
                "resume",
                "0199a213-81c0-7800-8aa1-bbab2a035a53",
                "-",
            ],
        ),
        (
            "claude",
            CLAUDE_STREAM,
            "5b6f-42",
            TokenUsage(6320, 6000, 50),
            [*CLAUDE_FLAGS],
            [*CLAUDE_FLAGS, "--resume", "5b6f-42"],
        ),
        (
            "pi",
            PI_STREAM,
            "ccd569e0-4e1b",
            TokenUsage(1160, 1000, 22),
            ["--mode", "json"],
            ["--mode", "json", "--session", "ccd569e0-4e1b"],
        ),
    ],
)
def test_a_preset_turn_and_its_continuation(
    harness: Harness,
    tmp_path: Path,
    preset: str,
    stream: list[dict[str, Any]],
    session: str,
    usage: TokenUsage,
    argv_first: list[str],
    argv_resumed: list[str],
) -> None:
    program, argv_file = _fake_agent(tmp_path, preset, stream)
    workspace = harness.workspace()
    settings = AgentSettings(preset=preset, command=program, grace_period_ms=300)
    runner = harness.runner(settings)
    prompt_arg = f"@{workspace.result_dir / 'prompt.md'}"

    def argv() -> list[str]:
        return [a.replace(prompt_arg, "@PROMPT") for a in argv_file.read_text().splitlines()]

    first = runner.run(TurnRequest(workspace=workspace, prompt="go", phase=Phase.IMPLEMENTING))
    assert first.outcome is TurnOutcome.COMPLETED, first.message
    assert first.session_id == session
    assert first.usage == usage
    assert first.events == len(stream)
    assert argv() == argv_first
    second = runner.run(
        TurnRequest(
            workspace=workspace,
            prompt="continue",
            phase=Phase.IMPLEMENTING,
            attempt=2,
            resume_session_id=first.session_id,
        )
    )
    assert second.outcome is TurnOutcome.COMPLETED
    assert argv() == argv_resumed
    assert second.usage == usage
