"""Read every list of a pull request's state to the end, or say which one could not be.

The batch state query brings one page of each list (reviews, review threads,
each thread's comments, the head commit's check contexts). A decision that
read only the first page could miss a failing check past the 100th or an
older change request, so this module follows every cut-off list with
follow-up pages. Lists it cannot finish, and checks whose pieces disagree,
are named in the node's ``incomplete`` entry; the gates then fail closed.

The checks are taken only from the commit that is the pull request's
``headRefOid``: the head branch's target when it is that commit, otherwise the
commit looked up by its id.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from orchestrator.github.client import GitHubClient
from orchestrator.github.errors import GitHubError
from orchestrator.github.queries import (
    GraphQLRequest,
    head_checks_request,
    reviews_page_request,
    thread_comments_request,
    threads_page_request,
)
from orchestrator.logs import get_logger

log = get_logger(__name__)

# Follow-up pages read per list at most (100 contexts a page: 5,000 checks).
MAX_PAGES = 50

INCOMPLETE_KEY = "incomplete"
HEAD_CHECKS_KEY = "headChecks"

PASSED_CONCLUSIONS = frozenset({"SUCCESS", "NEUTRAL", "SKIPPED"})
PASSED_STATES = frozenset({"SUCCESS"})
FAILED_STATES = frozenset({"FAILURE", "ERROR"})


class _Cut(Exception):
    """A list could not be read to the end."""


def complete_state(client: GitHubClient, repo: str, node: dict[str, Any]) -> dict[str, Any]:
    """``node`` with every list read to the end and the head's checks under ``headChecks``.

    ``node["incomplete"]`` lists what could not be read to the end (or disagrees
    with itself): ``"checks"``, ``"reviews"``, ``"threads"``.
    """
    owner, _, name = repo.partition("/")
    number = int(node["number"])
    incomplete: set[str] = set()
    done = dict(node)
    steps: tuple[tuple[str, Callable[[], None]], ...] = (
        ("checks", lambda: _complete_checks(client, owner, name, done)),
        ("reviews", lambda: _complete_reviews(client, owner, name, number, done)),
        ("threads", lambda: _complete_threads(client, owner, name, number, done)),
    )
    for part, step in steps:
        try:
            step()
        except (_Cut, GitHubError) as problem:
            incomplete.add(part)
            log.warning("pr_list_incomplete", repo=repo, pr=number, part=part, reason=str(problem))
    done[INCOMPLETE_KEY] = sorted(incomplete)
    return done


def _ask(client: GitHubClient, request: GraphQLRequest) -> dict[str, Any]:
    return client.graphql(request.query, dict(request.variables))


def _follow(
    first: dict[str, Any],
    fetch: Callable[[str], dict[str, Any] | None],
    *,
    backwards: bool = False,
) -> list[Any]:
    """Every node of a connection, starting from its first page, following its cursors."""
    nodes = list(first.get("nodes") or [])
    page = first
    for _ in range(MAX_PAGES):
        info = page.get("pageInfo") or {}
        more = info.get("hasPreviousPage") if backwards else info.get("hasNextPage")
        if not more:
            break
        cursor = info.get("startCursor") if backwards else info.get("endCursor")
        if not cursor:
            raise _Cut("a page says more follow but gives no cursor")
        following = fetch(str(cursor))
        if following is None:
            raise _Cut("a follow-up page did not come back")
        page = following
        more_nodes = list(page.get("nodes") or [])
        nodes = more_nodes + nodes if backwards else nodes + more_nodes
    else:
        raise _Cut(f"more than {MAX_PAGES} pages")
    total = first.get("totalCount")
    if isinstance(total, int) and total != len(nodes):
        raise _Cut(f"read {len(nodes)} of {total}")
    return nodes


# ------------------------------------------------------------------ checks


def _head_rollup(node: dict[str, Any]) -> tuple[bool, dict[str, Any] | None]:
    """The head branch's rollup when its target is the head commit: (usable, rollup)."""
    head = node.get("headRefOid")
    target = (node.get("headRef") or {}).get("target") or {}
    if head and target.get("__typename") == "Commit" and target.get("oid") == head:
        return True, target.get("statusCheckRollup")
    return False, None


