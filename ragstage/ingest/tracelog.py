"""A trace logger for hand-rolled pipelines: one valid trace per request, appended atomically.

A team without tracing can start logging the minimum fields of *Diagnosing RAG Failure Modes* today::

    log = TraceLogger("logs/traces.jsonl", pipeline="bm25-v2", model="my-model", prompt_version="p3")
    log.log(query_id=rid, query=q, retrieved=[(pid, score, section), ...], prompt=ids_in_prompt, answer=a)

Each call validates the record with the trace reader's own rules (a bad field, such as a NaN
score, fails at the call, not months later at replay) and appends one whole line with
:func:`ragstage.atomic.append_line`, so lines from several threads or processes do not
interleave, and a line torn by a killed writer is cut before the next trace goes in.

Several loggers may share one file (two web workers, an app restarted): before each append,
under the file's lock, the logger reads what the others appended since its last look, and a
(query id, pipeline) already in the file is refused at the call, since every trace reader
refuses a file that repeats one. A log that repeats some anyway (written by an older version,
or by a writer that does not check) is read with :func:`read_log`, which keeps the last trace
of each question or keeps each under its timestamp, and says how many it dropped or renamed.

``redact=True`` replaces the query and answer text by a keyed digest (HMAC-SHA-256 under a
secret the user supplies: equal texts stay equal under one key, and without the key a
guessed question cannot be confirmed), and removes every copy of either text from the rest
of the trace (see :func:`scrub`); a function can be given instead of the digest.
"""

from __future__ import annotations

import hashlib
import hmac
import math
import os
import re
import threading
import uuid
import warnings
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import partial
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import orjson

from ..atomic import append_line, locked
from ..errors import TraceError
from ..trace import MAX_LINE_BYTES, Trace, load_trace_line

__all__ = ["TraceLogger", "redact_digest", "append_line", "scrub", "REDACT_KEY_ENV", "read_log", "LogRead"]

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
        # (query_id, pipeline) -> line, for every line of the file read so far; which file, and how far
        self._in_file: dict[tuple[str, str], int] = {}
        self._file: tuple[int, int] | None = None
        self._scanned = self._lines = 0
        self.torn_bytes = 0  # bytes of torn last lines (killed writers) cut before appending
        self.path.parent.mkdir(parents=True, exist_ok=True)

    def log(self, *, query: str, retrieved: Sequence[Any], prompt: Sequence[str] | None, answer: str,
            query_id: str | None = None, reranked: Sequence[Any] | None = None, gold: Sequence[str] = (),
            model: str | None = None, prompt_version: str | None = None, timestamp: str | None = None,
            meta: Mapping[str, Any] | None = None, **fields: Any) -> Trace:
        """Validate and append one trace; returns it. ``fields`` are any other trace fields
        (``correct``, ``answer_ids``, ``error``, ...). A query id used twice by this logger is
        an error (the reader would reject the file), whichever logger or process wrote it first;
        so is a ``meta`` value JSON cannot hold exactly (NaN, infinity, an integer beyond 64 bits)."""
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
        _check_meta(record["meta"])
        trace = Trace.from_dict(record)
        line = orjson.dumps(trace.to_dict()) + b"\n"
        key = (trace.query_id, trace.pipeline)
        with self._lock:
            cut = append_line(self.path, line, check=lambda fd: self._refuse_repeat(fd, key))
        if cut:
            self.torn_bytes += cut
            warnings.warn(f"{self.path}: cut a torn last line ({cut} bytes, a write that was interrupted) "
                          "before appending", stacklevel=2)
        return trace


    def _refuse_repeat(self, fd: int, key: tuple[str, str]) -> None:
        """Under the file's lock: note the keys of the lines appended since the last look, and
        refuse ``key`` when a line holds it already. A file replaced or cut (log rotation) is read anew."""
        info = os.fstat(fd)
        if (info.st_dev, info.st_ino) != self._file or info.st_size < self._scanned:
            self._file, self._scanned, self._lines, self._in_file = (info.st_dev, info.st_ino), 0, 0, {}
        size = 1 << 22
        while self._scanned < info.st_size:
            chunk = os.pread(fd, min(size, info.st_size - self._scanned), self._scanned)
            end = chunk.rfind(b"\n") + 1
            step = end
            if not end:  # a line longer than the chunk, or the last line without its newline
                if self._scanned + len(chunk) < info.st_size:
                    size *= 2
                    continue
                end, step = len(chunk), len(chunk) + 1  # a whole record: its newline comes before the next line
            for piece in chunk[:end].splitlines():
                self._lines += 1
                try:
                    value = orjson.loads(piece)
                    self._in_file.setdefault((value["query_id"], value.get("pipeline", "default")), self._lines)
                except (orjson.JSONDecodeError, TypeError, KeyError, AttributeError):
                    continue  # not a trace: the readers name it; it holds no key to repeat
            self._scanned += step
        if key in self._in_file:
            raise ValueError(f"query_id {key[0]!r} (pipeline {key[1]!r}) was already logged to {self.path} "
                             f"(line {self._in_file[key]}): every reader would refuse a repeat; not logged")
        self._in_file[key] = self._lines + 1


