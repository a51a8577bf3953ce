"""The operator commands on a real database, a real policy file and the emulator."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from orchestrator.cli import cli
from orchestrator.domain.phases import Phase
from orchestrator.store.database import Database
from orchestrator_sim.testing import running_world
from tests.web.conftest import NOW, populate, populate_finished


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    url = f"sqlite:///{tmp_path}/orchestrator.db"
    db = Database.open(url)
    populate(db)
    db.close()
    return {"db": url}


def _run(*args: str) -> object:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def _prefs(tmp_path: Path, text: str) -> None:
    path = tmp_path / "config" / "orchestrator" / "preferences.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_status_table_and_json(env: dict[str, str]) -> None:
    table = _run("status", "--db", env["db"])
    assert table.exit_code == 0, table.output
    assert "daemon: not reached" in table.output
    line = next(x for x in table.output.splitlines() if x.startswith("acme/app#7"))
    assert "waiting_for_checks" in line and "#12" in line and "aaaaaaaa" in line
    data = json.loads(_run("status", "--db", env["db"], "--format", "json").output)
    assert {i["number"] for i in data["issues"]} == {7, 9}


def test_preferences_precede_defaults_and_flags_precede_preferences(
    env: dict[str, str], tmp_path: Path
) -> None:
    _prefs(tmp_path, f"format: json\ndb: {env['db']}\n")
    assert json.loads(_run("status").output)["issues"]
    assert _run("status", "--format", "table").output.startswith("daemon: not reached")
    _prefs(tmp_path, "formatt: json\n")
    bad = CliRunner().invoke(cli, ["status", "--db", env["db"]])
    assert bad.exit_code == 1
    assert "formatt: unknown preference (did you mean 'format'?)" in bad.output
    _prefs(tmp_path, "include_bots: yes please\n")
    wrong = CliRunner().invoke(cli, ["status", "--db", env["db"]])
    assert "include_bots: expected bool" in wrong.output


def test_help_marks_preferences() -> None:
    text = _run("pr", "threads", "--help").output
    assert "[preference: include_bots]" in text and "[preference: sort]" in text
    assert "[preference: format]" in _run("status", "--help").output


def test_issue_show_and_unknown(env: dict[str, str]) -> None:
    shown = _run("issue", "show", "acme/app#7", "--db", env["db"])
    assert "implementing -> waiting_for_checks" in shown.output
    assert "create_pr" in shown.output and "completed" in shown.output
    missing = CliRunner().invoke(cli, ["issue", "show", "acme/app#99", "--db", env["db"]])
    assert missing.exit_code == 1 and "acme/app#99 is not tracked" in missing.output
    bad = CliRunner().invoke(cli, ["issue", "show", "acme-app-7", "--db", env["db"]])
    assert bad.exit_code == 2 and "OWNER/REPO#NUMBER" in bad.output


def test_issue_unblock_returns_where_the_flow_was(env: dict[str, str]) -> None:
    db = Database.open(env["db"])
    row = db.issues.get("acme/app", 7)
    assert row is not None
    db.issues.transition(
        row.id,
        Phase.WAITING_FOR_CHECKS,
        Phase.BLOCKED,
        reason="question",
        now=NOW,
        waiting_reason="missing_context",
    )
    db.close()
    done = _run("issue", "unblock", "acme/app#7", "--db", env["db"])
    assert done.stdout.strip() == "acme/app#7: blocked -> waiting_for_checks"
    again = CliRunner().invoke(cli, ["issue", "unblock", "acme/app#7", "--db", env["db"]])
    assert again.exit_code == 1 and "is waiting_for_checks, not blocked" in again.output
    db = Database.open(env["db"])
    row = db.issues.get("acme/app", 7)
    assert row is not None and row.waiting_reason is None
    # The next action moved with the phase: not the blocked one, nor the one before.
    assert row.observation["next_intended_action"] == "resume waiting_for_checks"
    assert row.observation["gates"]["checks"] == "pending"
    events = db.issues.events(row.id)
    assert events[-1].actor.startswith("operator:")
    db.close()


def test_brake_on_off_with_policy_and_lenient_fallback(tmp_path: Path) -> None:
    policy = tmp_path / "WORKFLOW.md"
    policy.write_text(
        "---\ntracker:\n  kind: github\n  repo: acme/app\n  token: $UNSET_TOKEN_FOR_TEST\n"
        "rollout:\n  kill_switch_file: brakes/STOP\n---\nDo the task.\n"
    )
    on = _run("brake", "on", "--workflow", str(policy))
    assert on.exit_code == 0 and (tmp_path / "brakes" / "STOP").exists()
    off = _run("brake", "off", "--workflow", str(policy))
    assert "removed" in off.output and not (tmp_path / "brakes" / "STOP").exists()
    explicit = tmp_path / "other" / "STOP"
    _run("brake", "on", "--file", str(explicit))
    assert explicit.exists()


def test_pr_checks_and_threads_against_the_emulator(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    with running_world(tmp_path / "sim") as world:
        control, human = world.control, world.human.login
        head = control.push(world.repo, "fix", {"src/a.py": "x = 1\n"}, as_user=human)
        number = control.create_pull(world.repo, "Fix", "fix", as_user=world.bot.login)
        control.check_run(
            world.repo,
            sha=head,
            name="tests",
            conclusion="failure",
            summary="1 failed",
            log="collected 3 items\nFAILED test_a.py::t\n",
            annotations=[
                {
                    "path": "src/a.py",
                    "start_line": 1,
                    "end_line": 1,
                    "annotation_level": "failure",
                    "message": "assert x == 2",
                }
            ],
        )
        control.review(
            world.repo,
            number,
            "COMMENTED",
            as_user=human,
            commit_id=head,
            comments=[{"path": "src/a.py", "line": 1, "body": "name it better"}],
        )
        control.create_user("lint-bot", "ghp_" + "l" * 36, bot=True)
        control.set_permission(world.repo, "lint-bot", "write")
        control.review(
            world.repo,
            number,
            "COMMENTED",
            as_user="lint-bot",
            commit_id=head,
            comments=[{"path": "src/a.py", "line": 1, "body": "typo"}],
        )
        policy = tmp_path / "WORKFLOW.md"
        policy.write_text(
            f"---\ntracker:\n  kind: github\n  repo: {world.repo}\n  endpoint: {world.url}\n"
            "  token: $TEST_GH_TOKEN\n---\nDo the task.\n"
        )
        monkeypatch.setenv("TEST_GH_TOKEN", world.bot.token)
        ref = f"{world.repo}#{number}"
        checks = _run("pr", "checks", ref, "--workflow", str(policy))
        assert checks.exit_code == 0, checks.output
        assert (
            "tests (failure)" in checks.output
            and "src/a.py:1: [failure] assert x == 2" in checks.output
            and "FAILED test_a.py::t" in checks.output
        )
        threads = _run("pr", "threads", ref, "--workflow", str(policy)).output
        assert "name it better" in threads and "typo" not in threads
        with_bots = _run(
            "pr", "threads", ref, "--workflow", str(policy), "--include-bots", "--sort", "time"
        ).output
        assert with_bots.index("name it better") < with_bots.index("typo")
        assert "[bot]" in with_bots
        assert world.bot.token not in checks.output + threads + with_bots


def test_issue_show_folds_workpad_updates_and_names_each_runs_replica_and_exit(
    env: dict[str, str],
) -> None:
    db = Database.open(env["db"])
    populate_finished(db)
    db.close()
    shown = _run("issue", "show", "acme/app#11", "--db", env["db"]).output
    assert "  merged: PR #21 as c0ffeecccccc" in shown
    assert "  next action: nothing: done" in shown and "__type__" not in shown
    folded = [line for line in shown.splitlines() if "upsert_workpad x" in line]
    assert [line.split("upsert_workpad ")[1].split()[0] for line in folded] == [
        "x12",
        "x15",
        "x11",
    ]
    assert all(" until " in line for line in folded)
    runs = shown.split("agent runs:\n")[1].splitlines()
    assert "on replica-a" in runs[0] and "120.0 s" in runs[0]
    assert "failed: agent exited with code 1: Traceback" in runs[0]
    assert "on replica-b" in runs[1] and "123,456 tokens  completed" in runs[1]


def test_without_db_the_commands_open_the_policy_files_database(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A SQLite install with the daemon stopped: status and issue show read the
    # database.url of the policy (relative to its folder), as `orchestrator run` does,
    # even in a shell without the variables the rest of the policy needs.
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("ORCHESTRATOR_DATABASE_URL", raising=False)
    monkeypatch.delenv("GITHUB_TOKEN", raising=False)
    site = tmp_path / "site"
    (site / "state").mkdir(parents=True)
    db = Database.open(f"sqlite:///{site}/state/o.db")
    populate(db)
    db.close()
    policy = site / "WORKFLOW.md"
    policy.write_text(
        "---\ntracker:\n  repo: acme/app\n  token: $GITHUB_TOKEN\n"
        "server:\n  port: 1\ndatabase:\n  url: sqlite:///state/o.db\n---\nGo.\n"
    )
    monkeypatch.chdir(tmp_path)
    shown = _run("status", "--workflow", str(policy))
    assert shown.exit_code == 0, shown.output
    assert any(line.startswith("acme/app#7") for line in shown.output.splitlines()), shown.output
    timeline = _run("issue", "show", "acme/app#7", "--workflow", str(policy))
    assert "implementing -> waiting_for_checks" in timeline.output

    policy.write_text("---\ntracker:\n  repo: acme/app\ndatabase:\n  url: $NOT_SET_HERE\n---\n")
    unset = CliRunner().invoke(cli, ["status", "--workflow", str(policy)])
    assert unset.exit_code == 1
    assert "database.url" in unset.output and "NOT_SET_HERE" in unset.output
    assert "pass --db" in unset.output
