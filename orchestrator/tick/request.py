"""What a tick is asked to look at: one :class:`CycleKind`, and the issues of a follow-up."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from orchestrator.domain.snapshot import IssueRef


class CycleKind(Enum):
    """Which algorithm one tick runs over a repository."""

    # Every issue, after one pass over what the issue feed saw move (a new label, an
    # approval): a tick asked for by hand, the refresh endpoint or ``--once``.
    WHOLE = "whole"
    # The scheduler's tick: a whole tick that first follows what moved through the steps
    # it enables at once (an approval: ready to merge, then the merge).
    SCHEDULED = "scheduled"
    # The issues a previous tick changed, alone, so their next step is taken now.
    FOLLOW_UP = "follow_up"


@dataclass(frozen=True)
class CycleRequest:
    """One tick's request: its kind and, for a follow-up, its issues."""

    kind: CycleKind = CycleKind.WHOLE
    issues: frozenset[IssueRef] = frozenset()

    @classmethod
    def follow_up(cls, issues: frozenset[IssueRef]) -> CycleRequest:
        return cls(CycleKind.FOLLOW_UP, issues)

    @property
    def whole(self) -> bool:
        """Whether the tick looks at every issue (not a follow-up)."""
        return self.kind is not CycleKind.FOLLOW_UP

    def of_repo(self, repo: str) -> CycleRequest | None:
        """This request for one repository; None when a follow-up has nothing there."""
        if self.whole:
            return self
        issues = frozenset(ref for ref in self.issues if ref.repo == repo)
        return CycleRequest(self.kind, issues) if issues else None


WHOLE = CycleRequest()
SCHEDULED = CycleRequest(CycleKind.SCHEDULED)
