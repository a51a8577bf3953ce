"""review.act_on: only writers' review threads drive rework (unless the policy says anyone).

Threads by readers, outside users and other bots never start a rework turn, never
keep an issue out of ready_to_merge and never wait for a human; a rework turn
never answers them, even when its fix summary names them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

import pytest

from orchestrator.domain.actions import SideEffectKind
from orchestrator.domain.agent_files.fix_summary import FixStatus
from orchestrator.domain.outcomes import threads_to_answer
from orchestrator.domain.phases import Phase, WaitingReason
from orchestrator.domain.policy import FlowPolicy, ReviewActOn, ReviewPolicy
from orchestrator.domain.record_updates import record_outcome
from orchestrator.domain.review_decisions import evaluate_fix_summary
from orchestrator.domain.snapshot import Actor, ReviewThread, ThreadComment
from orchestrator.domain.trust import author_permission, author_trusted, last_word, thread_trusted
from tests.domain.builders import (
    EARLIER,
    HEAD_B,
    HUMAN,
    READER,
    REVIEW_BOT,
    SELF,
    SELF_ACTOR,
    approved_issue,
    dispatches,
    effects_of,
    fix_summary,
    make_item,
    make_outcome,
    make_policy,
    make_pr,
    make_record,
    make_snapshot,
    observes,
    run_plan,
    thread,
    transitions,
)

WRITERS = ReviewActOn.WRITERS
ANYONE = ReviewActOn.ANYONE
# The daemon as the runtime sees it: its own login is reported as a bot.
DAEMON = Actor(SELF, is_bot=True)
OUTSIDER = Actor("stranger")


def policy(act_on: ReviewActOn) -> FlowPolicy:
    return make_policy(review=ReviewPolicy(act_on=act_on))


def said(*authors: Actor) -> tuple[ThreadComment, ...]:
    """A thread's comments, one a minute, by these authors in order."""
    return tuple(
        ThreadComment(a, f"comment {i}", EARLIER + timedelta(minutes=i))
        for i, a in enumerate(authors)
    )


def conversation(thread_id: str, *authors: Actor) -> ReviewThread:
    comments = said(*authors)
    return thread(
        thread_id,
        author=authors[0],
        comments=comments,
        last_comment_author=authors[-1],
        last_comment_at=comments[-1].created_at,
    )


# ----------------------------------------------------------------- who counts


@pytest.mark.parametrize(
    ("actor", "act_on", "trusted"),
    [
        (HUMAN, WRITERS, True),
        (READER, WRITERS, False),
        (OUTSIDER, WRITERS, False),
        (REVIEW_BOT, WRITERS, False),  # a bot never counts as a writer, whatever its permission
        (DAEMON, WRITERS, False),
        (SELF_ACTOR, WRITERS, False),  # the daemon's own login, even if reported as a writer
        (HUMAN, ANYONE, True),
        (READER, ANYONE, True),
        (OUTSIDER, ANYONE, True),
        (REVIEW_BOT, ANYONE, True),
        (DAEMON, ANYONE, False),
    ],
    ids=lambda v: getattr(v, "login", str(v)),
)
def test_whose_threads_count(actor: Actor, act_on: ReviewActOn, trusted: bool) -> None:
    assert author_trusted(actor, act_on, SELF) is trusted
    assert thread_trusted(thread(author=actor), act_on, SELF) is trusted


def test_author_permission_as_the_agent_is_told() -> None:
    assert author_permission(HUMAN) == "write"
    assert author_permission(READER) == "read"
    assert author_permission(REVIEW_BOT) == "bot"


@pytest.mark.parametrize(
    ("authors", "act_on", "last"),
    [
        # A reader's reply after ours does not re-open the writer's thread.
        ((HUMAN, DAEMON, READER), WRITERS, DAEMON),
        ((HUMAN, DAEMON, READER), ANYONE, READER),
        # A reader's reply after the writer's comment does not make it look answered.
        ((HUMAN, READER), WRITERS, HUMAN),
        ((HUMAN, DAEMON, HUMAN), WRITERS, HUMAN),
        ((HUMAN, DAEMON, REVIEW_BOT), WRITERS, DAEMON),
    ],
)
def test_the_last_word_that_counts(
    authors: tuple[Actor, ...], act_on: ReviewActOn, last: Actor
) -> None:
    assert last_word(conversation("T1", *authors), act_on, SELF) == last


# ---------------------------------------------------- the passive phases' rules


