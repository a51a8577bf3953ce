"""The passive sweep reads every waiting pull request once per pass, a slice per tick."""

from __future__ import annotations

from random import Random

from structlog.testing import capture_logs

from orchestrator.tick.sweep import PassiveSweep


def test_a_pass_reads_every_number_once_in_spread_ticks() -> None:
    sweep = PassiveSweep(spread=4)
    passive = list(range(1, 11))
    seen: list[int] = []
    for _ in range(3):
        picked = sweep.slice(passive)
        assert len(picked) == 3
        sweep.done(passive, picked, behind=False)
        seen += picked
    last = sweep.slice(passive)
    with capture_logs() as logs:
        sweep.done(passive, last, behind=False)
    # The end of a pass is logged: everything waiting was read once more.
    assert [(e["event"], e["ticks"], e["read"], e["passive"]) for e in logs] == [
        ("passive_sweep_pass", 4, 10, 10)
    ]
    assert sorted(seen + last) == passive
    status = sweep.status()
    assert (status.last_pass_ticks, status.read_this_pass, status.behind) == (4, 0, False)
    assert sweep.slice(passive)[0] == 1  # the next pass starts again from the smallest


def test_a_slice_cut_short_continues_where_it_stopped() -> None:
    sweep = PassiveSweep(spread=2)
    passive = list(range(100, 120))
    picked = sweep.slice(passive)
    sweep.done(passive, picked[:4], behind=True)
    assert sweep.status().behind and sweep.status().read_this_pass == 4
    assert sweep.slice(passive)[0] == 104


def test_numbers_coming_and_going_never_starve_anyone() -> None:
    """Whatever joins or leaves the passive set, a number present throughout a pass's
    ticks is read within two passes."""
    rng = Random(7)
    sweep = PassiveSweep(spread=5)
    present = set(range(1, 60))
    waited: dict[int, int] = dict.fromkeys(present, 0)
    for _ in range(300):
        for _ in range(rng.randint(0, 3)):
            if rng.random() < 0.5 and present:
                gone = rng.choice(sorted(present))
                present.discard(gone)
                waited.pop(gone, None)
            else:
                new = rng.randint(1, 200)
                present.add(new)
                waited.setdefault(new, 0)
        passive = sorted(present)
        picked = sweep.slice(passive)
        cut = picked[: rng.randint(0, len(picked))] if rng.random() < 0.2 else picked
        sweep.done(passive, cut, behind=cut != picked)
        waited = {number: 0 if number in cut else ticks + 1 for number, ticks in waited.items()}
        # A pass of up to 200 numbers in slices of at least 1/5 (cuts delay it a little).
        assert max(waited.values(), default=0) <= 40, waited
