"""Wiring a daemon that runs as a GitHub App: its credential, and what agents never get."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from orchestrator.agent.environment import AgentEnvironment
from orchestrator.github.credentials import AppInstallationTokens, StaticToken
from orchestrator.wiring.agents import agent_settings
from orchestrator.wiring.credentials import (
    agent_secrets,
    credential_key,
    key_folder,
    policy_credentials,
)
from orchestrator.wiring.policy_view import WiringError
from orchestrator.workflow import load_workflow
from orchestrator.workflow.schema import Policy


def pem() -> str:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    ).decode()


def policy(
    tmp_path: Path, tracker: str, env: dict[str, str] | None = None, more: str = ""
) -> Policy:
    path = tmp_path / "WORKFLOW.md"
    path.write_text(
        f"---\ntracker:\n  repo: acme/widgets\n  endpoint: http://127.0.0.1:9\n{tracker}"
        f'agent:\n  preset: command\n  command: "true"\n{more}---\nGo.\n',
        encoding="utf-8",
    )
    return load_workflow(path, env=env or {}).policy


def test_a_key_file_makes_app_credentials_and_hides_its_folder(tmp_path: Path) -> None:
    keys = tmp_path / "keys"
    keys.mkdir()
    (keys / "app.pem").write_text(pem(), encoding="utf-8")
    app = policy(tmp_path, "  auth: app\n  app_id: 42\n  private_key_file: keys/app.pem\n")

    credentials = policy_credentials(app)

    assert isinstance(credentials, AppInstallationTokens)
    assert credentials.app_id == 42
    assert key_folder(app) == keys
    assert credential_key(app) == ("app", 42, str(keys / "app.pem"), None)


def test_a_pem_in_a_variable_is_withheld_from_agents(tmp_path: Path) -> None:
    key = pem()
    app = policy(
        tmp_path,
        "  auth: app\n  app_id: 42\n  private_key_file: $APP_KEY\n",
        env={"APP_KEY": key},
    )
    environment = AgentEnvironment(
        agent_settings(app),
        base={"PATH": "/usr/bin", "APP_KEY": key, "SAME_KEY_ELSEWHERE": key},
        secrets=agent_secrets(app),
    )

    built = environment.build()

    assert key_folder(app) is None
    assert "APP_KEY" not in built.variables
    assert "SAME_KEY_ELSEWHERE" not in built.variables
    assert all(key.splitlines()[1] not in value for value in built.variables.values())


def test_a_token_policy_keeps_its_static_token(tmp_path: Path) -> None:
    token = policy(tmp_path, "  token: $GH\n", env={"GH": "ghp_" + "a" * 36})

    credentials = policy_credentials(token)

    assert isinstance(credentials, StaticToken)
    assert credentials.token() == "ghp_" + "a" * 36
    assert key_folder(token) is None


def test_an_unreadable_key_stops_the_wiring_with_the_key_named(tmp_path: Path) -> None:
    keys = tmp_path / "keys"
    keys.mkdir()
    (keys / "app.pem").write_text(pem(), encoding="utf-8")
    app = policy(tmp_path, "  auth: app\n  app_id: 42\n  private_key_file: keys/app.pem\n")
    (keys / "app.pem").unlink()

    with pytest.raises(WiringError, match=r"tracker\.private_key_file: cannot read the key file"):
        policy_credentials(app)


def test_a_sandboxed_agent_cannot_read_the_apps_key(tmp_path: Path) -> None:
    from orchestrator.agent.sandbox import bwrap_argv
    from orchestrator.wiring.agents import build_agent_wiring
    from tests.agent.test_sandbox import require_bwrap

    require_bwrap()
    keys = tmp_path / "keys"
    keys.mkdir()
    key = pem()
    (keys / "app.pem").write_text(key, encoding="utf-8")
    workspaces = tmp_path / "workspaces"
    app = policy(
        tmp_path,
        "  auth: app\n  app_id: 42\n  private_key_file: keys/app.pem\n",
        more=f"  sandbox: bwrap\nworkspace:\n  root: {workspaces}\n"
        f"rollout:\n  kill_switch_file: {tmp_path / 'state' / 'STOP'}\n",
    )
    wiring = build_agent_wiring(
        app,
        secrets=agent_secrets(app),
        on_event=lambda _run, _event: None,
        db_url=f"sqlite:///{tmp_path / 'state' / 'orchestrator.db'}",
    )
    sandbox = wiring.settings.sandbox
    assert sandbox is not None and keys in sandbox.hidden
    workspace = workspaces / "acme_widgets_1"
    workspace.mkdir(parents=True)
    argv = bwrap_argv(
        sandbox.program,
        ["cat", str(keys / "app.pem")],
        cwd=workspace,
        writable=[workspace],
        hidden=[keys],
    )

    key_file = str(keys / "app.pem")
    plain = subprocess.run(["cat", key_file], capture_output=True, text=True, check=True)
    boxed = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)

    assert key.splitlines()[1] in plain.stdout
    assert boxed.returncode != 0
    assert key.splitlines()[1] not in boxed.stdout
