"""Counting diagnosed traces, whatever read them: the tally, the grouping rule, the duplicate check.

Every counter in the project fills the same rows of counts per group (one count per code of
:mod:`ragstage.count_key`) and folds them into a :class:`Tally` with :func:`tally_of_rows`: the
in-memory traces of :mod:`ragstage.report` and the Parquet batches that need a row-by-row check
through :func:`count_rows`, the JSON Lines ranges of :mod:`ragstage.streaming` through the same
loop with the decoding written in, and the plain Parquet batches that
:func:`ragstage.arrow_rules.count_batch` counts over columns. So ``ragstage attribute`` and a
notebook's table count the same way. The one thing a counter must remember per trace is its
(query_id, pipeline) key, for the duplicate check: an 8-byte digest of it (8 MB per million
traces), not the strings; a repeated digest is confirmed or dismissed on the keys afterwards
(:func:`find_duplicate`), by a second read that gives the reader's line or row numbers.
"""

from __future__ import annotations

from array import array
from collections import Counter
from dataclasses import dataclass, field
from functools import partial
from operator import attrgetter
from typing import Any, Callable, Iterable
from zlib import adler32, crc32

from .attribution import Checked
from .collector import collector_paused
from .count_key import split_code
from .fields import FIELDS, FirstSeen
from .python_rules import count_records
from .rules import BUCKETS, FLAG_COMBINATIONS, check_require

__all__ = ["Tally", "tally_records", "count_rows", "tally_of_rows", "group_of", "grouper", "plain_group", "key_digest",
           "key_digests", "pair_digests", "repeated_digests", "find_duplicate"]


def key_digest(query_id: str, pipeline: str) -> int:
    """A 64-bit digest of a (query_id, pipeline) key: CRC-32 and Adler-32 of its bytes, side by side.

    Two checksums from zlib, because a cryptographic hash costs three times as much per trace
    and buys nothing here: an equal digest is only a suspicion, confirmed or dismissed on the
    keys themselves by :func:`find_duplicate`.
    """
    return _digest(f"{query_id}\x00{pipeline}".encode())


def _digest(key: bytes) -> int:
    return (crc32(key) << 32 | adler32(key)) - (1 << 63)


#: Keys with a part longer than this are digested one at a time by zlib (the byte-column loop
#: of :func:`key_digests` runs once per byte position of the longest key it takes).
_LONGEST_BYTEWISE = 256


def key_digests(parts: list[tuple[Any, Any, Any]]) -> Any:
    """:func:`key_digest` of many keys at once, as an int64 numpy array: the same digests, byte for byte.

    Each part is a column of UTF-8 text given as numpy arrays ``(data, starts, lengths)`` (the
    bytes, and where each row's text starts in them and how long it is); a key is its parts
    joined by a zero byte, as in :func:`key_digest`. CRC-32 and Adler-32 are run down all the keys
    together, one byte position at a time; the rare key with a part longer than
    ``_LONGEST_BYTEWISE`` bytes is digested on its own.
    """
    import numpy as np

    n = len(parts[0][1])
    long = np.zeros(n, bool)
    for _, _, lengths in parts:
        long |= lengths > _LONGEST_BYTEWISE
    crc = np.full(n, 0xFFFFFFFF, np.uint32)
    a, b = np.ones(n, np.int64), np.zeros(n, np.int64)
    table = _crc_table()

    def feed(rows: Any, byte: Any) -> None:
        c = crc[rows]
        crc[rows] = table[(c ^ byte) & 0xFF] ^ (c >> 8)
        a[rows] = (a[rows] + byte) % 65521
        b[rows] = (b[rows] + a[rows]) % 65521

    for i, (data, starts, lengths) in enumerate(parts):
        if i:
            feed(slice(None), np.uint32(0))
        short = np.where(long, 0, lengths)
        for position in range(int(short.max()) if n else 0):
            rows = np.flatnonzero(short > position)
            feed(rows, data[starts[rows] + position].astype(np.uint32))
    crc ^= np.uint32(0xFFFFFFFF)
    digests = (crc.astype(np.uint64) << np.uint64(32)) | (b << 16 | a).astype(np.uint64)
    digests = (digests ^ np.uint64(1 << 63)).view(np.int64)
    for row in np.flatnonzero(long):
        digests[row] = _digest(b"\x00".join(data[start:start + length].tobytes() for data, start, length in
                                             ((d, int(st[row]), int(ln[row])) for d, st, ln in parts)))
    return digests


def _crc_table() -> Any:
    """CRC-32's table (the polynomial of zlib's ``crc32``)."""
    import numpy as np

    table = np.arange(256, dtype=np.uint32)
    for _ in range(8):
        table = np.where(table & 1, (table >> 1) ^ np.uint32(0xEDB88320), table >> 1).astype(np.uint32)
    return table


