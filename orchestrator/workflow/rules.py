"""Semantic rules over a typed policy: relations between keys that types alone cannot check.

Each rule is a small function that yields problems with the reason in the
message, located at the value the operator has to change. Errors make the
policy unusable; warnings (``merge disabled by rollout mode``, a token written
in the file, ...) are shown by ``orchestrator validate`` and logged on load.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from orchestrator.domain.linear_accounts import is_email, is_linear_user_id
from orchestrator.domain.phases import AGENT_PHASES, PHASE_CLASS, Phase, PhaseClass, RolloutMode
from orchestrator.state_home import expand_path
from orchestrator.workflow.app_key import AppKeyError, read_private_key
from orchestrator.workflow.catalog import settings, suggestion
from orchestrator.workflow.layers import enclosing_location
from orchestrator.workflow.problems import Location, Problem, Severity
from orchestrator.workflow.provenance import Origin, OriginKind
from orchestrator.workflow.schema import (
    DEFAULT_PASSIVE_PHASES,
    AgentPreset,
    AgentSandbox,
    ApprovalSource,
    MergeMode,
    Policy,
    ReviewCommentMode,
    TrackerAuth,
    TrackerKind,
)

# Credentials an agent must never receive through agent.env.
GITHUB_CREDENTIAL_NAMES = frozenset(
    {
        "GITHUB_TOKEN",
        "GH_TOKEN",
        "GH_ENTERPRISE_TOKEN",
        "GITHUB_ENTERPRISE_TOKEN",
        "GITHUB_PAT",
        "GIT_ASKPASS",
        "SSH_AUTH_SOCK",
    }
)
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})

_REPO = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})/[A-Za-z0-9._-]{1,100}$")
_DNS_NAME = re.compile(r"^[A-Za-z0-9_](?:[A-Za-z0-9_.-]*[A-Za-z0-9_.])?$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_HEADING = re.compile(r"^#{1,6} \S")
_REF_FORBIDDEN = re.compile(r"[\x00-\x20\x7f~^:?*\[\\]")


@dataclass(frozen=True)
class RuleContext:
    """The policy under check and how to locate any of its keys for a message."""

    policy: Policy
    origins: Mapping[str, Origin]
    locations: Mapping[str, Location]
    default_location: Location

    def at(self, path: str) -> Location:
        """Where the value at ``path`` (a key, list item or mapping entry) was given."""
        base = _setting_path(path)
        origin = self.origins.get(base)
        if origin is not None and origin.kind is OriginKind.FILE:
            return self.locations.get(path, origin.location)
        if origin is not None and origin.kind is not OriginKind.DEFAULT:
            return origin.location
        return enclosing_location(base, self.locations, self.default_location)

    def error(self, path: str, message: str) -> Problem:
        return Problem(self.at(path), path, message)

    def warning(self, path: str, message: str) -> Problem:
        return Problem(self.at(path), path, message, Severity.WARNING)


def _setting_path(path: str) -> str:
    specs = settings()
    current = path
    while current and current not in specs:
        cut = max(current.rfind("."), current.rfind("["))
        if cut <= 0:
            break
        current = current[:cut]
    return current


Rule = Callable[[RuleContext], Iterator[Problem]]


def _tracker_repos(ctx: RuleContext) -> Iterator[Problem]:
    tracker = ctx.policy.tracker
    opt_in = tracker.repo_opt_in_label
    if (
        tracker.kind is TrackerKind.GITHUB
        and tracker.repo is None
        and not tracker.repos
        and opt_in is None
    ):
        yield ctx.error(
            "tracker.repo",
            "required for tracker kind github (owner/name), unless tracker.repos or "
            "tracker.repo_opt_in_label names the repositories",
        )
    if tracker.repo is not None and not _REPO.match(tracker.repo):
        yield ctx.error("tracker.repo", f"expected owner/name, got {tracker.repo!r}")
    seen: set[str] = {tracker.repo.lower()} if tracker.repo is not None else set()
    for index, repo in enumerate(tracker.repos):
        path = f"tracker.repos[{index}]"
        if not _REPO.match(repo):
            yield ctx.error(path, f"expected owner/name, got {repo!r}")
        elif repo.lower() in seen:
            yield ctx.error(path, f"{repo} is named twice (tracker.repo and tracker.repos count)")
        seen.add(repo.lower())
    if tracker.kind is not TrackerKind.GITHUB:
        for key, given in (
            ("tracker.repos", bool(tracker.repos)),
            ("tracker.repo_opt_in_label", opt_in is not None),
        ):
            if given:
                yield ctx.error(
                    key,
                    f"only for tracker kind github (kind {tracker.kind.value} works on the one "
                    "repository of tracker.repo)",
                )
    if opt_in is not None:
        if not opt_in.strip():
            yield ctx.error("tracker.repo_opt_in_label", "must not be empty")
        if tracker.auth is not TrackerAuth.APP:
            yield ctx.error(
                "tracker.repo_opt_in_label",
                "needs tracker.auth: app (the repositories are those of the App's installation)",
            )
        elif tracker.repo is None and not tracker.repos and tracker.installation_id is None:
            yield ctx.error(
                "tracker.installation_id",
                "required with tracker.repo_opt_in_label when no repository is named (the "
                "installation is otherwise found from tracker.repo or tracker.repos)",
            )
    if tracker.repo_discovery_interval_ms < 60_000:
        yield ctx.error(
            "tracker.repo_discovery_interval_ms",
            f"at least 60000 (one read of every repository's label per discovery), got "
            f"{tracker.repo_discovery_interval_ms}",
        )


def _tracker(ctx: RuleContext) -> Iterator[Problem]:
    tracker = ctx.policy.tracker
    yield from _tracker_repos(ctx)
    parts = urlsplit(tracker.endpoint)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        yield ctx.error(
            "tracker.endpoint", f"expected an http:// or https:// URL, got {tracker.endpoint!r}"
        )
    elif parts.scheme == "http" and parts.hostname not in LOOPBACK_HOSTS:
        yield ctx.warning(
            "tracker.endpoint",
            "plain http to a host other than this machine sends the token unencrypted",
        )
    origin = ctx.origins.get("tracker.token")
    if (
        tracker.token is not None
        and origin is not None
        and origin.kind is OriginKind.FILE
        and not origin.variables
    ):
        yield ctx.warning("tracker.token", "the token is written in the file; use a $VAR reference")
    if (
        tracker.kind is TrackerKind.GITHUB
        and tracker.auth is TrackerAuth.TOKEN
        and tracker.token is None
    ):
        yield ctx.error("tracker.token", "required for tracker kind github (a $VAR reference)")
    if tracker.kind is TrackerKind.LINEAR:
        yield from _linear(ctx)
    elif tracker.approvers:
        yield ctx.error(
            "tracker.approvers",
            "only for tracker kind linear: on GitHub, write permission on tracker.repo decides "
            "whose approval counts",
        )
    for index, approver in enumerate(tracker.approvers):
        if not approver.strip():
            yield ctx.error(f"tracker.approvers[{index}]", "must not be empty")
        elif tracker.kind is TrackerKind.LINEAR and not (
            is_email(approver) or is_linear_user_id(approver)
        ):
            yield ctx.error(
                f"tracker.approvers[{index}]",
                f"{approver!r} is neither an email nor a Linear user id: full names and display "
                "names are chosen by each user, so another member can take this one; name the "
                "user by email or by id (the UUID Linear's API shows as User.id)",
            )
    if not tracker.active_states:
        yield ctx.error("tracker.active_states", "must list at least one state")
    if not tracker.terminal_states:
        yield ctx.error("tracker.terminal_states", "must list at least one state")
    for index, state in enumerate(tracker.terminal_states):
        if state in tracker.active_states:
            yield ctx.error(
                f"tracker.terminal_states[{index}]", f"'{state}' is also an active state"
            )
    if tracker.kind is TrackerKind.LINEAR:
        return  # Linear has states of its own: no label shows them.
    known = (*tracker.active_states, *tracker.terminal_states)
    seen: dict[str, str] = {}
    for state, label in tracker.state_labels.items():
        path = f"tracker.state_labels.{state}"
        if state not in known:
            yield ctx.error(
                path,
                f"'{state}' is not in tracker.active_states or tracker.terminal_states"
                + suggestion(state, known),
            )
        folded = label.casefold()
        if folded in seen:
            yield ctx.error(path, f"label '{label}' also shows the state '{seen[folded]}'")
        seen[folded] = state


def _linear(ctx: RuleContext) -> Iterator[Problem]:
    tracker = ctx.policy.tracker
    if tracker.api_key is None:
        yield ctx.error("tracker.api_key", "required for tracker kind linear (a $VAR reference)")
    origin = ctx.origins.get("tracker.api_key")
    if (
        tracker.api_key is not None
        and origin is not None
        and origin.kind is OriginKind.FILE
        and not origin.variables
    ):
        yield ctx.warning(
            "tracker.api_key", "the API key is written in the file; use a $VAR reference"
        )
    if tracker.project_slug is None and tracker.team_key is None:
        yield ctx.error(
            "tracker.kind",
            "tracker kind linear needs tracker.project_slug or tracker.team_key (which issues)",
        )


def _app_auth(ctx: RuleContext) -> Iterator[Problem]:
    """Running as a GitHub App needs the App's id and a readable RSA private key."""
    tracker = ctx.policy.tracker
    if tracker.auth is not TrackerAuth.APP or tracker.kind is not TrackerKind.GITHUB:
        return
    if tracker.app_id is None:
        yield ctx.error("tracker.app_id", "required for tracker.auth app (the App's id)")
    if not tracker.private_key_file:
        yield ctx.error(
            "tracker.private_key_file",
            "required for tracker.auth app (a PEM file, or a $VAR holding the PEM)",
        )
        return
    try:
        read_private_key(tracker.private_key_file)
    except AppKeyError as error:
        yield ctx.error("tracker.private_key_file", str(error))


