"""Bad policies, one row each: the exact error message and where it points.

Each row is a whole WORKFLOW.md (or an override) that must be refused with one
error naming the file, line, column and key path, with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from tests.workflow.conftest import ENV, check

HEAD = "---\ntracker:\n  repo: acme/widgets\n"


@dataclass(frozen=True)
class Bad:
    """One bad input and the single error it must produce."""

    name: str
    text: str
    error: str
    env: dict[str, str] = field(default_factory=dict)
    flags: dict[str, object] = field(default_factory=dict)
    without_token: bool = False


def policy(body: str, prompt: str = "") -> str:
    """A policy with a valid tracker section, ``body`` after it, then ``prompt``."""
    return HEAD + body + "---\n" + prompt


_BOMB = (
    "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
    "b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
    "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\n"
    "d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
    "e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\n"
)

BAD: list[Bad] = [
    # --- the file as a whole
    Bad(
        "empty file",
        "",
        "WORKFLOW.md:1:1: the file is empty; a policy needs at least a tracker section",
    ),
    Bad(
        "only blank lines",
        "\n  \n\r\n",
        "WORKFLOW.md:1:1: the file is empty; a policy needs at least a tracker section",
    ),
    Bad(
        "front matter never closed",
        "---\ntracker:\n  repo: acme/widgets\n",
        "WORKFLOW.md:1:1: the front matter opened with '---' on line 1 is never closed "
        "by a '---' line",
    ),
    Bad(
        "front matter is a list",
        "---\n- tracker\n- agent\n---\n",
        "WORKFLOW.md:2:1: the front matter must be a mapping of sections (tracker:, agent:, ...), "
        "got a list",
    ),
    Bad(
        "front matter is a scalar",
        "---\njust some text\n---\n",
        "WORKFLOW.md:2:1: the front matter must be a mapping of sections (tracker:, agent:, ...), "
        "got the value 'just some text'",
    ),
    Bad(
        "no front matter means no tracker repo",
        "Implement {{ issue.title }}\n",
        "WORKFLOW.md: tracker.repo: required for tracker kind github (owner/name), unless "
        "tracker.repos or tracker.repo_opt_in_label names the repositories",
    ),
    Bad(
        "empty front matter means no tracker repo",
        "---\n---\nprompt\n",
        "WORKFLOW.md: tracker.repo: required for tracker kind github (owner/name), unless "
        "tracker.repos or tracker.repo_opt_in_label names the repositories",
    ),
    # --- YAML syntax
    Bad(
        "tab in indentation",
        "---\ntracker:\n  repo: acme/widgets\nagent:\n\tmax_turns: 3\n---\n",
        "WORKFLOW.md:5:1: tab character where YAML expects indentation or a value; "
        "indent with spaces",
    ),
    Bad(
        "tab before a value",
        policy("agent:\n  max_turns:\t3\n"),
        "WORKFLOW.md:5:13: tab character where YAML expects indentation or a value; "
        "indent with spaces",
    ),
    Bad(
        "duplicate key",
        policy("agent:\n  max_turns: 3\n  max_turns: 4\n"),
        "WORKFLOW.md:6:3: agent.max_turns: duplicate key (first defined at line 5, column 3)",
    ),
    Bad(
        "duplicate section",
        policy("agent:\n  max_turns: 3\ntracker:\n  kind: github\n"),
        "WORKFLOW.md:6:1: tracker: duplicate key (first defined at line 2, column 1)",
    ),
    Bad(
        "unclosed flow list",
        policy("pr:\n  required_labels: [a, b\nreview:\n  enabled: true\n"),
        "WORKFLOW.md:6:7: invalid YAML: expected ',' or ']', but got ':' "
        "(while parsing a flow sequence)",
    ),
    Bad(
        "value with a colon",
        policy("pr:\n  base_branch: main: dev\n"),
        "WORKFLOW.md:5:20: invalid YAML: mapping values are not allowed here",
    ),
    Bad(
        "CRLF line endings keep line numbers",
        policy("agent:\n  max_turns: ten\n").replace("\n", "\r\n"),
        "WORKFLOW.md:5:3: agent.max_turns: expected an integer, got 'ten'",
    ),
    Bad(
        "custom tag",
        policy("tracker2: !env HOME\n"),
        "WORKFLOW.md:4:11: tracker2: unsupported YAML tag !env",
    ),
    Bad(
        "merge key",
        policy("defaults: &d {max_turns: 3}\nagent:\n  <<: *d\n"),
        "WORKFLOW.md:6:3: agent: merge keys (<<) are not supported",
    ),
    Bad(
        "integer key",
        policy("agent:\n  1: x\n"),
        "WORKFLOW.md:5:3: agent: keys must be strings, got 1",
    ),
    Bad(
        "alias bomb",
        policy(_BOMB),
        "WORKFLOW.md:8:1: e: front matter too large or too deeply nested (more than 20000 "
        "values or 32 levels, aliases included)",
    ),
    # --- structure
    Bad(
        "unknown section with a suggestion",
        policy("agnet:\n  max_turns: 3\n"),
        "WORKFLOW.md:4:1: agnet: unknown section; did you mean 'agent'?",
    ),
    Bad(
        "unknown section without a suggestion",
        policy("telemetry: {}\n"),
        "WORKFLOW.md:4:1: telemetry: unknown section",
    ),
    Bad(
        "unknown key with a suggestion",
        policy("agent:\n  max_turn: 3\n"),
        "WORKFLOW.md:5:3: agent.max_turn: unknown key; did you mean 'max_turns'?",
    ),
    Bad(
        "unknown nested key",
        policy("orchestration:\n  ownership:\n    requried_label: mine\n"),
        "WORKFLOW.md:6:5: orchestration.ownership.requried_label: unknown key; "
        "did you mean 'required_label'?",
    ),
    Bad(
        "section is not a mapping",
        policy("agent: 5\n"),
        "WORKFLOW.md:4:1: agent: expected a mapping of settings, got 5",
    ),
    Bad(
        "nested group is not a mapping",
        policy("orchestration:\n  ownership: mine\n"),
        "WORKFLOW.md:5:3: orchestration.ownership: expected a mapping of settings, got 'mine'",
    ),
    # --- types
    Bad(
        "integer given as a word",
        policy("agent:\n  max_turns: ten\n"),
        "WORKFLOW.md:5:3: agent.max_turns: expected an integer, got 'ten'",
    ),
    Bad(
        "integer given as a boolean",
        policy("polling:\n  interval_ms: true\n"),
        "WORKFLOW.md:5:3: polling.interval_ms: expected an integer, got true",
    ),
    Bad(
        "integer given as a float",
        policy("hooks:\n  timeout_ms: 1.5\n"),
        "WORKFLOW.md:5:3: hooks.timeout_ms: expected an integer, got 1.5",
    ),
    Bad(
        "boolean given as yes",
        policy("pr:\n  draft: yes\n"),
        "WORKFLOW.md:5:3: pr.draft: expected true or false, got 'yes'",
    ),
    Bad(
        "string given as a number",
        policy("pr:\n  base_branch: 5\n"),
        "WORKFLOW.md:5:3: pr.base_branch: expected a string, got 5",
    ),
    Bad(
        "list given as a word",
        policy("pr:\n  required_labels: bug\n"),
        "WORKFLOW.md:5:3: pr.required_labels: expected a list, got 'bug'",
    ),
    Bad(
        "list item of the wrong type",
        policy("merge:\n  required_checks:\n    - tests\n    - [lint]\n"),
        "WORKFLOW.md:7:7: merge.required_checks[1]: expected a string, got a list",
    ),
    Bad(
        "mapping given as a list",
        policy("agent:\n  env: [A=1]\n"),
        "WORKFLOW.md:5:3: agent.env: expected a mapping, got a list",
    ),
    Bad(
        "null for a required value",
        policy("agent:\n  max_turns:\n"),
        "WORKFLOW.md:5:3: agent.max_turns: expected an integer, got null",
    ),
    Bad(
        "empty string",
        policy("pr:\n  base_branch: ''\n"),
        "WORKFLOW.md:5:3: pr.base_branch: must not be empty",
    ),
    Bad(
        "item listed twice",
        policy("pr:\n  required_labels: [bug, bug]\n"),
        "WORKFLOW.md:5:26: pr.required_labels[1]: bug is listed twice",
    ),
    # --- enums
    Bad(
        "rollout mode misspelt",
        policy("rollout:\n  mode: merg\n"),
        "WORKFLOW.md:5:3: rollout.mode: expected one of observe, mutate, merge, got 'merg'; "
        "did you mean 'merge'?",
    ),
    Bad(
        "unknown agent preset",
        policy("agent:\n  preset: gpt\n"),
        "WORKFLOW.md:5:3: agent.preset: expected one of codex, codex-app-server, claude, pi, "
        "command, got 'gpt'",
    ),
    Bad(
        "passive phase that does not exist",
        policy("orchestration:\n  passive_phases: [waiting_for_checks, waiting]\n"),
        "WORKFLOW.md:5:40: orchestration.passive_phases[1]: expected one of implementing, "
        "reviewing, waiting_for_checks, waiting_for_human, rework, blocked, ready_to_merge, "
        "merging, done, got 'waiting'",
    ),
    Bad(
        "default phase that does not exist",
        policy("orchestration:\n  default_phase: implement\n"),
        "WORKFLOW.md:5:3: orchestration.default_phase: expected one of implementing, reviewing, "
        "waiting_for_checks, waiting_for_human, rework, blocked, ready_to_merge, merging, done, "
        "got 'implement'; did you mean 'implementing'?",
    ),
    Bad(
        "review output format",
        policy("review:\n  output_format: markdown\n"),
        "WORKFLOW.md:5:3: review.output_format: expected one of structured_markdown_v1, "
        "got 'markdown'",
    ),
    Bad(
        "merge method",
        policy("merge:\n  method: fast-forward\n"),
        "WORKFLOW.md:5:3: merge.method: expected one of merge, squash, rebase, got 'fast-forward'",
    ),
    Bad(
        "finding severity",
        policy("review:\n  fix_consideration_severities: [P0, P5]\n"),
        "WORKFLOW.md:5:38: review.fix_consideration_severities[1]: expected one of P0, P1, P2, "
        "P3, got 'P5'",
    ),
    Bad(
        "closed PR policy",
        policy("pr:\n  closed_pr_policy: delete\n"),
        "WORKFLOW.md:5:3: pr.closed_pr_policy: expected one of new_branch, reopen, stop, "
        "got 'delete'",
    ),
    # --- ranges
    Bad(
        "zero turns",
        policy("agent:\n  max_turns: 0\n"),
        "WORKFLOW.md:5:3: agent.max_turns: must be between 1 and 1000, got 0",
    ),
    Bad(
        "port out of range",
        policy("server:\n  port: 70000\n"),
        "WORKFLOW.md:5:3: server.port: must be between 0 and 65535, got 70000",
    ),
    Bad(
        "a connection cap too small to serve a probe beside a browser",
        policy("server:\n  max_connections: 2\n"),
        "WORKFLOW.md:5:3: server.max_connections: must be between 4 and 1000000, got 2",
    ),
    Bad(
        "a request-head deadline of no time",
        policy("server:\n  header_timeout_ms: 0\n"),
        "WORKFLOW.md:5:3: server.header_timeout_ms: must be between 100 and 600000, got 0",
    ),
    Bad(
        "negative phase limit",
        policy("agent:\n  max_concurrent_agents_by_phase:\n    rework: -1\n"),
        "WORKFLOW.md:6:5: agent.max_concurrent_agents_by_phase.rework: must be between 0 and "
        "1000, got -1",
    ),
    Bad(
        "polling too fast",
        policy("polling:\n  interval_ms: 10\n"),
        "WORKFLOW.md:5:3: polling.interval_ms: must be between 100 and 86400000, got 10",
    ),
    # --- $VAR references
    Bad(
        "reference to an unset variable",
        policy("server:\n  token: $DASHBOARD_TOKEN\n"),
        "WORKFLOW.md:5:3: server.token: environment variable DASHBOARD_TOKEN is not set",
    ),
    Bad(
        "reference to an empty variable",
        policy("server:\n  token: ${DASHBOARD_TOKEN}\n"),
        "WORKFLOW.md:5:3: server.token: environment variable DASHBOARD_TOKEN is set but empty",
        env={"DASHBOARD_TOKEN": ""},
    ),
    Bad(
        "reference inside a path",
        policy("workspace:\n  root: ${STATE}/workspaces\n"),
        "WORKFLOW.md:5:3: workspace.root: environment variable STATE is not set",
    ),
    Bad(
        "reference inside a mapping",
        policy("agent:\n  env:\n    OPENAI_API_KEY: $OPENAI_KEY\n"),
        "WORKFLOW.md:6:5: agent.env.OPENAI_API_KEY: environment variable OPENAI_KEY is not set",
    ),
    Bad(
        "default token reference unset",
        policy("agent:\n  max_turns: 3\n"),
        "WORKFLOW.md:2:1: tracker.token: environment variable GITHUB_TOKEN is not set "
        "(the default)",
        without_token=True,
    ),
    # --- semantics
    Bad(
        "repository not owner/name",
        "---\ntracker:\n  repo: widgets\n---\n",
        "WORKFLOW.md:3:3: tracker.repo: expected owner/name, got 'widgets'",
    ),
    Bad(
        "endpoint is not a URL",
        policy("").replace("  repo: acme/widgets\n", "  repo: acme/widgets\n  endpoint: api\n"),
        "WORKFLOW.md:4:3: tracker.endpoint: expected an http:// or https:// URL, got 'api'",
    ),
    Bad(
        "state label for an unknown state",
        policy("").replace(
            "  repo: acme/widgets\n",
            "  repo: acme/widgets\n  state_labels:\n    Todo: state:todo\n"
            "    Merging: state:merging\n    Doing: state:doing\n",
        ),
        "WORKFLOW.md:7:5: tracker.state_labels.Doing: 'Doing' is not in tracker.active_states or "
        "tracker.terminal_states",
    ),
    Bad(
        "a state both active and terminal",
        policy("").replace(
            "  repo: acme/widgets\n",
            "  repo: acme/widgets\n  terminal_states: [Done, Rework]\n",
        ),
        "WORKFLOW.md:4:27: tracker.terminal_states[1]: 'Rework' is also an active state",
    ),
    Bad(
        "one label for two roles",
        policy("rollout:\n  kill_switch_label: Orchestrator\n"),
        "WORKFLOW.md:5:3: rollout.kill_switch_label: label 'Orchestrator' is also used by "
        "orchestration.ownership.required_label",
    ),
    Bad(
        "default phase is passive",
        policy("orchestration:\n  default_phase: waiting_for_checks\n"),
        "WORKFLOW.md:5:3: orchestration.default_phase: must be an agent phase (implementing, "
        "reviewing, rework), got 'waiting_for_checks'",
    ),
    Bad(
        "passive phases without blocked",
        policy("orchestration:\n  passive_phases: [waiting_for_checks, waiting_for_human]\n"),
        "WORKFLOW.md:5:3: orchestration.passive_phases: must contain blocked (they wait on the "
        "outside world)",
    ),
    Bad(
        "an agent phase made passive",
        policy(
            "orchestration:\n  passive_phases: [waiting_for_checks, waiting_for_human, blocked, "
            "rework]\n"
        ),
        "WORKFLOW.md:5:68: orchestration.passive_phases[3]: 'rework' cannot be passive: "
        "it must run when due",
    ),
    Bad(
        "workpad marker is not a heading",
        policy("orchestration:\n  ownership:\n    required_workpad_marker: Workpad\n"),
        "WORKFLOW.md:6:5: orchestration.ownership.required_workpad_marker: must be a Markdown "
        "heading such as '## Orchestrator Workpad', got 'Workpad'",
    ),
    Bad(
        "command preset without a command",
        policy("agent:\n  preset: command\n"),
        "WORKFLOW.md:4:1: agent.command: required when agent.preset is command",
    ),
    Bad(
        "GitHub token given to the agent",
        policy("agent:\n  env:\n    GH_TOKEN: $GITHUB_TOKEN\n"),
        "WORKFLOW.md:6:5: agent.env.GH_TOKEN: a GitHub credential may never be given to the agent",
    ),
    Bad(
        "tracker token given to the agent under another name",
        policy("agent:\n  env:\n    HELPER: $GITHUB_TOKEN\n"),
        "WORKFLOW.md:6:5: agent.env.HELPER: is the tracker token; the agent must never hold "
        "GitHub credentials",
    ),
    Bad(
        "phase limit on a passive phase",
        policy("agent:\n  max_concurrent_agents_by_phase:\n    blocked: 1\n"),
        "WORKFLOW.md:6:5: agent.max_concurrent_agents_by_phase.blocked: 'blocked' is not an "
        "active phase; limits apply to phases that run work",
    ),
    Bad(
        "first event timeout longer than the turn",
        policy("agent:\n  first_event_timeout_ms: 600000\n  turn_timeout_ms: 60000\n"),
        "WORKFLOW.md:5:3: agent.first_event_timeout_ms: must be shorter than "
        "agent.turn_timeout_ms (60000)",
    ),
    Bad(
        "upsert without a marker",
        policy("pr:\n  review_comment_marker: null\n"),
        "WORKFLOW.md:5:3: pr.review_comment_marker: pr.review_comment_mode upsert needs a marker "
        "to find its comment again",
    ),
    Bad(
        "branch prefix with a space",
        policy("pr:\n  branch_prefix: 'bot work/'\n"),
        "WORKFLOW.md:5:3: pr.branch_prefix: 'bot work/' does not make valid git branch names "
        "(no spaces, '..', '~', '^', ':', '?', '*', '[', '\\', leading '-' or '.')",
    ),
    Bad(
        "head match turned off",
        policy("merge:\n  require_head_match: false\n"),
        "WORKFLOW.md:5:3: merge.require_head_match: must stay true: merging without the expected "
        "head SHA could merge a commit nobody reviewed",
    ),
    Bad(
        "human approval without approval states",
        policy("merge:\n  require_human_approval: true\n  approval_states: []\n"),
        "WORKFLOW.md:6:3: merge.approval_states: merge.require_human_approval with "
        "approval_source label needs at least one approval state (or merge.approval_label)",
    ),
    Bad(
        "approval state that is not a tracker state",
        policy("merge:\n  approval_states: [Merge]\n"),
        "WORKFLOW.md:5:21: merge.approval_states[0]: 'Merge' is not in tracker.active_states",
    ),
    Bad(
        "completion state that is not terminal",
        policy("merge:\n  completion_state: Merged\n"),
        "WORKFLOW.md:5:3: merge.completion_state: 'Merged' is not in tracker.terminal_states",
    ),
    Bad(
        "database URL of an unsupported kind",
        policy("database:\n  url: mysql://db/orchestrator\n"),
        "WORKFLOW.md:5:3: database.url: expected a sqlite:/// or postgresql+psycopg:// URL, "
        "got scheme 'mysql'",
    ),
    # --- the prompt template
    Bad(
        "undefined prompt variable",
        policy("", "Fix {{ ticket.title }} now.\n"),
        "WORKFLOW.md:5:8: prompt: unknown variable 'ticket' (variables: issue, phase, attempt, "
        "policy, context, workspace)",
    ),
    Bad(
        "misspelt prompt variable",
        policy("", "Fix this.\n{{ isue.title }}\n"),
        "WORKFLOW.md:6:4: prompt: unknown variable 'isue'; did you mean 'issue'? (variables: "
        "issue, phase, attempt, policy, context, workspace)",
    ),
    Bad(
        "unknown field of the issue",
        policy("", "Fix {{ issue.titel }}.\n"),
        "WORKFLOW.md:5:8: prompt: unknown field 'titel' of issue; did you mean 'title'?",
    ),
    Bad(
        "unknown policy key in the prompt",
        policy("", "Target {{ policy.pr.base }}.\n"),
        "WORKFLOW.md:5:11: prompt: unknown field 'base' of policy.pr; did you mean 'base_branch'?",
    ),
    Bad(
        "secret in the prompt",
        policy("", "Token {{ policy.tracker.token }}.\n"),
        "WORKFLOW.md:5:10: prompt: policy.tracker.token is not available to the prompt "
        "(it is secret)",
    ),
    Bad(
        "unknown filter",
        policy("", "Title: {{ issue.title | shout }}\n"),
        "WORKFLOW.md:5:25: prompt: unknown filter 'shout'",
    ),
    Bad(
        "misspelt filter",
        policy("", "Title: {{ issue.title | upcas }}\n"),
        "WORKFLOW.md:5:25: prompt: unknown filter 'upcas'; did you mean 'upcase'?",
    ),
    Bad(
        "unclosed tag",
        policy("", "Intro\n{% if phase == 'rework' %}\nFix the threads.\n"),
        "WORKFLOW.md:5: prompt: expected tag endif, found end of expression",
    ),
    Bad(
        "broken output statement",
        policy("", "Title: {{ issue.title | }}\n"),
        "WORKFLOW.md:5: prompt: expected word, found end of expression",
    ),
    Bad(
        "include tag",
        policy("", "{% include 'other' %}\n"),
        "WORKFLOW.md:5:4: prompt: the include tag is not available: a prompt is one "
        "self-contained file",
    ),
    Bad(
        "prompt empty for a phase",
        policy("", "{% if phase == 'implementing' %}Implement it.{% endif %}\n"),
        "WORKFLOW.md:5: prompt: renders an empty prompt for phases reviewing, rework",
    ),
    Bad(
        "prompt that fails when rendered",
        policy("", "Issue {{ issue.number | divided_by: 0 }}\n"),
        "WORKFLOW.md:5:25: prompt: divided_by: can't divide by 0 (rendering phase implementing "
        "for a sample issue)",
    ),
    # --- overrides
    Bad(
        "environment override of the wrong type",
        policy(""),
        "env ORCHESTRATOR_AGENT__MAX_TURNS: agent.max_turns: expected an integer, got 'ten'",
        env={"ORCHESTRATOR_AGENT__MAX_TURNS": "ten"},
    ),
    Bad(
        "environment override of an unknown setting",
        policy(""),
        "env ORCHESTRATOR_AGENT__MAX_TURN: agent.max_turn: unknown setting; "
        "did you mean 'agent.max_turns'?",
        env={"ORCHESTRATOR_AGENT__MAX_TURN": "3"},
    ),
    Bad(
        "environment override that is not a mode",
        policy(""),
        "env ORCHESTRATOR_ROLLOUT__MODE: rollout.mode: expected one of observe, mutate, merge, "
        "got 'auto'",
        env={"ORCHESTRATOR_ROLLOUT__MODE": "auto"},
    ),
    Bad(
        "flag for an unknown setting",
        policy(""),
        "command line: agnt.max_turns: unknown setting; did you mean 'agent.max_turns'?",
        flags={"agnt.max_turns": "3"},
    ),
    Bad(
        "flag with a bad value",
        policy(""),
        "command line: merge.require_head_match: must stay true: merging without the expected "
        "head SHA could merge a commit nobody reviewed",
        flags={"merge.require_head_match": "false"},
    ),
]


def test_the_table_is_large_enough() -> None:
    assert len(BAD) >= 40
    assert len({row.name for row in BAD}) == len(BAD)


@pytest.mark.parametrize("row", BAD, ids=[row.name for row in BAD])
def test_bad_input_gives_the_exact_located_error(row: Bad) -> None:
    env = {} if row.without_token else dict(ENV)
    env.update(row.env)
    result = check(row.text, env=env, flags=row.flags)
    assert result.workflow is None
    assert [str(error) for error in result.errors] == [row.error]
