"""Count buckets over trace files too large to hold in memory, on every core.

``ragstage attribute`` must read a million traces in seconds without its memory growing
with the file. So this path never builds :class:`~ragstage.trace.Trace` objects: each
line is decoded and checked into a :class:`~ragstage.record.Record` (typed decoding, with
:func:`~ragstage.trace.check_record` for any line the fast types do not fit), diagnosed by
the same :func:`~ragstage.attribution.diagnose_record` as everywhere else, and only the
bucket and flag counts are kept. A plain file is cut into line-aligned byte
ranges, one per worker process; a ``.gz`` file is read by one process.

The one thing that must be remembered per trace is its (query_id, pipeline) key, for the
duplicate check: an 8-byte digest of it (8 MB per million traces), not the strings.
Duplicates are located afterwards, with line numbers, by a second read of the file.
"""

from __future__ import annotations

import gc
import os
from array import array
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from operator import attrgetter
from pathlib import Path
from typing import Callable, Iterable, Iterator
from zlib import adler32, crc32

import orjson

from .attribution import Checked, diagnose_record
from .fields import FIELDS, FirstSeen, fast_type_of
from .record import as_record, decode_record
from .trace import TraceError, read_records

__all__ = ["Tally", "count_files", "count_file", "tally_records", "group_of", "key_digest", "is_parquet"]

_MIN_SPLIT = 4 << 20  # files under 4 MB are not worth a second process
_BLOCK = 1 << 20  # bytes of lines read at a time


def key_digest(query_id: str, pipeline: str) -> int:
    """A 64-bit digest of a (query_id, pipeline) key: CRC-32 and Adler-32 of its bytes, side by side.

    Two checksums from zlib, because a cryptographic hash costs three times as much per trace
    and buys nothing here: an equal digest is only a suspicion, confirmed or dismissed on the
    keys themselves by :func:`find_duplicate`.
    """
    key = f"{query_id}\x00{pipeline}".encode()
    return (crc32(key) << 32 | adler32(key)) - (1 << 63)


def repeated_digests(parts: Iterable[bytes]) -> set[int]:
    """The digests (``array("q")`` bytes from each reader) that occur more than once."""
    import numpy as np  # here, not at the top: the command line starts faster without it

    digests = np.concatenate([np.frombuffer(p, dtype=np.int64) for p in parts] or [np.zeros(0, np.int64)])
    digests.sort()
    return {int(d) for d in digests[1:][digests[1:] == digests[:-1]]}


def find_duplicate(keys: Iterable[tuple[str, int, str, str]], suspects: set[int],
                   unit: str) -> tuple[str, str, int] | None:
    """The first real duplicate among ``(path, position, query_id, pipeline)`` keys whose digest is suspect.

    Returns ``(message, path, position)`` for the reader to raise as its own error (``unit``:
    "line" or "row"), or None when every suspect digest was a checksum collision.
    """
    seen = FirstSeen(unit)
    for path, position, query_id, pipeline in keys:
        if key_digest(query_id, pipeline) in suspects:
            repeated = seen.repeat(path, position, query_id, pipeline)
            if repeated:
                return repeated, path, position
    return None


def group_of(rec: Checked, by: str | None) -> str:
    """The group of a checked trace: a field's value, else a ``meta`` key's, as text."""
    if by is None:
        return "all"
    value = getattr(rec, by) if by in FIELDS else None
    if value is None and rec.meta:
        value = rec.meta.get(by)
    return "(none)" if value is None else str(value)


def _grouper(by: str | None) -> Callable[[Checked], str]:
    """:func:`group_of` for one ``by``, as the cheapest function that gives the same answer:
    a plain attribute read when the field is text that may not be null (``pipeline``)."""
    if by in _TEXT_FIELDS:
        return attrgetter(by)
    return partial(group_of, by=by)


_TEXT_FIELDS = frozenset(name for name in FIELDS if fast_type_of(name) == (str, False))


def tally_records(records: Iterable[Checked], by: str | None, require: str, digests: array) -> dict[tuple, int]:
    """Diagnose checked traces; ``{(group, stage, flags): count}``, each key's digest appended.

    The one loop every reader (JSON Lines ranges, Parquet row groups) feeds, so they
    count the same way. Counting a tuple key per trace is cheaper than updating a
    :class:`Tally`; :meth:`Tally.from_counts` folds the few keys afterwards.
    """
    counts: dict[tuple, int] = {}
    get, diagnose, digest, append, group = counts.get, diagnose_record, key_digest, digests.append, _grouper(by)
    with _no_cycle_collector():
        for rec in records:
            append(digest(rec.query_id, rec.pipeline))
            d = diagnose(rec, require)
            key = (group(rec), d[0], d[5])
            counts[key] = get(key, 0) + 1
    return counts


