"""The state's indexes answer every lookup as a scan of the records would, through any updates.

A randomized sequence of what GitHub's users and CI do (issues labelled and
relabelled, closed and reopened, pull requests opened, pushed to, retargeted
and merged, check runs created, re-run and completed, statuses, reviews
dismissed by a push, threads, comments added and deleted, a snapshot reloaded)
runs against one state; after every step each indexed lookup must equal a
brute-force scan of the records, and the index kept up to date must equal one
built from scratch.
"""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from orchestrator_sim.clock import ManualClock
from orchestrator_sim.errors import SimError
from orchestrator_sim.records import CheckRun, CommitStatus, Issue, Repo
from orchestrator_sim.state import InlineComment, SimState
from orchestrator_sim.state_index import RepoIndex
from orchestrator_sim.state_issues import IssueQuery

USERS = ("alice", "bob", "carol")
LABELS = ("agent", "Agent", "blocked", "todo", "in progress")
BASES = ("main", "release")
QUERIES = (
    IssueQuery(),
    IssueQuery(state="all", sort="updated", direction="asc"),
    IssueQuery(state="closed", labels=("agent",)),
    IssueQuery(state="open", labels=("AGENT", "todo"), sort="comments"),
    IssueQuery(state="all", labels=("blocked",), sort="updated", direction="desc"),
    IssueQuery(state="all", creator="ALICE", assignee="none"),
)


def brute_list(state: SimState, repo: Repo, query: IssueQuery) -> list[Issue]:
    """GitHub's issue list filters and order, by scanning every issue."""
    items = []
    for issue in repo.issues.values():
        present = {name.lower() for name in issue.labels}
        if query.state not in ("all", issue.state):
            continue
        if any(name.lower() not in present for name in query.labels):
            continue
        if query.since and issue.updated_at < query.since:
            continue
        if query.creator and issue.author.lower() != query.creator.lower():
            continue
        if query.assignee == "none" and issue.assignees:
            continue
        items.append(issue)
    if query.sort == "comments":
        counts = {
            issue.number: sum(1 for c in repo.comments.values() if c.issue_number == issue.number)
            for issue in items
        }
        items.sort(key=lambda issue: (counts[issue.number], issue.id))
    else:
        field = "updated_at" if query.sort == "updated" else "created_at"
        items.sort(key=lambda issue: (getattr(issue, field), issue.id))
    if query.direction == "desc":
        items.reverse()
    return items


def filed(value: Any) -> Any:
    """An index table with records replaced by their ids and empty entries dropped."""
    if isinstance(value, set):
        return sorted(value)
    if isinstance(value, list):
        return [item.id for item in value]
    if isinstance(value, dict):
        return {
            key: filed(item)
            for key, item in value.items()
            if not (isinstance(item, set | list | dict) and not item)
        }
    return value.id


def index_tables(index: RepoIndex) -> dict[str, Any]:
    return {name: filed(table) for name, table in vars(index).items() if name != "repo"}


