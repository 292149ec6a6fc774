"""Counting diagnosed traces, whatever read them: the tally, the grouping rule, the duplicate check.

Every counter in the project feeds :func:`tally_records`, or gives it the same keys: the JSON
Lines ranges of :mod:`ragstage.streaming`, the in-memory traces of :mod:`ragstage.report`, the
Parquet batches that need a row-by-row check, and (through the same keys and digests) the
plain Parquet batches that :func:`ragstage.arrow_rules.count_batch` counts over columns. So
``ragstage attribute`` and a notebook's table count the same way. The one thing a counter must
remember per trace is its (query_id, pipeline) key, for the duplicate check: an 8-byte digest
of it (8 MB per million traces), not the strings; a repeated digest is confirmed or dismissed on the keys afterwards
(:func:`find_duplicate`), by a second read that gives the reader's line or row numbers.
"""

from __future__ import annotations

from array import array
from collections import Counter
from dataclasses import dataclass, field
from functools import partial
from operator import attrgetter
from typing import Any, Callable, Iterable, Sequence
from zlib import adler32, crc32

from .attribution import (
    BUCKETS,
    FLAG_COMBINATIONS,
    RULES,
    WALK_NAMES,
    Checked,
    Stage,
    check_require,
    outcome,
    walk_lines,
)
from .collector import collector_paused
from .fields import FIELDS, FirstSeen

__all__ = ["Tally", "tally_records", "group_of", "plain_group", "key_digest", "key_digests", "pair_digests",
           "repeated_digests", "find_duplicate", "Counting", "count_records", "tally_of_rows"]


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
    of pairs, as :class:`Counting` keeps them), as an int64 numpy array."""
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


def _grouper(by: str | None) -> Callable[[Checked], str]:
    """:func:`group_of` for one ``by``, as the cheapest function that gives the same answer:
    a plain attribute read when the group is a plain read (:func:`plain_group`)."""
    if by is not None and plain_group(by):
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

    @classmethod
    def from_counts(cls, counts: dict[tuple, int]) -> "Tally":
        """From :func:`tally_records`' ``{(group, stage, flags, query judged, reranked): count}``."""
        tally = cls()
        for (group, stage, flags, query_judged, reranked), k in counts.items():
            tally.buckets.setdefault(group, Counter())[stage.value] += k
            flag_counts = tally.flags.setdefault(group, Counter())
            for flag in flags:
                flag_counts[flag] += k
            if query_judged:
                tally.query_judged.setdefault(group, Counter())[stage.value] += k
            if reranked:
                tally.reranked[group] += k
        return tally

    def totals(self) -> dict[str, int]:
        """Traces per group (the denominator of a flag's share)."""
        return {group: sum(bucket.values()) for group, bucket in self.buckets.items()}


def tally_records(records: Iterable[Checked], by: str | None = "pipeline", require: str = "any",
                  digests: array | None = None) -> Tally:
    """Diagnose checked traces and count them per group; each key's digest appended to ``digests``.

    The one loop every reader feeds, so they all count the same way. A tuple key per trace
    is cheaper to count than a :class:`Tally` is to update; :meth:`Tally.from_counts` folds
    the few keys afterwards.
    """
    counts: dict[tuple, int] = {}
    append = (digests if digests is not None else array("q")).append
    check_require(require)
    get, walk, digest, group = counts.get, outcome, key_digest, _grouper(by)
    with collector_paused():
        for rec in records:
            append(digest(rec.query_id, rec.pipeline))
            stage, flags = walk(rec, require)
            key = (group(rec), stage, flags, rec.query_ok is not None, rec.reranked is not None)
            counts[key] = get(key, 0) + 1
    return Tally.from_counts(counts)


#: A :class:`Counting` row per group: one count per (bucket, flag mask, query judged, reranked) code.
_CODES = len(BUCKETS) * len(FLAG_COMBINATIONS) * 4


