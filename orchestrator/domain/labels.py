"""How label names compare: as GitHub compares them, without regard to case.

A repository holds one label per name whatever its case (creating ``Bug`` next
to ``bug`` is refused as ``already_exists``), and a label is added, removed and
listed by its name in any case. So the policy's ``orchestrator:stop`` is the
label a human created as ``Orchestrator:Stop``: every rule that asks whether an
issue carries a label asks it here. Names are case-folded (Unicode's full
folding, a superset of lower-casing), so no spelling of a label slips through.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache


def fold(name: str) -> str:
    """The form two label names share when GitHub takes them for the same label."""
    return name.casefold()


@lru_cache(maxsize=8192)
def _folded(labels: frozenset[str]) -> frozenset[str]:
    # A tick asks several questions of each issue's labels, and few distinct label
    # sets exist: folding each set once keeps every question a set lookup.
    return frozenset(label.casefold() for label in labels)


def folded(labels: Iterable[str]) -> frozenset[str]:
    """The labels' folded names."""
    return _folded(labels if isinstance(labels, frozenset) else frozenset(labels))


def has_label(labels: Iterable[str], name: str) -> bool:
    """Whether ``labels`` hold ``name`` in any case."""
    if isinstance(labels, frozenset) and name in labels:
        return True
    return fold(name) in folded(labels)


def shared_labels(labels: Iterable[str], names: Iterable[str]) -> tuple[str, ...]:
    """The ``names`` that ``labels`` hold in any case, in the order of ``names``."""
    present = folded(labels)
    return tuple(name for name in names if fold(name) in present)
