"""Count the buckets of a JSON Lines file too large to hold in memory, on every core.

``ragstage attribute`` must read a million traces in seconds without its memory growing
with the file. So this path never builds :class:`~ragstage.trace.Trace` objects: each
line is decoded and checked into a :class:`~ragstage.typed_record.CountedRecord` (typed decoding, with
:func:`~ragstage.fields.check_record` for any line the plain types do not fit) and counted
by the loop of :func:`ragstage.python_rules.count_lines` (the counts of
:func:`~ragstage.tally.tally_records`, the decoding and the walk written into one loop), which
keeps only the counts and one digest per key. A plain file is cut into line-aligned byte ranges,
one per worker process (:mod:`ragstage.parallel_count`); a ``.gz`` file is read by one process.
Duplicates are located afterwards, with line numbers, by a second read of the file.
:mod:`ragstage.trace_files` picks this reader or the Parquet one.
"""

from __future__ import annotations

import os
from array import array
from io import BytesIO
from pathlib import Path
from typing import Iterator

import orjson

from .collector import collector_paused
from .errors import TraceError
from .fields import FIELDS
from .parallel_count import PartCount, count_parts
from .python_rules import count_lines
from .rules import check_require
from .tally import Tally, grouper, tally_records
from .trace import MAX_LINE_BYTES, is_blank, line_ranges, read_records
from .typed_record import as_record

__all__ = ["count_jsonl", "count_range", "MIN_SPLIT_BYTES"]

#: Files under 4 MB are counted in one process: not worth a second one.
MIN_SPLIT_BYTES = 4 << 20
_BLOCK = 1 << 20  # bytes of lines read at a time
_DEFAULT_PIPELINE = FIELDS["pipeline"].default


def _line_blocks(path: str, start: int, end: int) -> Iterator[list[bytes]]:
    """The lines that start in ``[start, end)``, a list per megabyte read; the last line may end
    past ``end``, and a line that starts there belongs to the next range.

    The file is read a megabyte at a time, and cut into lines in C (``BytesIO.readlines``). A line
    is never held longer than :data:`~ragstage.trace.MAX_LINE_BYTES`: a longer one is an error
    naming its line (counted from ``start``), as in every other reader, before more of it is read."""
    with open(path, "rb", buffering=0) as handle:
        handle.seek(start)
        at = start  # where the line being read starts
        head: list[bytes] = []  # its pieces read so far, and their size
        held = lines = 0
        while at < end:
            data = handle.read(_BLOCK)
            if not data:
                if head:
                    yield [b"".join(head)]
                return
            cut = data.rfind(b"\n") + 1
            if cut:
                lines_of = BytesIO(data)  # shares the bytes: no copy
                first = b"".join([*head, lines_of.readline()]) if head else None
                ended = lines_of.readlines()
                if cut < len(data):
                    ended.pop()  # the line that runs on past this read
                if first is not None:
                    ended.insert(0, first)
                if len(ended[0]) > MAX_LINE_BYTES:
                    raise _too_long(lines + 1)
                size = held + cut
                if at + size > end:  # the range ends among these lines: keep those that start before its end
                    ended = _starting_before(ended, end - at)
                lines += len(ended)
                yield ended
                at += size
                head, held = [], 0
            if cut < len(data):
                head.append(data[cut:])
                held += len(data) - cut
                if held > MAX_LINE_BYTES:
                    raise _too_long(lines + 1)


def _starting_before(lines: list[bytes], end: int) -> list[bytes]:
    """The first lines that start less than ``end`` bytes in."""
    at = 0
    for i, line in enumerate(lines):
        if at >= end:
            return lines[:i]
        at += len(line)
    return lines


def _too_long(line: int) -> TraceError:
    return TraceError(f"line longer than {MAX_LINE_BYTES >> 20} MiB: not a JSON Lines file", line=line)


def count_range(path: str, start: int, end: int, by: str | None, require: str) -> PartCount:
    """Count the lines that start in ``[start, end)``: the task each worker of :func:`count_jsonl` runs.

    An error's line is counted from ``start``."""
    out = PartCount()
    pairs = array("I")
    read = [0]
    try:
        with collector_paused():
            count_lines(_line_blocks(path, start, end), out.rows, pairs.append, grouper(by), require == "any", read)
    except orjson.JSONDecodeError as exc:
        out.error = TraceError(f"invalid JSON ({exc})", line=read[0])
    except TraceError as exc:  # a line too long is found before it is counted, and names its own line
        out.error = TraceError(exc.detail, line=read[0] if exc.line is None else exc.line, field=exc.field)
    out.pairs = pairs.tobytes()
    out.positions = read[0]
    return out


def _ranges(path: Path, parts: int) -> list[tuple[int, int]]:
    """Cut a file into ``parts`` byte ranges that start at line beginnings (one for a small file)."""
    size = path.stat().st_size
    if parts <= 1 or size < MIN_SPLIT_BYTES:
        return [(0, size)]
    return line_ranges(path, parts)


def _line_keys(path: Path) -> Iterator[tuple[str, int, str, str]]:
    with open(path, "rb") as handle:
        for lineno, raw in enumerate(handle, start=1):
            if not is_blank(raw):
                rec = orjson.loads(raw)
                yield str(path), lineno, str(rec["query_id"]), rec.get("pipeline", _DEFAULT_PIPELINE)


def count_jsonl(path: str | Path, by: str | None = "pipeline", require: str = "any",
                workers: int | None = None) -> Tally:
    """Bucket and flag counts per group for one ``.jsonl`` (split over workers) or ``.jsonl.gz`` file.

    The cycle collector is paused in the process that counts, while it counts (see
    :mod:`ragstage.collector`)."""
    check_require(require)
    path = Path(path)
    if path.suffix == ".gz" or not path.is_file():
        # Compressed streams cannot be split by byte offset: read them in order (read_records
        # checks duplicates itself, so the digests are not needed).
        return tally_records((as_record(rec) for _, rec in read_records(path)), by, require)
    ranges = _ranges(path, workers or os.cpu_count() or 1)
    return count_parts(count_range, [(str(path), a, b, by, require) for a, b in ranges], str(path), "line",
                       lambda: _line_keys(path))
