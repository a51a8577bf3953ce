"""The user's preferences file: defaults for the operator commands' optional parameters.

Precedence for every optional parameter: an explicit flag, then the
preferences file (``$XDG_CONFIG_HOME/orchestrator/preferences.yaml``), then the
built-in default. ``--help`` marks the parameters that are preferences.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click
from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

# Preference name -> (type, built-in default, meaning).
PREFERENCES: dict[str, tuple[type, Any, str]] = {
    "workflow": (str, "WORKFLOW.md", "the policy file the commands read"),
    "db": (
        str,
        None,
        "database URL or SQLite path (else $ORCHESTRATOR_DATABASE_URL, else the default file)",
    ),
    "format": (str, "table", "output of status and issue show: table or json"),
    "url": (str, None, "a running daemon's URL (else status finds it from the policy)"),
    "include_bots": (bool, False, "pr threads: also list threads started by bots"),
    "sort": (str, "file", "pr threads: order by file or time"),
}


class PreferencesError(click.ClickException):
    """The preferences file cannot be used; the message names the file and key."""


def preferences_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "orchestrator" / "preferences.yaml"


def load_preferences(path: Path | None = None) -> dict[str, Any]:
    """The preferences in the file (empty when there is none); bad content is an error."""
    path = path or preferences_path()
    if not path.is_file():
        return {}
    try:
        data = YAML(typ="safe").load(path.read_text(encoding="utf-8"))
    except (OSError, YAMLError) as exc:
        raise PreferencesError(f"{path}: cannot read preferences: {exc}") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise PreferencesError(f"{path}: expected a mapping of preference names to values")
    for key, value in data.items():
        if key not in PREFERENCES:
            close = difflib.get_close_matches(str(key), PREFERENCES, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise PreferencesError(f"{path}: {key}: unknown preference{hint}")
        kind = PREFERENCES[key][0]
        if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
            raise PreferencesError(f"{path}: {key}: expected {kind.__name__}, got {value!r}")
    return dict(data)


def resolve(name: str, flag: Any) -> Any:
    """The value of preference ``name``: the flag if given, else the file, else the default."""
    if flag is not None:
        return flag
    prefs = load_preferences()
    if name in prefs:
        return prefs[name]
    return PREFERENCES[name][1]


F = TypeVar("F", bound=Callable[..., Any])


def preference_option(name: str, *param_decls: str, **attrs: Any) -> Callable[[F], F]:
    """A click option whose unset value comes from the preferences file, marked in --help."""
    default = PREFERENCES[name][1]
    shown = "" if default is None else f" Default: {default}."
    attrs["help"] = f"{attrs.get('help', PREFERENCES[name][2])}.{shown} [preference: {name}]"
    attrs["default"] = None
    return click.option(*param_decls, **attrs)
