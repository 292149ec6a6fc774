"""Append-only JSON Lines stores: the caches that let an interrupted run resume.

Each finished item is appended as one whole line (:func:`ragstage.atomic.append_line`: one
``os.write`` on an ``O_APPEND`` descriptor under an exclusive lock), so several processes
may share a cache folder and a killed process loses at most the line it was writing. On
open, every intact line is kept, wherever a damaged line sits, and the damaged ones are
counted in :attr:`JsonlStore.torn_lines` and reported with a warning: their items are
simply computed again. A torn last line is cut before the next append, so new lines never
glue onto a fragment.
"""

from __future__ import annotations

import hashlib
import warnings
from pathlib import Path
from typing import Any, Iterator

import orjson

from ..atomic import append_line, locked

__all__ = ["JsonlStore", "TornLinesWarning", "config_key"]


class TornLinesWarning(UserWarning):
    """A cache file held lines that are not whole records (a writer was killed mid-line)."""


def config_key(config: Any, length: int = 16) -> str:
    """A short, stable hash of a JSON-serialisable configuration (sorted keys)."""
    blob = orjson.dumps(config, option=orjson.OPT_SORT_KEYS)
    return hashlib.sha256(blob).hexdigest()[:length]


class JsonlStore:
    """A ``key -> value`` map persisted as lines of ``{"key": ..., "value": ...}``.

    A later line for the same key wins (a re-computed item simply appends).
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._data: dict[str, Any] = {}
        self.torn_lines = 0
        self._load()

    def _load(self) -> None:
        try:
            handle = open(self.path, "rb")  # noqa: SIM115 - closed below, after the lock
        except FileNotFoundError:
            return
        with handle, locked(handle, exclusive=False):  # no half-written line of a live writer is seen
            raw = handle.read()
        for line in raw.splitlines(keepends=True):
            if not line.strip():
                continue
            try:
                if not line.endswith(b"\n"):
                    raise ValueError("no newline: the write was interrupted")
                record = orjson.loads(line)
                self._data[record["key"]] = record["value"]
            except (ValueError, KeyError, TypeError):
                self.torn_lines += 1
        if self.torn_lines:
            warnings.warn(f"{self.path}: {self.torn_lines} torn line(s) skipped (a write was interrupted); "
                          f"{len(self._data)} cached item(s) kept, the lost ones are computed again",
                          TornLinesWarning, stacklevel=3)

    def __contains__(self, key: str) -> bool:
        return key in self._data

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __len__(self) -> int:
        return len(self._data)

    def get(self, key: str, default: Any = None) -> Any:
        return self._data.get(key, default)

    def items(self) -> Iterator[tuple[str, Any]]:
        return iter(self._data.items())

    def put(self, key: str, value: Any) -> None:
        """Store one item: one whole line on disk before returning."""
        append_line(self.path, orjson.dumps({"key": key, "value": value}) + b"\n")
        self._data[key] = value
