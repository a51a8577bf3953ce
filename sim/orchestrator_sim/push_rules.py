"""Rulesets applied to ref updates: git pushes and the REST ref API, with GitHub's texts.

A push that breaks an active ruleset on a branch is refused whole, as GitHub
refuses it::

    remote: error: GH013: Repository rule violations found for refs/heads/main.
    remote: Review all repository rules at http://HOST/acme/widgets/rules?ref=refs%2Fheads%2Fmain
    remote:
    remote: - Cannot force-push to this branch
    remote:
     ! [remote rejected] main -> main (push declined due to repository rule violations)

The pushed objects are read from a quarantine (an object directory of their
own, the repository's as alternate) so nothing of a refused push lands. The
REST ref API answers 422 ``Repository rule violations found`` with the same
rule texts. Bypass actors with ``always`` or ``exempt`` pass.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

from orchestrator.logs import get_logger
from orchestrator_sim.errors import Unprocessable
from orchestrator_sim.gitsign import SIGNATURE_HEADERS
from orchestrator_sim.receive_pack import ZERO_SHA, parse_receive_request, refusal
from orchestrator_sim.records import Repo
from orchestrator_sim.records_rules import RulesetRule
from orchestrator_sim.rulesets import PATTERN_RULES, pattern_holds, pattern_text
from orchestrator_sim.state_rulesets import QUEUE_REQUIRED

if TYPE_CHECKING:
    from orchestrator_sim.emulator import Emulator

log = get_logger(__name__)

DECLINED = "push declined due to repository rule violations"
REFS_DOCS = "https://docs.github.com/rest/git/refs"
# A push introducing more commits than this has only the newest ones checked.
MAX_CHECKED_COMMITS = 1000
_ATTRIBUTES = {
    "commit_message_pattern": "message",
    "commit_author_email_pattern": "author_email",
    "committer_email_pattern": "committer_email",
}


@dataclass(frozen=True)
class Violation:
    """One broken rule: its text and the commits that break it (for commit rules)."""

    text: str
    commits: tuple[str, ...] = ()


@dataclass
class _Commit:
    sha: str
    parents: list[str] = field(default_factory=list)
    author_email: str = ""
    committer_email: str = ""
    message: str = ""
    signed: bool = False


class _Objects:
    """Reads commits of one repository, through a push's quarantine when there is one."""

    def __init__(self, emulator: Emulator, repo: Repo, env: dict[str, str] | None) -> None:
        self.path = emulator.repo_path(repo)
        self.env = {**os.environ, "LC_ALL": "C", **(env or {})}

    def run(self, *args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            ["git", "--git-dir", str(self.path), *args],
            input=stdin,
            capture_output=True,
            env=self.env,
            check=False,
        )

    def is_ancestor(self, old: str, new: str) -> bool:
        return self.run("merge-base", "--is-ancestor", old, new).returncode == 0

    def introduced(self, old: str | None, new: str) -> list[_Commit]:
        """The commits ``new`` brings to the branch (for a new branch: to the repository)."""
        excluded = [f"^{old}"] if old else ["--not", "--branches"]
        done = self.run("rev-list", f"--max-count={MAX_CHECKED_COMMITS}", new, *excluded)
        shas = done.stdout.split()
        if not shas:
            return []
        batch = self.run("cat-file", "--batch", stdin=b"\n".join(shas) + b"\n")
        return _parse_batch(batch.stdout)


def _parse_batch(output: bytes) -> list[_Commit]:
    """The commits in ``git cat-file --batch`` output (``<sha> <type> <size>`` then the object)."""
    commits: list[_Commit] = []
    position = 0
    while position < len(output):
        header_end = output.index(b"\n", position)
        fields = output[position:header_end].decode().split(" ")
        if len(fields) != 3:
            break
        sha, kind, size = fields
        body = output[header_end + 1 : header_end + 1 + int(size)].decode(errors="replace")
        position = header_end + 1 + int(size) + 1
        if kind != "commit":
            continue
        headers, _, message = body.partition("\n\n")
        commit = _Commit(sha=sha, message=message.rstrip("\n"))
        for line in headers.splitlines():
            key, _, value = line.partition(" ")
            if key == "parent":
                commit.parents.append(value)
            elif key in ("author", "committer"):
                email = value[value.find("<") + 1 : value.find(">")]
                setattr(commit, f"{key}_email", email)
            elif key in SIGNATURE_HEADERS:
                commit.signed = True
        commits.append(commit)
    return commits


def ref_violations(
    emulator: Emulator,
    repo: Repo,
    login: str,
    branch: str,
    old: str | None,
    new: str | None,
    env: dict[str, str] | None = None,
) -> list[Violation]:
    """What the active rules on ``branch`` refuse of moving it from ``old`` to ``new``
    (None: the branch does not exist / is deleted) by ``login``."""
    state = emulator.state
    rules = state.rules_for(repo, branch, login, for_merge=False)
    if not rules:
        return []
    objects = _Objects(emulator, repo, env)
    found: list[Violation] = []
    commits: list[_Commit] | None = None
    for rule in rules:
        if rule.type in ("required_linear_history", "required_signatures", *_ATTRIBUTES):
            if new is None:
                continue
            if commits is None:
                commits = objects.introduced(old, new)
            violation = _commit_rule(rule, commits)
        else:
            violation = _ref_rule(emulator, repo, rule, branch, old, new, objects)
        if violation is not None:
            found.append(violation)
    return found