def pair_digests(pairs: bytes) -> Any:
    """:func:`key_digest` of keys whose CRC-32 and Adler-32 were kept side by side (an ``array("I")``
    of pairs, as the counting loops keep them), as an int64 numpy array."""
    import numpy as np

    pair = np.frombuffer(pairs, np.uint32).reshape(-1, 2).astype(np.uint64)
    return ((pair[:, 0] << np.uint64(32) | pair[:, 1]) ^ np.uint64(1 << 63)).view(np.int64)


def repeated_digests(parts: Iterable[Any]) -> set[int]:
    """The digests that occur more than once; each reader's part is a buffer of int64 digests
    (``array("q")`` bytes, or :func:`pair_digests`' array, read in place)."""
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


def plain_group(by: str | None) -> bool:
    """Whether :func:`group_of` is a plain read of one column: no grouping, or a text field no
    trace leaves null (``pipeline``), whose value is the group."""
    spec = FIELDS.get(by or "")
    return by is None or (spec is not None and spec.kind.plain is str and not spec.nullable
                          and spec.default is not None)


def _all(rec: Checked) -> str:
    return "all"


def grouper(by: str | None) -> Callable[[Checked], str] | None:
    """:func:`group_of` for one ``by``, as the counting loops take it: None for ``pipeline`` (read
    in the loop), else the cheapest function that gives the same answer (an attribute read when
    the group is a plain read, see :func:`plain_group`)."""
    if by == "pipeline":
        return None
    if by is None:
        return _all
    if plain_group(by):
        return attrgetter(by)
    return partial(group_of, by=by)


@dataclass
class Tally:
    """What counting keeps of a set of traces, per group: bucket and flag counts, and what the
    funnel needs besides (which traces judged query understanding, and which logged a reranker).

    ``query_judged`` holds the bucket counts of the traces whose ``query_ok`` is set;
    ``reranked`` the number of traces with a ``reranked`` list.
    """

    buckets: dict[str, Counter] = field(default_factory=dict)
    flags: dict[str, Counter] = field(default_factory=dict)
    query_judged: dict[str, Counter] = field(default_factory=dict)
    reranked: Counter = field(default_factory=Counter)

    def update(self, other: "Tally") -> None:
        for group, bucket in other.buckets.items():
            self.buckets.setdefault(group, Counter()).update(bucket)
            self.flags.setdefault(group, Counter()).update(other.flags.get(group, ()))
        for group, bucket in other.query_judged.items():
            self.query_judged.setdefault(group, Counter()).update(bucket)
        self.reranked.update(other.reranked)

    def totals(self) -> dict[str, int]:
        """Traces per group (the denominator of a flag's share)."""
        return {group: sum(bucket.values()) for group, bucket in self.buckets.items()}


def tally_of_rows(rows: dict[str, list[int]]) -> Tally:
    """The :class:`Tally` of rows of counts per group, indexed by :func:`~ragstage.count_key.count_code`."""
    tally = Tally()
    for group, row in rows.items():
        buckets = tally.buckets.setdefault(group, Counter())
        flags = tally.flags.setdefault(group, Counter())
        for code, k in enumerate(row):
            if k:
                bucket, mask, judged, reranked = split_code(code)
                buckets[BUCKETS[bucket]] += k
                for name in FLAG_COMBINATIONS[mask]:
                    flags[name] += k
                if judged:
                    tally.query_judged.setdefault(group, Counter())[BUCKETS[bucket]] += k
                if reranked:
                    tally.reranked[group] += k
    return tally


def count_rows(records: Iterable[Checked], rows: dict[str, list[int]], by: str | None = "pipeline",
               require: str = "any", pairs: array | None = None) -> None:
    """Diagnose checked traces and count them into ``rows`` ({group: counts per count code}); each
    key's CRC-32 and Adler-32 appended to ``pairs`` (an ``array("I")``, see :func:`pair_digests`).

    The one loop every reader feeds, so they all count the same way: the Python interpreter's
    walk written into a loop (:func:`ragstage.python_rules.count_records`). The cycle collector is
    paused while it runs (see :mod:`ragstage.collector`)."""
    check_require(require)
    append = (pairs if pairs is not None else array("I")).append
    with collector_paused():
        count_records(records, rows, append, grouper(by), require == "any")


def tally_records(records: Iterable[Checked], by: str | None = "pipeline", require: str = "any",
                  pairs: array | None = None) -> Tally:
    """Diagnose checked traces and count them per group (:func:`count_rows`), as a :class:`Tally`.

    The cycle collector is paused while the loop runs (see :mod:`ragstage.collector`)."""
    rows: dict[str, list[int]] = {}
    count_rows(records, rows, by, require, pairs)
    return tally_of_rows(rows)
