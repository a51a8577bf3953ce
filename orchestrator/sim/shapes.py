"""GitHub's REST JSON shapes for the emulator's records.

One `Shapes` object renders records for one request: it knows the server's
base URL (so every ``url`` and ``html_url`` points back at the emulator) and
reads the state, so callers hold ``state.lock`` while rendering. Shapes carry
every property GitHub's OpenAPI description marks as required.
"""

from __future__ import annotations

import base64
from typing import Any
from urllib.parse import quote

from orchestrator.sim.billing import RateSnapshot
from orchestrator.sim.emulator import Emulator
from orchestrator.sim.gitstore import CommitInfo
from orchestrator.sim.records import (
    BranchProtection,
    CheckAnnotation,
    CheckRun,
    CommitStatus,
    Issue,
    IssueComment,
    IssueEvent,
    Label,
    PullRequest,
    Repo,
    Review,
    ReviewComment,
    User,
)

# Repository URL properties GitHub lists, as (key, suffix after the repository URL).
_REPO_URLS: tuple[tuple[str, str], ...] = (
    ("archive_url", "/{archive_format}{/ref}"),
    ("assignees_url", "/assignees{/user}"),
    ("blobs_url", "/git/blobs{/sha}"),
    ("branches_url", "/branches{/branch}"),
    ("collaborators_url", "/collaborators{/collaborator}"),
    ("comments_url", "/comments{/number}"),
    ("commits_url", "/commits{/sha}"),
    ("compare_url", "/compare/{base}...{head}"),
    ("contents_url", "/contents/{+path}"),
    ("contributors_url", "/contributors"),
    ("deployments_url", "/deployments"),
    ("downloads_url", "/downloads"),
    ("events_url", "/events"),
    ("forks_url", "/forks"),
    ("git_commits_url", "/git/commits{/sha}"),
    ("git_refs_url", "/git/refs{/sha}"),
    ("git_tags_url", "/git/tags{/sha}"),
    ("hooks_url", "/hooks"),
    ("issue_comment_url", "/issues/comments{/number}"),
    ("issue_events_url", "/issues/events{/number}"),
    ("issues_url", "/issues{/number}"),
    ("keys_url", "/keys{/key_id}"),
    ("labels_url", "/labels{/name}"),
    ("languages_url", "/languages"),
    ("merges_url", "/merges"),
    ("milestones_url", "/milestones{/number}"),
    ("notifications_url", "/notifications{?since,all,participating}"),
    ("pulls_url", "/pulls{/number}"),
    ("releases_url", "/releases{/id}"),
    ("stargazers_url", "/stargazers"),
    ("statuses_url", "/statuses/{sha}"),
    ("subscribers_url", "/subscribers"),
    ("subscription_url", "/subscription"),
    ("tags_url", "/tags"),
    ("teams_url", "/teams"),
    ("trees_url", "/git/trees{/sha}"),
)

_ROLE_TO_PERMISSION = {
    "admin": "admin",
    "maintain": "write",
    "write": "write",
    "triage": "read",
    "read": "read",
}