def _complete_checks(client: GitHubClient, owner: str, name: str, node: dict[str, Any]) -> None:
    head = str(node.get("headRefOid") or "")
    node[HEAD_CHECKS_KEY] = None
    if not head:
        raise _Cut("the pull request reports no head commit")
    usable, rollup = _head_rollup(node)
    if not usable:
        # The head branch is gone or already points elsewhere: ask for the commit itself.
        commit = _commit_checks(client, owner, name, head, None)
        if commit is None:
            raise _Cut(f"the head commit {head[:12]} was not found")
        rollup = commit.get("statusCheckRollup")
    if rollup is None:
        node[HEAD_CHECKS_KEY] = {"oid": head, "state": None, "contexts": []}
        return

    def more(cursor: str) -> dict[str, Any] | None:
        commit = _commit_checks(client, owner, name, head, cursor)
        return ((commit or {}).get("statusCheckRollup") or {}).get("contexts")

    contexts = _follow(rollup.get("contexts") or {}, more)
    state = rollup.get("state")
    node[HEAD_CHECKS_KEY] = {"oid": head, "state": state, "contexts": contexts}
    _check_rollup_agrees(state, contexts)


def _commit_checks(
    client: GitHubClient, owner: str, name: str, oid: str, after: str | None
) -> dict[str, Any] | None:
    data = _ask(client, head_checks_request(owner, name, oid, after))
    commit = (data.get("repository") or {}).get("object")
    if not commit or commit.get("__typename") != "Commit" or commit.get("oid") != oid:
        return None
    return dict(commit)


def context_verdict(context: dict[str, Any]) -> tuple[str, str, int]:
    """(name, "passed" | "failing" | "pending", order) of one check run or status."""
    if context.get("__typename") == "CheckRun":
        name = str(context.get("name"))
        if context.get("status") != "COMPLETED":
            verdict = "pending"
        elif context.get("conclusion") in PASSED_CONCLUSIONS:
            verdict = "passed"
        else:
            verdict = "failing"
        return name, verdict, int(context.get("databaseId") or 0)
    state = context.get("state")
    verdict = (
        "passed" if state in PASSED_STATES else "failing" if state in FAILED_STATES else "pending"
    )
    return str(context.get("context")), verdict, 0


def reduce_contexts(contexts: list[dict[str, Any]]) -> dict[str, str]:
    """The verdict of each check name; a re-run reports the name again and the newest counts."""
    latest: dict[str, tuple[int, str]] = {}
    for context in contexts:
        name, verdict, order = context_verdict(context)
        if name not in latest or order >= latest[name][0]:
            latest[name] = (order, verdict)
    return {name: verdict for name, (_, verdict) in latest.items()}


def _check_rollup_agrees(state: object, contexts: list[dict[str, Any]]) -> None:
    """GitHub's own rollup state must not contradict the contexts read."""
    verdicts = set(reduce_contexts(contexts).values())
    if state in FAILED_STATES and "failing" not in verdicts:
        raise _Cut(f"the rollup says {state} but no check read is failing")
    if state in ("PENDING", "EXPECTED") and verdicts <= {"passed"}:
        raise _Cut(f"the rollup says {state} but every check read has passed")


# ------------------------------------------------------------------ reviews


def _complete_reviews(
    client: GitHubClient, owner: str, name: str, number: int, node: dict[str, Any]
) -> None:
    reviews = node.get("reviews")
    if reviews is None:
        raise _Cut("the reviews were not returned")

    def more(cursor: str) -> dict[str, Any] | None:
        data = _ask(client, reviews_page_request(owner, name, number, cursor))
        return ((data.get("repository") or {}).get("pullRequest") or {}).get("reviews")

    node["reviews"] = {**reviews, "nodes": _follow(reviews, more, backwards=True)}


# ------------------------------------------------------------------ threads


def _complete_threads(
    client: GitHubClient, owner: str, name: str, number: int, node: dict[str, Any]
) -> None:
    threads = node.get("reviewThreads")
    if threads is None:
        raise _Cut("the review threads were not returned")

    def more(cursor: str) -> dict[str, Any] | None:
        data = _ask(client, threads_page_request(owner, name, number, cursor))
        return ((data.get("repository") or {}).get("pullRequest") or {}).get("reviewThreads")

    nodes = []
    for thread in _follow(threads, more):
        comments = thread.get("comments") or {}
        thread_id = str(thread.get("id") or "")

        def more_comments(cursor: str, thread_id: str = thread_id) -> dict[str, Any] | None:
            data = _ask(client, thread_comments_request(thread_id, cursor))
            found = data.get("node") or {}
            return found.get("comments") if found.get("id") == thread_id else None

        nodes.append(
            {**thread, "comments": {**comments, "nodes": _follow(comments, more_comments)}}
        )
    node["reviewThreads"] = {**threads, "nodes": nodes}
