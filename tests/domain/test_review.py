"""Review logic: findings that need a fix pass, fix-summary evaluation and bounce detection."""

from __future__ import annotations

from orchestrator.domain.agent_files.fix_summary import (
    FixEntry,
    FixStatus,
    FixSummary,
    FixTargetKind,
)
from orchestrator.domain.agent_files.review import Review, Severity
from orchestrator.domain.policy import ReviewPolicy
from orchestrator.domain.review_decisions import (
    FixProof,
    bounce_counts,
    bouncing_threads,
    evaluate_fix_summary,
    findings_needing_fix,
    needs_fix_pass,
    normalise_body,
    passes_in_lineage,
    prove_fix,
    render_review_comment,
    similar,
    unaddressed_findings,
    unproven_fixes,
)
from orchestrator.domain.snapshot import Actor, ThreadHistoryEntry, TurnCommit
from orchestrator.domain.workpad import ReviewState
from tests.domain.builders import (
    HEAD_A,
    HEAD_B,
    HEAD_C,
    HUMAN,
    REVIEW_BOT,
    fix_summary,
    make_review,
    thread,
)

POLICY = ReviewPolicy(max_passes=2, bounce_threshold=2)


def test_only_configured_severities_need_a_fix() -> None:
    review = make_review(HEAD_A, "P0", "P2", "P1", "P3")
    assert [f.severity for f in findings_needing_fix(review, POLICY)] == [Severity.P0, Severity.P1]
    strict = ReviewPolicy(fix_consideration_severities=frozenset(Severity))
    assert len(findings_needing_fix(review, strict)) == 4


def test_lineage_continues_only_through_our_own_heads() -> None:
    state = ReviewState(
        passes_completed=2, last_reviewed_head_sha=HEAD_A, last_fixed_head_sha=HEAD_B
    )
    assert passes_in_lineage(state, HEAD_A) == 2
    assert passes_in_lineage(state, HEAD_B) == 2
    assert passes_in_lineage(state, HEAD_C) == 0
    assert passes_in_lineage(state, None) == 0


def test_fix_pass_needed_until_findings_are_accounted_for_or_passes_run_out() -> None:
    review = make_review(HEAD_A, "P1")
    one_pass = ReviewState(passes_completed=1, last_reviewed_head_sha=HEAD_A)
    assert needs_fix_pass(review, None, one_pass, POLICY)
    covered = FixSummary((FixEntry(FixTargetKind.FINDING, "F1", FixStatus.SKIPPED, "later"),))
    assert unaddressed_findings(review, covered, POLICY) == ()
    assert not needs_fix_pass(review, covered, one_pass, POLICY)
    spent = ReviewState(passes_completed=2, last_reviewed_head_sha=HEAD_A)
    assert not needs_fix_pass(review, None, spent, POLICY)
    assert not needs_fix_pass(make_review(HEAD_A, "P3"), None, one_pass, POLICY)


def test_fix_summary_evaluation_replies_and_resolves_by_status() -> None:
    threads = [thread("T1"), thread("T2"), thread("T3"), thread("T4"), thread("T5")]
    summary = fix_summary(
        ("T1", FixStatus.FIXED),
        ("T2", FixStatus.SKIPPED),
        ("T3", FixStatus.DISMISSED),
        ("T4", FixStatus.UNCERTAIN),
    )
    evaluation = evaluate_fix_summary(summary, threads, committed=True)
    by_id = {r.thread_id: r for r in evaluation.replies}
    assert by_id["T1"].resolve and by_id["T1"].body.startswith("Addressed")
    assert by_id["T2"].resolve and by_id["T2"].body.startswith("Skipped")
    assert by_id["T3"].resolve and "Evidence: because" in by_id["T3"].body
    assert not by_id["T4"].resolve and by_id["T4"].body.startswith("Needs a human decision")
    assert evaluation.unaddressed == ("T5",)
    assert evaluation.escalated == ("T4",)


def test_fixed_without_any_commit_is_left_for_a_human() -> None:
    evaluation = evaluate_fix_summary(
        fix_summary(("T1", FixStatus.FIXED)), [thread("T1")], committed=False
    )
    assert not evaluation.replies[0].resolve
    assert "no commit" in evaluation.replies[0].body
    assert evaluation.escalated == ("T1",)


def test_resolved_threads_are_skipped() -> None:
    evaluation = evaluate_fix_summary(
        fix_summary(("T1", FixStatus.FIXED)), [thread("T1", is_resolved=True)], committed=True
    )
    assert evaluation.replies == ()


def test_body_normalisation_ignores_case_punctuation_and_spacing() -> None:
    assert normalise_body("Why is `x` *Optional*?\n\n") == normalise_body("why is x optional")


def _history(*iterations: tuple[int, FixStatus | None]) -> tuple[ThreadHistoryEntry, ...]:
    return tuple(
        ThreadHistoryEntry(
            iteration=i,
            thread_id=f"old-{i}",
            path="app/core.py",
            body="Please handle the empty list.",
            status=status,
            author=REVIEW_BOT.login,
            author_is_bot=True,
        )
        for i, status in iterations
    )


def test_a_fixed_thread_coming_back_counts_as_a_bounce() -> None:
    current = [thread("T9", author=REVIEW_BOT, body="please handle the EMPTY list!")]
    assert bounce_counts(_history((1, FixStatus.FIXED)), current) == {"T9": 1}
    assert bouncing_threads(_history((1, FixStatus.FIXED)), current, POLICY) == frozenset()
    twice = _history((1, FixStatus.FIXED), (2, FixStatus.FIXED))
    assert bouncing_threads(twice, current, POLICY) == {"T9"}