def _labels(ctx: RuleContext) -> Iterator[Problem]:
    """Control labels must be distinct: one label cannot mean two things."""
    policy = ctx.policy
    roles: list[tuple[str, str]] = [
        ("orchestration.ownership.required_label", policy.orchestration.ownership.required_label),
        ("rollout.observe_label", policy.rollout.observe_label),
        ("rollout.mutate_label", policy.rollout.mutate_label),
        ("rollout.kill_switch_label", policy.rollout.kill_switch_label),
        ("rollout.repo_kill_switch_label", policy.rollout.repo_kill_switch_label),
    ]
    roles += [
        (f"tracker.state_labels.{s}", label) for s, label in policy.tracker.state_labels.items()
    ]
    owners: dict[str, str] = {}
    for path, label in roles:
        folded = label.casefold()
        if folded in owners and not (
            path.startswith("tracker.state_labels.")
            and owners[folded].startswith("tracker.state_labels.")
        ):
            yield ctx.error(path, f"label '{label}' is also used by {owners[folded]}")
        owners.setdefault(folded, path)


def _agent(ctx: RuleContext) -> Iterator[Problem]:
    agent = ctx.policy.agent
    if agent.preset is AgentPreset.COMMAND and agent.command is None:
        yield ctx.error("agent.command", "required when agent.preset is command")
    for phase, limit in agent.max_concurrent_agents_by_phase.items():
        path = f"agent.max_concurrent_agents_by_phase.{phase}"
        if PHASE_CLASS[phase] is not PhaseClass.ACTIVE:
            yield ctx.error(
                path, f"'{phase}' is not an active phase; limits apply to phases that run work"
            )
        elif limit > agent.max_concurrent_agents:
            yield ctx.warning(
                path,
                f"{limit} is above agent.max_concurrent_agents ({agent.max_concurrent_agents}), "
                "which still applies",
            )
    token = ctx.policy.tracker.token
    api_key = ctx.policy.tracker.api_key
    for name, value in agent.env.items():
        path = f"agent.env.{name}"
        if not _ENV_NAME.match(name):
            yield ctx.error(path, f"'{name}' is not a valid environment variable name")
        elif name.upper() in GITHUB_CREDENTIAL_NAMES:
            yield ctx.error(path, "a GitHub credential may never be given to the agent")
        elif token is not None and value == token:
            yield ctx.error(
                path, "is the tracker token; the agent must never hold GitHub credentials"
            )
        elif api_key is not None and value == api_key:
            yield ctx.error(
                path, "is the Linear API key; the agent must never hold tracker credentials"
            )
    if 0 < agent.turn_timeout_ms <= agent.first_event_timeout_ms:
        yield ctx.error(
            "agent.first_event_timeout_ms",
            f"must be shorter than agent.turn_timeout_ms ({agent.turn_timeout_ms})",
        )
    if agent.stall_timeout_ms >= agent.turn_timeout_ms:
        yield ctx.warning(
            "agent.stall_timeout_ms",
            f"has no effect: not shorter than agent.turn_timeout_ms ({agent.turn_timeout_ms})",
        )