class IndexedState(RuleBasedStateMachine):
    """One repository changed at random; the invariant compares indexes with scans."""

    def __init__(self) -> None:
        super().__init__()
        self.clock = ManualClock()
        self.state = SimState(self.clock)
        self.state.mergeability_delay = 0
        for login in USERS:
            self.state.add_user(login, token=f"t-{login}")
        self.repo = self.state.add_repo("acme", "widgets")
        for login in USERS:
            self.state.set_permission(self.repo, login, "write")
        self.shas = (f"{n:040x}" for n in itertools.count(1))
        for base in BASES:
            self.state.set_branch(self.repo, base, next(self.shas))
        self.branches = itertools.count(1)

    # ------------------------------------------------------------ helpers

    def attempt(self, action: Any, *args: Any, **kwargs: Any) -> Any:
        """Run a state operation; a refusal GitHub would give is a fine outcome too."""
        try:
            return action(*args, **kwargs)
        except SimError:
            return None

    def known_shas(self) -> set[str]:
        shas = set(self.repo.branches.values())
        shas.update(run.head_sha for run in self.repo.check_runs.values())
        shas.update(status.sha for status in self.repo.statuses)
        shas.update(pr.head_sha for pr in self.repo.pulls.values())
        return shas

    # -------------------------------------------------------------- issues

    @rule(
        author=st.sampled_from(USERS),
        labels=st.lists(st.sampled_from(LABELS), max_size=3),
        seconds=st.integers(0, 3),
    )
    def open_issue(self, author: str, labels: list[str], seconds: int) -> None:
        self.clock.advance(seconds)
        self.attempt(self.state.create_issue, self.repo, author, "An issue", labels=labels)

    @precondition(lambda self: self.repo.issues)
    @rule(data=st.data(), labels=st.lists(st.sampled_from(LABELS), max_size=3))
    def relabel(self, data: st.DataObject, labels: list[str]) -> None:
        number = data.draw(st.sampled_from(sorted(self.repo.issues)))
        how = data.draw(st.sampled_from(("add", "set", "remove")))
        if how == "add":
            self.attempt(self.state.add_labels, self.repo, number, "alice", labels)
        elif how == "set":
            self.attempt(self.state.set_labels, self.repo, number, "bob", labels)
        elif self.repo.issues[number].labels:
            name = data.draw(st.sampled_from(self.repo.issues[number].labels))
            self.attempt(self.state.remove_label, self.repo, number, "carol", name.upper())

    @precondition(lambda self: self.repo.issues)
    @rule(data=st.data(), state=st.sampled_from(("open", "closed")), seconds=st.integers(0, 2))
    def close_or_reopen(self, data: st.DataObject, state: str, seconds: int) -> None:
        self.clock.advance(seconds)
        number = data.draw(st.sampled_from(sorted(self.repo.issues)))
        self.attempt(self.state.update_issue, self.repo, number, "alice", state=state)

    @precondition(lambda self: self.repo.issues)
    @rule(data=st.data(), author=st.sampled_from(USERS))
    def comment(self, data: st.DataObject, author: str) -> None:
        number = data.draw(st.sampled_from(sorted(self.repo.issues)))
        self.attempt(self.state.add_comment, self.repo, number, author, "a comment")

    @precondition(lambda self: self.repo.comments)
    @rule(data=st.data())
    def delete_comment(self, data: st.DataObject) -> None:
        comment_id = data.draw(st.sampled_from(sorted(self.repo.comments)))
        self.state.delete_comment(self.repo, comment_id)

    # --------------------------------------------------------------- pulls

    @rule(base=st.sampled_from(BASES), labels=st.lists(st.sampled_from(LABELS), max_size=2))
    def open_pull(self, base: str, labels: list[str]) -> None:
        branch = f"agent/{next(self.branches)}"
        self.state.set_branch(self.repo, branch, next(self.shas), "alice")
        issue, _pr = self.state.create_pull(
            self.repo, "alice", "A change", head=branch, base=base, body="Closes #1"
        )
        self.attempt(self.state.add_labels, self.repo, issue.number, "alice", labels)

    @rule(data=st.data(), delete=st.booleans())
    def push(self, data: st.DataObject, delete: bool) -> None:
        branch = data.draw(st.sampled_from(sorted(self.repo.branches)))
        gone = delete and branch not in BASES
        self.state.set_branch(self.repo, branch, None if gone else next(self.shas), "bob")

    @precondition(lambda self: self.repo.pulls)
    @rule(data=st.data(), base=st.sampled_from(BASES))
    def retarget(self, data: st.DataObject, base: str) -> None:
        number = data.draw(st.sampled_from(sorted(self.repo.pulls)))
        self.attempt(self.state.update_pull, self.repo, number, "alice", base=base)

    @precondition(lambda self: self.repo.pulls)
    @rule(data=st.data())
    def merge(self, data: st.DataObject) -> None:
        number = data.draw(st.sampled_from(sorted(self.repo.pulls)))
        pr = self.repo.pulls[number]
        if pr.merged or self.repo.issues[number].state != "open":
            return
        base_sha = self.repo.branches.get(pr.base_ref)
        merge_sha = next(self.shas)
        self.state.set_branch(self.repo, pr.base_ref, merge_sha, "alice")
        self.state.record_merge(self.repo, number, "alice", merge_sha, base_sha)

    @rule(dismiss=st.booleans(), approvals=st.integers(0, 2))
    def protect(self, dismiss: bool, approvals: int) -> None:
        self.state.protect_branch(
            self.repo, "main", required_approvals=approvals, dismiss_stale_reviews=dismiss
        )

    # ------------------------------------------------------------- reviews

    @precondition(lambda self: self.repo.pulls)
    @rule(
        data=st.data(),
        author=st.sampled_from(("bob", "carol")),
        state=st.sampled_from(("APPROVED", "CHANGES_REQUESTED", "COMMENTED")),
        inline=st.booleans(),
    )
    def review(self, data: st.DataObject, author: str, state: str, inline: bool) -> None:
        number = data.draw(st.sampled_from(sorted(self.repo.pulls)))
        comments = [InlineComment("src/app.py", 3, "look here", diff_hunk="@@ -1 +1 @@")]
        self.attempt(
            self.state.submit_review,
            self.repo,
            number,
            author,
            state,
            body="a review",
            comments=comments if inline else [],
        )

    @precondition(lambda self: self.repo.threads)
    @rule(data=st.data(), resolve=st.booleans())
    def reply_or_resolve(self, data: st.DataObject, resolve: bool) -> None:
        thread_id = data.draw(st.sampled_from(sorted(self.repo.threads)))
        if resolve:
            self.state.resolve_thread(self.repo, thread_id, "alice")
        else:
            self.state.reply_to_thread(self.repo, thread_id, "carol", "a reply")

    # -------------------------------------------------------------- checks

    @rule(
        data=st.data(),
        name=st.sampled_from(("ci", "lint")),
        status=st.sampled_from(("queued", "in_progress", "completed")),
    )
    def check_run(self, data: st.DataObject, name: str, status: str) -> None:
        sha = data.draw(st.sampled_from(sorted(self.known_shas())))
        conclusion = "success" if status == "completed" else None
        self.state.set_check_run(self.repo, sha, name, status, conclusion=conclusion)

    @precondition(lambda self: self.repo.check_runs)
    @rule(data=st.data(), conclusion=st.sampled_from(("success", "failure")))
    def complete_check_run(self, data: st.DataObject, conclusion: str) -> None:
        run: CheckRun = data.draw(st.sampled_from(list(self.repo.check_runs.values())))
        self.state.set_check_run(
            self.repo,
            run.head_sha,
            run.name,
            "completed",
            conclusion=conclusion,
            check_run_id=run.id,
        )

    @rule(
        data=st.data(),
        context=st.sampled_from(("ci", "deploy")),
        state=st.sampled_from(("pending", "success", "failure")),
    )
    def status(self, data: st.DataObject, context: str, state: str) -> None:
        sha = data.draw(st.sampled_from(sorted(self.known_shas())))
        self.state.set_commit_status(self.repo, sha, state=state, context=context, creator="bob")

    # ----------------------------------------------------------- snapshots

    @rule()
    def reload(self) -> None:
        self.state.load_json(self.state.to_json())
        self.repo = self.state.repo("acme", "widgets")

    # ----------------------------------------------------------- invariant

    @invariant()
    def lookups_match_scans(self) -> None:
        state, repo = self.state, self.repo
        index = state.index(repo)
        assert index_tables(index) == index_tables(RepoIndex.of(repo))
        for sha in self.known_shas():
            runs = [r for r in repo.check_runs.values() if r.head_sha == sha]
            assert state.check_runs_for(repo, sha, latest_only=False) == runs
            newest = {run.name: run for run in runs}
            assert state.check_runs_for(repo, sha) == list(newest.values())
            statuses: dict[str, CommitStatus] = {}
            for status in repo.statuses:
                if status.sha == sha:
                    statuses[status.context] = status
            expected = sorted(statuses.values(), key=lambda s: s.id, reverse=True)
            assert state.latest_statuses(repo, sha) == expected
            heads = [
                pr
                for pr in sorted(repo.pulls.values(), key=lambda p: p.number)
                if pr.head_sha == sha
            ]
            assert index.pulls_with_head(sha) == heads
            assert index.knows_commit(sha) == bool(runs or statuses)
        for run in repo.check_runs.values():
            assert state.check_run_for_job(repo, run.job_id) is run
        for number in repo.issues:
            comments = [c for c in repo.comments.values() if c.issue_number == number]
            assert state.issue_comments(repo, number) == comments
            assert state.comment_count(repo, number) == len(comments)
            events = [e for e in repo.events if e.issue_number == number]
            assert state.issue_events(repo, number) == events
        for number, pr in repo.pulls.items():
            reviews = [r for r in repo.reviews.values() if r.pull_number == number]
            assert state.pull_reviews(repo, number) == reviews
            threads = [t for t in repo.threads.values() if t.pull_number == number]
            assert state.pull_threads(repo, number) == threads
            notes = [c for c in repo.review_comments.values() if c.pull_number == number]
            assert state.pull_review_comments(repo, number) == notes
            assert state.find_pull_by_node_id(pr.node_id) == (repo, pr)
        for head in {pr.head_ref for pr in repo.pulls.values()} | {None}:
            for base in (*BASES, None):
                on = [
                    pr
                    for pr in sorted(repo.pulls.values(), key=lambda p: p.number)
                    if (head is None or pr.head_ref == head)
                    and (base is None or pr.base_ref == base)
                ]
                assert index.pulls_on(head, base) == on
        since = self.clock().strftime("%Y-%m-%dT%H:%M:%SZ")
        for query in (*QUERIES, IssueQuery(state="all", since=since, sort="updated")):
            assert state.list_issues(repo, query) == brute_list(state, repo, query)


TestIndexedState = IndexedState.TestCase
TestIndexedState.settings = settings(
    max_examples=60,
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
