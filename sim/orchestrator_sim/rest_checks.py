"""REST routes for CI results: check runs, annotations, commit statuses, job logs and
deployments."""

from __future__ import annotations

import hashlib
import hmac
import re

from orchestrator_sim.api import Call, Reply, RouteSpec
from orchestrator_sim.errors import Unprocessable
from orchestrator_sim.records import Repo

REPO = "/repos/{owner}/{repo}"
_SHA = re.compile(r"^[0-9a-f]{40}$")


def resolve_ref(call: Call, repo: Repo, ref: str) -> str:
    """The commit SHA a branch name, ``heads/<branch>`` or SHA names; 422 when unknown."""
    for prefix in ("refs/heads/", "heads/"):
        if ref.startswith(prefix) and ref[len(prefix) :] in repo.branches:
            return repo.branches[ref[len(prefix) :]]
    if ref in repo.branches:
        return repo.branches[ref]
    if _SHA.match(ref) and call.state.index(repo).knows_commit(ref):
        return ref
    sha = call.emulator.git.resolve(call.emulator.repo_path(repo), ref)
    if sha is None:
        raise Unprocessable(f"No commit found for SHA: {ref}")
    return sha


def job_log_signature(secret: str, repo: Repo, job_id: int) -> str:
    """The signature that lets a job-log download link work without a token."""
    message = f"{repo.full_name.lower()}:{job_id}".encode()
    return hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()[:32]


def list_check_runs(call: Call) -> Reply:
    repo = call.repo()
    latest = call.query_choice("filter", ("latest", "all"), "latest") == "latest"
    name = call.query.get("check_name")
    status = call.query.get("status")
    with call.state.lock:
        sha = resolve_ref(call, repo, call.params["ref"])
        runs = call.state.check_runs_for(repo, sha, latest_only=latest)
        runs = [
            r for r in runs if (not name or r.name == name) and (not status or r.status == status)
        ]
        runs.sort(key=lambda r: r.id, reverse=True)
        chunk, headers = call.page(runs)
        body = {
            "total_count": len(runs),
            "check_runs": [call.shapes.check_run(repo, run) for run in chunk],
        }
        return Reply(200, body, headers)


def get_check_run(call: Call) -> Reply:
    repo = call.repo()
    with call.state.lock:
        run = call.state.find_check_run(repo, call.number("check_run_id"))
        return Reply(200, call.shapes.check_run(repo, run))


def list_annotations(call: Call) -> Reply:
    repo = call.repo()
    with call.state.lock:
        run = call.state.find_check_run(repo, call.number("check_run_id"))
        return call.paged(run.annotations, lambda note: call.shapes.annotation(repo, run, note))


def combined_status(call: Call) -> Reply:
    repo = call.repo()
    with call.state.lock:
        sha = resolve_ref(call, repo, call.params["ref"])
        statuses = call.state.latest_statuses(repo, sha)
        chunk, headers = call.page(statuses)
        return Reply(200, call.shapes.combined_status(repo, sha, chunk), headers)


def list_statuses(call: Call) -> Reply:
    repo = call.repo()
    with call.state.lock:
        sha = resolve_ref(call, repo, call.params.get("ref") or call.params["sha"])
        statuses = sorted(
            call.state.index(repo).statuses_by_sha.get(sha, ()), key=lambda s: s.id, reverse=True
        )
        return call.paged(statuses, lambda s: call.shapes.status(repo, s))


def create_status(call: Call) -> Reply:
    repo = call.repo("write")
    data = call.json_object()
    sha = call.params["sha"]
    if not _SHA.match(sha):
        raise Unprocessable(f"No commit found for SHA: {sha}")
    with call.state.lock:
        status = call.state.set_commit_status(
            repo,
            sha,
            state=call.required(data, "state", str, "Status"),
            context=call.field(data, "context", str, "Status") or "default",
            creator=call.user.login,
            description=call.field(data, "description", str, "Status"),
            target_url=call.field(data, "target_url", str, "Status"),
        )
        return Reply(201, call.shapes.status(repo, status))


def get_job(call: Call) -> Reply:
    repo = call.repo()
    with call.state.lock:
        run = call.state.check_run_for_job(repo, call.number("job_id"))
        return Reply(200, call.shapes.job(repo, run))


def job_logs(call: Call) -> Reply:
    """GitHub answers 302 to a short-lived download link; so does the emulator."""
    repo = call.repo()
    job_id = call.number("job_id")
    with call.state.lock:
        call.state.check_run_for_job(repo, job_id)
    signature = job_log_signature(call.emulator.blob_secret, repo, job_id)
    location = f"{call.base_url}/_blobs/job-logs/{repo.owner}/{repo.name}/{job_id}?sig={signature}"
    return Reply(302, None, {"location": location})


def list_deployments(call: Call) -> Reply:
    """Deployments newest first, filtered by ``sha``, ``ref`` and ``environment``."""
    repo = call.repo()
    with call.state.lock:
        found = call.state.deployments(
            repo,
            sha=call.query.get("sha"),
            ref=call.query.get("ref"),
            environment=call.query.get("environment"),
        )
        return call.paged(found, lambda d: call.shapes.deployment(repo, d))


def list_deployment_statuses(call: Call) -> Reply:
    """A deployment's statuses, newest first."""
    repo = call.repo()
    with call.state.lock:
        deployment = call.state.deployment(repo, call.number("deployment_id"))
        statuses = list(reversed(deployment.statuses))
        return call.paged(statuses, lambda s: call.shapes.deployment_status(repo, deployment, s))


ROUTES: tuple[RouteSpec, ...] = (
    RouteSpec("GET", REPO + "/commits/{ref:path}/check-runs", list_check_runs, cacheable=True),
    RouteSpec("GET", REPO + "/commits/{ref:path}/status", combined_status, cacheable=True),
    RouteSpec("GET", REPO + "/commits/{ref:path}/statuses", list_statuses, cacheable=True),
    RouteSpec("POST", REPO + "/statuses/{sha}", create_status),
    # The older spelling of the statuses list, which PyGithub still uses.
    RouteSpec("GET", REPO + "/statuses/{sha}", list_statuses, cacheable=True),
    RouteSpec("GET", REPO + "/check-runs/{check_run_id:int}", get_check_run, cacheable=True),
    RouteSpec(
        "GET", REPO + "/check-runs/{check_run_id:int}/annotations", list_annotations, cacheable=True
    ),
    RouteSpec("GET", REPO + "/actions/jobs/{job_id:int}", get_job, cacheable=True),
    RouteSpec("GET", REPO + "/actions/jobs/{job_id:int}/logs", job_logs),
    RouteSpec("GET", REPO + "/deployments", list_deployments, cacheable=True),
    RouteSpec(
        "GET",
        REPO + "/deployments/{deployment_id:int}/statuses",
        list_deployment_statuses,
        cacheable=True,
    ),
)