def _sqlite_folder(url: str) -> Path | None:
    """The folder of a SQLite database file named by an absolute path, else None."""
    if not url.startswith("sqlite") or ":///" not in url:
        return None
    path = Path(expand_path(url.split(":///", 1)[1].split("?", 1)[0]))
    return path.parent if path.is_absolute() else None


def _sandbox(ctx: RuleContext) -> Iterator[Problem]:
    """The agent sandbox keys; whether bubblewrap works here is checked at start-up."""
    policy = ctx.policy
    agent = policy.agent
    merging = policy.rollout.mode is RolloutMode.MERGE
    if agent.allow_unsandboxed and agent.sandbox is AgentSandbox.AUTO:
        yield ctx.warning(
            "agent.allow_unsandboxed",
            "is true: in rollout mode merge, agents run without an OS sandbox when bubblewrap "
            "does not work here",
        )
    elif agent.allow_unsandboxed:
        yield ctx.warning(
            "agent.allow_unsandboxed", f"has no effect with agent.sandbox {agent.sandbox}"
        )
    if agent.sandbox is AgentSandbox.NONE and merging:
        yield ctx.warning(
            "agent.sandbox", "is none: in rollout mode merge, agents run without an OS sandbox"
        )
    if "HOME" in agent.env:
        yield ctx.warning(
            "agent.env.HOME", "is replaced by the agents' home; set agent.home instead"
        )
    home = agent.home
    if home is None:
        return
    root = Path(policy.workspace.root)
    if home == root or home.is_relative_to(root) or root.is_relative_to(home):
        yield ctx.error("agent.home", f"overlaps workspace.root ({root}): agents would share it")
    private = [
        ("rollout.kill_switch_file", Path(policy.rollout.kill_switch_file).parent),
        ("database.url", _sqlite_folder(policy.database.url)),
    ]
    for key, folder in private:
        if folder is not None and folder.is_relative_to(home):
            yield ctx.error(
                "agent.home",
                f"holds the daemon's private folder {folder} ({key}), which the sandbox hides "
                f"from agents; use a folder of its own, such as {home / 'agent-home'}",
            )


