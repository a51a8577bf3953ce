"""What the issue feed keeps, and its state as plain data: what a leader saves, a start resumes.

:func:`export_state` turns a feed's state into lists, strings and numbers (JSON
as it is); :func:`read_state` checks such data field by field before a feed
takes it, and a ValueError names the field that is malformed.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any


@dataclass(frozen=True, slots=True)
class FeedItem:
    """An issue or pull request as the feed keeps it."""

    number: int
    is_pull_request: bool
    is_open: bool
    title: str
    labels: frozenset[str]
    created_at: str
    updated_at: str

    @classmethod
    def of(cls, data: dict[str, Any]) -> FeedItem:
        return cls(
            number=int(data["number"]),
            is_pull_request="pull_request" in data,
            is_open=data.get("state") == "open",
            title=str(data.get("title") or ""),
            labels=frozenset(str(label["name"]) for label in data.get("labels") or ()),
            created_at=str(data["created_at"]),
            updated_at=str(data.get("updated_at") or data["created_at"]),
        )


# The incremental window's pages: URL -> (ETag, next page's URL).
Pages = dict[str, tuple[str | None, str | None]]


@dataclass(frozen=True)
class SavedFeed:
    """A feed's state read back from plain data."""

    watched: frozenset[str]
    newest: str
    since: str | None
    pages: Pages
    pinned: set[int]
    items: dict[int, FeedItem]


def parse_time(value: str) -> datetime:
    """A GitHub timestamp (``2024-01-02T03:04:05Z``) as an aware datetime."""
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def format_time(value: datetime) -> str:
    """A datetime as GitHub writes timestamps."""
    return value.strftime("%Y-%m-%dT%H:%M:%SZ")


def export_state(
    *,
    repo: str,
    required_labels: Collection[str],
    watched: Collection[str],
    newest: str,
    since: str | None,
    pages: Mapping[str, tuple[str | None, str | None]],
    pinned: Collection[int],
    items: Iterable[FeedItem],
) -> dict[str, Any]:
    """A warm feed's state as plain data, for :func:`read_state`."""
    return {
        "repo": repo,
        "required_labels": sorted(required_labels),
        "watched": sorted(watched),
        "newest": newest,
        # The incremental window and its pages' ETags: a quiet restart's first
        # read is then the same conditional pages, answered 304.
        "since": since,
        "pages": [[url, etag, after] for url, (etag, after) in pages.items()],
        "pinned": sorted(pinned),
        "items": [
            [
                item.number,
                item.is_pull_request,
                item.is_open,
                item.title,
                sorted(item.labels),
                item.created_at,
                item.updated_at,
            ]
            for item in items
        ],
    }


def belongs(state: dict[str, Any], repo: str, required_labels: Collection[str]) -> bool:
    """Whether a saved state is of the feed of ``repo`` with these required labels."""
    if state.get("repo") != repo:
        return False
    return set(state.get("required_labels") or ()) == set(required_labels)


def read_state(state: dict[str, Any]) -> SavedFeed:
    """The state :func:`export_state` made; ValueError names what is malformed."""
    newest = _timestamp(state.get("newest"), "newest")
    items = {}
    for index, raw in enumerate(as_list(state.get("items"))):
        item = _item(raw, f"items[{index}]")
        items[item.number] = item
    pinned = {int(n) for n in as_list(state.get("pinned")) if isinstance(n, int)}
    since = state.get("since")
    if since is not None:
        _timestamp(since, "since")
    pages: Pages = {}
    for index, page in enumerate(as_list(state.get("pages"))):
        if (
            not isinstance(page, list)
            or len(page) != 3
            or not isinstance(page[0], str)
            or not all(part is None or isinstance(part, str) for part in page[1:])
        ):
            raise ValueError(f"pages[{index}]: not a page of [url, etag, next url]")
        pages[page[0]] = (page[1], page[2])
    watched = frozenset(str(label) for label in as_list(state.get("watched")))
    return SavedFeed(watched, newest, since, pages, pinned, items)


def as_list(data: Any) -> list[Any]:
    """``data`` if it is a list (a page of an answer), else an empty one."""
    return data if isinstance(data, list) else []


def _timestamp(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{where}: not a timestamp: {value!r}")
    try:
        parse_time(value)
    except ValueError:
        raise ValueError(f"{where}: not a timestamp: {value!r}") from None
    return value


def _item(raw: Any, where: str) -> FeedItem:
    """An item of an exported state: [number, is_pr, is_open, title, labels, created, updated]."""
    if not isinstance(raw, list) or len(raw) != 7:
        raise ValueError(f"{where}: not an item of seven fields")
    number, is_pr, is_open, title, labels, created_at, updated_at = raw
    if not isinstance(number, int) or isinstance(number, bool) or number < 1:
        raise ValueError(f"{where}: number: not a positive integer: {number!r}")
    if not isinstance(is_pr, bool) or not isinstance(is_open, bool):
        raise ValueError(f"{where}: is_pull_request and is_open must be booleans")
    if not isinstance(title, str) or not isinstance(labels, list):
        raise ValueError(f"{where}: title must be text and labels a list")
    return FeedItem(
        number=number,
        is_pull_request=is_pr,
        is_open=is_open,
        title=title,
        labels=frozenset(str(label) for label in labels),
        created_at=_timestamp(created_at, f"{where}: created_at"),
        updated_at=_timestamp(updated_at, f"{where}: updated_at"),
    )