class Counting:
    """The counting loop of :func:`tally_records` for one ``by`` and ``require``, written out once as
    plain Python around the lines of :func:`~ragstage.attribution.walk_lines`: no call per rule or
    per trace for the walk, and an integer code per (bucket, flags, query judged, reranked) counted
    in a list per group instead of a tuple key per trace. Each key's digest is kept as its CRC-32
    and Adler-32 side by side (:func:`pair_digests` gives the :func:`key_digest` values).

    ``lines(head, depth)`` gives the counting lines of one trace (``rec``) to put in a loop, and
    ``names`` what they read besides; :meth:`count` runs them over records. ``tests/test_tally.py``
    checks that the counts equal :func:`tally_records`' on random traces and any split of them.
    """

    def __init__(self, by: str | None = "pipeline", require: str = "any") -> None:
        check_require(require)
        self.by, self.require = by, require
        self.names: dict[str, Any] = {**WALK_NAMES, "_crc32": crc32, "_adler32": adler32, "_group": _grouper(by),
                                      "_CODES": _CODES}
        self._count = self.compile("def _count(records, rows, append):", ["for rec in records:"])

    def lines(self) -> list[str]:
        """The counting of one checked trace ``rec`` into ``rows`` (and its digest pair into ``append``)."""
        by = self.by
        group = '"all"' if by is None else f"rec.{by}" if plain_group(by) else "_group(rec)"
        step = len(FLAG_COMBINATIONS) * 4
        return ["key = f'{rec.query_id}\\x00{rec.pipeline}'.encode()",
                "append(_crc32(key))",
                "append(_adler32(key))",
                *walk_lines(self.require, lambda i, rule: str(BUCKETS.index(rule.outcome.value) * step)),
                f"group = {group}",
                "row = rows.get(group)",
                "if row is None:",
                "    row = rows[group] = [0] * _CODES",
                "row[decided + found * 4 + (rec.query_ok is not None) * 2 + (rec.reranked is not None)] += 1"]

    def compile(self, head: str, loop: Sequence[str], tail: Sequence[str] = (), before: Sequence[str] = (),
                **names: Any) -> Callable[..., Any]:
        """A function: ``head`` (its ``def`` line), then ``loop`` (body lines, indented relative to the
        body, the last one opening the block run per trace), in that block the ``before`` lines (which
        bind ``rec``) and the counting lines, then ``tail``. It reads :attr:`names` and ``names``."""
        inner = " " * (4 + len(loop[-1]) - len(loop[-1].lstrip()) + 4)
        source = "\n".join([head, *("    " + line for line in loop),
                             *(inner + line for line in [*before, *self.lines()]),
                             *("    " + line for line in tail)])
        namespace = {**self.names, **names}
        name = head.split()[1].split("(")[0]
        exec(compile(source, f"<ragstage.tally {name}>", "exec"), namespace)  # noqa: S102 - source built above
        function = namespace[name]
        function.source = source
        return function

    def count(self, records: Iterable[Checked], rows: dict[str, list[int]], digests: array) -> None:
        """Count checked records into ``rows``, their digest pairs into ``digests`` (an ``array("I")``)."""
        with collector_paused():
            self._count(records, rows, digests.append)


def tally_of_rows(rows: dict[str, list[int]]) -> Tally:
    """The :class:`Tally` of :class:`Counting`'s rows."""
    counts: dict[tuple, int] = {}
    masks = len(FLAG_COMBINATIONS)
    for group, row in rows.items():
        for code, k in enumerate(row):
            if k:
                rest, ranked = divmod(code, 2)
                rest, judged = divmod(rest, 2)
                bucket, mask = divmod(rest, masks)
                counts[(group, _STAGE_OF[bucket], FLAG_COMBINATIONS[mask], bool(judged), bool(ranked))] = k
    return Tally.from_counts(counts)


_STAGE_OF = tuple(Stage(b) for b in BUCKETS)
assert {rule.outcome for rule in RULES} <= set(_STAGE_OF)


def count_records(records: Iterable[Checked], by: str | None = "pipeline", require: str = "any",
                  digests: array | None = None) -> Tally:
    """:func:`tally_records` by the loop of :class:`Counting`; digest pairs go to ``digests`` (``array("I")``)."""
    rows: dict[str, list[int]] = {}
    Counting(by, require).count(records, rows, digests if digests is not None else array("I"))
    return tally_of_rows(rows)