@dataclass(frozen=True)
class Case:
    name: str
    phase: Phase
    threads: tuple[ReviewThread, ...]
    act_on: ReviewActOn
    to: Phase | None
    approved: bool = True
    waiting: WaitingReason | None = None


CASES = [
    Case(
        "a reader's thread does not start a rework under writers",
        Phase.WAITING_FOR_HUMAN,
        (thread("R1", author=READER),),
        WRITERS,
        Phase.READY_TO_MERGE,
    ),
    Case(
        "a reader's thread starts a rework under anyone",
        Phase.WAITING_FOR_HUMAN,
        (thread("R1", author=READER),),
        ANYONE,
        Phase.REWORK,
    ),
    Case(
        "a writer's thread starts a rework",
        Phase.WAITING_FOR_HUMAN,
        (thread("T1", author=HUMAN),),
        WRITERS,
        Phase.REWORK,
    ),
    Case(
        "a bot's thread does not start a rework under writers",
        Phase.WAITING_FOR_CHECKS,
        (thread("B1", author=REVIEW_BOT),),
        WRITERS,
        Phase.READY_TO_MERGE,
    ),
    Case(
        "a bot's thread starts a rework under anyone",
        Phase.WAITING_FOR_CHECKS,
        (thread("B1", author=REVIEW_BOT),),
        ANYONE,
        Phase.REWORK,
    ),
    Case(
        "an outside user's thread does not start a rework under writers",
        Phase.WAITING_FOR_CHECKS,
        (thread("O1", author=OUTSIDER),),
        WRITERS,
        Phase.READY_TO_MERGE,
    ),
    Case(
        "a reader's thread we answered does not wait for a human",
        Phase.WAITING_FOR_CHECKS,
        (conversation("R1", READER, DAEMON),),
        WRITERS,
        Phase.READY_TO_MERGE,
    ),
    Case(
        "a writer's thread we answered waits for a human",
        Phase.WAITING_FOR_CHECKS,
        (conversation("T1", HUMAN, DAEMON),),
        WRITERS,
        Phase.WAITING_FOR_HUMAN,
        waiting=WaitingReason.HUMAN_APPROVAL_REQUIRED,
    ),
    Case(
        "a reader's reply does not re-open a writer's thread we answered",
        Phase.WAITING_FOR_HUMAN,
        (conversation("T1", HUMAN, DAEMON, READER),),
        WRITERS,
        None,
        waiting=WaitingReason.HUMAN_APPROVAL_REQUIRED,
    ),
    Case(
        "a reader's reply re-opens a thread under anyone",
        Phase.WAITING_FOR_HUMAN,
        (conversation("T1", HUMAN, DAEMON, READER),),
        ANYONE,
        Phase.REWORK,
    ),
    Case(
        "a writer's reply re-opens the thread",
        Phase.WAITING_FOR_HUMAN,
        (conversation("T1", HUMAN, DAEMON, HUMAN),),
        WRITERS,
        Phase.REWORK,
    ),
    Case(
        "a reader's thread does not take a ready issue back",
        Phase.READY_TO_MERGE,
        (thread("R1", author=READER),),
        WRITERS,
        Phase.MERGING,
    ),
    Case(
        "a reader's thread takes a ready issue back under anyone",
        Phase.READY_TO_MERGE,
        (thread("R1", author=READER),),
        ANYONE,
        Phase.WAITING_FOR_CHECKS,
    ),
    Case(
        "without approval a reader's thread leaves the issue waiting for approval only",
        Phase.WAITING_FOR_HUMAN,
        (thread("R1", author=READER),),
        WRITERS,
        None,
        approved=False,
        waiting=WaitingReason.HUMAN_APPROVAL_REQUIRED,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_passive_rules(case: Case) -> None:
    item = make_item(
        case.phase,
        issue=approved_issue() if case.approved else None,
        pr=make_pr(threads=case.threads),
    )
    actions = run_plan(make_snapshot(item), policy(case.act_on))
    moved = [(t.from_phase, t.to_phase) for t in transitions(actions)]  # type: ignore[arg-type]
    assert moved == ([(case.phase, case.to)] if case.to is not None else [])
    assert dispatches(actions) == []  # type: ignore[arg-type]
    kinds = {e.kind for e in effects_of(actions)}  # type: ignore[arg-type]
    assert SideEffectKind.REPLY_THREAD not in kinds
    if case.waiting is not None:
        [observe] = observes(actions)  # type: ignore[arg-type]
        assert observe.waiting_reason is case.waiting


# ------------------------------------------------------------ the rework turn


def _rework_effects(act_on: ReviewActOn) -> dict[str, set[SideEffectKind]]:
    """What a rework turn that answered a writer's and a reader's thread leads to, by thread."""
    item = make_item(
        Phase.REWORK,
        pr=make_pr(threads=(thread("T1", author=HUMAN), thread("R1", author=READER))),
        last_outcome=make_outcome(
            Phase.REWORK,
            head_after=HEAD_B,
            fix_summary=fix_summary(("T1", FixStatus.FIXED), ("R1", FixStatus.FIXED)),
        ),
    )
    found: dict[str, set[SideEffectKind]] = {}
    for effect in effects_of(run_plan(make_snapshot(item), policy(act_on))):  # type: ignore[arg-type]
        thread_id = getattr(effect.payload, "thread_id", None)
        if isinstance(thread_id, str):
            found.setdefault(thread_id, set()).add(effect.kind)
    return found


def test_rework_never_answers_a_thread_it_was_not_given() -> None:
    assert _rework_effects(WRITERS) == {
        "T1": {SideEffectKind.REPLY_THREAD, SideEffectKind.RESOLVE_THREAD}
    }


def test_rework_answers_every_thread_under_anyone() -> None:
    both = {SideEffectKind.REPLY_THREAD, SideEffectKind.RESOLVE_THREAD}
    assert _rework_effects(ANYONE) == {"T1": both, "R1": both}


def test_the_reader_is_not_asked_to_review_again() -> None:
    item = make_item(
        Phase.REWORK,
        pr=make_pr(threads=(thread("T1", author=HUMAN), thread("R1", author=READER))),
        last_outcome=make_outcome(
            Phase.REWORK,
            head_after=HEAD_B,
            fix_summary=fix_summary(("T1", FixStatus.FIXED), ("R1", FixStatus.FIXED)),
        ),
    )
    actions = run_plan(make_snapshot(item), policy(WRITERS))
    [ask] = [e for e in effects_of(actions) if e.kind is SideEffectKind.REQUEST_REVIEW]  # type: ignore[arg-type]
    assert READER.login not in ask.payload.reviewers
    assert HUMAN.login in ask.payload.reviewers
    [observe] = observes(actions)  # type: ignore[arg-type]
    assert "not answering thread(s) the turn was not given: R1" in (
        observe.observation.next_intended_action
    )


def test_unknown_and_untrusted_ids_are_ignored_alike() -> None:
    summary = fix_summary(
        ("T1", FixStatus.FIXED), ("R1", FixStatus.FIXED), ("NOPE", FixStatus.SKIPPED)
    )
    given = [thread("T1", author=HUMAN)]
    evaluation = evaluate_fix_summary(summary, given, committed=True)
    assert [r.thread_id for r in evaluation.replies] == ["T1"]
    assert evaluation.ignored == ("R1", "NOPE")


@pytest.mark.parametrize(
    ("act_on", "required"),
    # Under anyone the reader's reply re-opens T2: it is asked of the turn again.
    [(WRITERS, ["T1"]), (ANYONE, ["T1", "R1", "B1", "T2"])],
)
def test_threads_the_turn_must_answer(act_on: ReviewActOn, required: list[str]) -> None:
    threads = (
        thread("T1", author=HUMAN),
        thread("R1", author=READER),
        thread("B1", author=REVIEW_BOT),
        conversation("T2", HUMAN, DAEMON, READER),  # under writers: waits for a human
    )
    answer = threads_to_answer(threads, (), ReviewPolicy(act_on=act_on), SELF)
    assert [t.id for t in answer] == required


def test_a_summary_without_the_readers_thread_keeps_the_contract() -> None:
    threads = (thread("T1", author=HUMAN), thread("R1", author=READER))
    outcome = make_outcome(
        Phase.REWORK,
        head_after=HEAD_B,
        fix_summary=fix_summary(("T1", FixStatus.FIXED)),
    )
    record = make_record(Phase.REWORK)
    kept = record_outcome(record, outcome, policy(WRITERS), threads, SELF)
    assert kept.last_outcome is not None and kept.last_outcome.contract_error is None
    # Only the threads the turn was given enter the bounce history.
    assert [e.thread_id for e in kept.thread_history] == ["T1"]
    missed = record_outcome(record, outcome, policy(ANYONE), threads, SELF)
    assert missed.last_outcome is not None
    assert missed.last_outcome.contract_error is not None
    assert "R1" in missed.last_outcome.contract_error
