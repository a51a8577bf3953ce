"""The workpad record: render -> parse identity, missing blocks, and recovery of bad ones."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from types import MappingProxyType

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from orchestrator.domain.agent_files.errors import GITHUB_BODY_LIMIT
from orchestrator.domain.phases import GateValue, Phase, RolloutMode, WaitingReason
from orchestrator.domain.safe_yaml import YamlProblem, load_plain_yaml
from orchestrator.domain.workpad import (
    MergeState,
    Observation,
    PRRef,
    ReviewState,
    Validation,
    WaitingState,
    WorkpadRecord,
    WorkpadStatus,
    mirror_is_current,
    parse_workpad,
    render_workpad,
    workpad_digest,
)

NOW = datetime(2026, 3, 14, 12, 0, tzinfo=UTC)
MARKER = "## Orchestrator Workpad"

texts = st.text(max_size=80) | st.sampled_from(
    ["null", "true", "1", "~", "- a", "a: b", "'", "```"]
)
shas = st.none() | st.text(alphabet="0123456789abcdef", min_size=7, max_size=40)
moments = st.none() | st.datetimes(
    min_value=datetime(2000, 1, 1),
    max_value=datetime(2100, 1, 1),
    timezones=st.sampled_from([UTC, timezone(timedelta(hours=2))]),
)
gate_maps = st.dictionaries(
    st.sampled_from(
        ["ownership", "kill_switch", "checks", "human_approval", "mergeability", "head_match"]
    ),
    st.sampled_from(list(GateValue)),
    max_size=6,
).map(MappingProxyType)

records = st.builds(
    WorkpadRecord,
    owned=st.booleans(),
    phase=st.sampled_from(list(Phase)),
    rework_cycles=st.integers(min_value=0, max_value=50),
    branch=st.none() | texts,
    pr=st.none()
    | st.builds(PRRef, number=st.integers(min_value=1, max_value=10**6), url=texts, head_sha=shas),
    review=st.builds(
        ReviewState,
        comment_id=st.none() | st.integers(min_value=1, max_value=10**12),
        passes_completed=st.integers(min_value=0, max_value=20),
        last_reviewed_head_sha=shas,
        last_fixed_head_sha=shas,
    ),
    merge=st.builds(
        MergeState,
        last_attempted_at=moments,
        last_attempted_head_sha=shas,
        last_merge_commit_sha=shas,
        last_merged_head_sha=shas,
        last_failure_reason=st.none() | texts,
    ),
    waiting=st.builds(
        WaitingState, reason=st.none() | st.sampled_from(list(WaitingReason)), since=moments
    ),
    observation=st.builds(
        Observation,
        last_observed_at=moments,
        next_intended_action=st.none() | texts,
        rollout_mode=st.none() | st.sampled_from(list(RolloutMode)),
        gates=gate_maps,
    ),
    validation=st.builds(Validation, summary=st.none() | st.text(max_size=300)),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(records)
def test_render_then_parse_is_the_identity(record: WorkpadRecord) -> None:
    body = render_workpad(record, marker=MARKER)
    assert len(body) <= GITHUB_BODY_LIMIT
    parsed = parse_workpad(body, marker=MARKER, now=NOW)
    assert parsed.status is WorkpadStatus.PARSED, parsed.problem
    assert parsed.record == record


def test_missing_block_gives_a_fresh_record_in_the_default_phase() -> None:
    for body in (f"{MARKER}\n\nJust notes.", f"{MARKER}", "no heading at all"):
        parsed = parse_workpad(body, marker=MARKER, default_phase=Phase.REWORK, now=NOW)
        assert parsed.status is WorkpadStatus.MISSING
        assert parsed.record == WorkpadRecord(phase=Phase.REWORK)
        assert parsed.raw is None


def test_minimal_block_is_enough() -> None:
    body = f"{MARKER}\n```yaml\norchestrator:\n  schema_version: 1\n```\n"
    parsed = parse_workpad(body, marker=MARKER, now=NOW)
    assert parsed.status is WorkpadStatus.PARSED
    assert parsed.record == WorkpadRecord()


def test_later_yaml_blocks_and_human_text_are_ignored() -> None:
    record = WorkpadRecord(phase=Phase.WAITING_FOR_HUMAN, rework_cycles=2)
    body = render_workpad(record) + "\nNotes:\n\n```yaml\norchestrator:\n  phase: done\n```\n"
    parsed = parse_workpad(body, now=NOW)
    assert parsed.status is WorkpadStatus.PARSED
    assert parsed.record == record


def test_the_seed_shape_with_unquoted_timestamps_parses() -> None:
    body = (
        f"{MARKER}\n\n```yaml\norchestrator:\n  schema_version: 1\n  phase: waiting_for_checks\n"
        "  branch: orchestrator/issue-7\n  pr:\n    number: 123\n"
        "    url: https://github.com/acme/app/pull/123\n    head_sha: abcdef1\n"
        "  waiting:\n    reason: checks_pending\n    since: 2026-03-14T00:00:00Z\n```\n"
    )
    parsed = parse_workpad(body, now=NOW)
    assert parsed.status is WorkpadStatus.PARSED, parsed.problem
    assert parsed.record.pr == PRRef(123, "https://github.com/acme/app/pull/123", "abcdef1")
    assert parsed.record.waiting == WaitingState(
        WaitingReason.CHECKS_PENDING, datetime(2026, 3, 14, tzinfo=UTC)
    )


def _block(inner: str) -> str:
    return f"{MARKER}\n\n```yaml\n{inner}\n```\n"


LAUGHS = "\n".join(
    ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    + [f"{chr(98 + i)}: &{chr(98 + i)} [{','.join(['*' + chr(97 + i)] * 9)}]" for i in range(8)]
)

MALFORMED: dict[str, str] = {
    "two headings": f"{MARKER}\n```yaml\norchestrator:\n  schema_version: 1\n```\n{MARKER}\n",
    "unclosed fence": f"{MARKER}\n```yaml\norchestrator:\n  schema_version: 1\n",
    "block not right after heading": f"{MARKER}\nnotes first\n```yaml\norchestrator: {{}}\n```",
    "invalid yaml": _block("orchestrator:\n  phase: [unclosed"),
    "tab indentation": _block("orchestrator:\n\tschema_version: 1"),
    "not a mapping": _block("- 1\n- 2"),
    "scalar document": _block("just text"),
    "empty block": _block(""),
    "wrong root key": _block("symphony:\n  schema_version: 1"),
    "extra root key": _block("orchestrator:\n  schema_version: 1\nother: 1"),
    "root not mapping": _block("orchestrator: 5"),
    "missing schema version": _block("orchestrator:\n  phase: rework"),
    "unknown schema version": _block("orchestrator:\n  schema_version: 2"),
    "schema version as text": _block('orchestrator:\n  schema_version: "1"'),
    "unknown phase": _block("orchestrator:\n  schema_version: 1\n  phase: waiting"),
    "unknown field": _block("orchestrator:\n  schema_version: 1\n  phaze: rework"),
    "wrong type for owned": _block("orchestrator:\n  schema_version: 1\n  owned: yes"),
    "negative rework cycles": _block("orchestrator:\n  schema_version: 1\n  rework_cycles: -1"),
    "float rework cycles": _block("orchestrator:\n  schema_version: 1\n  rework_cycles: 1.5"),
    "pr without url": _block("orchestrator:\n  schema_version: 1\n  pr:\n    number: 3"),
    "pr as list": _block("orchestrator:\n  schema_version: 1\n  pr: [1, 2]"),
    "bad timestamp": _block("orchestrator:\n  schema_version: 1\n  waiting:\n    since: yesterday"),
    "unknown waiting reason": _block(
        "orchestrator:\n  schema_version: 1\n  waiting:\n    reason: bored"
    ),
    "bad gate value": _block(
        "orchestrator:\n  schema_version: 1\n  observation:\n    gates:\n      checks: green"
    ),
    "duplicate key": _block("orchestrator:\n  schema_version: 1\n  schema_version: 1"),
    "custom tag": _block("orchestrator: !!python/object/apply:os.system ['true']"),
    "local tag": _block("orchestrator:\n  schema_version: !int 1"),
    "anchor and alias": _block("orchestrator:\n  branch: &b x\n  schema_version: 1\n  x: *b"),
    "billion laughs": _block(LAUGHS),
    "two documents": _block("orchestrator:\n  schema_version: 1\n---\norchestrator: {}"),
    "deep nesting": _block("orchestrator: " + "[" * 50 + "]" * 50),
    "oversized block": _block("orchestrator:\n  schema_version: 1\n" + "#" * 40_000),
    "oversized comment": f"{MARKER}\n" + "x" * (GITHUB_BODY_LIMIT + 1),
    "complex key": _block("? [a]\n: 1"),
}


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_malformed_bodies_are_recovered_with_raw_text_kept(name: str) -> None:
    body = MALFORMED[name]
    parsed = parse_workpad(body, marker=MARKER, now=NOW)
    assert parsed.status is WorkpadStatus.RECOVERED, name
    assert parsed.raw == body
    assert parsed.problem
    assert parsed.record.phase is Phase.BLOCKED
    assert parsed.record.waiting == WaitingState(WaitingReason.METADATA_RECOVERY_REQUIRED, NOW)
    assert parsed.record.schema_version == 1


def test_corpus_is_large_enough() -> None:
    assert len(MALFORMED) >= 25


def test_recovery_comment_keeps_raw_text_and_parses_as_the_fresh_record() -> None:
    body = MALFORMED["invalid yaml"] + "\n~~~~ tildes inside ~~~~~\n"
    parsed = parse_workpad(body, now=NOW)
    assert parsed.raw is not None
    rewritten = render_workpad(
        parsed.record, recovery_raw=parsed.raw, recovery_problem=parsed.problem
    )
    assert "### Recovery note" in rewritten
    assert parsed.raw in rewritten
    again = parse_workpad(rewritten, now=NOW)
    assert again.status is WorkpadStatus.PARSED, again.problem
    assert again.record == parsed.record


def test_recovery_of_an_oversized_comment_stays_under_the_limit() -> None:
    raw = MALFORMED["oversized comment"]
    parsed = parse_workpad(raw, now=NOW)
    rewritten = render_workpad(
        parsed.record, recovery_raw=parsed.raw, recovery_problem=parsed.problem
    )
    assert len(rewritten) <= GITHUB_BODY_LIMIT
    assert "characters cut" in rewritten
    assert parse_workpad(rewritten, now=NOW).status is WorkpadStatus.PARSED


def test_a_record_with_huge_text_is_shortened_to_fit() -> None:
    record = WorkpadRecord(
        validation=Validation(summary="v" * 100_000),
        merge=MergeState(last_failure_reason="r" * 70_000),
    )
    body = render_workpad(record)
    assert len(body) <= GITHUB_BODY_LIMIT
    parsed = parse_workpad(body, now=NOW)
    assert parsed.status is WorkpadStatus.PARSED
    assert parsed.record.phase is record.phase


def test_billion_laughs_is_refused_before_expansion() -> None:
    result = load_plain_yaml(LAUGHS)
    assert isinstance(result, YamlProblem)
    assert "anchors" in result.message


def test_plain_scalars_resolve_to_plain_types_only() -> None:
    loaded = load_plain_yaml("a: 1\nb: true\nc: ~\nd: 2026-01-01\ne: 0x10\nf: '1'\ng: 1.5")
    assert loaded == {
        "a": 1,
        "b": True,
        "c": None,
        "d": "2026-01-01",
        "e": "0x10",
        "f": "1",
        "g": "1.5",
    }


def test_mirror_check_ignores_only_the_observation_time() -> None:
    gates = MappingProxyType({"checks": GateValue.PENDING})
    record = WorkpadRecord(phase=Phase.WAITING_FOR_CHECKS)
    seen = Observation(NOW, "wait", RolloutMode.MERGE, gates)
    mirrored = WorkpadRecord(
        phase=Phase.WAITING_FOR_CHECKS,
        observation=Observation(
            NOW - timedelta(hours=1), "wait", RolloutMode.MERGE, {"checks": GateValue.PENDING}
        ),
    )
    assert mirror_is_current(record, seen, mirrored)
    changed = Observation(NOW, "merge", RolloutMode.MERGE, gates)
    assert not mirror_is_current(record, changed, mirrored)
    assert not mirror_is_current(WorkpadRecord(phase=Phase.REWORK), seen, mirrored)


def test_digest_ignores_the_observation_time() -> None:
    first = render_workpad(WorkpadRecord(observation=Observation(NOW)))
    later = render_workpad(WorkpadRecord(observation=Observation(NOW + timedelta(minutes=1))))
    other = render_workpad(WorkpadRecord(phase=Phase.REWORK, observation=Observation(NOW)))
    assert workpad_digest(first) == workpad_digest(later) != workpad_digest(other)


def test_summary_shows_state_next_action_and_waiting_reason() -> None:
    record = WorkpadRecord(
        phase=Phase.WAITING_FOR_CHECKS,
        pr=PRRef(5, "https://x/5", "a" * 40),
        waiting=WaitingState(WaitingReason.CHECKS_PENDING, NOW),
        observation=Observation(NOW, "wait for checks", RolloutMode.MUTATE),
    )
    body = render_workpad(record)
    assert "**Phase:** `waiting_for_checks` · **Rollout:** `mutate`" in body
    assert "**Waiting:** `checks_pending` since 2026-03-14T12:00:00Z" in body
    assert "**Next:** wait for checks" in body
    assert "**Pull request:** #5 at `aaaaaaaaaaaa`" in body
