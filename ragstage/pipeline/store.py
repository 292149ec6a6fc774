"""Append-only JSON Lines stores: the caches that let an interrupted run resume.

Each finished item is appended as one line and flushed at once, so a killed process loses
at most the line it was writing. On open, a torn last line (no newline, or not JSON) is cut
off, so the next append starts on a clean line instead of gluing onto the fragment.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Iterator

import orjson

__all__ = ["JsonlStore", "config_key"]


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
        if not self.path.exists():
            return
        good_end = 0
        with open(self.path, "rb") as handle:
            raw = handle.read()
        for line in raw.splitlines(keepends=True):
            try:
                if not line.endswith(b"\n"):
                    raise ValueError("no newline: the write was interrupted")
                record = orjson.loads(line)
                self._data[record["key"]] = record["value"]
            except (ValueError, KeyError, TypeError):
                self.torn_lines += 1
                break  # everything after a torn line is suspect; only the last can be torn
            good_end += len(line)
        if good_end < len(raw):
            with open(self.path, "r+b") as handle:
                handle.truncate(good_end)

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
        """Store one item and flush it to disk before returning."""
        with open(self.path, "ab") as handle:
            handle.write(orjson.dumps({"key": key, "value": value}) + b"\n")
            handle.flush()
        self._data[key] = value
