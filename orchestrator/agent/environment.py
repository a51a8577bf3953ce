"""The environment an agent or a hook runs with: the daemon's, minus every secret.

Removed: GitHub and git credentials (always), the ``ORCHESTRATOR_*`` settings
of the daemon itself (its database URL, its API token), names on the deny list,
names ending in ``_TOKEN``, ``_SECRET`` or ``_PASSWORD`` unless allowed, and any
variable whose value contains a known secret (the tracker token under another
name). Then the operator's extra variables and the runner's own
``ORCHESTRATOR_*`` variables are added.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from orchestrator.agent.settings import ALWAYS_DENIED_ENV, SECRET_SUFFIXES, AgentSettings
from orchestrator.logs import get_logger

log = get_logger(__name__)

RUNNER_PREFIX = "ORCHESTRATOR_"


@dataclass(frozen=True)
class BuiltEnvironment:
    """The variables to run with, and the names that were withheld (for the log, never values)."""

    variables: dict[str, str]
    withheld: tuple[str, ...]


def _is_denied(name: str, settings: AgentSettings) -> bool:
    upper = name.upper()
    # GIT_CONFIG_* can inject an authorization header into every git command.
    if upper in ALWAYS_DENIED_ENV or upper.startswith("GIT_CONFIG"):
        return True
    if upper.startswith(RUNNER_PREFIX) or upper in settings.env_deny:
        return True
    return upper.endswith(SECRET_SUFFIXES) and upper not in settings.env_allow


def build_environment(
    base: Mapping[str, str],
    settings: AgentSettings,
    *,
    secrets: Iterable[str | None] = (),
    runner_vars: Mapping[str, str] | None = None,
) -> BuiltEnvironment:
    """Filter ``base`` for an agent or hook, then add extra and runner variables."""
    known = [s for s in secrets if s and len(s) >= 4]
    variables: dict[str, str] = {}
    withheld: list[str] = []
    for name, value in base.items():
        if _is_denied(name, settings) or any(secret in value for secret in known):
            withheld.append(name)
            continue
        variables[name] = value
    for name, value in settings.extra_env.items():
        if any(secret in value for secret in known):
            log.warning("agent_env_secret_dropped", name=name)
            withheld.append(name)
            continue
        variables[name] = value
    # Last, so neither the inherited environment nor extra variables can override them.
    variables.update(runner_vars or {})
    return BuiltEnvironment(variables=variables, withheld=tuple(sorted(set(withheld))))


class AgentEnvironment:
    """Builds environments for agents and hooks from one base, one settings object and the secrets.

    The runtime registers every secret it holds (the tracker token) so that a
    variable carrying it under an unexpected name is withheld too.
    """

    def __init__(
        self,
        settings: AgentSettings,
        *,
        base: Mapping[str, str] | None = None,
        secrets: Iterable[str | None] = (),
    ) -> None:
        self.settings = settings
        self._base = dict(base) if base is not None else None
        self._lock = threading.Lock()
        self._secrets = {s for s in secrets if s}

    def add_secret(self, value: str | None) -> None:
        """Withhold any variable whose value contains ``value`` from now on."""
        if value:
            with self._lock:
                self._secrets.add(value)

    def build(self, runner_vars: Mapping[str, str] | None = None) -> BuiltEnvironment:
        """The filtered environment plus ``runner_vars``."""
        with self._lock:
            secrets = list(self._secrets)
        base = self._base if self._base is not None else dict(os.environ)
        return build_environment(base, self.settings, secrets=secrets, runner_vars=runner_vars)
