"""The stored record survives the database: every field, every result file, every enum."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from types import MappingProxyType

import pytest

from orchestrator.domain.agent_files.errors import HeadMismatch, ResultError, ResultErrorKind
from orchestrator.domain.agent_files.fix_summary import (
    FixEntry,
    FixStatus,
    FixSummary,
    FixTargetKind,
)
from orchestrator.domain.agent_files.questions import BlockedQuestion, PRDescription
from orchestrator.domain.agent_files.review import Finding, Review, Severity
from orchestrator.domain.phases import GateValue, Phase, RolloutMode, WaitingReason
from orchestrator.domain.snapshot import (
    AgentOutcome,
    OperatorRequest,
    OutcomeKind,
    StoredRecord,
    ThreadHistoryEntry,
)
from orchestrator.domain.workpad import (
    MergeState,
    Observation,
    PRRef,
    ReviewState,
    Validation,
    WaitingState,
    WorkpadRecord,
)
from orchestrator.store.codec import CodecError, decode_record, encode_record

NOW = datetime(2026, 3, 14, 12, 0, tzinfo=UTC)
HEAD = "a" * 40
FIXED = "b" * 40


def rich_record() -> StoredRecord:
    workpad = WorkpadRecord(
        phase=Phase.REVIEWING,
        rework_cycles=2,
        branch="orchestrator/issue-7",
        pr=PRRef(12, "https://github.example/acme/widgets/pull/12", HEAD),
        review=ReviewState(99, 1, HEAD, FIXED),
        merge=MergeState(NOW, HEAD, None, None, "head moved"),
        waiting=WaitingState(WaitingReason.CHECKS_PENDING, NOW),
        observation=Observation(
            NOW, "self-review", RolloutMode.MERGE, MappingProxyType({"checks": GateValue.PENDING})
        ),
        validation=Validation("- pytest: 3 passed"),
    )
    outcome = AgentOutcome(
        run_id="r1",
        phase=Phase.REVIEWING,
        kind=OutcomeKind.SUCCEEDED,
        started_at=NOW,
        finished_at=NOW + timedelta(seconds=3),
        head_before=HEAD,
        head_after=FIXED,
        review=Review(FIXED, (Finding("F1", Severity.P1, "t", "s", "w", "f", "a.py:1"),), "ok"),
        fix_summary=FixSummary(
            (FixEntry(FixTargetKind.FINDING, "F1", FixStatus.FIXED, "done", None, FIXED[:7]),)
        ),
        blocked=ResultError("blocked.md", 2, "reason", "bad", ResultErrorKind.INVALID_VALUE),
        pr_description=PRDescription("## Summary"),
    )
    return StoredRecord(
        phase=Phase.REVIEWING,
        phase_since=NOW,
        workpad=workpad,
        rework_cycles=2,
        waiting_reason=WaitingReason.CHECKS_PENDING,
        resume_phase=Phase.REWORK,
        retry_due_at=NOW + timedelta(seconds=10),
        attempt=1,
        last_outcome=outcome,
        operator_request=OperatorRequest(NOW, Phase.REWORK),
        thread_history=(ThreadHistoryEntry(1, "PRRT_1", "a.py", "fix it", FixStatus.FIXED),),
        completed_effects=frozenset({"acme/widgets#7:push_branch:" + HEAD}),
        mirrored_workpad=workpad,
    )


def test_a_rich_record_round_trips_through_json() -> None:
    record = rich_record()
    document = json.loads(json.dumps(encode_record(record)))
    assert decode_record(document) == record


def test_subclasses_of_result_errors_keep_their_type() -> None:
    mismatch = HeadMismatch(
        "review.md",
        1,
        "head",
        "other head",
        ResultErrorKind.HEAD_MISMATCH,
        expected=HEAD,
        found=FIXED,
    )
    record = rich_record()
    outcome = record.last_outcome
    assert outcome is not None
    changed = StoredRecord(
        phase=record.phase,
        phase_since=record.phase_since,
        last_outcome=AgentOutcome(
            "r2",
            Phase.REVIEWING,
            OutcomeKind.SUCCEEDED,
            NOW,
            NOW,
            review=mismatch,
            blocked=BlockedQuestion(WaitingReason.MISSING_AUTH, "Token?", "Token?"),
        ),
    )
    decoded = decode_record(json.loads(json.dumps(encode_record(changed))))
    assert decoded.last_outcome is not None
    assert isinstance(decoded.last_outcome.review, HeadMismatch)
    assert decoded == changed


@pytest.mark.parametrize(
    ("change", "where"),
    [
        (lambda d: d.update(phase="nowhere"), "record.phase"),
        (lambda d: d["workpad"].update(rework_cycles="two"), "record.workpad.rework_cycles"),
        (lambda d: d.update(phase_since=5), "record.phase_since"),
        (lambda d: d["last_outcome"].update(__type__="Nonsense"), "record.last_outcome"),
    ],
)
def test_a_damaged_document_names_the_field(change, where: str) -> None:  # type: ignore[no-untyped-def]
    document = json.loads(json.dumps(encode_record(rich_record())))
    change(document)
    with pytest.raises(CodecError) as excinfo:
        decode_record(document)
    assert str(excinfo.value).startswith(where)
