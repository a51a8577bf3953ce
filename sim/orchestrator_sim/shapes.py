"""GitHub's REST JSON shapes for the emulator's records.

One `Shapes` object renders records for one request: it knows the server's
base URL (so every ``url`` and ``html_url`` points back at the emulator) and
reads the state, so callers hold ``state.lock`` while rendering. Shapes carry
every property GitHub's OpenAPI description marks as required.
"""

from __future__ import annotations

from typing import Any

from orchestrator_sim.records import (
    Issue,
    IssueComment,
    IssueEvent,
    PullRequest,
    Repo,
    Review,
    ReviewComment,
)
from orchestrator_sim.shapes_checks import ChecksShapes


class Shapes(ChecksShapes):
    """Renders records as GitHub's JSON for one request (base URL ``base``).

    Issues, comments, events, pull requests and reviews are rendered here;
    accounts and repositories by `ShapesCore`, CI results and git data by
    `ChecksShapes`.
    """

    # ----------------------------------------------------------------- issues

    def issue(self, repo: Repo, issue: Issue) -> dict[str, Any]:
        url = f"{self.repo_url(repo)}/issues/{issue.number}"
        kind = "pull" if issue.is_pull else "issues"
        assignees = [self._known_user(a) for a in issue.assignees]
        body: dict[str, Any] = {
            "url": url,
            "repository_url": self.repo_url(repo),
            "labels_url": f"{url}/labels{{/name}}",
            "comments_url": f"{url}/comments",
            "events_url": f"{url}/events",
            "html_url": f"{self.repo_html(repo)}/{kind}/{issue.number}",
            "id": issue.id,
            "node_id": issue.node_id,
            "number": issue.number,
            "title": issue.title,
            "user": self.user(issue.author),
            "labels": [self.label(repo, label) for label in self.state.issue_labels(repo, issue)],
            "state": issue.state,
            "locked": issue.locked,
            "assignee": assignees[0] if assignees else None,
            "assignees": assignees,
            "milestone": None,
            "comments": self.state.comment_count(repo, issue.number),
            "created_at": issue.created_at,
            "updated_at": issue.updated_at,
            "closed_at": issue.closed_at,
            "author_association": self.association(repo, issue.author),
            "active_lock_reason": None,
            "body": issue.body,
            "closed_by": self.user(issue.closed_by),
            "timeline_url": f"{url}/timeline",
            "performed_via_github_app": None,
            "state_reason": issue.state_reason,
        }
        if issue.is_pull:
            pr = repo.pulls[issue.number]
            pull_url = f"{self.repo_url(repo)}/pulls/{issue.number}"
            html = f"{self.repo_html(repo)}/pull/{issue.number}"
            body["draft"] = pr.draft
            body["pull_request"] = {
                "url": pull_url,
                "html_url": html,
                "diff_url": f"{html}.diff",
                "patch_url": f"{html}.patch",
                "merged_at": pr.merged_at,
            }
        return body

    def comment(self, repo: Repo, comment: IssueComment) -> dict[str, Any]:
        issue = repo.issues.get(comment.issue_number)
        kind = "pull" if issue is not None and issue.is_pull else "issues"
        return {
            "id": comment.id,
            "node_id": comment.node_id,
            "url": f"{self.repo_url(repo)}/issues/comments/{comment.id}",
            "html_url": (
                f"{self.repo_html(repo)}/{kind}/{comment.issue_number}#issuecomment-{comment.id}"
            ),
            "body": comment.body,
            "user": self.user(comment.author),
            "created_at": comment.created_at,
            "updated_at": comment.updated_at,
            "issue_url": f"{self.repo_url(repo)}/issues/{comment.issue_number}",
            "author_association": self.association(repo, comment.author),
            "performed_via_github_app": None,
        }

    def event(self, repo: Repo, event: IssueEvent) -> dict[str, Any]:
        body: dict[str, Any] = {
            "id": event.id,
            "node_id": event.node_id,
            "url": f"{self.repo_url(repo)}/issues/events/{event.id}",
            "actor": self.user(event.actor),
            "event": event.event,
            "commit_id": event.commit_id,
            "commit_url": (
                f"{self.repo_url(repo)}/commits/{event.commit_id}" if event.commit_id else None
            ),
            "created_at": event.created_at,
            "performed_via_github_app": None,
        }
        if event.label is not None:
            body["label"] = {"name": event.label, "color": event.label_color or "ededed"}
        if event.requested_reviewer is not None:
            body["review_requester"] = self.user(event.actor)
            body["requested_reviewer"] = self.user(event.requested_reviewer)
        if event.rename_from is not None:
            body["rename"] = {"from": event.rename_from, "to": event.rename_to or ""}
        return body

    # ------------------------------------------------------------------ pulls

    def _branch_end(self, repo: Repo, ref: str, sha: str) -> dict[str, Any]:
        return {
            "label": f"{repo.owner}:{ref}",
            "ref": ref,
            "sha": sha,
            "user": self._known_user(repo.owner),
            "repo": self.repo(repo),
        }

    def pull(self, repo: Repo, pr: PullRequest, *, full: bool) -> dict[str, Any]:
        """A pull-request object; ``full`` adds mergeability, counts and diff stats."""
        issue = repo.issues[pr.number]
        url = f"{self.repo_url(repo)}/pulls/{pr.number}"
        html = f"{self.repo_html(repo)}/pull/{pr.number}"
        issue_url = f"{self.repo_url(repo)}/issues/{pr.number}"
        statuses_url = f"{self.repo_url(repo)}/statuses/{pr.head_sha}"
        assignees = [self._known_user(a) for a in issue.assignees]
        base_sha = repo.branches.get(pr.base_ref, "")
        body: dict[str, Any] = {
            "url": url,
            "id": pr.id,
            "node_id": pr.node_id,
            "html_url": html,
            "diff_url": f"{html}.diff",
            "patch_url": f"{html}.patch",
            "issue_url": issue_url,
            "commits_url": f"{url}/commits",
            "review_comments_url": f"{url}/comments",
            "review_comment_url": f"{self.repo_url(repo)}/pulls/comments{{/number}}",
            "comments_url": f"{issue_url}/comments",
            "statuses_url": statuses_url,
            "number": pr.number,
            "state": issue.state,
            "locked": issue.locked,
            "title": issue.title,
            "user": self._known_user(issue.author),
            "body": issue.body,
            "labels": [self.label(repo, label) for label in self.state.issue_labels(repo, issue)],
            "milestone": None,
            "active_lock_reason": None,
            "created_at": issue.created_at,
            "updated_at": issue.updated_at,
            "closed_at": issue.closed_at,
            "merged_at": pr.merged_at,
            "merge_commit_sha": pr.merge_commit_sha,
            "assignee": assignees[0] if assignees else None,
            "assignees": assignees,
            "requested_reviewers": [self._known_user(r) for r in pr.requested_reviewers],
            "requested_teams": [],
            "head": self._branch_end(repo, pr.head_ref, pr.head_sha),
            "base": self._branch_end(repo, pr.base_ref, base_sha),
            "_links": {
                "self": {"href": url},
                "html": {"href": html},
                "issue": {"href": issue_url},
                "comments": {"href": f"{issue_url}/comments"},
                "review_comments": {"href": f"{url}/comments"},
                "review_comment": {"href": f"{self.repo_url(repo)}/pulls/comments{{/number}}"},
                "commits": {"href": f"{url}/commits"},
                "statuses": {"href": statuses_url},
            },
            "author_association": self.association(repo, issue.author),
            "auto_merge": None,
            "draft": pr.draft,
        }
        if full:
            mergeable = self.state.mergeable(repo, pr)
            stats = self.emulator.diff_stats(repo, pr)
            body.update(
                {
                    "merged": pr.merged,
                    "mergeable": mergeable,
                    "rebaseable": mergeable,
                    "mergeable_state": self.state.mergeable_state(repo, pr),
                    "merged_by": self.user(pr.merged_by),
                    "comments": self.state.comment_count(repo, pr.number),
                    "review_comments": len(self.state.pull_review_comments(repo, pr.number)),
                    "maintainer_can_modify": pr.maintainer_can_modify,
                    "commits": stats.commits,
                    "additions": stats.additions,
                    "deletions": stats.deletions,
                    "changed_files": stats.changed_files,
                }
            )
        return body

    def review(self, repo: Repo, review: Review) -> dict[str, Any]:
        pull_url = f"{self.repo_url(repo)}/pulls/{review.pull_number}"
        html = f"{self.repo_html(repo)}/pull/{review.pull_number}#pullrequestreview-{review.id}"
        return {
            "id": review.id,
            "node_id": review.node_id,
            "user": self.user(review.author),
            "body": review.body,
            "state": review.state,
            "html_url": html,
            "pull_request_url": pull_url,
            "author_association": self.association(repo, review.author),
            "_links": {"html": {"href": html}, "pull_request": {"href": pull_url}},
            "submitted_at": review.submitted_at,
            "commit_id": review.commit_id,
        }

    def review_comment(self, repo: Repo, comment: ReviewComment) -> dict[str, Any]:
        url = f"{self.repo_url(repo)}/pulls/comments/{comment.id}"
        pull_url = f"{self.repo_url(repo)}/pulls/{comment.pull_number}"
        html = f"{self.repo_html(repo)}/pull/{comment.pull_number}#discussion_r{comment.id}"
        thread = repo.threads.get(comment.thread_id)
        outdated = thread is not None and thread.outdated
        original_line = comment.line
        if thread is not None and thread.original_line is not None:
            original_line = thread.original_line
        body: dict[str, Any] = {
            "url": url,
            "pull_request_review_id": comment.review_id,
            "id": comment.id,
            "node_id": comment.node_id,
            "diff_hunk": comment.diff_hunk,
            "path": comment.path,
            "position": None if outdated else max(1, comment.diff_hunk.count("\n")),
            "original_position": max(1, comment.diff_hunk.count("\n")),
            "commit_id": comment.commit_id,
            "original_commit_id": comment.original_commit_id,
            "user": self.user(comment.author),
            "body": comment.body,
            "created_at": comment.created_at,
            "updated_at": comment.updated_at,
            "html_url": html,
            "pull_request_url": pull_url,
            "author_association": self.association(repo, comment.author),
            "_links": {
                "self": {"href": url},
                "html": {"href": html},
                "pull_request": {"href": pull_url},
            },
            "start_line": None,
            "original_start_line": None,
            "start_side": None,
            "line": None if outdated else comment.line,
            "original_line": original_line,
            "side": comment.side,
            "subject_type": "line",
        }
        if comment.in_reply_to_id is not None:
            body["in_reply_to_id"] = comment.in_reply_to_id
        return body

    def review_requests(self, pr: PullRequest) -> dict[str, Any]:
        return {"users": [self._known_user(r) for r in pr.requested_reviewers], "teams": []}
