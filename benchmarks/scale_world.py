"""A world of many issues waiting for a human, for the scale benchmark and its tests.

One issue goes through the real flow first (the daemon, the scripted agent, a
green check) until it waits for a human: its record, workpad comment and pull
request body are the template. Then many more issues, each with its own pull
request and green head, are seeded straight into the emulator, and their
records into the database, as the daemon would have left them, without running
thousands of agent turns. The records are the template's with each issue's own
numbers, branch and head commit put in.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import insert

from orchestrator.domain.snapshot import HeadSighting, IssueRef, StoredRecord
from orchestrator.domain.workpad import PRRef, render_workpad
from orchestrator.logs import read_json_log
from orchestrator.store.database import Database
from orchestrator.store.models import TrackedIssue
from orchestrator.store.records import RecordStore, record_columns
from orchestrator_sim.control import ControlClient
from orchestrator_sim.testing import SimWorld

OWNER = "orchestrator"
APPROVAL = "state:merging"
CHECK = "ci"

SCENARIO: dict[str, Any] = {
    "steps": [
        {"session": "auto"},
        {"write": {"path": "src/bench.py", "content": "VALUE = 1\n", "append": True}},
        {"commit": "Benchmark change"},
        {"pr_description": "## Summary\n\nA benchmark change."},
    ],
    "phases": {"reviewing": {"steps": [{"review": {"findings": []}}]}},
}


def write_policy(tmp: Path, interval_ms: int) -> Path:
    """WORKFLOW.md of the scale world: merge mode, human approval by label, scripted agent."""
    home = tmp / "agent-home"
    home.mkdir(mode=0o700, exist_ok=True)
    scenario = home / "scenario.json"
    scenario.write_text(json.dumps(SCENARIO), encoding="utf-8")
    agent = f"{shlex.quote(sys.executable)} -m orchestrator_sim.agent"
    document = {
        "tracker": {"repo": "$SCALE_REPO", "endpoint": "$SCALE_ENDPOINT", "token": "$SCALE_TOKEN"},
        "polling": {"interval_ms": interval_ms},
        "workspace": {"root": str(tmp / "workspaces")},
        "agent": {
            "preset": "command",
            "command": f"{agent} --scenario {shlex.quote(str(scenario))}",
            "stall_timeout_ms": 60_000,
            "turn_timeout_ms": 120_000,
            "home": str(home),
        },
        "orchestration": {"ownership": {"required_label": OWNER}},
        "rollout": {"mode": "merge", "kill_switch_file": str(tmp / "STOP")},
        "merge": {"mode": "auto", "require_human_approval": True},
        "database": {"url": f"sqlite:///{tmp / 'scale.db'}"},
    }
    path = tmp / "WORKFLOW.md"
    path.write_text(f"---\n{json.dumps(document, indent=2)}\n---\n", encoding="utf-8")
    return path


class DaemonProcess:
    """``orchestrator run`` in its own process, logging JSON lines to a file."""

    def __init__(self, policy: Path, world: SimWorld, log: Path) -> None:
        self.policy, self.world, self.log = policy, world, log
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        env = {
            **os.environ,
            "SCALE_REPO": self.world.repo,
            "SCALE_ENDPOINT": self.world.url,
            "SCALE_TOKEN": self.world.bot.token,
        }
        program = str(Path(sys.executable).parent / "orchestrator")
        argv = [program, "--log-format", "json", "run", str(self.policy), "--port", "0"]
        with self.log.open("ab") as sink:
            self.process = subprocess.Popen(
                argv,
                stdout=sink,
                stderr=subprocess.STDOUT,
                env=env,
            )

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def stop(self) -> None:
        if self.process is None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.process = None

    def events(self, name: str) -> list[dict[str, Any]]:
        """The logged events called ``name``, oldest first."""
        return [entry for entry in read_json_log(self.log) if entry.get("event") == name]

    def whole_ticks(self) -> list[dict[str, Any]]:
        """The logged whole ticks, oldest first (not the follow-ups over a few issues)."""
        return [tick for tick in self.events("tick") if tick.get("focus") is None]

    def rss_kib(self) -> tuple[int, int]:
        """The process's resident memory now and at its peak (KiB)."""
        fields = {}
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            key, _, value = line.partition(":")
            fields[key] = value.strip()
        return int(fields["VmRSS"].split()[0]), int(fields["VmHWM"].split()[0])


def wait_for(what: str, predicate: Callable[[], bool], timeout_s: float = 300.0) -> float:
    """Seconds until ``predicate`` holds; TimeoutError naming ``what`` after ``timeout_s``."""
    start = time.monotonic()
    while not predicate():
        if time.monotonic() - start > timeout_s:
            raise TimeoutError(f"{what}: not within {timeout_s:g} s")
        time.sleep(0.02)
    return time.monotonic() - start


@dataclass(frozen=True)
class Template:
    """One issue the real flow brought to waiting for a human."""

    number: int
    record: StoredRecord
    workpad_body: str
    pr_body: str
    # The issue's labels by then (the ownership label and the tracker state's).
    labels: tuple[str, ...]


