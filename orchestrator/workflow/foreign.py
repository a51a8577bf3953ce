"""Keys of Symphony's and pi-symphony's WORKFLOW.md: what each is read as here, or why it is not.

A policy written for OpenAI's Symphony (or pi-symphony, which extends it) loads
here: each of their keys is read as the equivalent key of this product, with a
warning that names that key, or is ignored with a warning that says why and
what to use instead. Neither is ever an error, and neither gets a
did-you-mean: ``worker`` is Symphony's SSH worker section, not a misspelt
``workspace``. ``orchestrator migrate-workflow`` writes the native file.

A file that uses any of these keys is in the *Symphony dialect*: its prompt
sees ``attempt`` as null on the first run, as Symphony's prompts expect.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from orchestrator.workflow.document import Document
from orchestrator.workflow.problems import Location, Problem, Severity

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

CODEX_SANDBOXES: Mapping[str, str] = MappingProxyType(
    {"workspace-write": "workspace", "danger-full-access": "full"}
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


@dataclass(frozen=True)
class Mapped:
    """A Symphony key's value read as one of ours: the target, its raw value, where it was."""

    target: str
    value: object
    location: Location
    # The Symphony keys it was read from.
    sources: tuple[str, ...] = ()


@dataclass
class Reading:
    """What the Symphony-family keys of one file amount to."""

    mapped: list[Mapped] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    found: bool = False
    # Keys read as nothing here: (path, why).
    ignored: list[tuple[str, str]] = field(default_factory=list)


def _flatten(path: str, value: object, out: list[tuple[str, object]]) -> None:
    entry = FOREIGN_KEYS.get(path)
    if entry is not None and entry.section and isinstance(value, dict):
        out.append((path, _SECTION))
        for key, item in value.items():
            _flatten(f"{path}.{key}", item, out)
        return
    out.append((path, value))


_SECTION = object()

# The preset that runs each dialect's agent: Symphony speaks to `codex app-server`
# over JSON-RPC, which the codex-app-server preset does too.
PRESET_OF = {"codex": "codex-app-server", "pi": "pi"}
CODEX_PRESETS = ("codex", "codex-app-server")


def _agent_preset(written: list[tuple[str, object]], native: Mapping[str, object]) -> str | None:
    if "agent.preset" in native:
        return None
    values = dict(written)
    runtime = values.get("worker.runtime")
    if isinstance(runtime, str) and runtime in PRESET_OF:
        return PRESET_OF[runtime]
    if "pi" in values:
        return "pi"
    if "codex" in values:
        return PRESET_OF["codex"]
    return None


def _codex_command(command: str) -> tuple[str | None, list[str]]:
    """Symphony's ``codex ... app-server`` as the program and the flags for ``codex exec``."""
    words = shlex.split(command)
    program = words[0] if words else "codex"
    flags = [w for w in words[1:] if w != "app-server"]
    return (None if program == "codex" else program), flags


def _pi_flags(path: str, value: object) -> list[str] | str:
    """The ``pi`` command-line flags a pi-symphony key stands for, or why there are none."""
    if path == "pi.model":
        if not isinstance(value, dict):
            return "expected a mapping with provider and model_id"
        flags: list[str] = []
        if value.get("provider"):
            flags += ["--provider", str(value["provider"])]
        if value.get("model_id"):
            flags += ["--model", str(value["model_id"])]
        return flags
    if path == "pi.thinking_level":
        return ["--thinking", str(value)] if value else []
    if path == "pi.disable_extensions":
        return ["--no-extensions"] if value is True else []
    if path == "pi.disable_themes":
        return ["--no-themes"] if value is True else []
    return "not a pi flag"


