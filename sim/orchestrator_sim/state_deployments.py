"""Deployments of the emulated GitHub: a commit deployed to an environment, and its statuses.

Deployments matter to merges through branch protection's required
deployments: a head passes for an environment once a deployment of that
commit to it has ``success`` as its newest status.
"""

from __future__ import annotations

from orchestrator_sim.errors import Unprocessable
from orchestrator_sim.records import (
    DEPLOYMENT_STATES,
    Deployment,
    DeploymentStatus,
    Repo,
    make_node_id,
)
from orchestrator_sim.state_reviews import ReviewsState


class DeploymentsState(ReviewsState):
    """Deployments per repository, each with its statuses oldest first."""

    def create_deployment(
        self,
        repo: Repo,
        sha: str,
        environment: str,
        creator: str,
        *,
        ref: str | None = None,
        description: str | None = None,
    ) -> Deployment:
        """Record a deployment of commit ``sha`` (named by ``ref``) to ``environment``."""
        if len(sha) != 40:
            raise Unprocessable.field("Deployment", "sha", message="sha must be a full SHA")
        if not environment:
            raise Unprocessable.field("Deployment", "environment", "missing_field")
        with self.lock:
            account = self.user(creator)
            ident = self.new_id()
            now = self.now()
            deployment = Deployment(
                id=ident,
                node_id=make_node_id("Deployment", ident),
                sha=sha,
                ref=ref or sha,
                environment=environment,
                creator=account.login,
                created_at=now,
                updated_at=now,
                description=description,
            )
            repo.deployments[ident] = deployment
            self._touch()
            return deployment

    def add_deployment_status(
        self,
        repo: Repo,
        deployment_id: int,
        state: str,
        creator: str,
        *,
        description: str | None = None,
    ) -> DeploymentStatus:
        """Give a deployment a new status; the newest one is the deployment's state."""
        if state not in DEPLOYMENT_STATES:
            choices = ", ".join(sorted(DEPLOYMENT_STATES))
            raise Unprocessable.field("DeploymentStatus", "state", message=f"one of {choices}")
        with self.lock:
            deployment = self.deployment(repo, deployment_id)
            account = self.user(creator)
            ident = self.new_id()
            now = self.now()
            status = DeploymentStatus(
                id=ident,
                node_id=make_node_id("DeploymentStatus", ident),
                state=state,
                creator=account.login,
                created_at=now,
                description=description,
            )
            deployment.statuses.append(status)
            deployment.updated_at = now
            self._touch()
            return status

    def deployment(self, repo: Repo, deployment_id: int) -> Deployment:
        return self._lookup(repo.deployments, deployment_id, f"deployment {deployment_id}")

    def deployments(
        self,
        repo: Repo,
        *,
        sha: str | None = None,
        ref: str | None = None,
        environment: str | None = None,
    ) -> list[Deployment]:
        """The repository's deployments, newest first, filtered as REST filters them."""
        with self.lock:
            found = [
                d
                for d in repo.deployments.values()
                if (sha is None or d.sha == sha)
                and (ref is None or d.ref == ref)
                and (environment is None or d.environment == environment)
            ]
            return sorted(found, key=lambda d: d.id, reverse=True)

    def deployed(self, repo: Repo, sha: str, environment: str) -> bool:
        """Whether a deployment of ``sha`` to ``environment`` has ``success`` as newest status."""
        with self.lock:
            return any(
                d.statuses and d.statuses[-1].state == "success"
                for d in self.deployments(repo, sha=sha, environment=environment)
            )
