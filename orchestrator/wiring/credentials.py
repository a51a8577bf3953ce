"""The daemon's GitHub credential from the policy (a token or a GitHub App's), and the
secrets the agent never sees.
"""

from __future__ import annotations

from pathlib import Path

from orchestrator.github.credentials import AppInstallationTokens, StaticToken, TokenProvider
from orchestrator.wiring.policy_view import WiringError, is_linear, policy_repo
from orchestrator.workflow.app_key import AppKeyError, is_inline_pem, read_private_key
from orchestrator.workflow.flow import github_endpoint
from orchestrator.workflow.schema import Policy, TrackerAuth


def credential_key(policy: Policy) -> tuple[object, ...]:
    """What the daemon's GitHub credential is made of: a change builds a new one."""
    tracker = policy.tracker
    # With kind linear, Linear's side too: a change of key or scope builds the access anew.
    linear: tuple[object, ...] = (
        (
            tracker.endpoint,
            tracker.api_key,
            tracker.team_key,
            tracker.project_slug,
            tracker.required_labels,
            tracker.active_states,
            tracker.terminal_states,
        )
        if is_linear(policy)
        else ()
    )
    if tracker.auth is TrackerAuth.APP:
        return ("app", tracker.app_id, tracker.private_key_file, tracker.installation_id, *linear)
    return ("token", tracker.token, *linear)


def policy_credentials(policy: Policy) -> TokenProvider:
    """The daemon's GitHub credential: the token, or the App's installation tokens.

    Neither the token nor the key is ever logged: the token is registered with
    the redactor, and every installation token as it is issued.
    """
    tracker = policy.tracker
    if tracker.auth is TrackerAuth.APP:
        if tracker.app_id is None or not tracker.private_key_file:
            raise WiringError("tracker.auth: app needs tracker.app_id and tracker.private_key_file")
        try:
            private_key = read_private_key(tracker.private_key_file)
        except AppKeyError as error:
            raise WiringError(f"tracker.private_key_file: {error}") from None
        return AppInstallationTokens(
            endpoint=github_endpoint(policy),
            app_id=tracker.app_id,
            private_key=private_key,
            repo=policy_repo(policy) if tracker.installation_id is None else "",
            installation_id=tracker.installation_id,
        )
    if not tracker.token:
        raise WiringError("tracker.token: the daemon needs a GitHub token")
    return StaticToken(tracker.token)


def agent_secrets(policy: Policy) -> list[str | None]:
    """Values no agent environment variable may carry: the daemon's GitHub credential
    (the token, or the App's key when a `$VAR` holds it), its Linear key and its API tokens."""
    key = policy.tracker.private_key_file
    inline_key = key if key and is_inline_pem(key) else None
    linear_key = policy.tracker.api_key if is_linear(policy) else None
    return [
        policy.tracker.token,
        inline_key,
        linear_key,
        policy.server.token,
        policy.server.metrics_token,
    ]


def key_folder(policy: Policy) -> Path | None:
    """The folder of the App's key file, which agents must not see (None without one)."""
    key = policy.tracker.private_key_file
    if policy.tracker.auth is not TrackerAuth.APP or not key or is_inline_pem(key):
        return None
    return Path(key).parent
