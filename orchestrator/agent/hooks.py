"""Operator hooks: shell snippets run with ``bash -lc`` in a workspace, bounded in time.

They run in the agents' sandbox when one is configured (``HookSettings.sandbox``):
a hook runs the repository's code, which the agent may have changed.

``after_create`` and ``before_run`` guard what follows them (a failure aborts
the workspace creation or the attempt); ``after_run`` and ``before_remove`` are
housekeeping whose failure is logged and ignored.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from pathlib import Path

from orchestrator.agent.bounded_run import run_bounded
from orchestrator.agent.errors import HookFailed
from orchestrator.agent.hook_result import HookName, HookResult
from orchestrator.agent.registry import ProcessRegistry
from orchestrator.agent.settings import HookSettings
from orchestrator.logs import get_logger

log = get_logger(__name__)


def run_hook(
    name: HookName,
    settings: HookSettings,
    *,
    cwd: Path,
    env: Mapping[str, str],
    cancel: threading.Event | None = None,
    registry: ProcessRegistry | None = None,
) -> HookResult | None:
    """Run the hook ``name`` if one is configured; None when there is none.

    A hook whose failure aborts raises :class:`HookFailed`; the others only log.
    With ``registry``, the hook's session is recorded there while it runs.
    """
    script = getattr(settings, name.value)
    if script is None or not script.strip():
        return None
    run = run_bounded(
        ["bash", "-lc", script],
        cwd=cwd,
        env={**env, "ORCHESTRATOR_HOOK": name.value},
        timeout_s=settings.timeout_ms / 1000,
        grace_s=settings.grace_period_ms / 1000,
        capture_bytes=settings.log_output_bytes,
        cancel=cancel,
        sandbox=settings.sandbox,
        track=registry.track("hook", name.value) if registry is not None else None,
    )
    result = HookResult(
        name=name,
        exit_code=run.exit_code,
        timed_out=run.timed_out,
        cancelled=run.cancelled,
        output=run.stdout,
        duration_s=run.duration_s,
    )
    fields = {
        "hook": name.value,
        "workspace": str(cwd),
        "exit_code": result.exit_code,
        "timed_out": result.timed_out,
        "duration_ms": round(result.duration_s * 1000),
        "output": result.output,
        "output_truncated": run.truncated,
    }
    if result.ok:
        log.info("hook_finished", **fields)
        return result
    if name.aborts_on_failure:
        log.warning("hook_failed", aborts=True, **fields)
        raise HookFailed(result)
    log.warning("hook_failed", aborts=False, **fields)
    return result
