"""The GraphQL documents as package files: each file one definition, composed at first use,
with the page sizes the module names written in them."""

from __future__ import annotations

import subprocess
import sys
from importlib import resources

import pytest
from graphql import (
    FieldNode,
    FragmentDefinitionNode,
    IntValueNode,
    OperationDefinitionNode,
    parse,
    visit,
)
from graphql.language import Visitor

from orchestrator.github import queries

FILES = sorted(
    entry.name.removesuffix(".graphql")
    for entry in resources.files(queries.__name__).iterdir()
    if entry.name.endswith(".graphql")
)


class _PageSizes(Visitor):
    """Every ``first:``/``last:`` written as a number, by the field it pages."""

    def __init__(self) -> None:
        super().__init__()
        self.sizes: dict[str, set[int]] = {}

    def enter_field(self, node: FieldNode, *_: object) -> None:
        for argument in node.arguments or ():
            if argument.name.value in ("first", "last") and isinstance(
                argument.value, IntValueNode
            ):
                self.sizes.setdefault(node.name.value, set()).add(int(argument.value.value))


def _names(text: str) -> list[str]:
    """The names of the definitions of a document, in order."""
    names = []
    for node in parse(text).definitions:
        assert isinstance(node, FragmentDefinitionNode | OperationDefinitionNode)
        assert node.name is not None
        names.append(node.name.value)
    return names


def _page_sizes(text: str) -> dict[str, set[int]]:
    sizes = _PageSizes()
    visit(parse(text), sizes)
    return sizes.sizes


@pytest.mark.parametrize("name", FILES)
def test_each_file_holds_the_one_definition_it_is_named_after(name: str) -> None:
    assert _names(queries.definition(name)) == [name]


def test_every_file_is_part_of_a_document_the_product_sends() -> None:
    sent = "".join(queries.product_documents().values())
    for name in FILES:
        assert (
            f"fragment {name} " in sent or f"query {name}(" in sent or (f"mutation {name}(" in sent)
        ), name


def test_a_document_is_its_definition_then_each_fragment_it_spreads_once() -> None:
    assert _names(queries.state_query(2)) == [
        queries.STATE_OPERATION,
        "PullRequestState",
        "ReviewFields",
        "ThreadFields",
        "ThreadCommentFields",
        "RollupFields",
        "CheckContextFields",
    ]


def test_the_opening_comment_of_a_file_is_not_sent() -> None:
    raw = resources.files(queries.__name__).joinpath("PullRequestFingerprint.graphql")
    assert raw.read_text(encoding="utf-8").startswith("#")
    assert "#" not in queries.fingerprint_query(1)


def test_the_page_sizes_the_module_names_are_the_ones_in_the_documents() -> None:
    state = _page_sizes(queries.state_query(1))
    assert state["reviews"] == {queries.STATE_REVIEWS_PAGE}
    assert state["reviewThreads"] == {queries.STATE_THREADS_PAGE}
    assert state["comments"] == {queries.STATE_COMMENTS_PAGE}
    assert state["contexts"] == {queries.STATE_CONTEXTS_PAGE}
    fingerprint = _page_sizes(queries.fingerprint_query(1))
    assert fingerprint["reviewThreads"] == {queries.FINGERPRINT_THREADS_PAGE}
    assert fingerprint["contexts"] == {queries.STATE_CONTEXTS_PAGE}
    documents = queries.product_documents()
    assert _page_sizes(documents["reviews_page"])["reviews"] == {queries.STATE_REVIEWS_PAGE}
    threads = _page_sizes(documents["threads_page"])["reviewThreads"]
    assert threads == {queries.STATE_THREADS_PAGE}
    comments = _page_sizes(documents["thread_comments_page"])["comments"]
    assert comments == {queries.THREAD_COMMENTS_PAGE_SIZE}
    checks = _page_sizes(documents["head_checks_page"])["contexts"]
    assert checks == {queries.STATE_CONTEXTS_PAGE}


def test_the_document_names_of_the_module_stay_readable() -> None:
    state = queries.STATE_FRAGMENT
    assert state == queries.document("PullRequestState")
    assert _names(state)[:2] == ["PullRequestState", "ReviewFields"]
    assert _names(queries.THREAD_FIELDS) == ["ThreadFields"]
    assert _names(queries.RESOLVE_REVIEW_THREAD) == [queries.RESOLVE_THREAD_OPERATION]
    with pytest.raises(AttributeError, match="NO_SUCH_DOCUMENT"):
        getattr(queries, "NO_SUCH_DOCUMENT")  # noqa: B009


def test_importing_the_module_reads_no_document() -> None:
    code = (
        "from orchestrator.github import queries\n"
        "assert queries.definition.cache_info().currsize == 0\n"
        "queries.resolve_thread_request('T')\n"
        "assert queries.definition.cache_info().currsize == 1\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
