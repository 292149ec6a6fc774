"""Count buckets over trace files too large to hold in memory, on every core.

``ragstage attribute`` must read a million traces in seconds without its memory growing
with the file. So this path never builds :class:`~ragstage.trace.Trace` objects: each
line is decoded with orjson, checked by the same :func:`~ragstage.trace.check_record`
and diagnosed by the same :func:`~ragstage.attribution.diagnose_record` as everywhere
else, and only the bucket and flag counts are kept. A plain file is cut into line-aligned byte
ranges, one per worker process; a ``.gz`` file is read by one process.

The one thing that must be remembered per trace is its (query_id, pipeline) key, for the
duplicate check: an 8-byte digest of it (8 MB per million traces), not the strings.
Duplicates are located afterwards, with line numbers, by a second read of the file.
"""

from __future__ import annotations

import os
from array import array
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from hashlib import blake2b
from pathlib import Path
from typing import Iterable

import numpy as np
import orjson

from .attribution import diagnose_record
from .trace import TraceError, check_record, read_records

__all__ = ["Tally", "count_files", "count_file"]

_MIN_SPLIT = 4 << 20  # files under 4 MB are not worth a second process


def _key_digest(query_id: str, pipeline: str) -> int:
    digest = blake2b(f"{query_id}\x00{pipeline}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little", signed=True)


def _group(rec: dict, by: str | None) -> str:
    if by is None:
        return "all"
    value = rec.get(by)
    if value is None:
        value = rec["meta"].get(by)
    return "(none)" if value is None else str(value)


@dataclass
class Tally:
    """Bucket counts and flag counts per group: all ``ragstage attribute`` keeps of a file."""

    buckets: dict[str, Counter] = field(default_factory=dict)
    flags: dict[str, Counter] = field(default_factory=dict)

    def add(self, group: str, stage: str, flags: tuple[str, ...]) -> None:
        bucket = self.buckets.get(group)
        if bucket is None:
            bucket = self.buckets[group] = Counter()
            self.flags[group] = Counter()
        bucket[stage] += 1
        if flags:
            self.flags[group].update(flags)

    def update(self, other: "Tally") -> None:
        for group, bucket in other.buckets.items():
            self.buckets.setdefault(group, Counter()).update(bucket)
            self.flags.setdefault(group, Counter()).update(other.flags.get(group, ()))

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


def _count_range(path: str, start: int, end: int, by: str | None, require: str) -> _Chunk:
    out = _Chunk()
    digests = array("q")
    tally = out.tally
    with open(path, "rb") as handle:
        handle.seek(start)
        pos = start
        for raw in handle:
            if pos >= end:
                break
            pos += len(raw)
            out.lines += 1
            if not raw.strip():
                continue
            try:
                rec = check_record(orjson.loads(raw))
            except orjson.JSONDecodeError as exc:
                out.error = (out.lines, f"invalid JSON ({exc})", None)
                break
            except TraceError as exc:
                out.error = (out.lines, exc.detail, exc.field)
                break
            digests.append(_key_digest(rec["query_id"], rec["pipeline"]))
            d = diagnose_record(rec, require)
            tally.add(_group(rec, by), d.stage.value, d.flags)
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


def _first_duplicate(path: Path, dup_digests: set[int]) -> TraceError:
    """Find the line numbers of a duplicated key (and rule out a digest collision)."""
    seen: dict[tuple[str, str], int] = {}
    with open(path, "rb") as handle:
        for lineno, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            rec = orjson.loads(raw)
            key = (str(rec["query_id"]), rec.get("pipeline", "default"))
            if _key_digest(*key) not in dup_digests:
                continue
            if key in seen:
                return TraceError(f"duplicate query_id {key[0]!r} for pipeline {key[1]!r} "
                                  f"(first on line {seen[key]})", path=str(path), line=lineno, field="query_id")
            seen[key] = lineno
    raise AssertionError("unreachable: a duplicate digest with no duplicate key")  # pragma: no cover


def count_file(path: str | Path, by: str | None = "pipeline", require: str = "any",
               workers: int | None = None) -> Tally:
    """Bucket and flag counts per group for one ``.jsonl`` (split over workers) or ``.jsonl.gz`` file."""
    path = Path(path)
    if path.suffix == ".gz" or not path.is_file():
        # Compressed streams cannot be split by byte offset: read them in order.
        tally = Tally()
        for _, rec in read_records(path):
            d = diagnose_record(rec, require)
            tally.add(_group(rec, by), d.stage.value, d.flags)
        return tally
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
    digests = np.concatenate([np.frombuffer(c.digests, dtype=np.int64) for c in chunks])
    digests.sort()
    repeated = digests[1:][digests[1:] == digests[:-1]]
    if repeated.size:
        raise _first_duplicate(path, {int(d) for d in repeated})
    total = Tally()
    for chunk in chunks:
        total.update(chunk.tally)
    return total


def count_files(paths: Iterable[str | Path], by: str | None = "pipeline", require: str = "any",
                workers: int | None = None) -> Tally:
    """Bucket and flag counts per group over several files (duplicates are checked within each file)."""
    total = Tally()
    for path in paths:
        total.update(count_file(path, by, require, workers))
    return total