def read_foreign(
    document: Document,
    source: str,
    written: list[tuple[str, object]],
    native: Mapping[str, object],
) -> Reading:
    """Read the Symphony-family keys ``written`` in the file (path, value), given our own keys.

    ``native`` holds the keys the file sets in this product's own words; they
    win over a Symphony key read as the same setting.
    """
    reading = Reading()
    flat: list[tuple[str, object]] = []
    for path, value in written:
        _flatten(path, value, flat)
    if not flat:
        return reading
    reading.found = True
    preset = _agent_preset(flat, native)
    running = preset or str(native.get("agent.preset", "codex"))
    extra_args: list[str] = []
    extra_at: Location | None = None
    extra_from: list[str] = []

    def where(path: str) -> Location:
        position = document.positions.get(path)
        if position is None:
            return Location(source)
        return Location(source, position.line, position.column)

    def warn(path: str, message: str) -> None:
        reading.problems.append(Problem(where(path), path, message, Severity.WARNING))

    def ignore(path: str, dialect: str, why: str, *, equivalent: bool = True) -> None:
        what = "key, ignored" if equivalent else "key with no equivalent here, ignored"
        warn(path, f"{dialect}'s {what}: {why}")
        reading.ignored.append((path, why))

    def read_as(path: str, target: str, value: object, dialect: str) -> None:
        if target in native:
            ignore(path, dialect, f"the file also sets {target}")
            return
        reading.mapped.append(Mapped(target, value, where(path), (path,)))
        shown = f"{target}: {value}" if isinstance(value, str | int) else target
        warn(path, f"{dialect}'s key, read as {shown}; write {target} instead")

    for path, value in flat:
        entry = FOREIGN_KEYS.get(path)
        if entry is None:
            parent = FOREIGN_KEYS[path.rsplit(".", 1)[0]]
            why = f"not a key of {parent.dialect}'s {parent.path} known here"
            warn(path, f"{why}; ignored")
            reading.ignored.append((path, why))
            continue
        dialect = entry.dialect
        if value is _SECTION:
            # Each key below gets its own warning; the section itself may choose the agent.
            if path in PRESET_OF and preset == PRESET_OF[path]:
                read_as(path, "agent.preset", preset, dialect)
            continue
        if path in ("codex", "pi"):  # an empty section
            continue
        if path == "worker.runtime":
            if preset is not None and isinstance(value, str) and preset == PRESET_OF.get(value):
                read_as(path, "agent.preset", preset, dialect)
            else:
                ignore(path, dialect, "the agent is set by agent.preset")
            continue
        if path == "codex.command":
            if running not in CODEX_PRESETS:
                ignore(path, dialect, f"the agent here is {running}, not codex")
            elif running == "codex-app-server" and isinstance(value, str) and value.strip():
                # The command runs unchanged; the client speaks app-server's protocol to it.
                read_as(path, "agent.command", value.strip(), dialect)
            elif "agent.extra_args" in native:
                ignore(path, dialect, "the file also sets agent.extra_args")
            elif isinstance(value, str) and value.strip():
                program, flags = _codex_command(value)
                if program is not None:
                    read_as(path, "agent.command", program, dialect)
                extra_args += flags
                extra_at = extra_at or where(path)
                extra_from.append(path)
                shown = " ".join(flags)
                warn(
                    path,
                    f"{dialect}'s key, read as agent.command and agent.extra_args ({shown}); "
                    "the codex preset runs `codex exec --json`, never `app-server`",
                )
            else:
                ignore(path, dialect, "expected the codex command as a string")
            continue
        if path == "codex.thread_sandbox" and running == "codex-app-server":
            ignore(
                path,
                dialect,
                "codex-app-server runs the thread with full access inside the product's sandbox "
                "(agent.sandbox), which is what confines it",
            )
            continue
        if path == "codex.thread_sandbox":
            permission = CODEX_SANDBOXES.get(str(value))
            if permission is None:
                ignore(
                    path,
                    dialect,
                    f"no equivalent of {value!r} here (agent.permissions is workspace or full)",
                )
            else:
                read_as(path, "agent.permissions", permission, dialect)
            continue
        if path.startswith("pi.") and entry.target == "agent.extra_args":
            if running != "pi":
                ignore(path, dialect, f"the agent here is {running}, not pi")
                continue
            if "agent.extra_args" in native:
                ignore(path, dialect, "the file also sets agent.extra_args")
                continue
            flags_or_why = _pi_flags(path, value)
            if isinstance(flags_or_why, str):
                ignore(path, dialect, flags_or_why)
                continue
            extra_args += flags_or_why
            extra_at = extra_at or where(path)
            extra_from.append(path)
            shown = " ".join(flags_or_why) or "no flag"
            warn(path, f"{dialect}'s key, read as agent.extra_args ({shown})")
            continue
        if path == "codex.stall_timeout_ms" and isinstance(value, int) and value < 0:
            # Symphony: `<= 0` turns stall detection off; here that is 0.
            read_as(path, "agent.stall_timeout_ms", 0, dialect)
            continue
        if path == "pi.command" and running != "pi":
            ignore(path, dialect, f"the agent here is {running}, not pi")
            continue
        if entry.target is None:
            ignore(path, dialect, reason(entry), equivalent=False)
            continue
        read_as(path, entry.target, value, dialect)
    if extra_args and extra_at is not None:
        reading.mapped.append(Mapped("agent.extra_args", extra_args, extra_at, tuple(extra_from)))
    empty_dir = "hooks.after_create_in_empty_dir"
    if native.get("hooks.after_create") and empty_dir not in native:
        # Symphony runs after_create in the new, empty workspace folder.
        reading.mapped.append(
            Mapped(empty_dir, True, where("hooks.after_create"), ("hooks.after_create",))
        )
        warn(
            "hooks.after_create",
            "Symphony runs after_create in an empty folder: read with "
            f"{empty_dir}: true; write that key",
        )
    return reading


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