def _orchestration(ctx: RuleContext) -> Iterator[Problem]:
    orchestration = ctx.policy.orchestration
    agent_phases = ", ".join(p.value for p in Phase if p in AGENT_PHASES)
    if orchestration.default_phase not in AGENT_PHASES:
        yield ctx.error(
            "orchestration.default_phase",
            f"must be an agent phase ({agent_phases}), got '{orchestration.default_phase}'",
        )
    missing = [p for p in DEFAULT_PASSIVE_PHASES if p not in orchestration.passive_phases]
    if missing:
        yield ctx.error(
            "orchestration.passive_phases",
            "must contain " + ", ".join(missing) + " (they wait on the outside world)",
        )
    for index, phase in enumerate(orchestration.passive_phases):
        if phase in AGENT_PHASES or phase in (Phase.MERGING, Phase.DONE):
            yield ctx.error(
                f"orchestration.passive_phases[{index}]",
                f"'{phase}' cannot be passive: it must run when due",
            )
    marker = orchestration.ownership.required_workpad_marker
    if not _HEADING.match(marker):
        yield ctx.error(
            "orchestration.ownership.required_workpad_marker",
            f"must be a Markdown heading such as '## Orchestrator Workpad', got {marker!r}",
        )


def _valid_branch(name: str) -> bool:
    if _REF_FORBIDDEN.search(name) or ".." in name or "@{" in name or "//" in name:
        return False
    if name.startswith(("-", "/")) or name.endswith(("/", ".", ".lock")):
        return False
    return all(part and not part.startswith(".") for part in name.split("/"))


def _pr(ctx: RuleContext) -> Iterator[Problem]:
    pr = ctx.policy.pr
    if pr.review_comment_mode is ReviewCommentMode.UPSERT and pr.review_comment_marker is None:
        yield ctx.error(
            "pr.review_comment_marker",
            "pr.review_comment_mode upsert needs a marker to find its comment again",
        )
    marker = pr.review_comment_marker
    if marker is not None and not (marker.startswith("<!--") and marker.endswith("-->")):
        yield ctx.warning(
            "pr.review_comment_marker",
            "is visible in the comment; an HTML comment such as <!-- orchestrator-review --> "
            "stays hidden",
        )
    if not _valid_branch(f"{pr.branch_prefix}1-x"):
        yield ctx.error(
            "pr.branch_prefix",
            f"{pr.branch_prefix!r} does not make valid git branch names (no spaces, '..', '~', "
            "'^', ':', '?', '*', '[', '\\', leading '-' or '.')",
        )
    if not _valid_branch(pr.base_branch):
        yield ctx.error("pr.base_branch", f"{pr.base_branch!r} is not a valid git branch name")


def _review(ctx: RuleContext) -> Iterator[Problem]:
    review = ctx.policy.review
    if review.enabled and not review.fix_consideration_severities:
        yield ctx.warning(
            "review.fix_consideration_severities", "is empty: no finding will ever be fixed"
        )