def _ref_rule(
    emulator: Emulator,
    repo: Repo,
    rule: RulesetRule,
    branch: str,
    old: str | None,
    new: str | None,
    objects: _Objects,
) -> Violation | None:
    update = old is not None and new is not None
    texts = {
        "creation": "Cannot create ref due to creations being restricted.",
        "update": "Cannot update this protected ref.",
        "deletion": "Cannot delete this branch",
        "pull_request": "Changes must be made through a pull request.",
        "merge_queue": QUEUE_REQUIRED,
    }
    applies = {
        "creation": old is None,
        "update": update,
        "deletion": new is None,
        "pull_request": update,
        "merge_queue": update,
    }
    if rule.type in texts:
        return Violation(texts[rule.type]) if applies[rule.type] else None
    if rule.type == "non_fast_forward" and update and old and new:
        return (
            None if objects.is_ancestor(old, new) else Violation("Cannot force-push to this branch")
        )
    if rule.type == "branch_name_pattern" and new is not None:
        return None if pattern_holds(rule.parameters, branch) else Violation(pattern_text(rule))
    if rule.type == "required_status_checks" and new is not None:
        if old is None and rule.parameters.get("do_not_enforce_on_create"):
            return None
        names = rule.parameters.get("required_status_checks")
        state = emulator.state
        for name in names if isinstance(names, list) else []:
            problem = state.check_problem(repo, new, name)
            if problem is not None:
                return Violation(f'Required status check "{name}" is {problem}.')
    return None


def _commit_rule(rule: RulesetRule, commits: list[_Commit]) -> Violation | None:
    if rule.type == "required_linear_history":
        bad = [c.sha for c in commits if len(c.parents) > 1]
        text = "This branch must not contain merge commits."
    elif rule.type == "required_signatures":
        bad = [c.sha for c in commits if not c.signed]
        text = "Commits must have verified signatures."
    elif rule.type in PATTERN_RULES:
        attribute = _ATTRIBUTES[rule.type]
        bad = [c.sha for c in commits if not pattern_holds(rule.parameters, getattr(c, attribute))]
        text = pattern_text(rule)
    else:
        return None
    return Violation(text, tuple(bad)) if bad else None


def gh013(base_url: str, repo: Repo, ref: str, violations: list[Violation]) -> str:
    """GitHub's GH013 text for the violations on ``ref`` (lines git shows as ``remote:``)."""
    rules_page = f"{base_url}/{repo.full_name}/rules?ref={quote(ref, safe='')}"
    lines = [
        f"error: GH013: Repository rule violations found for {ref}.",
        f"Review all repository rules at {rules_page}",
        "",
    ]
    for violation in violations:
        lines.append(f"- {violation.text}")
        if violation.commits:
            count = len(violation.commits)
            lines.append(f"  Found {count} violation{'s' if count != 1 else ''}:")
            lines.append("")
            lines.extend(f"  {sha}" for sha in violation.commits)
        lines.append("")
    return "\n".join(lines) + "\n"


def rest_refusal(violations: list[Violation]) -> Unprocessable:
    """The REST ref API's 422 for broken rules."""
    texts = "\n\n".join(violation.text for violation in violations)
    return Unprocessable(
        f"Repository rule violations found\n\n{texts}\n\n", documentation_url=REFS_DOCS
    )


def check_push(
    emulator: Emulator,
    repo: Repo,
    login: str,
    body: bytes,
    content_encoding: str | None,
    base_url: str,
) -> bytes | None:
    """The receive-pack answer refusing this push, or None to let it through."""
    if not repo.rulesets:
        return None
    request = parse_receive_request(body, content_encoding)
    if request is None:
        return None
    with emulator.state.lock:
        bound = any(
            command.branch is not None
            and emulator.state.rules_for(repo, command.branch, login, for_merge=False)
            for command in request.commands
        )
    if not bound:
        return None
    path = emulator.repo_path(repo)
    with tempfile.TemporaryDirectory(prefix="sim-quarantine-") as scratch:
        objects = Path(scratch) / "objects"
        (objects / "pack").mkdir(parents=True)
        env = {
            "GIT_OBJECT_DIRECTORY": str(objects),
            "GIT_ALTERNATE_OBJECT_DIRECTORIES": str(path / "objects"),
        }
        if request.pack:
            indexed = subprocess.run(
                [
                    "git",
                    "--git-dir",
                    str(path),
                    "index-pack",
                    "--stdin",
                    "--fix-thin",
                    str(objects / "pack" / "quarantine.pack"),
                ],
                input=request.pack,
                capture_output=True,
                env={**os.environ, **env, "LC_ALL": "C"},
                check=False,
            )
            if indexed.returncode != 0:
                # Let git itself answer a pack it cannot read.
                return None
        messages = []
        with emulator.state.lock:
            for command in request.commands:
                if command.branch is None:
                    continue
                old = None if command.old == ZERO_SHA else command.old
                new = None if command.new == ZERO_SHA else command.new
                found = ref_violations(emulator, repo, login, command.branch, old, new, env)
                if found:
                    messages.append(gh013(base_url, repo, command.ref, found))
    if not messages:
        return None
    log.info("sim_push_refused", repo=repo.full_name, login=login)
    return refusal(request, "".join(messages), DECLINED)
