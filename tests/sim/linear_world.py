"""A running emulator with a small Linear workspace, shared by the Linear tests.

``ENG`` has Linear's default states, two labels and a project; ``bot`` holds the
API key ``lin_api_bot`` (and git handle ``bot``), ``alice`` is a human with an
OAuth token. ENG-1 is blocked by ENG-2.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator_sim.clock import ManualClock
from orchestrator_sim.linear.client import GraphQLAnswer, LinearControl, post_graphql
from orchestrator_sim.server import SimServer

BOT_KEY = "lin_api_bot"
ALICE_TOKEN = "lin_oauth_alice"


@dataclass
class LinearWorld:
    """What a Linear test gets: the server, its clock and the control client."""

    server: SimServer
    clock: ManualClock
    control: LinearControl

    def gql(
        self,
        query: str,
        variables: dict[str, Any] | None = None,
        authorization: str | None = BOT_KEY,
    ) -> GraphQLAnswer:
        return post_graphql(self.control.graphql_url, authorization, query, variables)

    def data(self, query: str, variables: dict[str, Any] | None = None) -> Any:
        """The ``data`` of an answer that must have succeeded."""
        answer = self.gql(query, variables)
        assert answer.status == 200, answer.body
        assert "errors" not in answer.body, answer.body
        return answer.body["data"]


@contextmanager
def running_linear(state_dir: Path, *, persist: bool = False) -> Iterator[LinearWorld]:
    clock = ManualClock()
    with SimServer(state_dir, clock=clock, persist=persist) as server:
        control = LinearControl(server.url)
        control.create_user("bot", BOT_KEY, git_username="bot")
        control.create_user("alice", oauth_token=ALICE_TOKEN)
        control.create_team("ENG", "Engineering")
        control.create_label("agent")
        control.create_label("bug", team="ENG")
        control.create_project("Website", slug_id="website-1a2b")
        control.create_issue(
            "ENG",
            "Fix the login page",
            labels=["agent"],
            project="website-1a2b",
            assignee="bot",
            description="It fails.",
        )
        clock.advance(60)
        control.create_issue("ENG", "Upgrade the database", labels=["agent", "bug"], priority=2)
        control.relate("ENG-2", "ENG-1")
        clock.advance(60)
        yield LinearWorld(server, clock, control)
