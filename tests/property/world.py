"""One emulator and one daemon shared by every example of the merge oracle.

Starting an emulator, a database and a daemon costs far more than one example
may, so the module starts them once (:func:`oracle_world`) and each example
works on a fresh issue and pull request in that world: :meth:`OracleWorld.seed`
pushes a branch as the bot, opens the pull request and tracks the issue in
``waiting_for_checks`` as if the implementing turn had just ended;
:meth:`OracleWorld.retire` closes both and deletes the issue's row so later
ticks never look at it again (ticks stay as fast at the 500th example as at the
first).

The emulator runs in a process of its own (:class:`EmulatorProcess`), so it
and the daemon each have a core and a GIL, and everything lives in memory
(``/dev/shm`` when the machine has it): the bare repositories, the workspaces,
the SQLite database. Its clock runs ahead of the wall clock and moves one second
per step (:class:`SteppedClock`, shared with the process): GitHub stamps events
in whole seconds, and a step per second keeps "this label was added after that
push" readable from the timestamps without sleeping.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import mmap
import os
import shlex
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from sqlalchemy import delete

from orchestrator.daemon.daemon import Daemon
from orchestrator.domain.agent_files.review import Review as ParsedReview
from orchestrator.domain.phases import Phase
from orchestrator.domain.review_decisions import render_review_comment
from orchestrator.domain.snapshot import IssueRef, StoredRecord
from orchestrator.domain.workpad import PRRef, ReviewState, WorkpadRecord
from orchestrator.github.prstate import PRStatePoller
from orchestrator.store.models import TrackedIssue
from orchestrator.tick.cycle import TickReport
from orchestrator_sim.control import ControlClient, ControlRequestError
from orchestrator_sim.testing import DEFAULT_FILES, Account, make_token
from tests.support.idle import wait_idle

AGENT = Path(__file__).with_name("oracle_agent.py")
EMULATOR_MAIN = Path(__file__).with_name("emulator_main.py")
OWNER_LABEL = "orchestrator"
APPROVAL_LABEL = "state:merging"
STOP_LABEL = "orchestrator:stop"
REPO_STOP_LABEL = "orchestrator:stop-all"
BASE_BRANCH = "main"
# Budgets no run of the suite can spend: the emulator bills like GitHub, per hour.
HUGE_BUDGET = 100_000_000


class SteppedClock:
    """The wall clock plus an offset that only grows: ``step()`` moves it a second ahead.

    The offset is one double in a shared-memory file, so the emulator's process
    reads the same clock (tests/property/emulator_main.py).
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        path.write_bytes(struct.pack("d", 0.0))
        with path.open("r+b") as handle:
            self._shared = mmap.mmap(handle.fileno(), 8)

    @property
    def offset(self) -> float:
        return float(struct.unpack("d", self._shared[:8])[0])

    def __call__(self) -> datetime:
        return datetime.now(UTC) + timedelta(seconds=self.offset)

    def step(self, seconds: float = 1.0) -> datetime:
        self._shared[:8] = struct.pack("d", self.offset + seconds)
        return self()


