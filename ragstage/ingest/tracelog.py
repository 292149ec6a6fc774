"""A trace logger for hand-rolled pipelines: one valid trace per request, appended atomically.

A team without tracing can start logging the minimum fields of *Diagnosing RAG Failure Modes* today::

    log = TraceLogger("logs/traces.jsonl", pipeline="bm25-v2", model="my-model", prompt_version="p3")
    log.log(query_id=rid, query=q, retrieved=[(pid, score, section), ...], prompt=ids_in_prompt, answer=a)

Each call validates the record with the trace reader's own rules (a bad field fails at the
call, not months later at replay) and appends one line with a single ``write`` on a file
opened for appending, so lines from several threads or processes do not interleave.
``redact=True`` replaces the query and answer text by a digest (still comparable between
runs, never readable); a function can be given instead.
"""

from __future__ import annotations

import hashlib
import os
import threading
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import orjson

from ..trace import Trace

__all__ = ["TraceLogger", "redact_digest", "append_line"]


def append_line(path: str | Path, line: bytes) -> None:
    """Append one line with a single ``write`` on a descriptor opened with ``O_APPEND``.

    POSIX appends each such write whole at the end of the file, so concurrent writers (threads
    or processes) never interleave their lines; a short write is reported, not ignored.
    """
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        written = os.write(fd, line)
    finally:
        os.close(fd)
    if written != len(line):
        raise OSError(f"{path}: only {written} of {len(line)} bytes appended")


def redact_digest(text: str) -> str:
    """``sha256:<first 16 hex digits>`` of the text: equal texts stay equal, nothing is readable."""
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _ranked(items: Iterable[Any] | None) -> list[Any] | None:
    """Ids, ``(id, score)``, ``(id, score, section)`` tuples or ``{"id", "score"}`` dicts, as
    the trace format's ranked list."""
    if items is None:
        return None
    out: list[Any] = []
    for item in items:
        if isinstance(item, (tuple, list)):
            entry: dict[str, Any] = {"id": item[0], "score": item[1]}
            if len(item) > 2 and item[2] is not None:
                entry["section"] = item[2]
            out.append(entry)
        else:
            out.append(item)
    return out


def _as_list(ids: Any) -> Any:
    """Tuples and lists as lists; anything else as given, so the trace check rejects it (a
    string must fail as ``gold``, not turn into a list of its characters)."""
    return list(ids) if isinstance(ids, (list, tuple)) else ids


class TraceLogger:
    """Append one trace per request to a JSON Lines file (see the module docstring)."""

    def __init__(self, path: str | Path, pipeline: str = "default", model: str | None = None,
                 prompt_version: str | None = None, redact: bool | Callable[[str], str] = False) -> None:
        self.path = Path(path)
        self.pipeline, self.model, self.prompt_version = pipeline, model, prompt_version
        self._redact: Callable[[str], str] | None = redact_digest if redact is True else (redact or None)
        self._lock = threading.Lock()
        self._seen: set[str] = set()
        self.path.parent.mkdir(parents=True, exist_ok=True)

    def log(self, *, query: str, retrieved: Sequence[Any], prompt: Sequence[str] | None, answer: str,
            query_id: str | None = None, reranked: Sequence[Any] | None = None, gold: Sequence[str] = (),
            model: str | None = None, prompt_version: str | None = None, timestamp: str | None = None,
            meta: Mapping[str, Any] | None = None, **fields: Any) -> Trace:
        """Validate and append one trace; returns it. ``fields`` are any other trace fields
        (``correct``, ``answer_ids``, ``error``, ...). A query id used twice by this logger is
        an error (the reader would reject the file)."""
        qid = query_id if query_id is not None else uuid.uuid4().hex
        redact = self._redact
        record = {
            "query_id": qid, "pipeline": self.pipeline,
            "query": redact(query) if redact else query,
            "retrieved": _ranked(retrieved), "reranked": _ranked(reranked),
            "prompt": _as_list(prompt),
            "prompt_source": None if prompt is None else "logged",
            "answer": redact(answer) if redact else answer,
            "gold": _as_list(gold),
            "model": model or self.model, "prompt_version": prompt_version or self.prompt_version,
            "timestamp": timestamp or datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace(
                "+00:00", "Z"),
            "meta": {**(meta or {}), **({"redacted": ["query", "answer"]} if redact else {})},
            **fields,
        }
        trace = Trace.from_dict(record)
        line = orjson.dumps(trace.to_dict()) + b"\n"
        with self._lock:
            if qid in self._seen:
                raise ValueError(f"query_id {qid!r} was already logged to {self.path} by this logger")
            append_line(self.path, line)
            self._seen.add(qid)
        return trace