def _merge(ctx: RuleContext) -> Iterator[Problem]:
    policy = ctx.policy
    merge = policy.merge
    tracker = policy.tracker
    if not merge.require_head_match:
        yield ctx.error(
            "merge.require_head_match",
            "must stay true: merging without the expected head SHA could merge a commit "
            "nobody reviewed",
        )
    by_label = merge.approval_source in (ApprovalSource.LABEL, ApprovalSource.EITHER)
    if (
        merge.require_human_approval
        and by_label
        and not merge.approval_states
        and merge.approval_label is None
    ):
        yield ctx.error(
            "merge.approval_states",
            f"merge.require_human_approval with approval_source {merge.approval_source} needs "
            "at least one approval state (or merge.approval_label)",
        )
    for index, state in enumerate(merge.approval_states):
        path = f"merge.approval_states[{index}]"
        if state not in tracker.active_states:
            yield ctx.error(
                path,
                f"'{state}' is not in tracker.active_states"
                + suggestion(state, tracker.active_states),
            )
        elif (
            by_label
            and tracker.kind is not TrackerKind.LINEAR
            and state not in tracker.state_labels
        ):
            yield ctx.error(path, f"'{state}' has no label in tracker.state_labels")
    if merge.completion_state not in tracker.terminal_states:
        yield ctx.error(
            "merge.completion_state",
            f"'{merge.completion_state}' is not in tracker.terminal_states"
            + suggestion(merge.completion_state, tracker.terminal_states),
        )
    if merge.mode is MergeMode.AUTO and policy.rollout.mode is not RolloutMode.MERGE:
        yield ctx.warning(
            "merge.mode",
            f"merge disabled by rollout mode: merge.mode is auto but rollout.mode is "
            f"{policy.rollout.mode}, so nothing is merged until rollout.mode is merge",
        )
    if merge.mode is MergeMode.AUTO and not merge.require_green_checks:
        yield ctx.warning("merge.require_green_checks", "is false: heads merge with failing checks")
    if merge.mode is MergeMode.AUTO and not policy.review.enabled:
        yield ctx.warning("review.enabled", "is false: heads merge without a self-review")


def _server(ctx: RuleContext) -> Iterator[Problem]:
    server = ctx.policy.server
    if server.host not in LOOPBACK_HOSTS and server.token is None:
        yield ctx.warning(
            "server.host",
            f"{server.host} exposes the dashboard and API beyond this machine without server.token",
        )
    for index, name in enumerate(server.allowed_hosts):
        if not _is_host_name(name):
            yield ctx.error(
                f"server.allowed_hosts[{index}]",
                f"{name!r} is not a host name: write the name alone "
                "(orchestrator.example.com, no scheme, port or path), or * for any host",
            )
    if "*" in server.allowed_hosts and server.token is None:
        yield ctx.warning(
            "server.allowed_hosts",
            "* answers any Host header without server.token: a web page can read the "
            "dashboard and API through DNS rebinding",
        )


def _is_host_name(name: str) -> bool:
    """A DNS name, an IP address (IPv6 bare or in brackets), or ``*``."""
    if name == "*" or _DNS_NAME.match(name):
        return True
    try:
        ipaddress.ip_address(name.removeprefix("[").removesuffix("]"))
    except ValueError:
        return False
    return True


def _database(ctx: RuleContext) -> Iterator[Problem]:
    scheme = ctx.policy.database.url.split(":", 1)[0]
    if not (scheme == "sqlite" or scheme.startswith(("sqlite+", "postgresql"))):
        yield ctx.error(
            "database.url",
            f"expected a sqlite:/// or postgresql+psycopg:// URL, got scheme {scheme!r}",
        )


_GIT_CLONE = re.compile(r"^\s*(?:[^#\n]*(?:&&|;|\|\|)\s*)?git\s+clone\b", re.M)


def _hooks(ctx: RuleContext) -> Iterator[Problem]:
    hooks = ctx.policy.hooks
    script = hooks.after_create
    if script is not None and not hooks.after_create_in_empty_dir and _GIT_CLONE.search(script):
        yield ctx.warning(
            "hooks.after_create",
            "runs `git clone`, but after_create runs in the workspace after the runtime has "
            "checked out tracker.repo into it: the clone would fail or nest a second checkout; "
            "set hooks.after_create_in_empty_dir: true to run it first, in an empty folder, as "
            "Symphony does, or remove the clone",
        )


RULES: tuple[Rule, ...] = (
    _tracker,
    _app_auth,
    _labels,
    _agent,
    _sandbox,
    _orchestration,
    _pr,
    _review,
    _merge,
    _server,
    _database,
    _hooks,
)


def check_rules(ctx: RuleContext, rules: Iterable[Rule] = RULES) -> list[Problem]:
    """Every problem the rules find, in rule order."""
    return [problem for rule in rules for problem in rule(ctx)]
