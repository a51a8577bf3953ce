"""REST routes for accounts, the rate limit, repositories, collaborators, branches,
git refs and commits."""

from __future__ import annotations

import re

from orchestrator_sim.api import Call, Reply, RouteSpec
from orchestrator_sim.apps import NOT_FOR_INTEGRATIONS, is_installation_actor
from orchestrator_sim.errors import Conflict, Forbidden, NotFound, Unprocessable
from orchestrator_sim.gitstore import GitError
from orchestrator_sim.push_rules import ref_violations, rest_refusal
from orchestrator_sim.records import Repo
from orchestrator_sim.rest_checks import resolve_ref
from orchestrator_sim.shapes import Shapes

REPO = "/repos/{owner}/{repo}"
_SHA = re.compile(r"^[0-9a-f]{40}$")
_BRANCH = re.compile(r"^(?!/)(?!.*//)(?!.*\.\.)(?!.*\.lock$)[^\s~^:?*\[\\]+(?<!/)$")


def get_authenticated_user(call: Call) -> Reply:
    if is_installation_actor(call.user):
        # An installation token is the App's, not a user's: GitHub refuses it here.
        raise Forbidden(NOT_FOR_INTEGRATIONS)
    with call.state.lock:
        return Reply(200, call.shapes.account(call.user, private=True))


def get_user(call: Call) -> Reply:
    with call.state.lock:
        user = call.state.find_user(call.params["login"])
        if user is None:
            raise NotFound("user")
        return Reply(200, call.shapes.account(user, private=False))


def rate_limit(call: Call) -> Reply:
    token = call.user.token or ""
    billing = call.emulator.billing
    return Reply(
        200,
        Shapes.rate_limit(
            billing.snapshot(token, "core"),
            billing.snapshot(token, "graphql"),
            billing.snapshot(token, "search"),
        ),
    )


def get_repo(call: Call) -> Reply:
    repo = call.repo()
    with call.state.lock:
        return Reply(200, call.shapes.repo(repo, viewer=call.user))


def collaborator_permission(call: Call) -> Reply:
    """Only accounts with push access may read others' levels, as on GitHub."""
    repo = call.repo()
    if not call.allowed(repo, "write"):
        raise Forbidden("Must have push access to view collaborator permission.")
    with call.state.lock:
        user = call.state.find_user(call.params["username"])
        if user is None:
            raise NotFound("user")
        return Reply(200, call.shapes.collaborator_permission(repo, user))


# ---------------------------------------------------------------- branches


def list_branches(call: Call) -> Reply:
    repo = call.repo()
    with call.state.lock:
        names = sorted(repo.branches)
        return call.paged(names, lambda n: call.shapes.short_branch(repo, n, repo.branches[n]))


def get_branch(call: Call) -> Reply:
    repo = call.repo()
    name = call.params["branch"]
    with call.state.lock:
        sha = repo.branches.get(name)
    if sha is None:
        raise NotFound("branch")
    info = call.emulator.git.commit_info(call.emulator.repo_path(repo), sha)
    if info is None:
        raise NotFound("branch")
    with call.state.lock:
        return Reply(200, call.shapes.branch(repo, name, info))


def get_branch_protection(call: Call) -> Reply:
    """A branch's protection; reading it needs admin (others get 404, as on GitHub)."""
    repo = call.repo()
    name = call.params["branch"]
    if not call.allowed(repo, "admin"):
        raise NotFound("branch protection")
    with call.state.lock:
        if name not in repo.branches:
            raise NotFound(f"branch {name}", message="Branch not found")
        rules = call.state.protection(repo, name)
        if rules is None:
            raise NotFound(f"protection of {name}", message="Branch not protected")
        return Reply(200, call.shapes.protection(repo, name, rules))


def get_commit(call: Call) -> Reply:
    repo = call.repo()
    with call.state.lock:
        sha = resolve_ref(call, repo, call.params["ref"])
    info = call.emulator.git.commit_info(call.emulator.repo_path(repo), sha)
    if info is None:
        raise Unprocessable(f"No commit found for SHA: {call.params['ref']}")
    with call.state.lock:
        return Reply(200, call.shapes.commit(repo, info))


# -------------------------------------------------------------------- refs


def _branch_of(ref: str) -> str:
    """The branch name in ``heads/<name>`` or ``refs/heads/<name>``; 422 for other refs."""
    for prefix in ("refs/heads/", "heads/"):
        if ref.startswith(prefix) and len(ref) > len(prefix):
            return ref[len(prefix) :]
    raise Unprocessable(
        "Reference name must be a branch (refs/heads/...): only branches exist here"
    )


