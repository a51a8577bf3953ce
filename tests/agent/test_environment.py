"""The agent's and hooks' environment comes from an allow-list, not the daemon's whole one."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from orchestrator.agent import AgentSettings, HookSettings, TurnOutcome
from orchestrator.agent.environment import BASE_ENV, LOCALE_ENV, build_environment
from orchestrator.wiring.agents import agent_settings
from orchestrator.workflow import load_workflow

from .conftest import TOKEN, Harness

# What a daemon started by systemd or the container image may carry.
DAEMON_ENV = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "HOME": "/var/lib/orchestrator",
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "LC_TIME": "en_GB.UTF-8",
    "TERM": "xterm",
    "TZ": "UTC",
    "TMPDIR": "/var/tmp",
    "XDG_STATE_HOME": "/var/lib/orchestrator/state",
    "XDG_CONFIG_HOME": "/etc/orchestrator",
    "XDG_RUNTIME_DIR": "/run/user/999",
    "DATABASE_URL": "postgresql://orch:pw@db/orch",
    "PGPASSWORD": "pw",
    "ORCHESTRATOR_DATABASE_URL": "postgresql://orch:pw@db/orch",
    "ORCHESTRATOR_SERVER__TOKEN": "api-token",
    "GITHUB_TOKEN": TOKEN,
    "CREDENTIALS_DIRECTORY": "/run/credentials/orchestrator.service",
    "INVOCATION_ID": "5b1f0c",
    "LD_PRELOAD": "/opt/evil.so",
    "PYTHONPATH": "/opt/orchestrator",
    "OPENAI_API_KEY": "sk-daemon-has-it",
    "LC_IDENTIFICATION": "C",
    "SOME_RANDOM_DAEMON_SETTING": "1",
}
PASSED = {"PATH", "HOME", "LANG", "LC_ALL", "LC_TIME", "TERM", "TZ", "TMPDIR"}


def login_shell_names(home: Path) -> set[str]:
    """The names ``bash -lc`` sets by itself on this host (profile scripts included)."""
    done = subprocess.run(
        ["bash", "-lc", "env"],
        env={"PATH": DAEMON_ENV["PATH"], "HOME": str(home)},
        capture_output=True,
        text=True,
        check=True,
    )
    return {line.split("=", 1)[0] for line in done.stdout.splitlines() if "=" in line}


def test_the_base_allow_list_is_exactly_what_the_docs_say() -> None:
    assert frozenset({"PATH", "HOME", "TERM", "TZ", "TMPDIR"}) | LOCALE_ENV == BASE_ENV
    assert {
        "LANG",
        "LC_ALL",
        "LC_COLLATE",
        "LC_CTYPE",
        "LC_MESSAGES",
        "LC_MONETARY",
        "LC_NUMERIC",
        "LC_TIME",
    } == LOCALE_ENV


def test_only_allowed_names_of_the_daemon_environment_pass() -> None:
    built = build_environment(DAEMON_ENV, AgentSettings(command="x"), secrets=[TOKEN])
    assert built.variables == {name: DAEMON_ENV[name] for name in PASSED}
    assert set(built.withheld) == set(DAEMON_ENV) - PASSED


def test_names_allowed_by_the_settings_pass_but_credentials_never_do() -> None:
    settings = AgentSettings(
        command="x",
        env_allow=frozenset({"OPENAI_API_KEY", "GITHUB_TOKEN", "ORCHESTRATOR_DATABASE_URL"}),
        env_deny=frozenset({"TMPDIR"}),
    )
    built = build_environment(DAEMON_ENV, settings, secrets=[TOKEN])
    assert built.variables["OPENAI_API_KEY"] == "sk-daemon-has-it"
    assert "GITHUB_TOKEN" not in built.variables
    assert "ORCHESTRATOR_DATABASE_URL" not in built.variables
    assert "TMPDIR" not in built.variables


def test_a_value_holding_a_secret_is_withheld_even_under_an_allowed_name() -> None:
    built = build_environment(
        {"PATH": "/bin", "HOME": f"/home/{TOKEN}"},
        AgentSettings(command="x", extra_env={"MODEL_KEY": f"x{TOKEN}x", "OTHER": "fine"}),
        secrets=[TOKEN],
    )
    assert built.variables == {"PATH": "/bin", "OTHER": "fine"}
    assert built.withheld == ("HOME", "MODEL_KEY")


def test_a_model_key_reaches_the_agent_through_agent_env(tmp_path: Path) -> None:
    """``agent.env: {OPENAI_API_KEY: $OPENAI_API_KEY}`` is how a key is given on purpose."""
    workflow = tmp_path / "WORKFLOW.md"
    document = {
        "tracker": {"repo": "acme/widgets", "token": "$E2E_TOKEN"},
        "workspace": {"root": str(tmp_path / "ws")},
        "agent": {"preset": "command", "command": "true", "env": {"OPENAI_API_KEY": "$MODEL"}},
    }
    workflow.write_text(f"---\n{json.dumps(document)}\n---\nDo the work.\n")
    env = {"E2E_TOKEN": TOKEN, "MODEL": "sk-given-on-purpose"}
    settings = agent_settings(load_workflow(workflow, env=env).policy)
    built = build_environment(DAEMON_ENV, settings, secrets=[TOKEN])
    assert built.variables["OPENAI_API_KEY"] == "sk-given-on-purpose"
    assert "XDG_STATE_HOME" not in built.variables


def test_a_real_agent_and_its_hooks_see_only_the_allowed_environment(
    harness: Harness, tmp_path: Path
) -> None:
    agent_dump = tmp_path / "agent-env.json"
    hook_dump = tmp_path / "hook-env.txt"
    harness.base_env = {**DAEMON_ENV, "HOME": str(tmp_path)}
    harness.secrets = (TOKEN,)
    harness.hooks = HookSettings(before_run=f"env > {hook_dump}")
    result = harness.run(
        {"steps": [{"dump_env": str(agent_dump)}]},
        extra_env={"MODEL_API_KEY": "sk-from-the-policy"},
    )
    assert result.outcome is TurnOutcome.COMPLETED, result.message
    agent_env = json.loads(agent_dump.read_text())
    hook_env = dict(
        line.split("=", 1) for line in hook_dump.read_text().splitlines() if "=" in line
    )
    for env in (agent_env, hook_env):
        for name in set(DAEMON_ENV) - PASSED:
            assert name not in env, name
        assert TOKEN not in json.dumps(env)
        assert env["LANG"] == "C.UTF-8"
        assert env["HOME"] == str(tmp_path)
        assert env["TZ"] == "UTC"
        assert env["MODEL_API_KEY"] == "sk-from-the-policy"
        assert env["ORCHESTRATOR_PHASE"] == "implementing"
        # Nothing besides the allowed names, the policy's and the runner's (and the shell's own).
        unexpected = {
            name
            for name in env
            if name not in PASSED
            and name != "MODEL_API_KEY"
            and not name.startswith("ORCHESTRATOR_")
            and name not in login_shell_names(tmp_path)
        }
        assert not unexpected, unexpected
