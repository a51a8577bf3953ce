"""Pull request state for the passive phases, in two levels of cost.

Each poll sends one cheap fingerprint query per up to 100 pull requests and
fetches the full state (reviews, threads with comments, every check) only for
those whose fingerprint changed. The full state is kept in the ETag cache under
the fingerprint's hash, so unchanged pull requests reuse it, across restarts too.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from orchestrator.domain.snapshot import (
    Actor,
    ChecksSummary,
    PRReview,
    PRStatus,
    PullRequest,
    ReviewThread,
    ReviewVerdict,
    ThreadComment,
)
from orchestrator.github.client import CacheEntry, EtagCache, GitHubClient
from orchestrator.github.completion import (
    HEAD_CHECKS_KEY,
    INCOMPLETE_KEY,
    complete_state,
    reduce_contexts,
)
from orchestrator.github.queries import (
    MAX_FINGERPRINT_BATCH,
    MAX_STATE_BATCH,
    fingerprint_request,
    pull_request_alias,
    state_request,
)

ActorLookup = Callable[[str, str | None], Actor]


def _split(repo: str) -> tuple[str, str]:
    owner, _, name = repo.partition("/")
    if not owner or not name:
        raise ValueError(f"repository must be owner/name, got {repo!r}")
    return owner, name


def _run_batches(
    client: GitHubClient,
    repo: str,
    numbers: Sequence[int],
    size: int,
    build: Callable[[str, str, Sequence[int]], Any],
) -> dict[int, dict[str, Any]]:
    owner, name = _split(repo)
    nodes: dict[int, dict[str, Any]] = {}
    unique = list(dict.fromkeys(numbers))
    for start in range(0, len(unique), size):
        batch = unique[start : start + size]
        request = build(owner, name, batch)
        data = client.graphql(request.query, dict(request.variables))
        repository = data.get("repository") or {}
        for index, number in enumerate(batch):
            node = repository.get(pull_request_alias(index))
            if node is not None:
                nodes[number] = node
    return nodes


def fetch_fingerprints(
    client: GitHubClient, repo: str, numbers: Sequence[int]
) -> dict[int, dict[str, Any]]:
    """The fingerprint node of each pull request (missing ones are left out)."""
    return _run_batches(client, repo, numbers, MAX_FINGERPRINT_BATCH, fingerprint_request)


def fetch_states(
    client: GitHubClient, repo: str, numbers: Sequence[int]
) -> dict[int, dict[str, Any]]:
    """The full state node of each pull request, every list read to the end (missing left out)."""
    nodes = _run_batches(client, repo, numbers, MAX_STATE_BATCH, state_request)
    return {number: complete_state(client, repo, node) for number, node in nodes.items()}


# Fields of a fingerprint that are also its own answer: GitHub recomputes them for every
# open pull request whenever the base branch moves (unknown first, then known again), so
# they are not part of the hash that decides whether the full state is read again; they
# are laid over the state last read instead.
MERGEABILITY = ("mergeable", "mergeStateStatus")


def fingerprint_hash(node: dict[str, Any]) -> str:
    """The hash of a fingerprint without its mergeability (see :data:`MERGEABILITY`)."""
    rest = {key: value for key, value in node.items() if key not in MERGEABILITY}
    return hashlib.sha256(json.dumps(rest, sort_keys=True).encode()).hexdigest()


def _memo_key(fingerprint: str, node: dict[str, Any]) -> str:
    """What a remembered state was decoded under: its fingerprint and mergeability."""
    return "|".join([fingerprint, *(str(node.get(key)) for key in MERGEABILITY)])


def _with_mergeability(state: dict[str, Any], fingerprint: dict[str, Any]) -> dict[str, Any]:
    """The full state with the fingerprint's (newer) mergeability laid over it."""
    return {**state, **{key: fingerprint.get(key) for key in MERGEABILITY if key in fingerprint}}


def fingerprint_is_whole(node: dict[str, Any]) -> bool:
    """Whether the fingerprint sees every change: the head's checks and all thread flags.

    A fingerprint whose check list or thread list was cut off, or whose head branch
    does not point at the head commit, could stay the same across a change: such a
    pull request's full state is read on every poll instead.
    """
    target = (node.get("headRef") or {}).get("target") or {}
    if target.get("oid") != node.get("headRefOid"):
        return False
    contexts = (target.get("statusCheckRollup") or {}).get("contexts") or {}
    if (contexts.get("pageInfo") or {}).get("hasNextPage"):
        return False
    threads = node.get("reviewThreads") or {}
    total = threads.get("totalCount")
    return not (isinstance(total, int) and total > len(threads.get("nodes") or []))


