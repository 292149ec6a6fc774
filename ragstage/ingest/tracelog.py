"""A trace logger for hand-rolled pipelines: one valid trace per request, appended atomically.

A team without tracing can start logging the minimum fields of *Diagnosing RAG Failure Modes* today::

    log = TraceLogger("logs/traces.jsonl", pipeline="bm25-v2", model="my-model", prompt_version="p3")
    log.log(query_id=rid, query=q, retrieved=[(pid, score, section), ...], prompt=ids_in_prompt, answer=a)

Each call validates the record with the trace reader's own rules (a bad field, such as a NaN
score, fails at the call, not months later at replay) and appends one whole line with
:func:`ragstage.atomic.append_line`, so lines from several threads or processes do not
interleave, and a line torn by a killed writer is cut before the next trace goes in.

``redact=True`` replaces the query and answer text by a keyed digest (HMAC-SHA-256 under a
secret the user supplies: equal texts stay equal under one key, and without the key a
guessed question cannot be confirmed), and removes every copy of either text from the rest
of the trace (see :func:`scrub`); a function can be given instead of the digest.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import threading
import uuid
import warnings
from datetime import datetime, timezone
from functools import partial
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import orjson

from ..atomic import append_line
from ..trace import Trace

__all__ = ["TraceLogger", "redact_digest", "append_line", "scrub", "REDACT_KEY_ENV"]

#: The environment variable :class:`TraceLogger` reads the redaction key from when none is passed.
REDACT_KEY_ENV = "RAGSTAGE_REDACT_KEY"


def redact_digest(text: str, key: bytes | str) -> str:
    """``hmac-sha256:<32 hex digits>`` of the text under ``key``: equal texts stay equal, nothing is readable.

    Keyed, so that whoever holds the file but not the key cannot confirm a guessed question
    by hashing it (an unkeyed digest of a short question is a dictionary lookup away).
    """
    secret = key.encode("utf-8") if isinstance(key, str) else key
    return "hmac-sha256:" + hmac.new(secret, text.encode("utf-8"), hashlib.sha256).hexdigest()[:32]


def _copies(text: str) -> re.Pattern[str] | None:
    """Copies of ``text`` in other strings: any case, any run of whitespace between its words."""
    words = text.split()
    if not words:
        return None
    body = r"\s+".join(map(re.escape, words))
    start = r"(?<!\w)" if re.match(r"\w", words[0]) else ""
    end = r"(?!\w)" if re.search(r"\w$", words[-1]) else ""
    return re.compile(start + body + end, re.IGNORECASE)


def scrub(value: Any, texts: Sequence[str], redact: Callable[[str], str]) -> Any:
    """``value`` with every copy of each of ``texts`` (see :func:`_copies`) replaced by ``redact(text)``.

    Walks strings, and the keys and values of dicts and lists, to any depth: how the logger
    redacts ``meta``, ``error``, section names and the provenance fields.
    """
    patterns = [(p, redact(t)) for t in sorted(set(texts), key=len, reverse=True) if (p := _copies(t))]
    if not patterns:
        return value

    def walk(node: Any) -> Any:
        if isinstance(node, str):
            for pattern, digest in patterns:
                node = pattern.sub(digest, node)
            return node
        if isinstance(node, dict):
            return {walk(k): walk(v) for k, v in node.items()}
        if isinstance(node, (list, tuple)):
            return [walk(v) for v in node]
        return node

    return walk(value)


def _ranked(items: Iterable[Any] | None) -> list[Any] | None:
    """Ids, ``(id, score)``, ``(id, score, section)`` tuples or ``{"id", "score"}`` dicts, as
    the trace format's ranked list."""
    if items is None:
        return None
    out: list[Any] = []
    for item in items:
        if isinstance(item, (tuple, list)):
            entry: dict[str, Any] = {"id": item[0]}
            if len(item) > 1 and item[1] is not None:
                entry["score"] = item[1]
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
    """Append one trace per request to a JSON Lines file (see the module docstring).

    ``redact``: False (texts kept), True (the keyed digest :func:`redact_digest`, under
    ``redact_key`` or else the ``RAGSTAGE_REDACT_KEY`` environment variable; one of them is
    required), or a function of the text. Redaction covers the query and the answer and every
    copy of either in the query id, pipeline, model, prompt version, ``meta`` (keys and
    values), ``error`` and section names; passage ids are kept as logged.
    """

    def __init__(self, path: str | Path, pipeline: str = "default", model: str | None = None,
                 prompt_version: str | None = None, redact: bool | Callable[[str], str] = False,
                 redact_key: bytes | str | None = None) -> None:
        self.path = Path(path)
        self.pipeline, self.model, self.prompt_version = pipeline, model, prompt_version
        self._redact: Callable[[str], str] | None = (_keyed(redact_key) if redact is True
                                                     else (redact or None))
        self._lock = threading.Lock()
        self._seen: set[str] = set()
        self.torn_bytes = 0  # bytes of torn last lines (killed writers) cut before appending
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
            "query": query,
            "retrieved": _ranked(retrieved), "reranked": _ranked(reranked),
            "prompt": _as_list(prompt),
            "prompt_source": None if prompt is None else "logged",
            "answer": answer,
            "gold": _as_list(gold),
            "model": model or self.model, "prompt_version": prompt_version or self.prompt_version,
            "timestamp": timestamp or datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace(
                "+00:00", "Z"),
            "meta": dict(meta or {}),
            **fields,
        }
        if redact:
            record = _redacted(record, redact)
        trace = Trace.from_dict(record)
        line = orjson.dumps(trace.to_dict()) + b"\n"
        with self._lock:
            if trace.query_id in self._seen:
                raise ValueError(f"query_id {trace.query_id!r} was already logged to {self.path} by this logger")
            cut = append_line(self.path, line)
            self._seen.add(trace.query_id)
        if cut:
            self.torn_bytes += cut
            warnings.warn(f"{self.path}: cut a torn last line ({cut} bytes, a write that was interrupted) "
                          "before appending", stacklevel=2)
        return trace


def _keyed(key: bytes | str | None) -> Callable[[str], str]:
    key = key if key is not None else os.environ.get(REDACT_KEY_ENV)
    if not key:
        raise ValueError(f"redact=True needs a secret key: pass redact_key=... or set {REDACT_KEY_ENV} "
                         "(without one, anyone could confirm a guessed question by hashing it)")
    return partial(redact_digest, key=key)


# Fields that can hold a copy of the query or answer text; passage ids and the timestamp are kept.
_SCRUBBED = ("query_id", "pipeline", "model", "prompt_version", "meta", "error")


def _redacted(record: dict[str, Any], redact: Callable[[str], str]) -> dict[str, Any]:
    texts = [t for t in (record["query"], record["answer"]) if isinstance(t, str)]
    out = dict(record)
    for name in ("query", "answer"):
        if isinstance(out[name], str):
            out[name] = redact(out[name])
    for name in _SCRUBBED:
        if out.get(name) is not None:
            out[name] = scrub(out[name], texts, redact)
    for stage in ("retrieved", "reranked"):
        entries = out.get(stage)
        if isinstance(entries, list):
            out[stage] = [{**e, "section": scrub(e["section"], texts, redact)}
                          if isinstance(e, dict) and isinstance(e.get("section"), str) else e for e in entries]
    if isinstance(out["meta"], dict):  # anything else is left for the trace check to name
        out["meta"] = {**out["meta"], "redacted": ["query", "answer"]}
    return out