def _check_meta(meta: Any) -> None:
    """Refuse a ``meta`` value JSON would not keep: NaN and infinities (written as null) and
    integers beyond 64 bits (no JSON library of the readers keeps them exactly)."""
    stack: list[tuple[Any, str]] = [(meta, "meta")]
    while stack:
        node, where = stack.pop()
        if isinstance(node, float) and not math.isfinite(node):
            raise ValueError(f"{where}: {node} is not a number JSON can hold (it would be written as null); "
                             "not logged: log it as a string, or leave it out")
        if isinstance(node, int) and not isinstance(node, bool) and not -(1 << 63) <= node < (1 << 64):
            raise ValueError(f"{where}: the integer {node} is beyond 64 bits (readers would turn it into a "
                             "rounded float); not logged: log it as a string")
        if isinstance(node, dict):
            stack.extend((v, f"{where}[{k!r}]") for k, v in node.items())
        elif isinstance(node, (list, tuple)):
            stack.extend((v, f"{where}[{i}]") for i, v in enumerate(node))


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


@dataclass(frozen=True)
class LogRead:
    """A trace log read with :func:`read_log`: its traces, and what was done to the repeats."""

    traces: list[Trace]
    lines: int  # traces read from the file
    repeated: int  # (query_id, pipeline) keys met on more than one line
    dropped: int  # lines left out (keep="last")
    renamed: int  # lines whose query_id got "@<timestamp>" (keep="each")
    torn_bytes: int  # a last line cut short by a killed writer, not read

    @property
    def note(self) -> str:
        """One line saying what the reader did, with its counts."""
        done = (f"kept the last of each, left out {self.dropped} earlier line(s)" if self.dropped
                else f"kept each, their query_id followed by '@' and the timestamp ({self.renamed} line(s))"
                if self.renamed else "nothing to do")
        torn = f"; a torn last line ({self.torn_bytes} bytes, a killed writer's) not read" if self.torn_bytes else ""
        return (f"{self.lines} traces read, {len(self.traces)} kept; {self.repeated} question(s) logged more "
                f"than once: {done}{torn}")


def read_log(path: str | Path, keep: str = "last") -> LogRead:
    """Every trace of a trace log that may repeat a (query_id, pipeline), as one trace per key.

    ``keep="last"``: the last line of each key (a retried request, an app restarted); the
    earlier ones are left out. ``keep="each"``: every line, a repeated key's ``query_id``
    becoming ``<query_id>@<timestamp>`` (``@line<N>`` without a timestamp or when that still
    repeats). The result's ``note`` says what was done, with counts; ``write_traces`` turns it
    into a file every reader takes. The file is read under its shared lock, so no line is half
    written; a torn last line (a killed writer's) is counted and left out. Any other bad line
    is a :class:`~ragstage.trace.TraceError` naming the file, the line and the field.
    """
    if keep not in ("last", "each"):
        raise ValueError(f"keep must be 'last' or 'each', got {keep!r}")
    read: list[tuple[int, Trace]] = []
    torn = 0
    with open(path, "rb") as handle, locked(handle, exclusive=False):
        for lineno, line in enumerate(iter(lambda: handle.readline(MAX_LINE_BYTES + 1), b""), start=1):
            if not line.strip():
                continue
            try:
                read.append((lineno, Trace.from_dict(load_trace_line(line))))
            except orjson.JSONDecodeError as exc:
                if not line.endswith(b"\n"):
                    torn = len(line)
                    break
                raise TraceError(f"invalid JSON ({exc})", path=str(path), line=lineno) from None
            except TraceError as exc:
                raise TraceError(exc.detail, path=str(path), line=lineno, field=exc.field) from None
    lines: dict[tuple[str, str], list[int]] = {}
    for i, (_, trace) in enumerate(read):
        lines.setdefault((trace.query_id, trace.pipeline), []).append(i)
    repeated = [at for at in lines.values() if len(at) > 1]
    if keep == "last":
        left_out = {i for at in repeated for i in at[:-1]}
        kept = [t for i, (_, t) in enumerate(read) if i not in left_out]
        return LogRead(kept, len(read), len(repeated), len(left_out), 0, torn)
    taken = set(lines)
    renamed = {}
    for at in repeated:
        for i in at:
            lineno, trace = read[i]
            new = f"{trace.query_id}@{trace.timestamp}" if trace.timestamp else f"{trace.query_id}@line{lineno}"
            if (new, trace.pipeline) in taken:
                new = f"{trace.query_id}@line{lineno}"
            taken.add((new, trace.pipeline))
            renamed[i] = Trace.from_dict({**trace.to_dict(), "query_id": new})
    kept = [renamed.get(i, t) for i, (_, t) in enumerate(read)]
    return LogRead(kept, len(read), len(repeated), 0, len(renamed), torn)
