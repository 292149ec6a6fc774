"""Spans into requests as they stream in: each trace is read as soon as no later span can join it.

Ingest groups spans by trace id (one trace id = one request), and a request can only be read
once all its spans are in. Holding every span until the end of the input makes memory grow
with the export (a week of traffic is millions of spans). An OTLP JSON Lines file is first
scanned for the trace ids it names, which finds, for every trace, the last line holding one
of its spans; the spans are then parsed line by line and each trace is handed on right after
its last line. The scan reads bytes (a search for the ``"traceId"`` key, no JSON parsing), so
it costs a fraction of the parse; spans of one trace may sit on lines far apart, and the
result is the same as reading the whole file first, only held for less time.

Inputs that cannot be scanned (a single JSON document, Phoenix or MLflow exports, objects)
are held whole, as before: every trace is handed on at the end. Requests come out in the
order their trace id was first seen, whatever order they were completed in.
"""

from __future__ import annotations

import gzip
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO

import orjson

from .otlp import hex_id
from .spans import Span, SpanError

__all__ = ["trace_last_lines", "TraceGroups", "is_json_lines"]

_KEYS = (b'"traceId"', b'"trace_id"')


def is_json_lines(path: str | Path) -> bool:
    """True when the first non-blank line of the file is one JSON value (the reader's own test
    for JSON Lines against one pretty-printed document)."""
    p = Path(path)
    opener = gzip.open if p.suffix == ".gz" else open
    try:
        with opener(p, "rb") as handle:
            for line in handle:
                if line.strip():
                    orjson.loads(line)
                    return True
    except (orjson.JSONDecodeError, OSError, EOFError):
        return False
    return False


def _ids_in(data: bytes, key: bytes, line_of: Callable[[int], int]) -> Iterator[tuple[bytes, int]]:
    """``(raw trace id, line)`` for every ``"<key>": "..."`` in ``data``, in file order.

    Inside a JSON string every quote is escaped, so a quoted key followed by a colon is an
    object key; a ``traceId`` of a span link is found too (it only keeps a trace longer)."""
    at = data.find(key)
    while at >= 0:
        end = at + len(key)
        quote = data.find(b'"', end)
        if quote < 0:
            return
        if data[end:quote].strip() == b":":
            close = data.find(b'"', quote + 1)
            if close < 0:
                return
            yield data[quote + 1:close], line_of(at)
            at = data.find(key, close)
        else:
            at = data.find(key, end)


def _line_counter(data: bytes, first: int = 1) -> Callable[[int], int]:
    """``offset -> line number`` for increasing offsets (lines counted from ``first``)."""
    state = {"line": first, "next": data.find(b"\n")}

    def line_of(offset: int) -> int:
        while 0 <= state["next"] < offset:
            state["line"] += 1
            state["next"] = data.find(b"\n", state["next"] + 1)
        return state["line"]

    return line_of


def _blocks(handle: IO[bytes], size: int = 1 << 23) -> Iterator[bytes]:
    """The stream in blocks of whole lines (about ``size`` bytes; a longer line is one block)."""
    rest = b""
    while chunk := handle.read(size):
        data = rest + chunk
        cut = data.rfind(b"\n") + 1
        if cut == 0:
            rest = data
            continue
        yield data[:cut]
        rest = data[cut:]
    if rest:
        yield rest


def trace_last_lines(path: str | Path, block_size: int = 1 << 23) -> dict[str, int]:
    """``trace id -> the last line naming it`` in an OTLP JSON Lines file (``.gz`` too).

    The file is read in blocks of whole lines, ``block_size`` bytes or so (not mapped: a mapped
    file's pages count as the process's memory). Ids are normalised as the reader normalises
    them (lower-case hex; base64 decoded); a value that is no trace id is skipped (the parse
    reports it, naming its line)."""
    p = Path(path)
    last: dict[bytes, int] = {}
    first_line = 1
    with (gzip.open(p, "rb") if p.suffix == ".gz" else open(p, "rb")) as handle:
        for block in _blocks(handle, block_size):
            for key in _KEYS:  # one key's matches come in file order, so the last one seen is the last
                for raw, lineno in _ids_in(block, key, _line_counter(block, first_line)):
                    last[raw] = max(lineno, last.get(raw, 0))
            first_line += block.count(b"\n")
    out: dict[str, int] = {}
    for raw, lineno in last.items():
        try:
            trace_id = hex_id(raw.decode("ascii"), 32, "traceId")
        except (SpanError, UnicodeDecodeError):
            continue
        out[trace_id] = max(lineno, out.get(trace_id, 0))
    return out


class TraceGroups:
    """Spans by trace id, each trace handed on (:meth:`add` returns it) once it is complete.

    ``last`` maps ``(source, line)`` positions to the trace ids whose last span sits there
    (None: unknown, every trace is complete only at :meth:`finish`). ``seq`` numbers traces in
    the order first seen, which is the order requests come out in.
    """

    def __init__(self, closing: dict[tuple[int, int], list[str]] | None) -> None:
        self.closing = closing
        self.open: dict[str, list[Span]] = {}
        self.seq: dict[str, int] = {}
        self.closed: set[str] = set()

    def add(self, source: int, line: int, spans: Iterable[Span], where: str) -> Iterator[tuple[int, str, list[Span]]]:
        """Take one line's spans; ``(seq, trace id, spans)`` of every trace that line completes."""
        groups, seq = self.open, self.seq
        for span in spans:
            group = groups.get(span.trace_id)
            if group is None:
                if span.trace_id in self.closed:
                    raise SpanError(f"trace {span.trace_id} has a span after the line the trace-id scan found last; "
                                    "its trace id is written in a form the scan does not read", path=where,
                                    line=line, field="traceId")
                group = groups[span.trace_id] = []
                if span.trace_id not in seq:
                    seq[span.trace_id] = len(seq)
            group.append(span)
        if self.closing is not None:
            for trace_id in self.closing.pop((source, line), ()):
                group = groups.pop(trace_id, None)
                if group is not None:
                    self.closed.add(trace_id)
                    yield seq[trace_id], trace_id, group

    def finish(self) -> Iterator[tuple[int, str, list[Span]]]:
        """Every trace still open, in the order first seen."""
        groups, self.open = self.open, {}
        for trace_id, group in groups.items():
            yield self.seq[trace_id], trace_id, group
