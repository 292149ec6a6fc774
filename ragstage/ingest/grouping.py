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
import re
from array import array
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, NamedTuple

import orjson

from ..trace import line_ranges
from ..workers import die_with_parent
from .spans import Span, SpanError, hex_id

__all__ = ["trace_lines", "scanning", "FileScan", "safe_cuts", "line_offsets", "line_regions", "TraceGroups",
           "is_json_lines"]

# ``"traceId": "<value>"`` or ``"trace_id": "<value>"``. Inside a JSON string every quote is
# escaped, so a quoted key followed by a colon is an object key; a ``traceId`` of a span link
# is found too (it only keeps a trace longer). ``\s`` is the whitespace ``bytes.strip`` removes.
_TRACE_ID = re.compile(rb'"trace(?:Id|_id)"\s*:\s*"([^"]*)"')


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


def line_regions(handle: IO[bytes], size: int = 1 << 23, left: int = -1) -> Iterator[tuple[bytes, int, int]]:
    """The stream as regions of whole lines, ``(data, start, stop)`` for ``data[start:stop]``,
    about ``size`` bytes read at a time (a longer line is one region); with ``left``, only that
    many bytes (a range that ends at a line end). A region is the bytes as read, not a copy:
    only a line that straddles two reads is joined (copying each block cost a third of the
    scan)."""
    rest = b""
    while left and (chunk := handle.read(size if left < 0 else min(size, left))):
        left = left - len(chunk) if left > 0 else left
        first = chunk.find(b"\n") + 1
        if first == 0:  # no line ends in this read
            rest += chunk
            continue
        start = 0
        if rest:
            yield rest + chunk[:first], 0, len(rest) + first
            start = first
        cut = chunk.rfind(b"\n") + 1
        if cut > start:
            yield chunk, start, cut
        rest = chunk[cut:]
    if rest:
        yield rest, 0, len(rest)


class FileScan(NamedTuple):
    """What the scan of an OTLP JSON Lines file found: where each trace is, and where each line
    starts (what cutting the file into parts at a line needs, found on the same pass)."""

    traces: dict[str, tuple[int, int]]  # trace id -> (first, last line naming it), lines from 1
    starts: array  # starts[k]: the byte offset of line k + 1 (of a .gz file: in its decompressed bytes)


def _scan(regions: Iterable[tuple[bytes, int, int]]) -> tuple[array, dict[bytes, tuple[int, int]]]:
    """Where each line in ``regions`` (as :func:`line_regions` gives them) starts, in bytes from the
    first one's start, and ``raw trace id -> (first, last line naming it)``, lines from 1."""
    seen: dict[bytes, tuple[int, int]] = {}
    starts = array("q")
    line_at = starts.append
    lineno = base = 0
    find = _TRACE_ID.findall
    for block, start, stop in regions:
        at = base - start  # where block[0] is in the stream
        base += stop - start
        while start < stop:  # one line at a time, found in place: no copy of the block
            end = block.find(b"\n", start, stop)
            end = stop if end < 0 else end
            lineno += 1
            line_at(at + start)
            for raw in set(find(block, start, end)):
                known = seen.get(raw)
                seen[raw] = (lineno, lineno) if known is None else (known[0], lineno)
            start = end + 1
    return starts, seen


def _trace_id(raw: bytes) -> str | None:
    """A raw id as the reader normalises it (lower-case hex; base64 decoded); None for a value
    that is no trace id (the parse reports it, naming its line)."""
    try:
        return hex_id(raw.decode("ascii"), 32, "traceId")
    except (SpanError, UnicodeDecodeError):
        return None


def _widen(out: dict[str, tuple[int, int]], lines: Iterable[tuple[str | None, tuple[int, int]]],
           offset: int = 0) -> None:
    """Add ``(trace id, (first, last line))`` pairs to ``out``, lines moved on by ``offset``; an
    id already there spans both (two spellings of one id, one trace in two ranges); a None id
    is skipped."""
    for trace_id, (first, last) in lines:
        if trace_id is None:
            continue
        first, last = first + offset, last + offset
        known = out.get(trace_id)
        out[trace_id] = (first, last) if known is None else (min(known[0], first), max(known[1], last))


def _scan_range(job: tuple[str, int, int | None, int]) -> tuple[array, dict[str, tuple[int, int]]]:
    """:func:`_scan` of the bytes ``[start, end)`` of a plain file (``end`` None: to its end, a .gz
    file too), line starts from the file's start and ids normalised (in a worker process, so
    that work is split too)."""
    path, start, end, block_size = job
    with gzip.open(path, "rb") if Path(path).suffix == ".gz" else open(path, "rb") as handle:
        handle.seek(start)
        starts, seen = _scan(line_regions(handle, block_size, -1 if end is None else end - start))
    traces: dict[str, tuple[int, int]] = {}
    _widen(traces, ((_trace_id(raw), lines) for raw, lines in seen.items()))
    return (array("q", [s + start for s in starts]) if start else starts), traces