def make_template(world: SimWorld, policy: Path, db_url: str, log: Path) -> Template:
    """Run the daemon until one labelled issue waits for a human, with a green head."""
    control, human = world.control, world.human.login
    number = control.create_issue(world.repo, "Template", as_user=human, labels=[OWNER])
    daemon = DaemonProcess(policy, world, log)
    db = Database.open(db_url)
    records = RecordStore(db)
    daemon.start()
    try:

        def phase() -> str | None:
            row = records.get(IssueRef(world.repo, number))
            return row.record.phase.value if row is not None else None

        wait_for("the template issue's checks", lambda: phase() == "waiting_for_checks")
        row = records.get(IssueRef(world.repo, number))
        assert row is not None and row.record.workpad.pr is not None
        pr = row.record.workpad.pr.number
        head = world.github().get_repo(world.repo).get_pull(pr).head.sha
        control.check_run(world.repo, sha=head, name=CHECK, conclusion="success")
        wait_for("the template issue's wait for a human", lambda: phase() == "waiting_for_human")

        def settled() -> bool:
            current = records.get(IssueRef(world.repo, number))
            return current is not None and current.record.mirrored_workpad == current.record.workpad

        wait_for("the template's workpad comment", settled)
    finally:
        daemon.stop()
    row = records.get(IssueRef(world.repo, number))
    assert row is not None and row.workpad_comment_id is not None
    repo = world.github().get_repo(world.repo)
    issue = repo.get_issue(number)
    workpad = issue.get_comment(row.workpad_comment_id).body
    pr_body = repo.get_pull(pr).body or ""
    labels = tuple(sorted(label.name for label in issue.labels))
    db.close()
    return Template(number, row.record, workpad, pr_body, labels)


@dataclass(frozen=True)
class Seeded:
    """One seeded issue and its pull request."""

    number: int
    pr: int
    branch: str
    head_sha: str


def clone_record(template: Template, seeded: Seeded, url_of: Callable[[int], str]) -> StoredRecord:
    """The template's record with ``seeded``'s own numbers, branch and head."""
    record = template.record
    old_pr = record.workpad.pr
    assert old_pr is not None

    def workpad_of(workpad: Any) -> Any:
        if workpad is None:
            return None
        review = workpad.review
        review = replace(
            review,
            last_reviewed_head_sha=seeded.head_sha if review.last_reviewed_head_sha else None,
            comment_id=None,
        )
        return replace(
            workpad,
            branch=seeded.branch,
            pr=PRRef(seeded.pr, url_of(seeded.pr), seeded.head_sha),
            review=review,
        )

    sighting = record.head_seen
    body = template.pr_body.replace(f"#{template.number}", f"#{seeded.number}")
    return replace(
        record,
        workpad=workpad_of(record.workpad),
        mirrored_workpad=workpad_of(record.mirrored_workpad),
        head_seen=HeadSighting(seeded.head_sha, sighting.since) if sighting else None,
        pr_body=body,
        completed_effects=frozenset(),
        last_outcome=None,
        thread_history=(),
    )


def insert_records(
    db: Database,
    *,
    repo: str,
    template: Template,
    seeded: Sequence[Seeded],
    url_of: Callable[[int], str],
    comments: dict[int, int],
) -> None:
    """The records of ``seeded`` with their workpad comment ids (``comments``), in batches."""
    now = datetime.now(UTC)
    rows = []
    for item in seeded:
        record = clone_record(template, item, url_of)
        rows.append(
            {
                "repo": repo,
                "number": item.number,
                "title": f"Scale {item.number}",
                "labels": list(template.labels),
                "phase": record.phase.value,
                "phase_since": record.phase_since,
                "workpad_comment_id": comments[item.number],
                "version": 1,
                "created_at": now,
                "updated_at": now,
                **record_columns(record),
            }
        )
    with db.engine.begin() as connection:
        for start in range(0, len(rows), 500):
            connection.execute(insert(TrackedIssue), rows[start : start + 500])


def post_workpads(
    world: SimWorld, template: Template, seeded: Sequence[Seeded], url_of: Callable[[int], str]
) -> dict[int, int]:
    """Each seeded issue's workpad comment, as the daemon's account; issue -> comment id."""

    def post(item: Seeded) -> tuple[int, int]:
        record = clone_record(template, item, url_of)
        assert record.mirrored_workpad is not None
        body = render_workpad(record.mirrored_workpad)
        issue = world.github().get_repo(world.repo).get_issue(item.number)
        return item.number, issue.create_comment(body).id

    with ThreadPoolExecutor(max_workers=4) as pool:
        return dict(pool.map(post, seeded))


def seed_pulls(world: SimWorld, template: Template, count: int) -> list[Seeded]:
    """``count`` issues labelled as the template, each with the bot's pull request from
    ``orchestrator/issue-N`` (the template's body) and a green check on its head, in one
    call to the emulator's bulk seed."""
    control = ControlClient(world.url, timeout=1800)
    body = template.pr_body.replace(f"#{template.number}", "#{issue}")
    items = control.seed(
        world.repo,
        count,
        as_user=world.human.login,
        labels=list(template.labels),
        title="Scale {issue}",
        pulls={
            "as": world.bot.login,
            "branch": "orchestrator/issue-{issue}",
            "body": body,
            "check_run": {"name": CHECK, "conclusion": "success"},
        },
    )
    return [
        Seeded(int(item["issue"]), int(item["pull"]), str(item["branch"]), str(item["head_sha"]))
        for item in items
    ]
