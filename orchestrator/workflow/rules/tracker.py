"""Rules of the ``tracker`` section: repositories, endpoint, credentials, App auth, states."""

from __future__ import annotations

import re
from collections.abc import Iterator
from urllib.parse import urlsplit

from orchestrator.domain.linear_accounts import is_email, is_linear_user_id
from orchestrator.workflow.app_key import AppKeyError, read_private_key
from orchestrator.workflow.catalog import suggestion
from orchestrator.workflow.problems import Problem
from orchestrator.workflow.provenance import OriginKind
from orchestrator.workflow.rules.context import RuleContext
from orchestrator.workflow.rules.server import LOOPBACK_HOSTS
from orchestrator.workflow.schema import TrackerAuth, TrackerKind

_REPO = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})/[A-Za-z0-9._-]{1,100}$")


def _tracker_repos(ctx: RuleContext) -> Iterator[Problem]:
    tracker = ctx.policy.tracker
    opt_in = tracker.repo_opt_in_label
    if (
        tracker.kind is TrackerKind.GITHUB
        and tracker.repo is None
        and not tracker.repos
        and opt_in is None
    ):
        yield ctx.error(
            "tracker.repo",
            "required for tracker kind github (owner/name), unless tracker.repos or "
            "tracker.repo_opt_in_label names the repositories",
        )
    if tracker.repo is not None and not _REPO.match(tracker.repo):
        yield ctx.error("tracker.repo", f"expected owner/name, got {tracker.repo!r}")
    seen: set[str] = {tracker.repo.lower()} if tracker.repo is not None else set()
    for index, repo in enumerate(tracker.repos):
        path = f"tracker.repos[{index}]"
        if not _REPO.match(repo):
            yield ctx.error(path, f"expected owner/name, got {repo!r}")
        elif repo.lower() in seen:
            yield ctx.error(path, f"{repo} is named twice (tracker.repo and tracker.repos count)")
        seen.add(repo.lower())
    if tracker.kind is not TrackerKind.GITHUB:
        for key, given in (
            ("tracker.repos", bool(tracker.repos)),
            ("tracker.repo_opt_in_label", opt_in is not None),
        ):
            if given:
                yield ctx.error(
                    key,
                    f"only for tracker kind github (kind {tracker.kind.value} works on the one "
                    "repository of tracker.repo)",
                )
    if opt_in is not None:
        if not opt_in.strip():
            yield ctx.error("tracker.repo_opt_in_label", "must not be empty")
        if tracker.auth is not TrackerAuth.APP:
            yield ctx.error(
                "tracker.repo_opt_in_label",
                "needs tracker.auth: app (the repositories are those of the App's installation)",
            )
        elif tracker.repo is None and not tracker.repos and tracker.installation_id is None:
            yield ctx.error(
                "tracker.installation_id",
                "required with tracker.repo_opt_in_label when no repository is named (the "
                "installation is otherwise found from tracker.repo or tracker.repos)",
            )
    if tracker.repo_discovery_interval_ms < 60_000:
        yield ctx.error(
            "tracker.repo_discovery_interval_ms",
            f"at least 60000 (one read of every repository's label per discovery), got "
            f"{tracker.repo_discovery_interval_ms}",
        )


