"""Memos for what the ingest works out again and again: where an attribute key goes, a
metadata text decoded, a passage's normalised text and id, a second's ISO text.

Each is a plain dict emptied when full. The same keys come back request after request (a
corpus's chunks, an instrumentor's attribute names), so almost every lookup hits; keys that never
come back (ids in key names, unique texts) must not pile up; and an LRU's bookkeeping on every
lookup costs more than working a value out again after the rare reset.
"""

from __future__ import annotations

from typing import TypeVar

__all__ = ["remember", "MEMO_SIZE"]

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
