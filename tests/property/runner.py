"""Play one example: seed a pull request, apply its events with daemon ticks, judge every merge.

After every tick the bot's new writes are read from the emulator's write log,
in order. When one of them is a merge, the oracle's model is first brought to
the moment of that merge (the bot's own label removals and review comment
written before it in the same tick), then the merge is judged. Everything else
the bot changed is synced into the model after the tick.

Two events can land in the middle of a tick (``Race``), each at most once per
example and only while the issue is about to merge:

- ``stop``: the first GraphQL read of the merging tick is held for a little
  over two seconds and a human adds the stop label meanwhile: the label the
  tick read at its start is then older than any freshness allowance when the
  merge is called;
- ``push``: the merge request itself is held and a human pushes meanwhile:
  only the expected head SHA on the merge call keeps the new head unmerged.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from orchestrator.domain.snapshot import IssueRef
from tests.property.oracle import Merge, Model
from tests.property.world import (
    APPROVAL_LABEL,
    REPO_STOP_LABEL,
    STOP_LABEL,
    Example,
    OracleWorld,
)

# The daemon may trust labels it read up to two seconds ago (docs/runtime.md, the
# side-effect gate): the stop race holds the tick's read longer than that.
STOP_RACE_HOLD_MS = 2_300
PUSH_RACE_HOLD_MS = 400
# An example ends once a tick changes nothing, or after this many more ticks.
SETTLE_TICKS = 7
# Phases from which no merge can follow without new events: rework makes a new head
# nobody approved (and a writer's change request or a conflict would loop through it).
SETTLED_PHASES = ("rework", "blocked", "done")


class OracleViolation(AssertionError):
    """A merge the oracle does not allow (or a duplicate pull request)."""


@dataclass
class Run:
    """One example in progress."""

    world: OracleWorld
    example: Example
    model: Model
    race: str | None = None
    pushes: int = 0
    writes_seen: int = 0
    log: list[str] = field(default_factory=list)
    raced: bool = False

    # ----------------------------------------------------------------- names

    def login(self, who: str) -> str:
        people = self.world.people
        return {
            "writer": people.writer,
            "admin": self.world.human.login,
            "reader": people.reader,
            "bot": self.world.bot.login,
            "other_bot": people.other_bot,
        }[who]

    @staticmethod
    def label_name(label: str) -> str:
        return {"approve": APPROVAL_LABEL, "stop": STOP_LABEL, "stop_all": REPO_STOP_LABEL}[label]

    @property
    def watched(self) -> set[str]:
        return {APPROVAL_LABEL, STOP_LABEL, REPO_STOP_LABEL}

    # -------------------------------------------------------------------- CI

    def check(self, sha: str, name: str, outcome: str) -> None:
        control = self.world.control
        repo = self.world.repo
        if outcome == "started":
            created = control.check_run(repo, sha=sha, name=name, status="in_progress")
            self.model.check_created(sha, int(created["id"]), name, "in_progress", None)
            return
        open_run = self.model.open_run(sha, name)
        log = "FAILED test_it\n" if outcome == "failure" else None
        if open_run is not None:
            control.check_run(
                repo,
                sha=sha,
                name=name,
                status="completed",
                conclusion=outcome,
                log=log,
                run_id=open_run.run_id,
            )
            self.model.check_updated(sha, open_run.run_id, "completed", outcome)
        else:
            created = control.check_run(
                repo, sha=sha, name=name, status="completed", conclusion=outcome, log=log
            )
            self.model.check_created(sha, int(created["id"]), name, "completed", outcome)

    # ------------------------------------------------------------- the daemon

    def phase(self) -> str | None:
        row = self.world.daemon.parts.records.get(IssueRef(self.world.repo, self.example.issue))
        return row.record.phase.value if row is not None else None

    def tick(self) -> bool:
        """One tick (racing a human when this example races and the issue is merging).

        Returns whether the tick did anything (a write, a transition, a dispatch).
        """
        if self.race is not None and not self.raced and self.phase() == "merging":
            self.raced = True
            report = self._racing_tick()
        else:
            report = self.world.tick()
        self.observe()
        if report is None:
            return False
        execution = report.execution
        return bool(execution.changed or execution.dispatched)

    def settle(self) -> None:
        """Tick until nothing more can lead to a merge.

        That is: a tick changed nothing, a merge was judged (what follows, its
        confirmation, is no business of the oracle), the issue went where no merge
        follows without new events (``SETTLED_PHASES``), or the budget ended.
        """
        for _ in range(SETTLE_TICKS):
            if not self.tick() or self.model.merges or self.phase() in SETTLED_PHASES:
                return

    def _racing_tick(self) -> Any:
        control = self.world.control
        if self.race == "stop":
            rule = {"path": "/graphql", "method": "POST", "action": "latency"}
            hold = STOP_RACE_HOLD_MS
        else:
            rule = {"path": "/repos/*/pulls/*/merge", "method": "PUT", "action": "latency"}
            hold = PUSH_RACE_HOLD_MS
        control.clear_faults()
        control.add_fault(**rule, latency_ms=hold, count=1)
        result: dict[str, Any] = {}

        def run_tick() -> None:
            try:
                result["report"] = self.world.tick()
            except BaseException as error:
                result["error"] = error

        thread = threading.Thread(target=run_tick, name="oracle-racing-tick")
        thread.start()
        fired = False
        while thread.is_alive():
            if not control.faults():
                fired = True
                break
            time.sleep(0.01)
        if fired:
            if self.race == "stop":
                self.log.append("race: stop label added while the merging tick read GitHub")
                control.add_labels(
                    self.world.repo, self.example.issue, [STOP_LABEL], as_user=self.login("admin")
                )
                self.model.label_added("issue", STOP_LABEL, self.login("admin"))
            else:
                self.log.append("race: a human pushed while the merge call was in flight")
                from tests.property.events import HumanPush

                HumanPush(who="admin").apply(self)
        thread.join(120)
        control.clear_faults()
        if "error" in result:
            raise result["error"]
        return result.get("report")

    # ------------------------------------------------------------ observing

    def observe(self) -> None:
        """Fold the bot's writes since the last look into the model; judge any merge.

        Only what the write log says changed is read again: the pull request when the
        bot pushed or merged; the labels when it removed one (the path names it); the
        review comment when a merge is judged (it is upserted in place, so at a merge
        it names the last head the bot reviewed before it).
        """
        writes = self.world.writes()
        new = [w for w in writes[self.writes_seen :] if int(w.get("status") or 0) < 300]
        self.writes_seen = len(writes)
        if not new:
            return
        merge_at = next((i for i, w in enumerate(new) if self._is_merge(w)), None)
        pushed = any(
            str(w.get("route", "")).endswith("git-receive-pack")
            or str(w.get("path", "")).endswith("/git-receive-pack")
            for w in new
        )
        if merge_at is None and not pushed:
            self._fold(new)
            return
        pull = self.world.pull(self.example.pr)
        if merge_at is None and pull.get("merged") and not self.model.merges:
            merge_at = len(new)  # merged some other way: judge it at the end of the tick
        if merge_at is None:
            self._fold(new)
            self.model.pushed(str(pull["head"]["sha"]))
            return
        self._fold(new[:merge_at])
        self._judge(pull)
        self._fold(new[merge_at:])

    def _is_merge(self, write: dict[str, Any]) -> bool:
        merge_path = f"/repos/{self.world.repo}/pulls/{self.example.pr}/merge"
        return (write["method"] == "PUT" and write["path"] == merge_path) or (
            write.get("operation") == "mergePullRequest"
        )

    def _fold(self, writes: list[dict[str, Any]]) -> None:
        """Apply the bot's label removals, in order (a replaced label set is read back)."""
        places = {self.example.issue: "issue", self.example.pr: "pr"}
        for w in writes:
            parts = unquote(w["path"]).split("/")
            # PUT /repos/{owner}/{repo}/issues/{number}/labels replaces every label.
            if (
                w["method"] == "PUT"
                and len(parts) == 7
                and parts[4] == "issues"
                and parts[6] == "labels"
                and parts[5].isdigit()
                and int(parts[5]) in places
            ):
                self._sync_labels(additions_only=False)
            # DELETE /repos/{owner}/{repo}/issues/{number}/labels/{name}
            if (
                w["method"] == "DELETE"
                and len(parts) >= 8
                and parts[4] == "issues"
                and parts[6] == "labels"
                and parts[5].isdigit()
            ):
                where = places.get(int(parts[5]))
                name = "/".join(parts[7:])
                if where is not None and name in self.watched:
                    self.model.label_removed(where, name)
                    self.model.notes.append(f"the bot removed {name!r} from the {where}")

    def _sync_labels(self, *, additions_only: bool, pull: dict[str, Any] | None = None) -> None:
        pull = pull or self.world.pull(self.example.pr)
        issue = self.world.issue(self.example.issue)
        for where, item in (("pr", pull), ("issue", issue)):
            present = {x["name"] for x in item.get("labels", [])}
            self.model.sync_labels(where, present, self.watched, additions_only=additions_only)

    def _judge(self, pull: dict[str, Any]) -> Merge:
        merged_head = str(pull["head"]["sha"])
        if merged_head != self.model.head:
            # Only the bot's own push in this very tick (none is expected) explains it.
            self.model.notes.append(f"the head moved to {merged_head[:12]} in the merging tick")
            self.model.pushed(merged_head)
        for comment in self.world.comments(self.example.pr):
            self.model.saw_review_comment(
                str(comment.get("body") or ""), str((comment.get("user") or {}).get("login"))
            )
        # Labels the bot added before the merge count as the bot's (they never approve);
        # removals are folded from the write log, in order, so none after the merge counts.
        self._sync_labels(additions_only=True, pull=pull)
        reported = self.world.check_runs(merged_head)
        merge = self.model.judge(merged_head, pull.get("merge_commit_sha"), reported)
        self.log.append(f"merged {merged_head[:12]}")
        return merge

    # ------------------------------------------------------------- verdicts

    def verdict(self, steps: list[Any]) -> None:
        """Raise a readable OracleViolation when a merge broke a rule or a PR was duplicated."""
        problems = [reason for merge in self.model.merges for reason in merge.reasons]
        pulls = self.world.pulls_for(self.example.branch)
        if len(pulls) != 1:
            problems.append(f"{len(pulls)} pull requests for {self.example.branch}")
        if not problems:
            return
        lines = [
            "The merge oracle refuses this run.",
            f"issue #{self.example.issue}, pull request #{self.example.pr}, "
            f"first head {self.example.first_head[:12]}, race {self.race}",
            "events:",
            *[f"  {i + 1}. {step!r}" for i, step in enumerate(steps)],
            f"heads in order: {[h[:12] for h in self.model.heads]}",
            *[f"note: {n}" for n in self.model.notes + self.log],
            "why:",
            *[f"  - {p}" for p in problems],
        ]
        raise OracleViolation("\n".join(lines))
