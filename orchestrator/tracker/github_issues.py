"""GitHub Issues as the tracker: candidates by label, tracker states as labels.

Listing candidates is a conditional request: while nothing changed, GitHub
answers 304 and the poll costs nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from orchestrator.domain.snapshot import IssueRef, TrackedIssue
from orchestrator.github.errors import GitHubError
from orchestrator.github.gateway import GitHubGateway
from orchestrator.tracker.base import TrackerSettings


def _issue(repo: str, data: dict[str, Any], settings: TrackerSettings) -> TrackedIssue:
    labels = frozenset(str(label["name"]) for label in data.get("labels", []))
    return TrackedIssue(
        ref=IssueRef(repo, int(data["number"])),
        title=str(data.get("title") or ""),
        is_open=data.get("state") == "open",
        labels=labels,
        created_at=datetime.fromisoformat(str(data["created_at"]).replace("Z", "+00:00")),
        tracker_state=settings.state_of(labels) if data.get("state") == "open" else "Done",
    )


class GitHubIssuesTracker:
    """The tracker adapter on the GitHub gateway."""

    def __init__(self, gateway: GitHubGateway, settings: TrackerSettings) -> None:
        self.gateway = gateway
        self.settings = settings

    def fetch_candidates(self) -> list[TrackedIssue]:
        params: dict[str, Any] = {"state": "open", "sort": "created", "direction": "asc"}
        if self.settings.required_labels:
            params["labels"] = ",".join(sorted(self.settings.required_labels))
        items = self.gateway.client.paginate(
            f"/repos/{self.settings.repo}/issues", params=params, conditional=True
        )
        issues = [
            _issue(self.settings.repo, item, self.settings)
            for item in items
            if "pull_request" not in item
        ]
        return [issue for issue in issues if self.settings.is_candidate(issue)]

    def refresh_by_ids(self, refs: Iterable[IssueRef]) -> dict[IssueRef, TrackedIssue]:
        found: dict[IssueRef, TrackedIssue] = {}
        for ref in refs:
            try:
                data = self.gateway.client.request(
                    "GET", f"/repos/{ref.repo}/issues/{ref.number}", conditional=True
                ).data
            except GitHubError as error:
                if error.status in (404, 410):
                    continue
                raise
            found[ref] = _issue(ref.repo, data, self.settings)
        return found

    def set_tracker_state(self, ref: IssueRef, state: str) -> None:
        state_labels = set(self.settings.state_labels.values())
        wanted = self.settings.state_labels.get(state)
        result = self.gateway.set_issue_labels(
            ref.repo,
            ref.number,
            add=[wanted] if wanted else [],
            remove=state_labels - {wanted} if wanted else state_labels,
        )
        if isinstance(result, Exception):
            raise result
