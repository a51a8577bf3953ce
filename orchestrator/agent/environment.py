"""The environment an agent or a hook runs with: built from an allow-list, never inherited whole.

The daemon's environment holds its own settings (``XDG_STATE_HOME`` points at
its database and mirrors, ``ORCHESTRATOR_*`` at its database URL and API token)
and whatever else the service manager gave it. None of it passes by default.
An agent or hook gets:

1. from the daemon's environment, only the names of :data:`BASE_ENV` (``PATH``,
   ``HOME``, the locale, ``TERM``, ``TZ``, ``TMPDIR``) and the names the
   settings allow on top (``AgentSettings.env_allow``), minus the names they
   deny (``AgentSettings.env_deny``);
2. the operator's own variables (``agent.env`` in the policy, where ``$NAME``
   references pass a model API key on purpose);
3. the runner's ``ORCHESTRATOR_*`` variables, which nothing overrides.

Whatever the lists say, a GitHub or git credential name (``GITHUB_TOKEN``,
``GIT_CONFIG_*``...) and any ``ORCHESTRATOR_*`` name of the daemon never pass,
and neither does a variable whose value contains a secret the runtime
registered (the tracker token under another name). Only names are logged.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from orchestrator.agent.settings import ALWAYS_DENIED_ENV, AgentSettings
from orchestrator.logs import get_logger

log = get_logger(__name__)

RUNNER_PREFIX = "ORCHESTRATOR_"

# The POSIX locale categories; LC_ALL overrides them all, LANG is their default.
LOCALE_ENV = frozenset(
    {
        "LANG",
        "LC_ALL",
        "LC_COLLATE",
        "LC_CTYPE",
        "LC_MESSAGES",
        "LC_MONETARY",
        "LC_NUMERIC",
        "LC_TIME",
    }
)
# The only names of the daemon's environment an agent or hook gets without being asked for.
BASE_ENV = frozenset({"PATH", "HOME", "TERM", "TZ", "TMPDIR"}) | LOCALE_ENV


@dataclass(frozen=True)
class BuiltEnvironment:
    """The variables to run with, and the names that were withheld (for the log, never values)."""

    variables: dict[str, str]
    withheld: tuple[str, ...]


def _never_passed(name: str) -> bool:
    upper = name.upper()
    # GIT_CONFIG_* can inject an authorization header into every git command.
    return (
        upper in ALWAYS_DENIED_ENV
        or upper.startswith("GIT_CONFIG")
        or upper.startswith(RUNNER_PREFIX)
    )


def _inherited(name: str, settings: AgentSettings) -> bool:
    """Whether the daemon's variable ``name`` passes to an agent or hook."""
    if _never_passed(name) or name.upper() in settings.env_deny:
        return False
    return name in BASE_ENV or name.upper() in settings.env_allow


def build_environment(
    base: Mapping[str, str],
    settings: AgentSettings,
    *,
    secrets: Iterable[str | None] = (),
    runner_vars: Mapping[str, str] | None = None,
) -> BuiltEnvironment:
    """The allowed part of ``base``, plus the extra and runner variables; see the module doc."""
    known = [s for s in secrets if s and len(s) >= 4]
    variables: dict[str, str] = {}
    withheld: list[str] = []
    for name, value in base.items():
        if not _inherited(name, settings) or any(secret in value for secret in known):
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
        """The allowed environment plus ``runner_vars``."""
        with self._lock:
            secrets = list(self._secrets)
        base = self._base if self._base is not None else dict(os.environ)
        return build_environment(base, self.settings, secrets=secrets, runner_vars=runner_vars)
