"""The systemd unit: ``systemd-analyze verify`` accepts it and it holds what the daemon needs."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from orchestrator.workflow.schema import DEFAULT_MAX_CONNECTIONS
from tests.deploy.unit_file import (
    UnitFile,
    allowed_namespaces,
    longest_graceful_stop_s,
    read_unit,
    timespan_s,
)

ROOT = Path(__file__).resolve().parents[2]
UNIT = ROOT / "deploy" / "systemd" / "orchestrator.service"
ENV_EXAMPLE = ROOT / "deploy" / "systemd" / "orchestrator.env.example"
README = ROOT / "deploy" / "README.md"
EXAMPLE_POLICIES = sorted((ROOT / "workflows").glob("*.md"))
INSTALLED_AT = "/etc/systemd/system/orchestrator.service"
REQUIRE_ENV = "ORCHESTRATOR_REQUIRE_SYSTEMD"
# The directories systemd searches for a command given without a path.
COMMAND_SEARCH_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin"
HOST_UNIT_DIRS = (Path("/usr/lib/systemd/system"), Path("/lib/systemd/system"))
EXPOSURE = re.compile(r"Overall exposure level for \S+: (\d+\.\d+)")


@pytest.fixture(scope="module")
def unit() -> UnitFile:
    return read_unit(UNIT)


def _systemd_analyze() -> str:
    found = shutil.which("systemd-analyze")
    if found:
        return found
    message = "systemd-analyze is missing: it comes with Debian's `systemd` package"
    if os.environ.get(REQUIRE_ENV):
        pytest.fail(f"{message} ({REQUIRE_ENV} is set, so this check must run)")
    pytest.skip(f"{message}; set {REQUIRE_ENV}=1 to make this a failure")


def _program(command_line: str) -> str:
    # Exec lines may start with the prefixes - @ : + ! (failure ignored, argv0, privileges ...).
    return command_line.lstrip("-@:+!").split()[0]


def _fake_root(base: Path, unit: UnitFile, unit_text: str) -> Path:
    """A file-system root holding the unit, the host's standard units and its commands.

    ``--root`` lets systemd-analyze check the unit as installed (its commands
    exist, its dependencies resolve) without touching this machine's /etc or
    /opt: the release's programs are stand-ins, the others must exist here.
    """
    host_units = next((d for d in HOST_UNIT_DIRS if d.is_dir()), None)
    assert host_units is not None, "no systemd unit directory on this machine"
    root = base / "root"
    if not root.exists():
        shutil.copytree(host_units, root / "usr" / "lib" / "systemd" / "system", symlinks=True)
    for key in ("ExecStartPre", "ExecStart", "ExecStartPost", "ExecReload", "ExecStop"):
        for command_line in unit.values("Service", key):
            program = _program(command_line)
            if not program.startswith("/"):
                host = shutil.which(program, path=COMMAND_SEARCH_PATH)
                assert host, f"{key}= runs {program!r}, which is on no system path here"
                program = "/usr/bin/" + program
            elif not program.startswith("/opt/orchestrator/"):
                assert Path(program).exists(), f"{key}= runs {program}, which does not exist"
            target = root / program.lstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text("#!/bin/sh\nexit 0\n")
            target.chmod(0o755)
    installed = root / INSTALLED_AT.lstrip("/")
    installed.parent.mkdir(parents=True, exist_ok=True)
    installed.write_text(unit_text)
    return root


def _verify(base: Path, unit: UnitFile, unit_text: str) -> tuple[int, str]:
    tool = _systemd_analyze()
    root = _fake_root(base, unit, unit_text)
    result = subprocess.run(
        [tool, "verify", f"--root={root}", "--man=no", "--generators=no", INSTALLED_AT],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return result.returncode, (result.stdout + result.stderr).strip()


def test_systemd_analyze_verify_accepts_the_unit(tmp_path: Path, unit: UnitFile) -> None:
    returncode, messages = _verify(tmp_path, unit, UNIT.read_text())
    # systemd only warns about unknown keys and bad values and ignores them,
    # so any message at all is a defect.
    assert (returncode, messages) == (0, "")


@pytest.mark.parametrize(
    ("mistake", "edit"),
    [
        ("misspelt value", lambda text: text.replace("Type=notify", "Type=notfy")),
        ("unknown key", lambda text: text.replace("[Service]", "[Service]\nWatchDogSec=60s")),
        ("bad time span", lambda text: text.replace("TimeoutStopSec=60s", "TimeoutStopSec=sixty")),
    ],
)
def test_the_verify_check_notices_mistakes(
    tmp_path: Path, unit: UnitFile, mistake: str, edit: Callable[[str], str]
) -> None:
    text = UNIT.read_text()
    broken = edit(text)
    assert broken != text, f"the {mistake} edit changed nothing"
    returncode, messages = _verify(tmp_path, unit, broken)
    assert returncode != 0 or messages, f"a {mistake} went unnoticed"


def test_security_exposure(tmp_path: Path, unit: UnitFile) -> None:
    tool = _systemd_analyze()
    root = _fake_root(tmp_path, unit, UNIT.read_text())
    result = subprocess.run(
        [tool, "security", "--offline=true", f"--root={root}", "--no-pager", INSTALLED_AT],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    match = EXPOSURE.search(result.stdout)
    assert match, result.stdout + result.stderr
    exposure = float(match.group(1))
    print(f"systemd-analyze security exposure of orchestrator.service: {exposure}")
    # 0 is fully locked down, 10 unconfined; below 4 systemd rates a service "OK".
    assert exposure < 4.0


def _grace_covered(unit: UnitFile) -> bool:
    stop = unit.value("Service", "TimeoutStopSec")
    return stop is not None and timespan_s(stop) > longest_graceful_stop_s()


def _runs(unit: UnitFile, key: str, arguments: str) -> bool:
    return any(
        _program(line) == "/opt/orchestrator/bin/orchestrator" and line.endswith(arguments)
        for line in unit.values("Service", key)
    )


def _open_files(unit: UnitFile) -> int:
    """The hard ``LimitNOFILE=`` (``N`` or ``SOFT:HARD``), which the daemon raises its soft to."""
    value = unit.value("Service", "LimitNOFILE") or "1024"
    hard = value.split(":")[-1]
    return 1 << 30 if hard == "infinity" else int(hard)


RULES: dict[str, Callable[[UnitFile], bool]] = {
    "type_notify": lambda u: u.value("Service", "Type") == "notify",
    "watchdog_on": lambda u: timespan_s(u.value("Service", "WatchdogSec") or "0") > 0,
    "restart_on_failure": lambda u: u.value("Service", "Restart") == "on-failure",
    "kill_mode_mixed_daemon_stops_its_agents": lambda u: u.value("Service", "KillMode") == "mixed",
    "stop_timeout_above_agent_grace": _grace_covered,
    "state_directory": lambda u: "orchestrator" in u.words("Service", "StateDirectory"),
    "token_from_required_environment_file": lambda u: (
        u.values("Service", "EnvironmentFile") == ["/etc/orchestrator/orchestrator.env"]
    ),
    "dedicated_static_user": lambda u: (
        u.value("Service", "User") == "orchestrator"
        and u.value("Service", "DynamicUser") in (None, "no")
    ),
    "protect_system_strict": lambda u: u.value("Service", "ProtectSystem") == "strict",
    "private_tmp": lambda u: u.value("Service", "PrivateTmp") == "yes",
    "no_new_privileges": lambda u: u.value("Service", "NoNewPrivileges") == "yes",
    "home_protected": lambda u: u.value("Service", "ProtectHome") in ("yes", "read-only"),
    # On the database the daemon uses: the same policy file, read the same way.
    "migrations_before_start": lambda u: _runs(
        u, "ExecStartPre", " db upgrade --workflow /etc/orchestrator/WORKFLOW.md"
    ),
    "runs_the_installed_policy": lambda u: _runs(
        u, "ExecStart", " run /etc/orchestrator/WORKFLOW.md"
    ),
    "reload_is_sighup": lambda u: u.value("Service", "ExecReload") == "kill -HUP $MAINPID",
    "json_logs": lambda u: u.environment().get("ORCHESTRATOR_LOG_FORMAT") == "json",
    "replica_id_set": lambda u: bool(u.environment().get("ORCHESTRATOR_REPLICA_ID")),
    "agent_oom_is_not_a_service_failure": lambda u: u.value("Service", "OOMPolicy") == "continue",
    # systemd's default 1,024 leaves a flood of dashboard connections room to starve the
    # daemon's own work; the web server may take a quarter (server.max_connections).
    "open_files_beyond_systemds_default": lambda u: (
        _open_files(u) >= 4 * 4 * DEFAULT_MAX_CONNECTIONS
    ),
    "node_jit_allowed": lambda u: u.value("Service", "MemoryDenyWriteExecute") in (None, "no"),
    # The agents' sandbox (bubblewrap) builds these; tests/deploy/test_sandbox_under_unit.py
    # checks the rest of what it needs.
    "sandbox_namespaces_allowed": lambda u: allowed_namespaces(u) >= {"user", "pid", "mnt"},
    "waits_for_network": lambda u: (
        "network-online.target" in u.words("Unit", "After")
        and "network-online.target" in u.words("Unit", "Wants")
    ),
    "enabled_at_boot": lambda u: u.value("Install", "WantedBy") == "multi-user.target",
}


@pytest.mark.parametrize("rule", sorted(RULES))
def test_unit_rule(unit: UnitFile, rule: str) -> None:
    assert RULES[rule](unit), f"{UNIT.name} breaks the rule {rule}"


def _front_matter(path: Path) -> dict[str, object]:
    text = path.read_text(encoding="utf-8")
    _, front, _ = text.split("---\n", 2)
    loaded = YAML(typ="safe").load(front)
    assert isinstance(loaded, dict)
    return loaded


def _writable_roots(unit: UnitFile) -> list[str]:
    state = [f"/var/lib/{d}" for d in unit.words("Service", "StateDirectory")]
    return state + [p.lstrip("-") for p in unit.words("Service", "ReadWritePaths")]


@pytest.mark.parametrize("policy", EXAMPLE_POLICIES, ids=lambda p: p.name)
def test_example_policies_write_only_where_the_unit_allows(unit: UnitFile, policy: Path) -> None:
    data = _front_matter(policy)
    paths: list[str] = []
    for section, key in (("workspace", "root"), ("rollout", "kill_switch_file")):
        value = (data.get(section) or {}).get(key)  # type: ignore[attr-defined]
        if isinstance(value, str) and value.startswith("/var/"):
            paths.append(value)
    for path in paths:
        assert any(path == r or path.startswith(r + "/") for r in _writable_roots(unit)), (
            f"{policy.name}: {path} is read-only under ProtectSystem=strict"
        )


def test_default_sqlite_file_lands_in_the_state_directory(unit: UnitFile) -> None:
    # The daemon's default database is $XDG_STATE_HOME/orchestrator/orchestrator.db.
    state_home = unit.environment().get("XDG_STATE_HOME", "").replace("%S", "/var/lib")
    assert f"{state_home}/orchestrator" in _writable_roots(unit)


def test_environment_file_example_holds_no_secret() -> None:
    names: dict[str, str] = {}
    for number, raw in enumerate(ENV_EXAMPLE.read_text().splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        name, sep, value = line.partition("=")
        assert sep and re.fullmatch(r"[A-Z_][A-Z0-9_]*", name), (
            f"{ENV_EXAMPLE.name}:{number}: not a NAME=value line"
        )
        names[name] = value
    assert names.get("GITHUB_TOKEN") == "", "the example must name GITHUB_TOKEN with no value"
    assert not re.search(r"gh[pousr]_[A-Za-z0-9]{20,}|github_pat_", ENV_EXAMPLE.read_text())


def test_readme_documents_each_hardening_option(unit: UnitFile) -> None:
    readme = README.read_text()
    hardening = [
        key
        for key, _ in unit.sections["Service"]
        if key.startswith(("Protect", "Private", "Restrict", "NoNew", "SystemCall", "Capability"))
    ]
    assert hardening
    missing = [key for key in hardening if key not in readme]
    assert not missing, f"deploy/README.md does not explain {missing}"
