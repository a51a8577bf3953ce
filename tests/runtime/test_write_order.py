"""Pure parts of the runtime: the order of writes, key parsing."""

from __future__ import annotations

import pytest

from orchestrator.daemon.recovery import ref_of_key
from orchestrator.domain.actions import Transition, side_effect
from orchestrator.domain.phases import Phase
from orchestrator.domain.side_effects import CloseIssue, UpsertWorkpad
from orchestrator.domain.snapshot import IssueRef
from orchestrator.tick.execute import workpad_before_close

REF = IssueRef("acme/app", 7)


def test_the_workpad_is_rewritten_before_the_issue_is_closed() -> None:
    other = IssueRef("acme/app", 8)
    close = side_effect(REF, "merged:x", CloseIssue(pr_number=10, reason="completed"))
    workpad = side_effect(REF, "d1", UpsertWorkpad(marker="#", heading="#", body="#"))
    other_workpad = side_effect(other, "d2", UpsertWorkpad(marker="#", heading="#", body="#"))
    move = Transition(other, Phase.MERGING, Phase.DONE, "merge confirmed")
    ordered = workpad_before_close([close, move, other_workpad, workpad])
    assert ordered == [workpad, close, move, other_workpad]


def test_idempotency_keys_name_their_issue() -> None:
    assert ref_of_key("acme/app#12:merge_pr:" + "a" * 40) == IssueRef("acme/app", 12)
    with pytest.raises(ValueError, match="not an idempotency key"):
        ref_of_key("nonsense")
