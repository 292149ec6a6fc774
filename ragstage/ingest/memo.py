"""Memos for what the ingest works out again and again: where an attribute key goes, a
metadata text decoded, a passage's normalised text and id, a second's ISO text.

One :class:`IngestCache` holds them for one ingest (each process reading a part has its own), so
nothing an ingest learned outlives it or leaks into another ingest in the same process.

Each is a plain dict emptied when full. The same keys come back request after request (a
corpus's chunks, an instrumentor's attribute names), so almost every lookup hits; keys that never
come back (ids in key names, unique texts) must not pile up; and an LRU's bookkeeping on every
lookup costs more than working a value out again after the rare reset.
"""

from __future__ import annotations

from typing import TypeVar

__all__ = ["remember", "MEMO_SIZE", "IngestCache"]

K = TypeVar("K")
V = TypeVar("V")

#: Entries a memo holds before it is emptied.
MEMO_SIZE = 1 << 14


def remember(memo: dict[K, V], key: K, value: V, size: int = MEMO_SIZE) -> V:
    """Keep ``value`` under ``key`` in ``memo``, emptying the memo first when it holds ``size``
    entries; returns ``value``."""
    if len(memo) >= size:
        memo.clear()
    memo[key] = value
    return value


class IngestCache:
    """The memos of one ingest, each a plain dict that :func:`remember` empties when full."""

    __slots__ = ("places", "slots", "metadata", "passages", "seconds")

    def __init__(self) -> None:
        self.places: dict = {}  # attribute key -> its place (openinference.attribute_groups)
        self.slots: dict = {}  # list slot -> the one object for it
        self.metadata: dict = {}  # document.metadata JSON text -> its decoded scalars
        self.passages: dict = {}  # passage text -> (normalised text, id made from it)
        self.seconds: dict = {}  # Unix second -> its ISO text without offset
