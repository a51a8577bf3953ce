"""What an agent needs to fix a failing check: summary, annotations, log tail.

Everything is bounded, so a huge log or thousands of annotations never reach
a prompt whole.
"""

from __future__ import annotations

from orchestrator.github.client import GitHubClient
from orchestrator.github.errors import GitHubError
from orchestrator.github.outcomes import Annotation, FailingCheck

FAILED_CONCLUSIONS = frozenset(
    {"failure", "timed_out", "cancelled", "action_required", "startup_failure", "stale"}
)
MAX_SUMMARY_CHARS = 4_000
MAX_ANNOTATIONS = 30
MAX_ANNOTATION_CHARS = 500
MAX_LOG_TAIL_CHARS = 6_000
MAX_LOG_TAIL_LINES = 80


def log_tail(
    text: str, *, max_lines: int = MAX_LOG_TAIL_LINES, max_chars: int = MAX_LOG_TAIL_CHARS
) -> str:
    """The last lines of a log, at most ``max_lines`` lines and ``max_chars`` characters."""
    tail = "\n".join(text.rstrip("\n").splitlines()[-max_lines:])
    return tail[-max_chars:]


def failing_check_details(client: GitHubClient, repo: str, head_sha: str) -> list[FailingCheck]:
    """Each failing check run on ``head_sha`` (latest run per name), with its details."""
    runs = client.request(
        "GET",
        f"/repos/{repo}/commits/{head_sha}/check-runs",
        params={"per_page": 100},
        conditional=True,
    ).data.get("check_runs", [])
    latest: dict[str, dict[str, object]] = {}
    for run in runs:
        name = str(run.get("name"))
        if name not in latest or int(run["id"]) > int(str(latest[name]["id"])):
            latest[name] = run
    failing = []
    for name, run in sorted(latest.items()):
        if run.get("status") != "completed" or run.get("conclusion") not in FAILED_CONCLUSIONS:
            continue
        run_id = int(str(run["id"]))
        output = run.get("output") or {}
        assert isinstance(output, dict)
        summary = "\n\n".join(str(output.get(k) or "") for k in ("title", "summary", "text"))
        annotations: list[Annotation] = []
        if int(output.get("annotations_count") or 0):
            items = (
                client.request(
                    "GET",
                    f"/repos/{repo}/check-runs/{run_id}/annotations",
                    params={"per_page": MAX_ANNOTATIONS},
                    conditional=True,
                ).data
                or []
            )
            annotations = [
                Annotation(
                    path=str(item.get("path") or ""),
                    line=item.get("start_line"),
                    level=str(item.get("annotation_level") or ""),
                    message=str(item.get("message") or "")[:MAX_ANNOTATION_CHARS],
                )
                for item in items[:MAX_ANNOTATIONS]
            ]
        try:
            tail = log_tail(client.request_text(f"/repos/{repo}/actions/jobs/{run_id}/logs"))
        except GitHubError:
            tail = ""  # not every check has a job log (external CI, statuses)
        failing.append(
            FailingCheck(
                name=name,
                conclusion=str(run.get("conclusion")),
                summary=summary.strip()[:MAX_SUMMARY_CHARS],
                annotations=tuple(annotations),
                log_tail=tail,
                details_url=str(run.get("details_url") or "") or None,
            )
        )
    return failing
