"""Replicas that start together all run ``orchestrator db upgrade``: the race ends at head.

This is what deploy/README.md promises for ``ExecStartPre=`` with several
replicas: a run that loses fails and rolls back, its restart finds the schema
current, and the database ends with one version row at head.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from orchestrator.store.migrate import head_revision

REPLICAS = 3
# What a losing run may fail with: the winner's table or version row already there.
EXPECTED_FAILURES = ("UniqueViolation", "DuplicateTable", "DuplicateObject", "CommandError")


def _upgrade_command(url: str) -> list[str]:
    script = Path(sys.executable).with_name("orchestrator")
    program = (
        [str(script)]
        if script.exists()
        else [sys.executable, "-c", "from orchestrator.cli import main; main()"]
    )
    return [*program, "db", "upgrade", "--db", url]


@pytest.mark.postgres
def test_simultaneous_upgrades_converge_on_head(pg_url: str, tmp_path: Path) -> None:
    command = _upgrade_command(pg_url)
    logs = [tmp_path / f"replica-{n}.log" for n in range(REPLICAS)]
    handles = [log.open("w") for log in logs]
    try:
        processes = [
            subprocess.Popen(command, stdout=handle, stderr=subprocess.STDOUT) for handle in handles
        ]
        codes = [process.wait(timeout=120) for process in processes]
    finally:
        for handle in handles:
            handle.close()

    losers = [n for n, code in enumerate(codes) if code != 0]
    assert len(losers) < REPLICAS, "no run succeeded"
    for n in losers:
        output = logs[n].read_text()
        assert any(kind in output for kind in EXPECTED_FAILURES), output[-2000:]
        # What systemd's Restart=on-failure does next: the same command again.
        again = subprocess.run(command, check=False, capture_output=True, text=True, timeout=120)
        assert again.returncode == 0, again.stdout + again.stderr
    print(f"simultaneous upgrades: {REPLICAS - len(losers)} succeeded, {len(losers)} lost")

    engine = create_engine(pg_url)
    try:
        with engine.connect() as conn:
            versions = conn.execute(text("SELECT version_num FROM alembic_version")).scalars()
            assert list(versions) == [head_revision(pg_url)]
    finally:
        engine.dispose()