@contextmanager
def _no_cycle_collector() -> Iterator[None]:
    """Pause Python's cycle collector while counting.

    Decoded traces hold no reference cycles, so the collector finds nothing; but it runs every
    few hundred allocations and walks whatever a reader holds (a Parquet batch turned into
    Python lists), which cost more than the diagnosis itself. Reference counting still frees
    every trace as soon as it is counted.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


@dataclass
class Tally:
    """Bucket counts and flag counts per group: all ``ragstage attribute`` keeps of a file."""

    buckets: dict[str, Counter] = field(default_factory=dict)
    flags: dict[str, Counter] = field(default_factory=dict)

    def update(self, other: "Tally") -> None:
        for group, bucket in other.buckets.items():
            self.buckets.setdefault(group, Counter()).update(bucket)
            self.flags.setdefault(group, Counter()).update(other.flags.get(group, ()))

    @classmethod
    def from_counts(cls, counts: dict[tuple, int]) -> "Tally":
        """From :func:`tally_records`' ``{(group, stage, flags): count}``."""
        tally = cls()
        for (group, stage, flags), k in counts.items():
            tally.buckets.setdefault(group, Counter())[stage.value] += k
            flag_counts = tally.flags.setdefault(group, Counter())
            for flag in flags:
                flag_counts[flag] += k
        return tally

    def totals(self) -> dict[str, int]:
        """Traces per group (the denominator of a flag's share)."""
        return {group: sum(bucket.values()) for group, bucket in self.buckets.items()}


@dataclass
class _Chunk:
    """What one worker learned from its byte range of a file."""

    lines: int = 0
    tally: Tally = field(default_factory=Tally)
    digests: bytes = b""
    error: tuple[int, str, str | None] | None = None  # (line within chunk, message, field)


def _range_records(path: str, start: int, end: int, chunk: _Chunk) -> Iterator[Checked]:
    """Checked records of the lines that start in ``[start, end)``; ``chunk.lines`` counts them.

    Lines come in blocks of about a megabyte (``readlines`` splits them in C); a line read
    past the range's end belongs to the next range and is dropped.
    """
    decode, blank = decode_record, orjson.JSONDecodeError
    lines = 0
    try:
        with open(path, "rb") as handle:
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
                for raw in block:
                    lines += 1
                    try:
                        rec = decode(raw)
                    except blank:  # a blank line is skipped; anything else that is not JSON is an error
                        if raw.isspace():
                            continue
                        raise
                    yield rec
    finally:
        chunk.lines = lines


def _count_range(path: str, start: int, end: int, by: str | None, require: str) -> _Chunk:
    out = _Chunk()
    digests = array("q")
    try:
        out.tally = Tally.from_counts(tally_records(_range_records(path, start, end, out), by, require, digests))
    except orjson.JSONDecodeError as exc:
        out.error = (out.lines, f"invalid JSON ({exc})", None)
    except TraceError as exc:
        out.error = (out.lines, exc.detail, exc.field)
    out.digests = digests.tobytes()
    return out


def _ranges(path: Path, parts: int) -> list[tuple[int, int]]:
    """Cut a file into ``parts`` byte ranges that start at line beginnings."""
    size = path.stat().st_size
    if parts <= 1 or size < _MIN_SPLIT:
        return [(0, size)]
    cuts = [0]
    with open(path, "rb") as handle:
        for i in range(1, parts):
            handle.seek(size * i // parts)
            handle.readline()  # finish the line we landed in
            cuts.append(min(handle.tell(), size))
    cuts.append(size)
    return [(a, b) for a, b in zip(cuts, cuts[1:]) if b > a]


def _line_keys(path: Path) -> Iterator[tuple[str, int, str, str]]:
    with open(path, "rb") as handle:
        for lineno, raw in enumerate(handle, start=1):
            if not raw.isspace():
                rec = orjson.loads(raw)
                yield str(path), lineno, str(rec["query_id"]), rec.get("pipeline", "default")


def count_file(path: str | Path, by: str | None = "pipeline", require: str = "any",
               workers: int | None = None) -> Tally:
    """Bucket and flag counts per group for one ``.jsonl`` (split over workers) or ``.jsonl.gz`` file."""
    path = Path(path)
    if is_parquet(path):
        from .parquet import count_parquet  # pyarrow loads only for Parquet input

        return count_parquet(path, by, require, workers)
    if path.suffix == ".gz" or not path.is_file():
        # Compressed streams cannot be split by byte offset: read them in order (read_records
        # checks duplicates itself, so the digests are not needed).
        records = (as_record(rec) for _, rec in read_records(path))
        return Tally.from_counts(tally_records(records, by, require, array("q")))
    workers = workers or os.cpu_count() or 1
    ranges = _ranges(path, workers)
    if len(ranges) == 1:
        chunks = [_count_range(str(path), *ranges[0], by, require)]
    else:
        with ProcessPoolExecutor(max_workers=len(ranges)) as pool:
            futures = [pool.submit(_count_range, str(path), a, b, by, require) for a, b in ranges]
            chunks = [f.result() for f in futures]
    offset = 0
    for chunk in chunks:
        if chunk.error is not None:
            line, message, fld = chunk.error
            raise TraceError(message, path=str(path), line=offset + line, field=fld)
        offset += chunk.lines
    suspects = repeated_digests(c.digests for c in chunks)
    if suspects:
        duplicate = find_duplicate(_line_keys(path), suspects, "line")
        if duplicate is not None:
            message, _, line = duplicate
            raise TraceError(message, path=str(path), line=line, field="query_id")
    total = Tally()
    for chunk in chunks:
        total.update(chunk.tally)
    return total


def is_parquet(path: str | Path) -> bool:
    """A ``.parquet`` file, or a folder (a Parquet dataset: its ``.parquet`` files)."""
    path = Path(path)
    return path.suffix == ".parquet" or path.is_dir()


def count_files(paths: Iterable[str | Path], by: str | None = "pipeline", require: str = "any",
                workers: int | None = None) -> Tally:
    """Bucket and flag counts per group over several files (duplicates are checked within each file)."""
    total = Tally()
    for path in paths:
        total.update(count_file(path, by, require, workers))
    return total
