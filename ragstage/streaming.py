"""Count the buckets of a JSON Lines file too large to hold in memory, on every core.

``ragstage attribute`` must read a million traces in seconds without its memory growing
with the file. So this path never builds :class:`~ragstage.trace.Trace` objects: each
line is decoded and checked into a :class:`~ragstage.record.Record` (typed decoding, with
:func:`~ragstage.fields.check_record` for any line the plain types do not fit) and counted
by the loop of :class:`~ragstage.tally.Counting` (the counts of :func:`~ragstage.tally.tally_records`,
the decoding and the walk written into one loop), which keeps only the counts and one digest per
key. A plain file is cut into line-aligned byte ranges, one per worker process; a ``.gz``
file is read by one process. Duplicates are located afterwards, with line numbers, by a
second read of the file. :mod:`ragstage.formats` picks this reader or the Parquet one.
"""

from __future__ import annotations

import os
from array import array
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Callable, Iterator

import orjson

from .collector import collector_paused
from .fields import FIELDS
from .record import COUNT_NAMES, DECODE_LINES, as_record
from .tally import (
    Counting,
    Tally,
    find_duplicate,
    pair_digests,
    repeated_digests,
    tally_of_rows,
    tally_records,
)
from .trace import TraceError, is_blank, line_ranges, read_records
from .workers import die_with_parent

__all__ = ["count_jsonl"]

_MIN_SPLIT = 4 << 20  # files under 4 MB are not worth a second process
_BLOCK = 1 << 20  # bytes of lines read at a time
_DEFAULT_PIPELINE = FIELDS["pipeline"].default


@dataclass
class _Chunk:
    """What one worker learned from its byte range of a file."""

    lines: int = 0
    tally: Tally = field(default_factory=Tally)
    digests: bytes = b""
    error: tuple[int, str, str | None] | None = None  # (line within chunk, message, field)


def _blocks(path: str, start: int, end: int) -> Iterator[list[bytes]]:
    """The lines that start in ``[start, end)``, in blocks of about a megabyte (``readlines`` splits
    them in C); a line read past the range's end belongs to the next range and is dropped. The file is
    read a block at a time too (the default buffer of 8 KB would cost a system call per 8 KB)."""
    with open(path, "rb", buffering=_BLOCK) as handle:
        handle.seek(start)
        left = end - start
        while left > 0:
            block = handle.readlines(min(left, _BLOCK))
            if not block:
                break
            size = sum(map(len, block))
            while size > left:  # readlines stops only once it has read more than asked
                size -= len(block.pop())
            left -= size
            yield block


#: One range's loop: each line decoded by the lines of :data:`~ragstage.record.DECODE_LINES` (a blank
#: line skipped, anything else that is not JSON an error), then counted by :class:`~ragstage.tally.Counting`'s
#: lines; ``chunk.lines`` counts the lines read, up to and including one that raised.
_LOOP = ["lines = 0", "try:", "    for block in blocks:", "        for line in block:"]
_DECODE = ["lines += 1", "try:", *("    " + s for s in DECODE_LINES),
           "except _JSONDecodeError:", "    if _is_blank(line):", "        continue", "    raise"]


@lru_cache(maxsize=None)
def _range_counter(by: str | None, require: str) -> Callable[..., None]:
    return Counting(by, require).compile("def _count_lines(blocks, rows, append, chunk):", _LOOP,
                                         ["finally:", "    chunk.lines = lines"], _DECODE, **COUNT_NAMES,
                                         _JSONDecodeError=orjson.JSONDecodeError, _is_blank=is_blank)


def _count_range(path: str, start: int, end: int, by: str | None, require: str) -> _Chunk:
    out = _Chunk()
    digests = array("I")
    rows: dict[str, list[int]] = {}
    try:
        with collector_paused():
            _range_counter(by, require)(_blocks(path, start, end), rows, digests.append, out)
    except orjson.JSONDecodeError as exc:
        out.error = (out.lines, f"invalid JSON ({exc})", None)
    except TraceError as exc:
        out.error = (out.lines, exc.detail, exc.field)
    out.tally = tally_of_rows(rows)
    out.digests = digests.tobytes()
    return out


def _ranges(path: Path, parts: int) -> list[tuple[int, int]]:
    """Cut a file into ``parts`` byte ranges that start at line beginnings (one for a small file)."""
    size = path.stat().st_size
    if parts <= 1 or size < _MIN_SPLIT:
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
    """Bucket and flag counts per group for one ``.jsonl`` (split over workers) or ``.jsonl.gz`` file."""
    path = Path(path)
    if path.suffix == ".gz" or not path.is_file():
        # Compressed streams cannot be split by byte offset: read them in order (read_records
        # checks duplicates itself, so the digests are not needed).
        return tally_records((as_record(rec) for _, rec in read_records(path)), by, require)
    workers = workers or os.cpu_count() or 1
    ranges = _ranges(path, workers)
    if len(ranges) == 1:
        chunks = [_count_range(str(path), *ranges[0], by, require)]
    else:
        with ProcessPoolExecutor(max_workers=len(ranges), initializer=die_with_parent) as pool:
            futures = [pool.submit(_count_range, str(path), a, b, by, require) for a, b in ranges]
            # Every worker has started by now (submit starts one per range); numpy, which the duplicate
            # check needs once they are done, loads while they count instead of after.
            import numpy  # noqa: F401
            chunks = [f.result() for f in futures]
    offset = 0
    for chunk in chunks:
        if chunk.error is not None:
            line, message, fld = chunk.error
            raise TraceError(message, path=str(path), line=offset + line, field=fld)
        offset += chunk.lines
    suspects = repeated_digests(pair_digests(c.digests) for c in chunks)
    if suspects:
        duplicate = find_duplicate(_line_keys(path), suspects, "line")
        if duplicate is not None:
            message, _, line = duplicate
            raise TraceError(message, path=str(path), line=line, field="query_id")
    total = Tally()
    for chunk in chunks:
        total.update(chunk.tally)
    return total
