"""Keys of Symphony's and pi-symphony's WORKFLOW.md: what each is read as here, or why it is not.

A policy written for OpenAI's Symphony (or pi-symphony, which extends it) loads
here: each of their keys is read as the equivalent key of this product, with a
warning that names that key, or is ignored with a warning that says why and
what to use instead. Neither is ever an error, and neither gets a
did-you-mean: ``worker`` is Symphony's SSH worker section, not a misspelt
``workspace``. :mod:`~orchestrator.workflow.import_symphony.reading` reads
them; ``orchestrator migrate-workflow`` writes the native file.

A file that uses any of these keys is in the *Symphony dialect*: its prompt
sees ``attempt`` as null on the first run, as Symphony's prompts expect.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

SYMPHONY = "Symphony"
PI_SYMPHONY = "pi-symphony"


@dataclass(frozen=True)
class ForeignKey:
    """One key of a Symphony-family file: the key it is read as here (None: no equivalent)."""

    path: str
    dialect: str
    target: str | None
    note: str
    # A section whose keys are listed one by one (an unlisted key in it is ignored with a warning).
    section: bool = False


def _key(path: str, dialect: str, target: str | None, note: str) -> ForeignKey:
    return ForeignKey(path, dialect, target, note)


def _section(path: str, dialect: str, target: str | None, note: str) -> ForeignKey:
    return ForeignKey(path, dialect, target, note, section=True)


_NO_SSH = (
    "agents run on the daemon's machine, in its sandbox; to spread the work, run more "
    "replicas against one PostgreSQL database"
)
_RUNTIME_WRITES = (
    "the runtime, not the agent, writes to GitHub and the tracker, so the agent needs no "
    "tracker tool"
)

FOREIGN_KEYS: Mapping[str, ForeignKey] = MappingProxyType(
    {
        k.path: k
        for k in (
            # ---- Symphony (SPEC.md and its Elixir implementation)
            _section(
                "tracker.provider",
                SYMPHONY,
                "tracker.*",
                "Symphony's adapter settings: each is read as the tracker key of the same name",
            ),
            _key("tracker.provider.api_key", SYMPHONY, "tracker.api_key", ""),
            _key("tracker.provider.endpoint", SYMPHONY, "tracker.endpoint", ""),
            _key("tracker.provider.project_slug", SYMPHONY, "tracker.project_slug", ""),
            _key("tracker.provider.team_key", SYMPHONY, "tracker.team_key", ""),
            _key(
                "tracker.assignee",
                SYMPHONY,
                None,
                "issues are chosen by label here, not by assignee: use "
                "orchestration.ownership.required_label and tracker.required_labels",
            ),
            _key(
                "tracker.secret_environment_names",
                SYMPHONY,
                None,
                "secrets are $VAR references here; agent.env gives the agent its environment",
            ),
            _section("worker", SYMPHONY, None, "Symphony's SSH workers: " + _NO_SSH),
            _key("worker.ssh_hosts", SYMPHONY, None, _NO_SSH),
            _key(
                "worker.max_concurrent_agents_per_host",
                SYMPHONY,
                None,
                _NO_SSH + "; agent.max_concurrent_agents limits each replica",
            ),
            _key(
                "agent.max_concurrent_agents_by_state",
                SYMPHONY,
                None,
                "limits here are per phase, not per tracker state: use "
                "agent.max_concurrent_agents_by_phase",
            ),
            _section(
                "codex",
                SYMPHONY,
                "agent.preset",
                "Symphony's Codex settings: read as agent.preset codex (unless the file runs "
                "pi) and the agent keys named on each key",
            ),
            _key("codex.command", SYMPHONY, "agent.command, agent.extra_args", ""),
            _key(
                "codex.approval_policy",
                SYMPHONY,
                None,
                "nothing here ever waits for an approval: the codex-app-server client answers "
                "every approval request at once, and the codex preset runs `codex exec` "
                "non-interactively",
            ),
            _key("codex.thread_sandbox", SYMPHONY, "agent.permissions", ""),
            _key(
                "codex.turn_sandbox_policy",
                SYMPHONY,
                None,
                "Codex's own sandbox is replaced by the product's sandbox (agent.sandbox: "
                "bubblewrap, its workspace writable, the network shared)",
            ),
            _key("codex.turn_timeout_ms", SYMPHONY, "agent.turn_timeout_ms", ""),
            _key("codex.stall_timeout_ms", SYMPHONY, "agent.stall_timeout_ms", ""),
            _key(
                "codex.read_timeout_ms",
                SYMPHONY,
                None,
                "the presets read the agent's JSON event stream, with no request and reply to "
                "wait for; agent.first_event_timeout_ms limits the wait for the first event",
            ),
            _section(
                "observability",
                SYMPHONY,
                None,
                "Symphony's terminal dashboard; the dashboard here is the web server "
                "(server.host, server.port)",
            ),
            _key("observability.dashboard_enabled", SYMPHONY, None, ""),
            _key("observability.refresh_ms", SYMPHONY, None, ""),
            _key("observability.render_interval_ms", SYMPHONY, None, ""),
            # ---- pi-symphony (its README, examples and skill template)
            _key("worker.runtime", PI_SYMPHONY, "agent.preset", ""),
            _key(
                "agent.max_retries",
                PI_SYMPHONY,
                "orchestration.max_failed_attempts",
                "",
            ),
            _section(
                "pi",
                PI_SYMPHONY,
                "agent.preset",
                "pi-symphony's Pi settings: read as agent.preset pi and the agent keys named "
                "on each key",
            ),
            _key("pi.command", PI_SYMPHONY, "agent.command", ""),
            _key(
                "pi.response_timeout_ms",
                PI_SYMPHONY,
                None,
                "the pi preset reads `pi --mode json` events, with no RPC reply to wait for; "
                "agent.first_event_timeout_ms limits the wait for the first event",
            ),
            _key(
                "pi.session_dir_name",
                PI_SYMPHONY,
                None,
                "Pi keeps its sessions where it always does; turns resume by session id",
            ),
            _key("pi.model", PI_SYMPHONY, "agent.extra_args", ""),
            _key("pi.thinking_level", PI_SYMPHONY, "agent.extra_args", ""),
            _key(
                "pi.extension_paths",
                PI_SYMPHONY,
                None,
                "pi-symphony's extensions guard the workspace and give the agent Linear; here "
                "the sandbox guards the workspace and " + _RUNTIME_WRITES + " (another extension: "
                "agent.extra_args [--extension, PATH])",
            ),
            _key("pi.disable_extensions", PI_SYMPHONY, "agent.extra_args", ""),
            _key("pi.disable_themes", PI_SYMPHONY, "agent.extra_args", ""),
            _key(
                "pi.model_routing",
                PI_SYMPHONY,
                None,
                "one model per policy here (agent.extra_args); no routing by label or priority",
            ),
            _key(
                "orchestration.phase_store",
                PI_SYMPHONY,
                None,
                "phases are always kept in the database and mirrored in the workpad comment",
            ),
            _key("pr.repo_slug", PI_SYMPHONY, "tracker.repo", ""),
            _key(
                "pr.attach_to_tracker",
                PI_SYMPHONY,
                None,
                "the pull request names its issue (pr.closes_issue) and the workpad links it",
            ),
            _key(
                "review.agent",
                PI_SYMPHONY,
                None,
                "the self-review is a turn of the same agent (agent.preset) with the built-in "
                "review prompt",
            ),
            _key(
                "review.model",
                PI_SYMPHONY,
                None,
                "the self-review uses the agent's model (agent.extra_args)",
            ),
            _key(
                "review.thinking_level",
                PI_SYMPHONY,
                None,
                "the self-review uses the agent's settings (agent.extra_args)",
            ),
            _section(
                "recovery",
                PI_SYMPHONY,
                None,
                "recovery is built in: interrupted work is recovered from the workpad at start, "
                "and failed turns retry up to orchestration.max_failed_attempts",
            ),
            _key("recovery.enabled", PI_SYMPHONY, None, ""),
            _key("recovery.max_attempts", PI_SYMPHONY, None, ""),
            _key(
                "merge.executor",
                PI_SYMPHONY,
                None,
                "the runtime merges through the GitHub API itself (merge.mode auto, "
                "merge.method); no agent skill or `gh` merges",
            ),
            _key(
                "merge.strategy",
                PI_SYMPHONY,
                None,
                "no merge queue: the runtime merges the reviewed head once every gate passes",
            ),
            _key(
                "merge.max_rebase_attempts",
                PI_SYMPHONY,
                None,
                "the runtime does not rebase branches itself; it merges the reviewed head with "
                "merge.method (merge, squash or rebase)",
            ),
        )
    }
)


def lookup(path: str) -> ForeignKey | None:
    """The Symphony-family key at ``path``, if it is one."""
    return FOREIGN_KEYS.get(path)


def reason(entry: ForeignKey) -> str:
    """Why a key with no equivalent is ignored (a key without a note shares its section's)."""
    if entry.note:
        return entry.note
    parent = FOREIGN_KEYS.get(entry.path.rsplit(".", 1)[0])
    return parent.note if parent is not None else ""


def is_symphony_dialect(config: Mapping[str, object] | None) -> bool:
    """Whether a front matter uses any Symphony-family key (its prompt's ``attempt`` differs)."""

    def visit(prefix: str, data: Mapping[str, object]) -> bool:
        for key, value in data.items():
            path = f"{prefix}.{key}" if prefix else str(key)
            if path in FOREIGN_KEYS:
                return True
            if isinstance(value, dict) and visit(path, value):
                return True
        return False

    return config is not None and visit("", config)