# GitHub's updatedAt has one-second resolution: a change in the same second as
# a poll leaves the fingerprint as it was. A state fetched while the pull
# request's last update is this recent is fetched again on the next poll.
SETTLE_S = 3.0
_UNSETTLED = "unsettled:"


# Pull request number -> (the fingerprint its state was read under, the state).
StateMemo = dict[int, tuple[str, PullRequest]]


class PRStatePoller:
    """Polls many pull requests of one repository at the cost of their fingerprints."""

    def __init__(
        self,
        client: GitHubClient,
        cache: EtagCache,
        actor: ActorLookup,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._client = client
        self._cache = cache
        self._actor = actor
        self._clock = clock

    def poll(
        self, repo: str, numbers: Sequence[int], memo: StateMemo | None = None
    ) -> dict[int, PullRequest]:
        """The state of each pull request; full fetches only for changed fingerprints.

        ``memo`` (kept by the caller across polls) spares decoding an unchanged state.
        """
        if not numbers:
            return {}
        memo = memo if memo is not None else {}
        fingerprints = fetch_fingerprints(self._client, repo, numbers)
        found: dict[int, PullRequest] = {}
        unknown: dict[int, dict[str, Any]] = {}
        hashes = {number: fingerprint_hash(node) for number, node in fingerprints.items()}
        for number, node in fingerprints.items():
            remembered = memo.get(number)
            if (
                remembered is not None
                and fingerprint_is_whole(node)
                and remembered[0] == _memo_key(hashes[number], node)
            ):
                found[number] = remembered[1]
            else:
                unknown[number] = node
        states, changed = reusable_states(self._cache, repo, unknown)
        for number, node in states.items():
            # Only the mergeability moved (or the memo was empty): no full read.
            seen = fingerprints[number]
            found[number] = self._remember(
                memo,
                repo,
                number,
                _memo_key(hashes[number], seen),
                _with_mergeability(node, seen),
            )
        if changed:
            fresh = fetch_states(self._client, repo, changed)
            now = self._clock()
            entries = []
            for number, node in fresh.items():
                fingerprint = hashes[number]
                updated = _time(fingerprints[number].get("updatedAt"))
                if (now - updated).total_seconds() < SETTLE_S:
                    fingerprint = _UNSETTLED + fingerprint
                entries.append(
                    CacheEntry(state_key(repo, number), fingerprint, None, json.dumps(node))
                )
                key = _memo_key(fingerprint, fingerprints[number])
                found[number] = self._remember(memo, repo, number, key, node)
            self._cache.put_many(entries, now=now)
        return found

    def last_known(
        self, repo: str, numbers: Iterable[int], memo: StateMemo
    ) -> dict[int, PullRequest]:
        """The state each pull request had when it was last polled, without asking GitHub
        (from ``memo``, else from the cache, which outlives restarts); unknown ones are left out.
        """
        found: dict[int, PullRequest] = {}
        missing: dict[int, str] = {}
        for number in numbers:
            remembered = memo.get(number)
            if remembered is not None:
                found[number] = remembered[1]
            else:
                missing[number] = state_key(repo, number)
        cached = self._cache.get_many(missing.values()) if missing else {}
        for number, key in missing.items():
            entry = cached.get(key)
            if entry is None:
                continue
            try:
                node = json.loads(entry.body)
                found[number] = self._remember(memo, repo, number, entry.etag or "", node)
            except (ValueError, KeyError, TypeError):
                continue  # an unreadable entry: the pull request is polled instead
        return found

    def _remember(
        self, memo: StateMemo, repo: str, number: int, fingerprint: str, node: dict[str, Any]
    ) -> PullRequest:
        state = to_pull_request(repo, node, self._actor)
        memo[number] = (fingerprint, state)
        return state


def state_key(repo: str, number: int) -> str:
    """The cache key of a pull request's full state."""
    return f"graphql:pr-state:{repo}#{number}"


def reusable_states(
    cache: EtagCache, repo: str, fingerprints: Mapping[int, dict[str, Any]]
) -> tuple[dict[int, dict[str, Any]], list[int]]:
    """The cached full state of each pull request whose fingerprint is unchanged; the others.

    The cache is read once for all of them (a query per few hundred keys on the store).
    """
    keys = {
        number: state_key(repo, number)
        for number, node in fingerprints.items()
        if fingerprint_is_whole(node)
    }
    cached = cache.get_many(keys.values()) if keys else {}
    states: dict[int, dict[str, Any]] = {}
    changed: list[int] = []
    for number, node in fingerprints.items():
        found = cached.get(keys[number]) if number in keys else None
        if found is not None and found.etag == fingerprint_hash(node):
            states[number] = json.loads(found.body)
        else:
            changed.append(number)
    return states, changed


def inspect_pr_state(
    client: GitHubClient, repo: str, number: int, actor: ActorLookup
) -> PullRequest | None:
    """A fresh, uncached read of one pull request's full state (before merging)."""
    node = fetch_states(client, repo, [number]).get(number)
    return to_pull_request(repo, node, actor) if node is not None else None


def _time(value: str | None) -> datetime:
    if not value:
        return datetime.fromtimestamp(0, UTC)
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def _author(node: dict[str, Any] | None, actor: ActorLookup) -> Actor:
    node = node or {}
    return actor(str(node.get("login") or "ghost"), node.get("__typename"))


def _checks(head: str, node: dict[str, Any]) -> ChecksSummary | None:
    """The checks of exactly the head commit (None when they could not be told)."""
    found = node.get(HEAD_CHECKS_KEY)
    if not isinstance(found, dict) or not head or found.get("oid") != head:
        return None
    verdicts = reduce_contexts(list(found.get("contexts") or []))
    by = {
        kind: frozenset(n for n, v in verdicts.items() if v == kind)
        for kind in ("passed", "failing", "pending")
    }
    return ChecksSummary(
        head_sha=head, passed=by["passed"], failing=by["failing"], pending=by["pending"]
    )


def to_pull_request(repo: str, node: dict[str, Any], actor: ActorLookup) -> PullRequest:
    """Map a full state node to the domain's pull request value."""
    head = str(node.get("headRefOid") or "")
    status = {"OPEN": PRStatus.OPEN, "MERGED": PRStatus.MERGED}.get(
        str(node.get("state")), PRStatus.CLOSED
    )
    mergeable = {"MERGEABLE": True, "CONFLICTING": False}.get(str(node.get("mergeable")))
    reviews = []
    for review in (node.get("reviews") or {}).get("nodes") or []:
        try:
            verdict = ReviewVerdict(str(review.get("state")).lower())
        except ValueError:
            continue  # PENDING reviews are drafts, not verdicts
        reviews.append(
            PRReview(
                author=_author(review.get("author"), actor),
                verdict=verdict,
                commit_sha=str((review.get("commit") or {}).get("oid") or ""),
                submitted_at=_time(review.get("submittedAt")),
            )
        )
    threads = []
    for thread in (node.get("reviewThreads") or {}).get("nodes") or []:
        comments = (thread.get("comments") or {}).get("nodes") or []
        if not comments:
            continue
        first, last = comments[0], comments[-1]
        threads.append(
            ReviewThread(
                id=str(thread["id"]),
                author=_author(first.get("author"), actor),
                body=str(first.get("body") or ""),
                created_at=_time(first.get("createdAt")),
                path=thread.get("path"),
                is_resolved=bool(thread.get("isResolved")),
                is_outdated=bool(thread.get("isOutdated")),
                last_comment_at=_time(last.get("createdAt")),
                last_comment_author=_author(last.get("author"), actor),
                line=thread.get("line") if isinstance(thread.get("line"), int) else None,
                diff_hunk=str(first.get("diffHunk") or "") or None,
                comments=tuple(
                    ThreadComment(
                        author=_author(c.get("author"), actor),
                        body=str(c.get("body") or ""),
                        created_at=_time(c.get("createdAt")),
                    )
                    for c in comments
                ),
            )
        )
    incomplete = node.get(INCOMPLETE_KEY)
    checks = _checks(head, node)
    return PullRequest(
        number=int(node["number"]),
        url="",
        head_sha=head,
        status=status,
        mergeable=mergeable,
        checks=checks,
        reviews=tuple(reviews),
        threads=tuple(threads),
        updated_at=_time(node["updatedAt"]) if node.get("updatedAt") else None,
        # A node that never went through completion (an old cache entry) is trusted for nothing.
        incomplete=frozenset(incomplete)
        if isinstance(incomplete, list)
        else frozenset({"checks", "reviews", "threads"}),
        is_draft=bool(node.get("isDraft")),
        merge_state=str(node["mergeStateStatus"]) if node.get("mergeStateStatus") else None,
        node_id=str(node.get("id") or "") or None,
    )
