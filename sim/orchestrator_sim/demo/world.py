"""The demo's GitHub: a sample repository, the accounts, three labelled issues."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from pathlib import Path

from orchestrator_sim.server import SimServer

REPO = "demo/widgets"
BOT, HUMAN, CI = "orchestrator-bot", "alice", "ci-runner"
OWNERSHIP_LABEL = "orchestrator"

FILES = {
    "README.md": "# widgets\n\nA small library of widgets.\n",
    "src/widgets/__init__.py": '"""Widgets."""\n',
    "tests/test_widgets.py": "def test_import():\n    import widgets  # noqa: F401\n",
}

ISSUES = (
    ("Add a spinner widget", "Spinners show that work is in progress."),
    ("Add a progress bar widget", "A bar that fills up as work completes."),
    ("Add a toggle widget", "An on/off switch."),
)

# Each issue's agent writes its own module, so the three pull requests never conflict.
SCENARIO = """\
steps:
  - session: auto
  - message: Reading issue ${DEMO_ISSUE} and the code
  - events: {count: 3, interval_ms: 50}
  - write:
      path: src/widgets/widget_${DEMO_ISSUE}.py
      content: |
        \"\"\"The widget of issue ${DEMO_ISSUE}.\"\"\"

        NAME = "widget-${DEMO_ISSUE}"
  - write:
      path: tests/test_widget_${DEMO_ISSUE}.py
      content: |
        from widgets.widget_${DEMO_ISSUE} import NAME


        def test_name():
            assert NAME == "widget-${DEMO_ISSUE}"
  - commit: Add the widget of issue ${DEMO_ISSUE}
  - usage: {input_tokens: 2400, cached_input_tokens: 1800, output_tokens: 420}
  - pr_description: |
      ## Summary
      Adds the widget the issue asks for, with a test.

      ## Testing
      `pytest tests/`
phases:
  reviewing:
    steps:
      - session: auto
      - message: Reviewing the change at HEAD
      - review:
          overview: The change is small and tested.
          findings:
            - severity: P3
              title: Docstring could name the issue
              summary: The module docstring is terse.
              why_it_matters: Readers benefit from context.
              suggested_fix: Mention what the widget is for.
  rework:
    steps:
      - session: auto
      - message: Fixing the failing check
      - write:
          path: src/widgets/widget_${DEMO_ISSUE}.py
          append: true
          content: |

            VERSION = 2
      - commit: Fix the failing test of issue ${DEMO_ISSUE}
      - fix_summary:
          entries:
            - {check: tests, status: fixed, message: Fixed the failing assertion., commit: HEAD}
      - pr_description: |
          ## Summary
          Adds the widget the issue asks for, with a test.

          ## Testing
          `pytest tests/` (the failing assertion is fixed)
"""


@dataclass(frozen=True)
class Account:
    login: str
    token: str


@dataclass
class DemoWorld:
    """A running emulator holding the demo repository and its issues."""

    server: SimServer
    bot: Account
    human: Account
    ci: Account
    issues: tuple[int, ...]

    @property
    def url(self) -> str:
        return self.server.url

    def stop(self) -> None:
        self.server.stop()


def _token() -> str:
    return "ghp_" + secrets.token_hex(18)


def start_world(state_dir: Path, state_labels: dict[str, str]) -> DemoWorld:
    """Start the emulator and create the repository, accounts, labels and issues."""
    server = SimServer(state_dir / "github").start()
    try:
        bot, human, ci = Account(BOT, _token()), Account(HUMAN, _token()), Account(CI, _token())
        control = server.control
        control.create_user(bot.login, bot.token, bot=True)
        control.create_user(human.login, human.token, name="Alice Example")
        control.create_user(ci.login, ci.token, bot=True)
        control.create_repo(
            REPO,
            dict(FILES),
            permissions={bot.login: "write", human.login: "admin", ci.login: "write"},
        )
        numbers = tuple(
            control.create_issue(
                REPO, title, as_user=human.login, body=body, labels=[OWNERSHIP_LABEL]
            )
            for title, body in ISSUES
        )
    except BaseException:
        server.stop()
        raise
    return DemoWorld(server, bot, human, ci, numbers)