def test_a_finished_turn_does_not_count_its_own_fix_as_a_bounce() -> None:
    # Iteration 2 is the turn being judged: its answer is already in the history.
    history = _history((1, FixStatus.FIXED), (2, FixStatus.FIXED))
    current = [thread("T9", author=REVIEW_BOT)]
    assert bounce_counts(history, current, before_iteration=2) == {"T9": 1}
    assert bounce_counts(history, current, before_iteration=1) == {}


def test_non_fixed_statuses_people_other_bots_and_resolved_threads_do_not_bounce() -> None:
    history = _history((1, FixStatus.DISMISSED), (2, FixStatus.UNCERTAIN), (3, None))
    assert bounce_counts(history, [thread("T9", author=REVIEW_BOT)]) == {}
    fixed = _history((1, FixStatus.FIXED), (2, FixStatus.FIXED))
    assert bounce_counts(fixed, [thread("T9", author=REVIEW_BOT, is_resolved=True)]) == {}
    # A person asking again is a new instruction; another bot's request is its own.
    assert bounce_counts(fixed, [thread("T9", author=HUMAN)]) == {}
    other_bot = Actor("lint-bot[bot]", is_bot=True)
    assert bounce_counts(fixed, [thread("T9", author=other_bot)]) == {}


def test_the_same_bots_request_reworded_or_on_another_file_bounces() -> None:
    fixed = _history((1, FixStatus.FIXED), (2, FixStatus.FIXED))
    moved = thread("T9", author=REVIEW_BOT, path="other.py")
    assert bounce_counts(fixed, [moved]) == {"T9": 2}
    reworded = thread("T9", author=REVIEW_BOT, body="Please handle the empty list, thanks!")
    assert bounce_counts(fixed, [reworded]) == {"T9": 2}
    unrelated = thread("T9", author=REVIEW_BOT, body="Rename the module.")
    assert bounce_counts(fixed, [unrelated]) == {}
    assert similar("make the name field optional", "please make the name field optional")
    assert not similar("make the name field optional", "add a trailing comment")


def test_entries_recorded_before_authors_were_kept_match_by_file_and_words() -> None:
    old = tuple(
        ThreadHistoryEntry(
            i, f"old-{i}", "app/core.py", "Please handle the empty list.", FixStatus.FIXED
        )
        for i in (1, 2)
    )
    assert bounce_counts(old, [thread("T9", author=REVIEW_BOT)]) == {"T9": 2}
    assert bounce_counts(old, [thread("T9", author=REVIEW_BOT, path="x.py")]) == {}


def test_bouncing_thread_is_escalated_instead_of_resolved() -> None:
    evaluation = evaluate_fix_summary(
        fix_summary(("T9", FixStatus.FIXED)),
        [thread("T9")],
        committed=True,
        bounces={"T9": 2},
        bounce_threshold=2,
    )
    assert not evaluation.replies[0].resolve
    assert "came back 2 times" in evaluation.replies[0].body
    assert evaluation.escalated == ("T9",)


def test_review_comment_names_the_head_and_pass() -> None:
    body = render_review_comment(make_review(HEAD_A, "P1"), pass_number=1, max_passes=2)
    assert f"<!-- orchestrator-review-head: {HEAD_A} -->" in body
    assert "(pass 1 of 2)" in body
    assert "### F1 [P1] Finding 1" in body
    empty = render_review_comment(Review(HEAD_A, ()), pass_number=2, max_passes=2)
    assert "No findings." in empty


def _claim(commit: str | None) -> FixEntry:
    return FixEntry(FixTargetKind.THREAD, "T1", FixStatus.FIXED, "done", commit=commit)


def test_a_fixed_claim_needs_a_commit_of_the_turn_that_changes_the_threads_file() -> None:
    turn = (
        TurnCommit("a" * 40, ("app/core.py",)),
        TurnCommit("b" * 40, ()),
    )
    assert prove_fix(_claim("aaaaaaa"), "app/core.py", turn) == FixProof("a" * 40)
    # Naming no commit: the turn's latest commit on the file proves it.
    assert prove_fix(_claim(None), "app/core.py", turn) == FixProof("a" * 40)
    assert prove_fix(_claim("deadbeefcafe"), "app/core.py", turn).problem == (
        "deadbeefcafe is not a commit of this turn"
    )
    assert prove_fix(_claim("bbbbbbbb"), "app/core.py", turn).problem == (
        "bbbbbbbb does not change app/core.py"
    )
    assert prove_fix(_claim(None), "app/other.py", turn).problem == (
        "no commit of this turn changes app/other.py"
    )
    assert prove_fix(_claim(None), "app/core.py", ()).problem == "the turn made no commit"
    # A thread on no file is proven by any commit of the turn.
    assert prove_fix(_claim("bbbbbbb"), None, turn) == FixProof("b" * 40)


def test_an_unproven_fixed_claim_is_answered_as_uncertain_and_left_open() -> None:
    summary = FixSummary((_claim("deadbeefcafe"),))
    turn = (TurnCommit("c" * 40, ("app/core.py",)),)
    evaluation = evaluate_fix_summary(summary, [thread("T1")], committed=True, commits=turn)
    (reply,) = evaluation.replies
    assert not reply.resolve and evaluation.escalated == ("T1",)
    assert reply.body.startswith(
        "Needs a human check: reported fixed, but deadbeefcafe is not a commit of this turn."
    )
    proven = evaluate_fix_summary(
        FixSummary((_claim("ccccccc"),)), [thread("T1")], committed=True, commits=turn
    )
    assert proven.replies[0].resolve
    assert proven.replies[0].body == f"Addressed in {'c' * 12}: done"
    assert unproven_fixes(summary, [thread("T1")], turn) == (
        "thread T1 marked fixed, but deadbeefcafe is not a commit of this turn",
    )
