"""Check runs and commit statuses of the emulated GitHub, and their rollups."""

from __future__ import annotations

from collections.abc import Iterable

from orchestrator_sim.errors import NotFound, Unprocessable
from orchestrator_sim.records import (
    ANNOTATION_LEVELS,
    CHECK_CONCLUSIONS,
    CHECK_STATUSES,
    STATUS_STATES,
    CheckAnnotation,
    CheckRun,
    CommitStatus,
    Repo,
    make_node_id,
)
from orchestrator_sim.state_issues import IssuesState


class ChecksState(IssuesState):
    """Check runs (tied to CI jobs) and commit statuses per commit SHA."""

    # ----------------------------------------------------------------- checks

    def set_check_run(
        self,
        repo: Repo,
        head_sha: str,
        name: str,
        status: str,
        *,
        conclusion: str | None = None,
        title: str | None = None,
        summary: str | None = None,
        text: str | None = None,
        annotations: Iterable[CheckAnnotation] = (),
        log: str | None = None,
        check_run_id: int | None = None,
        details_url: str | None = None,
    ) -> CheckRun:
        """Create a check run, or update ``check_run_id``; completed runs need a conclusion."""
        if status not in CHECK_STATUSES:
            raise Unprocessable.field("CheckRun", "status", message=f"bad status {status!r}")
        if status == "completed" and conclusion not in CHECK_CONCLUSIONS:
            raise Unprocessable.field(
                "CheckRun", "conclusion", message="completed needs a conclusion"
            )
        if status != "completed" and conclusion is not None:
            raise Unprocessable.field(
                "CheckRun", "conclusion", message="only completed runs conclude"
            )
        notes = list(annotations)
        for note in notes:
            if note.annotation_level not in ANNOTATION_LEVELS:
                raise Unprocessable.field("CheckRun", "annotations", message="bad annotation_level")
        if len(head_sha) != 40:
            raise Unprocessable.field("CheckRun", "head_sha", message="head_sha must be a full SHA")
        with self.lock:
            now = self.now()
            if check_run_id is not None:
                run = self.find_check_run(repo, check_run_id)
            else:
                ident = self.new_id()
                run = CheckRun(
                    id=ident,
                    node_id=make_node_id("CheckRun", ident),
                    head_sha=head_sha,
                    name=name,
                    status=status,
                    # GitHub Actions gives a job the id of its check run.
                    job_id=ident,
                    started_at=now,
                )
                repo.check_runs[ident] = run
                self.index(repo).add_check_run(run)
            run.status = status
            run.conclusion = conclusion
            run.completed_at = now if status == "completed" else None
            if title is not None:
                run.output_title = title
            if summary is not None:
                run.output_summary = summary
            if text is not None:
                run.output_text = text
            if notes:
                run.annotations = notes
            if log is not None:
                run.log = log
            if details_url is not None:
                run.details_url = details_url
            self._touch()
            return run

    def check_runs_for(self, repo: Repo, sha: str, latest_only: bool = True) -> list[CheckRun]:
        """Check runs on a commit; with ``latest_only`` only the newest run of each name."""
        with self.lock:
            runs = list(self.index(repo).check_runs_by_sha.get(sha, ()))
            if not latest_only:
                return runs
            newest: dict[str, CheckRun] = {}
            for run in runs:
                newest[run.name] = run
            return list(newest.values())

    def find_check_run(self, repo: Repo, check_run_id: int) -> CheckRun:
        return self._lookup(repo.check_runs, check_run_id, f"check run {check_run_id}")

    def check_run_for_job(self, repo: Repo, job_id: int) -> CheckRun:
        """The check run tied to a CI job id; NotFound otherwise."""
        with self.lock:
            run = self.index(repo).check_runs_by_job.get(job_id)
        if run is None:
            raise NotFound(f"job {job_id}")
        return run

    def set_commit_status(
        self,
        repo: Repo,
        sha: str,
        *,
        state: str,
        context: str,
        creator: str,
        description: str | None = None,
        target_url: str | None = None,
    ) -> CommitStatus:
        """Add a commit status; the newest one per context is the one that counts."""
        if state not in STATUS_STATES:
            raise Unprocessable.field("Status", "state", message=f"bad state {state!r}")
        with self.lock:
            account = self.user(creator)
            ident = self.new_id()
            now = self.now()
            status = CommitStatus(
                id=ident,
                node_id=make_node_id("StatusContext", ident),
                sha=sha,
                state=state,
                context=context or "default",
                creator=account.login,
                created_at=now,
                updated_at=now,
                description=description,
                target_url=target_url,
            )
            repo.statuses.append(status)
            self.index(repo).add_status(status)
            self._touch()
            return status

    def latest_statuses(self, repo: Repo, sha: str) -> list[CommitStatus]:
        """The newest status of each context on a commit, newest first."""
        with self.lock:
            newest: dict[str, CommitStatus] = {}
            for status in self.index(repo).statuses_by_sha.get(sha, ()):
                newest[status.context] = status
            return sorted(newest.values(), key=lambda s: s.id, reverse=True)

    def combined_status(self, repo: Repo, sha: str) -> str:
        """The combined state of commit statuses: failure/error beat pending beat success."""
        with self.lock:
            states = {s.state for s in self.latest_statuses(repo, sha)}
            if "error" in states or "failure" in states:
                return "failure"
            if "pending" in states or not states:
                return "pending"
            return "success"

    def rollup_state(self, repo: Repo, sha: str) -> str | None:
        """GraphQL's statusCheckRollup state over check runs and statuses (None if none).

        FAILURE if any run failed (failure, timed_out, cancelled, action_required)
        or a status failed, ERROR for an errored status,
        PENDING while anything is not complete, else SUCCESS.
        """
        with self.lock:
            runs = self.check_runs_for(repo, sha)
            statuses = self.latest_statuses(repo, sha)
            if not runs and not statuses:
                return None
            bad = {"failure", "timed_out", "cancelled", "action_required"}
            if any(r.status == "completed" and r.conclusion in bad for r in runs):
                return "FAILURE"
            if any(s.state == "failure" for s in statuses):
                return "FAILURE"
            if any(s.state == "error" for s in statuses):
                return "ERROR"
            if any(r.status != "completed" for r in runs) or any(
                s.state == "pending" for s in statuses
            ):
                return "PENDING"
            return "SUCCESS"