def _joined(parts: list[tuple[array, dict[str, tuple[int, int]]]]) -> FileScan:
    """The scans of consecutive ranges as one scan of the file: each range's lines numbered on
    from the ranges before it."""
    traces: dict[str, tuple[int, int]] = {}
    starts = array("q")
    for part_starts, part in parts:
        _widen(traces, part.items(), len(starts))
        starts.extend(part_starts)
    return FileScan(traces, starts)


@contextmanager
def scanning(path: str | Path, block_size: int = 1 << 23, workers: int = 1) -> Iterator[Callable[[], FileScan]]:
    """The scan of an OTLP JSON Lines file (``.gz`` too) under way, and a function that waits for
    what it found.

    With ``workers`` above 1, a plain file is cut into that many line-aligned ranges scanned by
    as many forked processes (the caller checks that forking is safe), with the same result;
    they start when the block is entered, so this process is free for other work (reading
    the labels) until it asks for the result. Leaving the block before that stops them. Else
    the file is scanned here when the result is asked for. See :func:`trace_lines`."""
    p = Path(path)
    jobs: list[tuple[str, int, int | None, int]] = (
        [(str(p), a, b, block_size) for a, b in line_ranges(p, workers)] if workers > 1 and p.suffix != ".gz" else [])
    if len(jobs) < 2:
        yield lambda: _joined([_scan_range((str(p), 0, None, block_size))])
        return
    import multiprocessing

    # leaving the block stops the processes
    with multiprocessing.get_context("fork").Pool(len(jobs), initializer=die_with_parent) as pool:
        pending = pool.map_async(_scan_range, jobs)
        yield lambda: _joined(pending.get())


def trace_lines(path: str | Path, block_size: int = 1 << 23, workers: int = 1) -> dict[str, tuple[int, int]]:
    """``trace id -> (first, last line naming it)`` in an OTLP JSON Lines file (``.gz`` too).

    The file is read in blocks of whole lines, ``block_size`` bytes or so (not mapped: a mapped
    file's pages count as the process's memory). Ids are normalised as the reader normalises
    them (lower-case hex; base64 decoded); a value that is no trace id is skipped (the parse
    reports it, naming its line). ``workers``: as in :func:`scanning`."""
    with scanning(path, block_size, workers) as scanned:
        return scanned().traces


def safe_cuts(lines: Iterable[tuple[int, int]], n_lines: int, parts: int) -> list[int]:
    """Lines at which a file of ``n_lines`` lines can be cut into about ``parts`` parts of equal
    line counts with every trace inside one part: a cut at line ``c`` (the first line of a part)
    is safe when no trace has its first line before ``c`` and its last at or after it. Returns
    the increasing cut lines (none: the file cannot be cut, or needs no cutting)."""
    opened = [0] * (n_lines + 2)  # opened[c]: traces that straddle a cut at line c, as a difference array
    for first, last in lines:
        if last > first:
            opened[first + 1] += 1
            opened[last + 1] -= 1
    safe, depth = [], 0
    for c in range(1, n_lines + 1):
        depth += opened[c]
        if depth == 0 and c > 1:
            safe.append(c)
    cuts: list[int] = []
    for k in range(1, parts):
        want = 1 + n_lines * k // parts
        if not safe:
            break
        best = min(safe, key=lambda c: (abs(c - want), c))
        if (not cuts or best > cuts[-1]) and best <= n_lines:
            cuts.append(best)
    return cuts


def line_offsets(path: str | Path, lines: list[int], block_size: int = 1 << 23) -> list[int]:
    """The byte offset at which each of the increasing line numbers ``lines`` starts (a plain
    file): line ``t`` starts right after the file's ``t - 1``-th newline."""
    out: list[int] = []
    want = iter(lines)
    target = next(want, None)
    before, offset = 0, 0  # newlines before the block, and where the block starts
    with open(path, "rb") as handle:
        while target is not None:
            if target == 1:
                out.append(0)
                target = next(want, None)
                continue
            block = handle.read(block_size)
            if not block:
                break
            newlines = block.count(b"\n")
            at, seen = -1, before
            while target is not None and target - 1 <= before + newlines:
                while seen < target - 1:
                    at = block.index(b"\n", at + 1)
                    seen += 1
                out.append(offset + at + 1)
                target = next(want, None)
            before += newlines
            offset += len(block)
    if target is not None:
        raise ValueError(f"{path}: has no line {target}")
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