def check_tracker(ctx: RuleContext) -> Iterator[Problem]:
    """Repositories, endpoint, credentials, approvers and the tracker states."""
    tracker = ctx.policy.tracker
    yield from _tracker_repos(ctx)
    parts = urlsplit(tracker.endpoint)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        yield ctx.error(
            "tracker.endpoint", f"expected an http:// or https:// URL, got {tracker.endpoint!r}"
        )
    elif parts.scheme == "http" and parts.hostname not in LOOPBACK_HOSTS:
        yield ctx.warning(
            "tracker.endpoint",
            "plain http to a host other than this machine sends the token unencrypted",
        )
    origin = ctx.origins.get("tracker.token")
    if (
        tracker.token is not None
        and origin is not None
        and origin.kind is OriginKind.FILE
        and not origin.variables
    ):
        yield ctx.warning("tracker.token", "the token is written in the file; use a $VAR reference")
    if (
        tracker.kind is TrackerKind.GITHUB
        and tracker.auth is TrackerAuth.TOKEN
        and tracker.token is None
    ):
        yield ctx.error("tracker.token", "required for tracker kind github (a $VAR reference)")
    if tracker.kind is TrackerKind.LINEAR:
        yield from _linear(ctx)
    elif tracker.approvers:
        yield ctx.error(
            "tracker.approvers",
            "only for tracker kind linear: on GitHub, write permission on tracker.repo decides "
            "whose approval counts",
        )
    for index, approver in enumerate(tracker.approvers):
        if not approver.strip():
            yield ctx.error(f"tracker.approvers[{index}]", "must not be empty")
        elif tracker.kind is TrackerKind.LINEAR and not (
            is_email(approver) or is_linear_user_id(approver)
        ):
            yield ctx.error(
                f"tracker.approvers[{index}]",
                f"{approver!r} is neither an email nor a Linear user id: full names and display "
                "names are chosen by each user, so another member can take this one; name the "
                "user by email or by id (the UUID Linear's API shows as User.id)",
            )
    if not tracker.active_states:
        yield ctx.error("tracker.active_states", "must list at least one state")
    if not tracker.terminal_states:
        yield ctx.error("tracker.terminal_states", "must list at least one state")
    for index, state in enumerate(tracker.terminal_states):
        if state in tracker.active_states:
            yield ctx.error(
                f"tracker.terminal_states[{index}]", f"'{state}' is also an active state"
            )
    if tracker.kind is TrackerKind.LINEAR:
        return  # Linear has states of its own: no label shows them.
    known = (*tracker.active_states, *tracker.terminal_states)
    seen: dict[str, str] = {}
    for state, label in tracker.state_labels.items():
        path = f"tracker.state_labels.{state}"
        if state not in known:
            yield ctx.error(
                path,
                f"'{state}' is not in tracker.active_states or tracker.terminal_states"
                + suggestion(state, known),
            )
        folded = label.casefold()
        if folded in seen:
            yield ctx.error(path, f"label '{label}' also shows the state '{seen[folded]}'")
        seen[folded] = state


def _linear(ctx: RuleContext) -> Iterator[Problem]:
    tracker = ctx.policy.tracker
    if tracker.api_key is None:
        yield ctx.error("tracker.api_key", "required for tracker kind linear (a $VAR reference)")
    origin = ctx.origins.get("tracker.api_key")
    if (
        tracker.api_key is not None
        and origin is not None
        and origin.kind is OriginKind.FILE
        and not origin.variables
    ):
        yield ctx.warning(
            "tracker.api_key", "the API key is written in the file; use a $VAR reference"
        )
    if tracker.project_slug is None and tracker.team_key is None:
        yield ctx.error(
            "tracker.kind",
            "tracker kind linear needs tracker.project_slug or tracker.team_key (which issues)",
        )


def check_app_auth(ctx: RuleContext) -> Iterator[Problem]:
    """Running as a GitHub App needs the App's id and a readable RSA private key."""
    tracker = ctx.policy.tracker
    if tracker.auth is not TrackerAuth.APP or tracker.kind is not TrackerKind.GITHUB:
        return
    if tracker.app_id is None:
        yield ctx.error("tracker.app_id", "required for tracker.auth app (the App's id)")
    if not tracker.private_key_file:
        yield ctx.error(
            "tracker.private_key_file",
            "required for tracker.auth app (a PEM file, or a $VAR holding the PEM)",
        )
        return
    try:
        read_private_key(tracker.private_key_file)
    except AppKeyError as error:
        yield ctx.error("tracker.private_key_file", str(error))