def _check_rules(call: Call, repo: Repo, branch: str, old: str | None, new: str | None) -> None:
    """422 ``Repository rule violations found`` when the rulesets on ``branch`` refuse it."""
    found = ref_violations(call.emulator, repo, call.user.login, branch, old, new)
    if found:
        raise rest_refusal(found)


def get_ref(call: Call) -> Reply:
    repo = call.repo()
    ref = call.params["ref"]
    with call.state.lock:
        name = ref[len("heads/") :] if ref.startswith("heads/") else None
        if name is None or name not in repo.branches:
            raise NotFound("ref")
        return Reply(200, call.shapes.git_ref(repo, name, repo.branches[name]))


def matching_refs(call: Call) -> Reply:
    repo = call.repo()
    ref = call.params.get("ref", "")
    with call.state.lock:
        names = sorted(n for n in repo.branches if f"heads/{n}".startswith(ref))
        return call.paged(names, lambda n: call.shapes.git_ref(repo, n, repo.branches[n]))


def create_ref(call: Call) -> Reply:
    repo = call.repo("write")
    data = call.json_object()
    ref = call.required(data, "ref", str, "Reference")
    sha = call.required(data, "sha", str, "Reference")
    if not ref.startswith("refs/"):
        raise Unprocessable("Reference name must start with 'refs/' and have at least two slashes.")
    name = _branch_of(ref)
    if not _BRANCH.match(name):
        raise Unprocessable(f"{ref} is not a valid ref name.")
    path = call.emulator.repo_path(repo)
    if not _SHA.match(sha) or call.emulator.git.resolve(path, sha) != sha:
        raise Unprocessable("Object does not exist")
    with call.state.lock:
        if name in repo.branches:
            raise Unprocessable("Reference already exists")
        _check_rules(call, repo, name, None, sha)
        try:
            call.emulator.git.set_ref(path, name, sha, None)
        except GitError as exc:
            raise Unprocessable("Reference already exists") from exc
        call.state.set_branch(repo, name, sha, call.user.login)
        return Reply(201, call.shapes.git_ref(repo, name, sha))


def update_ref(call: Call) -> Reply:
    repo = call.repo("write")
    data = call.json_object()
    name = _branch_of(call.params["ref"])
    sha = call.required(data, "sha", str, "Reference")
    force = bool(call.field(data, "force", bool, "Reference"))
    path = call.emulator.repo_path(repo)
    if not _SHA.match(sha) or call.emulator.git.resolve(path, sha) != sha:
        raise Unprocessable("Object does not exist")
    with call.state.lock:
        old = repo.branches.get(name)
        if old is None:
            raise Unprocessable("Reference does not exist")
        if not force and not call.emulator.git.is_ancestor(path, old, sha):
            raise Unprocessable("Update is not a fast forward")
        _check_rules(call, repo, name, old, sha)
        try:
            call.emulator.git.set_ref(path, name, sha, old)
        except GitError as exc:
            raise Conflict("Reference update failed: the branch moved") from exc
        call.state.set_branch(repo, name, sha, call.user.login)
        return Reply(200, call.shapes.git_ref(repo, name, sha))


def delete_ref(call: Call) -> Reply:
    repo = call.repo("write")
    name = _branch_of(call.params["ref"])
    path = call.emulator.repo_path(repo)
    with call.state.lock:
        old = repo.branches.get(name)
        if old is None:
            raise Unprocessable("Reference does not exist")
        if name == repo.default_branch:
            raise Unprocessable("Cannot delete the default branch")
        _check_rules(call, repo, name, old, None)
        call.emulator.git.set_ref(path, name, None, old)
        call.state.set_branch(repo, name, None)
        return Reply(204)


ROUTES: tuple[RouteSpec, ...] = (
    RouteSpec("GET", "/user", get_authenticated_user),
    RouteSpec("GET", "/users/{login}", get_user),
    RouteSpec("GET", "/rate_limit", rate_limit, free=True),
    RouteSpec("GET", REPO, get_repo, cacheable=True),
    RouteSpec(
        "GET",
        REPO + "/collaborators/{username}/permission",
        collaborator_permission,
        cacheable=True,
    ),
    RouteSpec("GET", REPO + "/branches", list_branches),
    RouteSpec("GET", REPO + "/branches/{branch:path}/protection", get_branch_protection),
    RouteSpec("GET", REPO + "/branches/{branch:path}", get_branch),
    RouteSpec("GET", REPO + "/git/ref/{ref:path}", get_ref),
    RouteSpec("GET", REPO + "/git/matching-refs/{ref:path}", matching_refs),
    RouteSpec("POST", REPO + "/git/refs", create_ref),
    RouteSpec("PATCH", REPO + "/git/refs/{ref:path}", update_ref),
    RouteSpec("DELETE", REPO + "/git/refs/{ref:path}", delete_ref),
    RouteSpec("GET", REPO + "/commits/{ref:path}", get_commit),
)