class Shapes:
    """Renders records as GitHub's JSON for one request (base URL ``base``)."""

    def __init__(self, emulator: Emulator, base: str) -> None:
        self.emulator = emulator
        self.state = emulator.state
        self.base = base.rstrip("/")

    # ------------------------------------------------------------------ urls

    def repo_url(self, repo: Repo) -> str:
        return f"{self.base}/repos/{repo.owner}/{repo.name}"

    def repo_html(self, repo: Repo) -> str:
        return f"{self.base}/{repo.owner}/{repo.name}"

    # ---------------------------------------------------------------- people

    def user(self, user: User | str | None) -> dict[str, Any] | None:
        """A simple-user object (None for an unknown login)."""
        if user is None:
            return None
        if isinstance(user, str):
            found = self.state.find_user(user)
            if found is None:
                return None
            user = found
        login = user.rest_login
        url = f"{self.base}/users/{login}"
        return {
            "login": login,
            "id": user.id,
            "node_id": user.node_id,
            "avatar_url": f"{self.base}/avatars/u/{user.id}?v=4",
            "gravatar_id": "",
            "url": url,
            "html_url": f"{self.base}/{'apps/' + user.login if user.bot else login}",
            "followers_url": f"{url}/followers",
            "following_url": f"{url}/following{{/other_user}}",
            "gists_url": f"{url}/gists{{/gist_id}}",
            "starred_url": f"{url}/starred{{/owner}}{{/repo}}",
            "subscriptions_url": f"{url}/subscriptions",
            "organizations_url": f"{url}/orgs",
            "repos_url": f"{url}/repos",
            "events_url": f"{url}/events{{/privacy}}",
            "received_events_url": f"{url}/received_events",
            "type": user.type,
            "user_view_type": "public",
            "site_admin": False,
        }

    def _known_user(self, user: User | str) -> dict[str, Any]:
        rendered = self.user(user)
        if rendered is None:
            raise KeyError(f"unknown account {user}")
        return rendered

    def account(self, user: User, *, private: bool) -> dict[str, Any]:
        """``GET /user`` (private) or ``GET /users/{login}`` (public) for one account."""
        owned = [r for r in self.state.repos.values() if r.owner.lower() == user.login.lower()]
        body = {
            **self._known_user(user),
            "name": user.name,
            "company": None,
            "blog": "",
            "location": None,
            "email": user.email,
            "hireable": None,
            "bio": None,
            "twitter_username": None,
            "public_repos": sum(1 for r in owned if not r.private),
            "public_gists": 0,
            "followers": 0,
            "following": 0,
            "created_at": user.created_at,
            "updated_at": user.created_at,
        }
        if private:
            body.update(
                {
                    "private_gists": 0,
                    "total_private_repos": sum(1 for r in owned if r.private),
                    "owned_private_repos": sum(1 for r in owned if r.private),
                    "disk_usage": 0,
                    "collaborators": 0,
                    "two_factor_authentication": True,
                }
            )
        return body

    def association(self, repo: Repo, login: str) -> str:
        """GitHub's author_association of ``login`` in ``repo``."""
        if login.lower() == repo.owner.lower():
            return "OWNER"
        if login.lower() in repo.permissions:
            return "COLLABORATOR"
        return "NONE"

    # ----------------------------------------------------------- repositories

    def repo(self, repo: Repo, viewer: User | None = None) -> dict[str, Any]:
        """A full-repository object (also satisfies the shorter repository shapes)."""
        url = self.repo_url(repo)
        html = self.repo_html(repo)
        open_issues = sum(1 for i in repo.issues.values() if i.state == "open")
        body: dict[str, Any] = {
            "id": repo.id,
            "node_id": repo.node_id,
            "name": repo.name,
            "full_name": repo.full_name,
            "private": repo.private,
            "owner": self._known_user(repo.owner),
            "html_url": html,
            "description": repo.description,
            "fork": False,
            "url": url,
        }
        for key, suffix in _REPO_URLS:
            body[key] = url + suffix
        body.update(
            {
                "created_at": repo.created_at,
                "updated_at": repo.updated_at,
                "pushed_at": repo.pushed_at,
                "git_url": f"{html}.git",
                "ssh_url": f"{html}.git",
                "clone_url": f"{html}.git",
                "svn_url": html,
                "homepage": None,
                "size": 0,
                "stargazers_count": 0,
                "watchers_count": 0,
                "language": None,
                "has_issues": True,
                "has_projects": False,
                "has_downloads": True,
                "has_wiki": False,
                "has_pages": False,
                "has_discussions": False,
                "forks_count": 0,
                "mirror_url": None,
                "archived": False,
                "disabled": False,
                "open_issues_count": open_issues,
                "license": None,
                "allow_forking": True,
                "is_template": False,
                "web_commit_signoff_required": False,
                "topics": [],
                "visibility": "private" if repo.private else "public",
                "forks": 0,
                "open_issues": open_issues,
                "watchers": 0,
                "default_branch": repo.default_branch,
                "network_count": 0,
                "subscribers_count": 0,
                "allow_merge_commit": True,
                "allow_squash_merge": True,
                "allow_rebase_merge": True,
                "delete_branch_on_merge": False,
            }
        )
        if viewer is not None:
            body["permissions"] = self.permission_flags(repo, viewer.login)
        return body

    def permission_flags(self, repo: Repo, login: str) -> dict[str, bool]:
        levels = ("read", "triage", "write", "maintain", "admin")
        flags = {}
        for level, key in zip(levels, ("pull", "triage", "push", "maintain", "admin"), strict=True):
            flags[key] = self.state.has_permission(repo, login, level)
        return flags

    def minimal_repo(self, repo: Repo) -> dict[str, Any]:
        return self.repo(repo)

    def collaborator_permission(self, repo: Repo, user: User) -> dict[str, Any]:
        role = self.state.permission(repo, user.login)
        return {
            "permission": _ROLE_TO_PERMISSION.get(role or "", "none"),
            "role_name": role or "none",
            "user": {
                **self._known_user(user),
                "permissions": self.permission_flags(repo, user.login),
                "role_name": role or "none",
            },
        }

    # ----------------------------------------------------------------- labels

    def label(self, repo: Repo, label: Label) -> dict[str, Any]:
        return {
            "id": label.id,
            "node_id": label.node_id,
            "url": f"{self.repo_url(repo)}/labels/{quote(label.name, safe='')}",
            "name": label.name,
            "color": label.color,
            "default": label.default,
            "description": label.description,
        }

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

    # ----------------------------------------------------------------- checks

    def check_run(self, repo: Repo, run: CheckRun) -> dict[str, Any]:
        url = f"{self.repo_url(repo)}/check-runs/{run.id}"
        html = f"{self.repo_html(repo)}/actions/runs/{run.id}/job/{run.job_id}"
        pulls = [
            self._minimal_pull(repo, pr)
            for pr in repo.pulls.values()
            if pr.head_sha == run.head_sha and repo.issues[pr.number].state == "open"
        ]
        return {
            "id": run.id,
            "node_id": run.node_id,
            "head_sha": run.head_sha,
            "external_id": run.external_id or str(run.id),
            "url": url,
            "html_url": html,
            "details_url": run.details_url or html,
            "status": run.status,
            "conclusion": run.conclusion,
            "started_at": run.started_at,
            "completed_at": run.completed_at,
            "output": {
                "title": run.output_title,
                "summary": run.output_summary,
                "text": run.output_text,
                "annotations_count": len(run.annotations),
                "annotations_url": f"{url}/annotations",
            },
            "name": run.name,
            "check_suite": {"id": run.id},
            "app": self._app(),
            "pull_requests": pulls,
        }

    def _minimal_pull(self, repo: Repo, pr: PullRequest) -> dict[str, Any]:
        small_repo = {"id": repo.id, "url": self.repo_url(repo), "name": repo.name}
        return {
            "id": pr.id,
            "number": pr.number,
            "url": f"{self.repo_url(repo)}/pulls/{pr.number}",
            "head": {"ref": pr.head_ref, "sha": pr.head_sha, "repo": small_repo},
            "base": {
                "ref": pr.base_ref,
                "sha": repo.branches.get(pr.base_ref, ""),
                "repo": small_repo,
            },
        }

    def _app(self) -> dict[str, Any]:
        owner = self._known_user(
            User(id=9919, login="github", node_id="MDEyOk9yZ2FuaXphdGlvbjk5MTk=", organization=True)
        )
        return {
            "id": 15368,
            "slug": "github-actions",
            "node_id": "MDM6QXBwMTUzNjg=",
            "owner": owner,
            "name": "GitHub Actions",
            "description": "Automate your workflow from idea to production",
            "external_url": "https://help.github.com/en/actions",
            "html_url": f"{self.base}/apps/github-actions",
            "created_at": "2018-07-30T09:30:17Z",
            "updated_at": "2024-04-10T20:33:16Z",
            "permissions": {"checks": "write", "contents": "write", "pull_requests": "write"},
            "events": ["check_run", "check_suite", "pull_request", "push"],
        }

    def annotation(self, repo: Repo, run: CheckRun, note: CheckAnnotation) -> dict[str, Any]:
        return {
            "path": note.path,
            "blob_href": f"{self.repo_html(repo)}/blob/{run.head_sha}/{note.path}",
            "start_line": note.start_line,
            "end_line": note.end_line,
            "start_column": note.start_column,
            "end_column": note.end_column,
            "annotation_level": note.annotation_level,
            "title": note.title,
            "message": note.message,
            "raw_details": note.raw_details,
        }

    def status(self, repo: Repo, status: CommitStatus) -> dict[str, Any]:
        creator = self.user(status.creator)
        return {
            "url": f"{self.repo_url(repo)}/statuses/{status.sha}",
            "avatar_url": creator["avatar_url"] if creator else None,
            "id": status.id,
            "node_id": status.node_id,
            "state": status.state,
            "description": status.description,
            "target_url": status.target_url,
            "context": status.context,
            "created_at": status.created_at,
            "updated_at": status.updated_at,
            "creator": creator,
        }

    def combined_status(self, repo: Repo, sha: str, statuses: list[CommitStatus]) -> dict[str, Any]:
        rendered = []
        for status in statuses:
            item = self.status(repo, status)
            item.pop("creator")
            rendered.append(item)
        return {
            "state": self.state.combined_status(repo, sha),
            "statuses": rendered,
            "sha": sha,
            "total_count": len(self.state.latest_statuses(repo, sha)),
            "repository": self.minimal_repo(repo),
            "commit_url": f"{self.repo_url(repo)}/commits/{sha}",
            "url": f"{self.repo_url(repo)}/commits/{sha}/status",
        }

    def job(self, repo: Repo, run: CheckRun) -> dict[str, Any]:
        html = f"{self.repo_html(repo)}/actions/runs/{run.id}/job/{run.job_id}"
        return {
            "id": run.job_id,
            "run_id": run.id,
            "run_url": f"{self.repo_url(repo)}/actions/runs/{run.id}",
            "run_attempt": 1,
            "node_id": run.node_id,
            "head_sha": run.head_sha,
            "url": f"{self.repo_url(repo)}/actions/jobs/{run.job_id}",
            "html_url": html,
            "status": run.status,
            "conclusion": run.conclusion,
            "created_at": run.started_at,
            "started_at": run.started_at,
            "completed_at": run.completed_at,
            "name": run.name,
            "steps": [],
            "check_run_url": f"{self.repo_url(repo)}/check-runs/{run.id}",
            "labels": ["ubuntu-latest"],
            "runner_id": None,
            "runner_name": None,
            "runner_group_id": None,
            "runner_group_name": None,
            "workflow_name": "CI",
            "head_branch": None,
        }

    # ------------------------------------------------------------- git data

    def commit(self, repo: Repo, info: CommitInfo) -> dict[str, Any]:
        url = f"{self.repo_url(repo)}/commits/{info.sha}"
        html = f"{self.repo_html(repo)}/commit/{info.sha}"
        return {
            "url": url,
            "sha": info.sha,
            "node_id": _commit_node_id(info.sha),
            "html_url": html,
            "comments_url": f"{url}/comments",
            "commit": {
                "url": f"{self.repo_url(repo)}/git/commits/{info.sha}",
                "author": {
                    "name": info.author.name,
                    "email": info.author.email,
                    "date": info.author_date,
                },
                "committer": {
                    "name": info.committer.name,
                    "email": info.committer.email,
                    "date": info.committer_date,
                },
                "message": info.message,
                "tree": {
                    "sha": info.tree,
                    "url": f"{self.repo_url(repo)}/git/trees/{info.tree}",
                },
                "comment_count": 0,
                "verification": {
                    "verified": False,
                    "reason": "unsigned",
                    "signature": None,
                    "payload": None,
                    "verified_at": None,
                },
            },
            "author": self._user_by_email(info.author.email),
            "committer": self._user_by_email(info.committer.email),
            "parents": [
                {
                    "sha": parent,
                    "url": f"{self.repo_url(repo)}/commits/{parent}",
                    "html_url": f"{self.repo_html(repo)}/commit/{parent}",
                }
                for parent in info.parents
            ],
        }

    def _user_by_email(self, email: str) -> dict[str, Any] | None:
        for user in self.state.users.values():
            if self.emulator.identity(user).email.lower() == email.lower():
                return self.user(user)
        return None

    def short_branch(self, repo: Repo, name: str, sha: str) -> dict[str, Any]:
        return {
            "name": name,
            "commit": {"sha": sha, "url": f"{self.repo_url(repo)}/commits/{sha}"},
            "protected": name in repo.protections,
        }

    def branch(self, repo: Repo, name: str, info: CommitInfo) -> dict[str, Any]:
        """A branch with its protection summary, which anyone who can read the repo sees."""
        url = f"{self.repo_url(repo)}/branches/{quote(name, safe='/')}"
        rules = repo.protections.get(name)
        checks = list(rules.required_checks) if rules is not None else []
        level = "off"
        if checks:
            level = "everyone" if rules is not None and rules.enforce_admins else "non_admins"
        return {
            "name": name,
            "commit": self.commit(repo, info),
            "_links": {"self": url, "html": f"{self.repo_html(repo)}/tree/{name}"},
            "protected": rules is not None,
            "protection": {
                "enabled": rules is not None,
                "required_status_checks": {
                    "enforcement_level": level,
                    "contexts": checks,
                    "checks": [{"context": c, "app_id": None} for c in checks],
                },
            },
            "protection_url": f"{url}/protection",
        }

    def protection(self, repo: Repo, name: str, rules: BranchProtection) -> dict[str, Any]:
        """``GET .../branches/{branch}/protection`` for a protected branch."""
        url = f"{self.repo_url(repo)}/branches/{quote(name, safe='/')}/protection"
        body: dict[str, Any] = {
            "url": url,
            "enforce_admins": {"url": f"{url}/enforce_admins", "enabled": rules.enforce_admins},
            "required_linear_history": {"enabled": False},
            "allow_force_pushes": {"enabled": False},
            "allow_deletions": {"enabled": False},
            "block_creations": {"enabled": False},
            "required_conversation_resolution": {"enabled": False},
            "lock_branch": {"enabled": False},
            "allow_fork_syncing": {"enabled": False},
            "required_signatures": {"url": f"{url}/required_signatures", "enabled": False},
        }
        if rules.required_checks:
            body["required_status_checks"] = {
                "url": f"{url}/required_status_checks",
                "strict": False,
                "contexts": list(rules.required_checks),
                "contexts_url": f"{url}/required_status_checks/contexts",
                "checks": [{"context": c, "app_id": None} for c in rules.required_checks],
            }
        if rules.required_approvals > 0 or rules.dismiss_stale_reviews:
            body["required_pull_request_reviews"] = {
                "url": f"{url}/required_pull_request_reviews",
                "dismiss_stale_reviews": rules.dismiss_stale_reviews,
                "require_code_owner_reviews": False,
                "required_approving_review_count": rules.required_approvals,
                "require_last_push_approval": False,
            }
        return body

    def git_ref(self, repo: Repo, name: str, sha: str) -> dict[str, Any]:
        ref = f"refs/heads/{name}"
        return {
            "ref": ref,
            "node_id": _ref_node_id(repo, ref),
            "url": f"{self.repo_url(repo)}/git/{ref}",
            "object": {
                "type": "commit",
                "sha": sha,
                "url": f"{self.repo_url(repo)}/git/commits/{sha}",
            },
        }

    # ------------------------------------------------------------ rate limit

    @staticmethod
    def rate_limit(core: RateSnapshot, graphql: RateSnapshot, search: RateSnapshot) -> Any:
        return {
            "resources": {
                "core": core.as_json(),
                "graphql": graphql.as_json(),
                "search": search.as_json(),
            },
            "rate": core.as_json(),
        }


def _commit_node_id(sha: str) -> str:
    return base64.b64encode(f"06:Commit{sha}".encode()).decode("ascii")


def _ref_node_id(repo: Repo, ref: str) -> str:
    return base64.b64encode(f"03:Ref{repo.id}:{ref}".encode()).decode("ascii")