class KeepAliveControl(ControlClient):
    """The control API client over one kept-alive connection.

    The stock client opens a connection per call and looks up proxies in the
    environment each time; an example makes dozens of calls.
    """

    def __init__(self, base_url: str, timeout: float = 30.0) -> None:
        super().__init__(base_url, timeout)
        parts = urlsplit(self.base_url)
        self._host, self._port = parts.hostname or "127.0.0.1", parts.port or 80
        self._connection: http.client.HTTPConnection | None = None
        self._lock = threading.Lock()

    def request(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        headers = {"content-type": "application/json"}
        with self._lock:
            for attempt in (1, 2):
                if self._connection is None:
                    self._connection = http.client.HTTPConnection(
                        self._host, self._port, timeout=self.timeout
                    )
                try:
                    self._connection.request(method, f"/_control{path}", body=data, headers=headers)
                    answer = self._connection.getresponse()
                    raw = answer.read()
                    break
                except (ConnectionError, http.client.HTTPException):
                    # A kept-alive connection the server closed: open a new one, once.
                    self._connection.close()
                    self._connection = None
                    if attempt == 2:
                        raise
        if answer.status >= 400:
            try:
                message = json.loads(raw)["error"]["message"]
            except (ValueError, KeyError, TypeError):
                message = raw.decode(errors="replace")
            raise ControlRequestError(answer.status, message)
        return json.loads(raw or b"null")


@dataclass
class EmulatorProcess:
    """The emulator, in a process of its own (or in this one), reached over HTTP like github.com."""

    url: str
    repo: str
    bot: Account
    human: Account
    process: Any  # the emulator's process, or the in-process server

    def __post_init__(self) -> None:
        self.control = KeepAliveControl(self.url)

    def github(self, account: Account | None = None) -> Any:
        """A PyGithub client for ``account`` (the bot by default) with no client-side pauses."""
        from github import Auth, Github

        who = account or self.bot
        return Github(
            base_url=self.url,
            auth=Auth.Token(who.token),
            seconds_between_requests=0,
            seconds_between_writes=0,
            retry=0,
            timeout=30,
        )

    @classmethod
    def start(
        cls, state_dir: Path, clock: SteppedClock, repo: str = "acme/widgets", *, own_process: bool
    ) -> EmulatorProcess:
        """Start the emulator, then create the repository, the product's account and a human."""
        if own_process:
            env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
            process: Any = subprocess.Popen(
                [sys.executable, str(EMULATOR_MAIN), str(state_dir), str(clock.path)],
                stdout=subprocess.PIPE,
                text=True,
                env=env,
            )
            assert process.stdout is not None
            url = process.stdout.readline().strip()
            if not url.startswith("http"):
                process.kill()
                raise RuntimeError("the emulator process did not start")
        else:
            from orchestrator_sim.server import SimServer

            process = SimServer(state_dir, clock=clock, seed=0).start()
            url = process.url
        control = KeepAliveControl(url)
        # The product runs as a machine user (a personal access token), as on github.com.
        bot = Account("orchestrator-bot", make_token())
        created = control.create_user(bot.login, bot.token)
        bot = Account(str(created.get("login") or bot.login), bot.token)
        human = Account("alice", make_token())
        control.create_user(human.login, human.token, name="Alice Example")
        control.create_repo(
            repo, dict(DEFAULT_FILES), permissions={bot.login: "write", human.login: "admin"}
        )
        return cls(url, repo, bot, human, process)

    def stop(self) -> None:
        if not isinstance(self.process, subprocess.Popen):
            self.process.stop()
            return
        self.process.terminate()
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@dataclass(frozen=True)
class People:
    """Who acts on the pull request besides the product's own account."""

    writer: str  # a human with write permission
    reader: str  # a human who may label (triage) but not write
    other_bot: str  # another app's bot account, with write permission


@dataclass(frozen=True)
class Example:
    """One example's issue and pull request."""

    issue: int
    pr: int
    branch: str
    first_head: str


@dataclass(repr=False)
class OracleWorld:
    """The shared emulator, daemon and accounts, with the few reads and steps examples need."""

    def __repr__(self) -> str:  # shown in every falsifying example: short, and no tokens
        return f"OracleWorld({self.sim.url}, {self.repo}, {self.examples} examples so far)"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:  # Hypothesis's printer
        printer.text(repr(self))

    sim: EmulatorProcess
    daemon: Daemon
    clock: SteppedClock
    people: People
    tmp: Path
    agent_settings: Path
    tick_seconds: list[float] = field(default_factory=list)
    quiet_tick_seconds: list[float] = field(default_factory=list)
    failed_ticks: int = 0
    examples: int = 0

    # ------------------------------------------------------------- accounts

    @property
    def repo(self) -> str:
        return self.sim.repo

    @property
    def control(self) -> Any:
        return self.sim.control

    @property
    def bot(self) -> Account:
        return self.sim.bot

    @property
    def human(self) -> Account:
        return self.sim.human

    # ---------------------------------------------------------------- reads

    def rest(self, path: str) -> Any:
        """A REST GET as the human (the bot's budget and write log stay untouched)."""
        gh = self._human_client
        status, _headers, raw = gh.requester.requestJson("GET", path)
        assert status < 400, f"GET {path}: {status} {raw}"
        return json.loads(raw) if raw else None

    @property
    def _human_client(self) -> Any:
        client = getattr(self, "_client", None)
        if client is None:
            client = self.sim.github(self.human)
            self._client = client
        return client

    def pull(self, number: int) -> dict[str, Any]:
        return dict(self.rest(f"/repos/{self.repo}/pulls/{number}"))

    def issue(self, number: int) -> dict[str, Any]:
        return dict(self.rest(f"/repos/{self.repo}/issues/{number}"))

    def comments(self, number: int) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        page = 1
        while True:
            chunk = self.rest(
                f"/repos/{self.repo}/issues/{number}/comments?per_page=100&page={page}"
            )
            items += chunk
            if len(chunk) < 100:
                return items
            page += 1

    def check_runs(self, sha: str) -> list[dict[str, Any]]:
        """Every check run on ``sha`` (all pages, every run of every name)."""
        runs: list[dict[str, Any]] = []
        page = 1
        while True:
            body = self.rest(
                f"/repos/{self.repo}/commits/{sha}/check-runs?filter=all&per_page=100&page={page}"
            )
            chunk = body["check_runs"]
            runs += chunk
            if len(chunk) < 100:
                return runs
            page += 1

    def pulls_for(self, branch: str) -> list[dict[str, Any]]:
        owner = self.repo.split("/")[0]
        return list(self.rest(f"/repos/{self.repo}/pulls?state=all&head={owner}:{branch}"))

    def writes(self) -> list[dict[str, Any]]:
        return list(self.control.writes())

    # ---------------------------------------------------------------- steps

    def tick(self) -> TickReport | None:
        """One daemon tick, then wait for the turns it started to be recorded."""
        self.clock.step()
        self._write_agent_settings()
        started = time.perf_counter()
        report = self.daemon.tick()
        assert wait_idle(self.daemon, 60), "an agent turn did not finish within 60 s"
        elapsed = time.perf_counter() - started
        self.tick_seconds.append(elapsed)
        if report is None and self.daemon.parts.poller.stats.last_tick_error:
            self.failed_ticks += 1
        elif report is not None and not (report.execution.changed or report.execution.dispatched):
            # A tick that found nothing to do costs the same in every example: the
            # measure of whether ticks slow down as examples pile up.
            self.quiet_tick_seconds.append(elapsed)
        return report

    # ------------------------------------------------------------ protection

    base_branch = BASE_BRANCH
    protected = False

    def unprotect_base(self) -> None:
        """Remove the base branch's protection, if this emulator has any and it is set."""
        if self.protected and hasattr(self.control, "unprotect"):
            # Not protected (any more): nothing to remove.
            with contextlib.suppress(ControlRequestError):
                self.control.unprotect(self.repo, self.base_branch)
        self.protected = False

    def _write_agent_settings(self, **extra: Any) -> None:
        settings = getattr(self, "_settings", {})
        settings.update(extra)
        self._settings = settings
        now = self.clock()
        document = {
            **settings,
            "date": now.strftime("%Y-%m-%dT%H:%M:%S+0000"),
            "backdated": (now - timedelta(days=30)).strftime("%Y-%m-%dT%H:%M:%S+0000"),
        }
        self.agent_settings.write_text(json.dumps(document), encoding="utf-8")

    def seed(self, *, reviewed: bool, backdate_rework: bool) -> Example:
        """A fresh issue whose implementing turn just ended: branch pushed, PR open, waiting.

        With ``reviewed`` the self-review of the first head is done too: the bot's
        review comment is posted as the product posts it, and the record says so.
        """
        self.examples += 1
        self.clock.step()
        self.control.reset_counters()
        self.control.clear_faults()
        self.unprotect_base()
        # A writer of its own: what the daemon remembers of one example's accounts
        # (permissions it cached) never decides another example.
        writer = _account(self.control, f"wendy-{self.examples}")
        self.control.set_permission(self.repo, writer, "write")
        self.people = replace(self.people, writer=writer)
        self._write_agent_settings(backdate=backdate_rework)
        title = f"Oracle example {self.examples}"
        number = self.control.create_issue(
            self.repo,
            title,
            as_user=self.human.login,
            body="Change a file.",
            labels=[OWNER_LABEL],
        )
        branch = f"orchestrator/{number}-oracle-example"
        head = self.control.push(
            self.repo,
            branch=branch,
            files={f"src/oracle_{number}.py": f"EXAMPLE = {number}\n"},
            message=f"Implement #{number}",
            as_user=self.bot.login,
            start=BASE_BRANCH,
        )
        pr = self.control.create_pull(self.repo, title, branch, as_user=self.bot.login)
        now = self.daemon.clock()
        review = ReviewState()
        if reviewed:
            body = render_review_comment(
                ParsedReview(head_sha=head, findings=()), pass_number=1, max_passes=2
            )
            status, _headers, raw = self.sim.github().requester.requestJson(
                "POST", f"/repos/{self.repo}/issues/{pr}/comments", input={"body": body}
            )
            assert status == 201, f"the seeded review comment was refused: {status} {raw}"
            review = ReviewState(
                comment_id=int(json.loads(raw)["id"]),
                passes_completed=1,
                last_reviewed_head_sha=head,
            )
        workpad = WorkpadRecord(
            phase=Phase.WAITING_FOR_CHECKS,
            branch=branch,
            pr=PRRef(number=pr, url=f"{self.sim.url}/{self.repo}/pull/{pr}", head_sha=head),
            review=review,
        )
        record = StoredRecord(phase=Phase.WAITING_FOR_CHECKS, phase_since=now, workpad=workpad)
        self.daemon.parts.records.create(
            IssueRef(self.repo, number),
            title=title,
            record=record,
            now=now,
            reason="seeded by the merge oracle",
            labels=[OWNER_LABEL],
        )
        return Example(issue=number, pr=pr, branch=branch, first_head=head)

    def retire(self, example: Example) -> None:
        """Take the example out of the daemon's way: closed on GitHub, done in the store."""
        assert wait_idle(self.daemon, 60), "an agent turn did not finish within 60 s"
        for number in (example.pr, example.issue):
            # Already closed (a merged pull request, an issue the daemon closed): nothing to do.
            with contextlib.suppress(ControlRequestError):
                self.control.update_issue(
                    self.repo, number, as_user=self.human.login, state="closed"
                )
        # Forgotten by the daemon: a tick reads every row it tracks, done ones included,
        # so rows of finished examples would make each tick slower than the last. The
        # schema cascades the row's events, runs and claims (and keeps its outbox).
        with self.daemon.db.sessions.begin() as session:
            session.execute(
                delete(TrackedIssue).where(
                    TrackedIssue.repo == self.repo, TrackedIssue.number == example.issue
                )
            )
        self.unprotect_base()
        root = self.tmp / "workspaces"
        for folder in (root, root / ".logs"):
            for path in folder.glob(f"*_{example.issue}-*"):
                shutil.rmtree(path, ignore_errors=True)


def policy_document(tmp: Path, sim: EmulatorProcess, agent_settings: Path) -> dict[str, Any]:
    home = tmp / "agent-home"
    home.mkdir(exist_ok=True)
    (home / ".bash_profile").write_text("", encoding="utf-8")
    command = " ".join(
        shlex.quote(part) for part in (sys.executable, "-S", str(AGENT), str(agent_settings))
    )
    return {
        "tracker": {
            "repo": sim.repo,
            "endpoint": "$ORACLE_ENDPOINT",
            "token": "$ORACLE_TOKEN",
            # Transient GitHub failures are retried once, without a noticeable wait.
            "retry": {"max_attempts": 2, "base_delay_ms": 10, "max_delay_ms": 50},
        },
        "polling": {"interval_ms": 1000},
        "workspace": {"root": str(tmp / "workspaces")},
        "agent": {
            "preset": "command",
            "command": command,
            "max_concurrent_agents": 2,
            "stall_timeout_ms": 20_000,
            "turn_timeout_ms": 30_000,
            "max_retry_backoff_ms": 1_000,
            # The runner starts agents through a login shell: an empty home keeps the
            # machine's profile scripts (pyenv and friends, ~100 ms) out of every turn.
            "env": {"HOME": str(home)},
        },
        "orchestration": {"ownership": {"required_label": OWNER_LABEL}},
        "rollout": {"mode": "merge", "kill_switch_file": str(tmp / "STOP")},
        "review": {"enabled": True, "max_passes": 2},
        "merge": {
            "mode": "auto",
            "require_human_approval": True,
            "approval_source": "either",
        },
        "database": {"url": f"sqlite:///{tmp / 'orchestrator.db'}"},
    }


def _account(control: Any, login: str, *, bot: bool = False) -> str:
    created = control.create_user(login, make_token(), bot=bot)
    return str(created.get("login") or login)


def _poll_on_githubs_clock(daemon: Daemon, clock: SteppedClock) -> None:
    """Give the daemon's pull request poller GitHub's clock (it reads the wall clock).

    The poller trusts a cached pull request state only once GitHub's ``updatedAt``
    is a few seconds old. In production the wall clock is GitHub's clock; here
    GitHub's clock runs ahead of it, so the poller is handed that clock, or it
    would refetch everything on every tick and never show what its cache hides.
    (The rest of the daemon keeps the wall clock: its agent runner has no clock
    to inject, and turn outcomes must not look older than the phase they ended.)
    """
    access = daemon.parts.repo_set.first.parts.github
    try:
        PRStatePoller(access.client, access.cache, access.actor, clock=clock)
    except TypeError:
        return  # a poller without a clock: nothing to hand over

    def poller() -> PRStatePoller:
        return PRStatePoller(access.client, access.cache, access.actor, clock=clock)

    access.poller = poller  # type: ignore[method-assign]


@contextmanager
def scratch_dir(fallback: Path) -> Iterator[Path]:
    """A folder in memory (``/dev/shm``) when the machine has one, else ``fallback``.

    git and SQLite write and sync thousands of small files per run; on a disk
    that alone doubles the time of an example.
    """
    shm = Path("/dev/shm")
    if not (shm.is_dir() and os.access(shm, os.W_OK)):
        yield fallback
        return
    path = Path(tempfile.mkdtemp(prefix="merge-oracle-", dir=shm))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@contextmanager
def oracle_world(tmp: Path) -> Iterator[OracleWorld]:
    """Start the emulator and the daemon; stop both afterwards."""
    clock = SteppedClock(tmp / "clock")
    own_process = os.environ.get("ORACLE_EMULATOR", "process") == "process"
    sim = EmulatorProcess.start(tmp / "sim", clock, own_process=own_process)
    daemon: Daemon | None = None
    try:
        control = sim.control
        people = People(
            writer="",  # one per example, made by seed()
            reader=_account(control, "rita"),
            other_bot=_account(control, "helper-app", bot=True),
        )
        control.set_permission(sim.repo, people.reader, "triage")
        control.set_permission(sim.repo, people.other_bot, "write")
        for resource in ("core", "graphql"):
            control.set_rate_limit(resource=resource, limit=HUGE_BUDGET, remaining=HUGE_BUDGET)
        agent_settings = tmp / "agent-settings.json"
        document = policy_document(tmp, sim, agent_settings)
        policy = tmp / "WORKFLOW.md"
        policy.write_text(f"---\n{json.dumps(document, indent=2)}\n---\n", encoding="utf-8")
        daemon = Daemon(policy, env={"ORACLE_ENDPOINT": sim.url, "ORACLE_TOKEN": sim.bot.token})
        daemon.start()
        _poll_on_githubs_clock(daemon, clock)
        world = OracleWorld(
            sim=sim,
            daemon=daemon,
            clock=clock,
            people=people,
            tmp=tmp,
            agent_settings=agent_settings,
        )
        world._write_agent_settings(backdate=False)
        yield world
    finally:
        if daemon is not None:
            daemon.shutdown(grace_s=0)
        sim.stop()
