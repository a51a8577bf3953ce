"""A credential written into the tracker's endpoint is shown nowhere the daemon writes."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

SECRET = "s3cr3t-in-the-endpoint-0042"


def closed_port() -> int:
    """A local port nothing listens on (bound, then given back)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize("log_format", ["json", "console"])
def test_a_failed_preflight_never_prints_the_endpoint_credential(
    tmp_path: Path, log_format: str
) -> None:
    endpoint = f"http://x-access-token:{SECRET}@127.0.0.1:{closed_port()}/api/v3"
    policy = {
        "tracker": {"repo": "acme/app", "endpoint": endpoint, "token": "$TRACKER_TOKEN"},
        "workspace": {"root": str(tmp_path / "workspaces")},
        "agent": {"preset": "command", "command": "true"},
        "rollout": {"mode": "observe", "preflight_required": True},
        "database": {"url": f"sqlite:///{tmp_path / 'orchestrator.db'}"},
    }
    workflow = tmp_path / "WORKFLOW.md"
    workflow.write_text(f"---\n{json.dumps(policy)}\n---\nGo.\n", encoding="utf-8")
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
        "HOME": str(tmp_path),
        "TRACKER_TOKEN": "ghp_" + "Z" * 36,
    }
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "from orchestrator.cli import main; main()",
            "--log-format",
            log_format,
            "--log-level",
            "debug",
            "run",
            str(workflow),
            "--port",
            "0",
        ],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    output = done.stdout + done.stderr
    assert done.returncode != 0, output
    assert "Error: preflight:" in output, output
    assert SECRET not in output
    assert "http://***@127.0.0.1:" in output
