"""The agent plants programs in its repository's config; someone else pushes; nothing gets out.

The hidden security suite's escape, against the real daemon (``orchestrator
run`` as ``nobody`` when the tests run as root): in its implementing turn the
agent commits, then sets every key that names a program git may run
(:func:`tests.hostile.agent.plant_workspace`: ``core.alternateRefsCommand``
with alternates, ``remote.<mirror URL>.uploadpack``, filters, hooks, ``ext::``
transports, ``core.worktree`` pointing into the daemon's state folder...).
The daemon pushes the branch; a maintainer then pushes a commit onto it and
a check fails, so the next turn (rework) starts from the maintainer's head:
the daemon brings it into the workspace. Each planted program, if it ever ran,
would report to the listener, read the daemon's secrets and leave a file in
its state folder when it runs outside the sandbox.

Passes when no planted program ran for the daemon (every report carries the
agent's own run id), nothing reached the daemon's files, and the maintainer's
commit is in the workspace.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from orchestrator.agent import probe_bwrap, workspace_key
from orchestrator.agent.git import split_credentials
from orchestrator_sim.testing import SimWorld
from tests.e2e.harness import Flow, write_policy
from tests.hostile.test_hostile_daemon import (
    Layout,
    Listener,
    events,
    hostile_daemon,
    hostile_layout,
    issue_view,
    policy,
    prepare,
    secrets,
    snapshot,
    wait_for,
)


def _arm(layout: Layout, world: SimWorld, flow: Flow, sandbox: str) -> None:
    """The escape agent's config (the daemon's mirror, predictable from the clone URL)."""
    clone_url = str(flow.rest("GET", f"/repos/{world.repo}")["clone_url"])
    mirror = layout.mirrors / f"{workspace_key(split_credentials(clone_url)[0])}.git"
    config_path = layout.kit / "config.json"
    config = json.loads(config_path.read_text())
    config["mirror"] = str(mirror)
    config_path.write_text(json.dumps(config))
    document: dict[str, Any] = policy(layout, world, sandbox)
    document["review"] = {"enabled": False}
    write_policy(layout.policy, document)


@pytest.mark.slow
@pytest.mark.parametrize("sandbox", ["bwrap", "none"])
def test_programs_planted_in_the_workspace_never_run_for_the_daemon(
    tmp_path: Path, world: SimWorld, listener: Listener, sandbox: str
) -> None:
    if sandbox == "bwrap" and not probe_bwrap().usable:
        pytest.fail(f"bubblewrap does not work here: {probe_bwrap().reason}")
    flow = Flow(world, tmp_path, tmp_path / "unused.md", tmp_path / "unused.json", {})
    with hostile_layout(tmp_path) as layout:
        prepare(layout, world, listener, sandbox)
        _arm(layout, world, flow, sandbox)
        with hostile_daemon(layout, world) as daemon:
            before = snapshot(layout.outside_the_workspace())
            number = flow.open_issue("Add the feature")

            def issue() -> dict[str, Any]:
                return issue_view(layout, world, number)

            def runs() -> list[dict[str, Any]]:
                return list(issue().get("agent_runs", []))

            wait_for(
                lambda: issue().get("issue", {}).get("phase") == "waiting_for_checks",
                "the pull request, waiting for its checks",
                layout,
            )
            assert listener.tagged("planted"), "the agent planted its settings"
            pr = flow.pulls()[0]
            pushed = flow.push_as_human(pr["head"]["ref"])
            flow.check(pr["number"], "failure")
            wait_for(
                lambda: [e for e in events(layout, "turn_recorded") if e["phase"] == "rework"],
                "a rework turn on the maintainer's head",
                layout,
            )
            escaped = listener.tagged("escape")
            assert not escaped, escaped[0].decode(errors="replace")[:2000]
            assert [r["outcome"] for r in runs() if r["phase"] == "rework"][:1] == ["completed"]
            synced = events(layout, "workspace_synced") + events(layout, "workspace_reset")
            assert [e["head"] for e in synced] == [pushed]
            assert daemon.poll() is None, "the daemon keeps running"
            after = snapshot(layout.outside_the_workspace())

        assert listener.tagged("turn"), "the rework turn ran"
        captured = listener.everything()
        for what, secret in secrets(world).items():
            assert secret not in captured, f"{what} reached the listener"
        # Whatever ran ran in the agent's own turn, never for the daemon.
        for dump in [c for c in listener.captured if c.startswith(b"POST /git-")]:
            assert b"ORCHESTRATOR_RUN_ID=" in dump, dump[:600].decode(errors="replace")
        assert after == before
        # The planted core.worktree named the state folder: nothing was checked out there.
        assert not list(layout.state.glob("escaped-*"))
        assert not (layout.state / "src").exists()
        assert not (layout.state / "README.md").exists()
