"""GitHub's REST JSON shapes for CI results and git data: check runs, statuses, jobs,
deployments, commits, branches with their protection, refs and the rate limit."""

from __future__ import annotations

import base64
from typing import Any
from urllib.parse import quote

from orchestrator_sim.billing import RateSnapshot
from orchestrator_sim.gitstore import CommitInfo
from orchestrator_sim.records import (
    BranchProtection,
    CheckAnnotation,
    CheckRun,
    CommitStatus,
    Deployment,
    DeploymentStatus,
    PullRequest,
    Repo,
    User,
)
from orchestrator_sim.shapes_core import ShapesCore


class ChecksShapes(ShapesCore):
    """Check runs, statuses, jobs, deployments, commits, branches, protection and refs as
    GitHub's JSON."""

    # ----------------------------------------------------------------- checks

    def check_run(self, repo: Repo, run: CheckRun) -> dict[str, Any]:
        url = f"{self.repo_url(repo)}/check-runs/{run.id}"
        html = f"{self.repo_html(repo)}/actions/runs/{run.id}/job/{run.job_id}"
        pulls = [
            self._minimal_pull(repo, pr)
            for pr in self.state.index(repo).pulls_with_head(run.head_sha)
            if repo.issues[pr.number].state == "open"
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
            "required_linear_history": {"enabled": rules.required_linear_history},
            "allow_force_pushes": {"enabled": False},
            "allow_deletions": {"enabled": False},
            "block_creations": {"enabled": False},
            "required_conversation_resolution": {"enabled": rules.required_conversation_resolution},
            "lock_branch": {"enabled": False},
            "allow_fork_syncing": {"enabled": False},
            "required_signatures": {"url": f"{url}/required_signatures", "enabled": False},
        }
        if rules.required_checks:
            body["required_status_checks"] = {
                "url": f"{url}/required_status_checks",
                "strict": rules.strict,
                "contexts": list(rules.required_checks),
                "contexts_url": f"{url}/required_status_checks/contexts",
                "checks": [{"context": c, "app_id": None} for c in rules.required_checks],
            }
        reviews = (
            rules.required_approvals,
            rules.dismiss_stale_reviews,
            rules.require_code_owner_reviews,
            rules.require_last_push_approval,
        )
        if any(reviews):
            body["required_pull_request_reviews"] = {
                "url": f"{url}/required_pull_request_reviews",
                "dismiss_stale_reviews": rules.dismiss_stale_reviews,
                "require_code_owner_reviews": rules.require_code_owner_reviews,
                "required_approving_review_count": rules.required_approvals,
                "require_last_push_approval": rules.require_last_push_approval,
            }
        return body

    # ------------------------------------------------------------ deployments

    def deployment(self, repo: Repo, deployment: Deployment) -> dict[str, Any]:
        url = f"{self.repo_url(repo)}/deployments/{deployment.id}"
        return {
            "url": url,
            "id": deployment.id,
            "node_id": deployment.node_id,
            "sha": deployment.sha,
            "ref": deployment.ref,
            "task": "deploy",
            "payload": {},
            "original_environment": deployment.environment,
            "environment": deployment.environment,
            "description": deployment.description,
            "creator": self.user(deployment.creator),
            "created_at": deployment.created_at,
            "updated_at": deployment.updated_at,
            "statuses_url": f"{url}/statuses",
            "repository_url": self.repo_url(repo),
            "transient_environment": False,
            "production_environment": deployment.environment == "production",
        }

    def deployment_status(
        self, repo: Repo, deployment: Deployment, status: DeploymentStatus
    ) -> dict[str, Any]:
        url = f"{self.repo_url(repo)}/deployments/{deployment.id}"
        return {
            "url": f"{url}/statuses/{status.id}",
            "id": status.id,
            "node_id": status.node_id,
            "state": status.state,
            "creator": self.user(status.creator),
            "description": status.description or "",
            "environment": deployment.environment,
            "target_url": "",
            "log_url": "",
            "environment_url": "",
            "created_at": status.created_at,
            "updated_at": status.created_at,
            "deployment_url": url,
            "repository_url": self.repo_url(repo),
        }

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
