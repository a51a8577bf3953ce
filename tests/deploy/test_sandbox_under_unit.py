"""The agents' sandbox still works under the systemd unit's hardening.

Where systemd runs this machine, the probe's bubblewrap command runs as a
transient service with the unit's own hardening options (``systemd-run
--pipe --wait -p ...``). Elsewhere (a container without systemd as PID 1)
the same options are checked another way: the namespace and system call
restrictions are read from the unit and compared with what bubblewrap needs,
and the unit's mounts over ``/proc``, ``/dev``, ``/tmp``, ``/home`` and
``/sys`` are rebuilt with ``unshare`` and ``mount``, then bubblewrap runs in
them as ``nobody`` with no capabilities and ``no_new_privs``, as the unit's
user would. A control run shows that the emulation can fail: with the mount
``ProtectKernelTunables=`` makes, bubblewrap cannot mount its ``/proc``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from orchestrator.agent.sandbox import DEFAULT_BWRAP, bwrap_argv
from tests.agent.test_sandbox import NOBODY, require_bwrap
from tests.deploy.unit_file import UnitFile, allowed_namespaces, read_unit

ROOT = Path(__file__).resolve().parents[2]
UNIT = ROOT / "deploy" / "systemd" / "orchestrator.service"
SANDBOX_NAMESPACES = {"user", "pid", "mnt"}
# What bubblewrap calls to build the sandbox (checked against the unit's filter).
BWRAP_SYSCALLS = {
    "clone",
    "clone3",
    "unshare",
    "mount",
    "umount2",
    "pivot_root",
    "chdir",
    "fchdir",
    "capset",
    "capget",
    "prctl",
    "execve",
    "mkdir",
    "openat",
    "symlink",
    "setresuid",
    "setresgid",
    "setgroups",
    "wait4",
    "kill",
}
# Options systemd-run can set on a transient service, as the unit sets them.
TRANSIENT_OPTIONS = (
    "NoNewPrivileges",
    "ProtectSystem",
    "ProtectHome",
    "PrivateTmp",
    "PrivateDevices",
    "ProtectKernelTunables",
    "ProtectKernelModules",
    "ProtectKernelLogs",
    "ProtectControlGroups",
    "ProtectClock",
    "ProtectHostname",
    "ProtectProc",
    "ProcSubset",
    "PrivateUsers",
    "RestrictSUIDSGID",
    "RestrictRealtime",
    "LockPersonality",
    "PrivateMounts",
    "SystemCallArchitectures",
    "RestrictNamespaces",
    "SystemCallFilter",
    "SystemCallErrorNumber",
    "RestrictAddressFamilies",
    "CapabilityBoundingSet",
    "AmbientCapabilities",
)


@pytest.fixture(scope="module")
def unit() -> UnitFile:
    return read_unit(UNIT)


def probe_argv(bwrap: str) -> list[str]:
    return bwrap_argv(bwrap, ["/bin/true"], cwd=Path("/"), writable=[], hidden=[])


def test_the_unit_allows_the_sandbox_namespaces(unit: UnitFile) -> None:
    assert allowed_namespaces(unit) >= SANDBOX_NAMESPACES
    assert unit.value("Service", "PrivateUsers") in (None, "no")


def test_the_unit_mounts_nothing_over_proc(unit: UnitFile) -> None:
    # The kernel refuses a fresh /proc in a user namespace while parts of the
    # existing one are covered (see the control run below).
    for key in ("ProtectKernelTunables", "ProtectKernelLogs"):
        assert unit.value("Service", key) in (None, "no"), f"{key}= breaks the sandbox"
    assert unit.value("Service", "ProcSubset") in (None, "all")


def test_the_system_call_filter_lets_bubblewrap_work(unit: UnitFile) -> None:
    tool = shutil.which("systemd-analyze")
    if tool is None:
        pytest.skip("systemd-analyze is missing (Debian's systemd package)")
    denied: set[str] = set()
    for value in unit.values("Service", "SystemCallFilter"):
        assert value.startswith("~"), "an allow-list filter needs checking by hand"
        for item in value[1:].split():
            if not item.startswith("@"):
                denied.add(item)
                continue
            listing = subprocess.run(
                [tool, "syscall-filter", item], capture_output=True, text=True, check=True
            ).stdout
            denied |= {w for w in listing.split() if not w.startswith(("@", "#"))}
    assert denied, "the filter expanded to nothing"
    assert not denied & BWRAP_SYSCALLS


def _systemd_runs_here() -> bool:
    return Path("/run/systemd/system").is_dir() and shutil.which("systemd-run") is not None


def test_bubblewrap_runs_as_a_transient_service_with_the_units_options(unit: UnitFile) -> None:
    if not _systemd_runs_here():
        pytest.skip(
            "systemd is not PID 1 here, so systemd-run cannot start a transient service; "
            "the options are checked by the other tests of this file"
        )
    require_bwrap()
    bwrap = shutil.which(DEFAULT_BWRAP)
    assert bwrap is not None
    properties = [
        f"--property={key}={value}"
        for key in TRANSIENT_OPTIONS
        for value in unit.values("Service", key)
    ]
    result = subprocess.run(
        [
            "systemd-run",
            "--pipe",
            "--wait",
            "--quiet",
            "--collect",
            "--property=User=nobody",
            *properties,
            *probe_argv(bwrap),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def _emulated(unit_mounts: str, bwrap: str) -> subprocess.CompletedProcess[str]:
    """``bwrap`` as the unit's user would run it, in a mount namespace set up by ``unit_mounts``."""
    hardened = [
        *NOBODY,
        "--no-new-privs",
        "--bounding-set=-all",
        "--inh-caps=-all",
        *probe_argv(bwrap),
    ]
    script = f"set -e\n{unit_mounts}\nexec {' '.join(hardened)}\n"
    return subprocess.run(
        ["unshare", "--mount", "--pid", "--fork", "--propagation", "private", "sh", "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


# The mounts the unit's options make, as systemd makes them (in the service's namespace).
UNIT_MOUNTS = {
    # ProtectProc=invisible: a /proc of its own with hidepid=invisible.
    "ProtectProc": "mount -t proc -o hidepid=invisible proc /proc",
    # PrivateDevices=yes: a tmpfs /dev holding only the harmless devices.
    "PrivateDevices": (
        "mkdir -p /run/unit-dev && mount -t tmpfs -o mode=755 dev /run/unit-dev && "
        "for d in null zero full random urandom tty; do "
        "touch /run/unit-dev/$d && mount --bind /dev/$d /run/unit-dev/$d; done && "
        "mkdir /run/unit-dev/pts /run/unit-dev/shm && mount --move /run/unit-dev /dev"
    ),
    # PrivateTmp=yes: a private /tmp.
    "PrivateTmp": "mount -t tmpfs -o mode=1777 tmp /tmp",
    # ProtectSystem=strict: the whole tree read-only.
    "ProtectSystem": "mount --bind /usr /usr && mount -o remount,bind,ro /usr",
    # ProtectHome=yes: /home and /root empty and inaccessible.
    "ProtectHome": "mount -t tmpfs -o mode=000 home /home",
    # ProtectControlGroups=yes: the cgroup tree read-only.
    "ProtectControlGroups": (
        "if [ -d /sys/fs/cgroup ]; then mount --bind /sys/fs/cgroup /sys/fs/cgroup && "
        "mount -o remount,bind,ro /sys/fs/cgroup; fi"
    ),
}


def _need_root_tools() -> str:
    require_bwrap()
    if os.geteuid() != 0:
        pytest.skip("rebuilding the unit's mounts needs root (unshare --mount)")
    for tool in ("unshare", "setpriv"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} (util-linux) is missing")
    bwrap = shutil.which(DEFAULT_BWRAP)
    assert bwrap is not None
    return bwrap


def test_bubblewrap_works_in_the_units_mounts_as_its_unprivileged_user(unit: UnitFile) -> None:
    bwrap = _need_root_tools()
    kept = [key for key in UNIT_MOUNTS if unit.value("Service", key) not in (None, "no")]
    assert kept, "the unit sets none of the mount options this test rebuilds"
    result = _emulated("\n".join(UNIT_MOUNTS[key] for key in kept), bwrap)
    assert result.returncode == 0, result.stderr


def test_the_emulation_notices_a_mount_over_proc() -> None:
    bwrap = _need_root_tools()
    # What ProtectKernelTunables=yes does to /proc/sys, among others.
    tunables = "mount --bind /proc/sys /proc/sys && mount -o remount,bind,ro /proc/sys"
    result = _emulated(tunables, bwrap)
    assert result.returncode != 0
    assert "proc" in result.stderr
