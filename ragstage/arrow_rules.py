"""The attribution rules evaluated over Arrow columns: a second interpreter of the one rule table.

:data:`~ragstage.rules.RULES` and :data:`~ragstage.rules.FLAG_RULES` are rows of
tests over a trace's fields. The Python interpreter (:mod:`ragstage.python_rules`) runs them on one
trace at a time; this module runs the same rows on a whole batch of traces at once, each kind of
test (:data:`~ragstage.rules.TESTS`) computed for every row with pyarrow compute
functions and numpy, and a rule's tests applied to the rows no earlier rule decided. The
rules themselves are not restated here: only what each kind of test means on a column. The two
tests whose subject is free text (``cites_outside``, ``numeric_unmarked``) run the walk's own
functions, on the few rows that reach them. ``tests/conformance/test_rule_conformance.py`` checks, on random
batches with empty lists, repeated ids, missing columns, nulls, refusals and flags, that it gives
every trace the bucket and the flags the rules mean, as the Python interpreter does.

It reads a *plain* batch (:func:`ragstage.parquet.batch_records` says which: every column of its
field's plain Arrow type, no null where null is not allowed), whose values need no check; it is
what ``ragstage attribute`` counts a Parquet file with. A batch that is not plain is checked and
walked row by row.
"""

from __future__ import annotations

from array import array
from itertools import repeat
from typing import Any, Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .count_key import CODES, count_code
from .fields import FIELDS
from .rules import BUCKETS, FLAG_BITS, FLAG_RULES, RULES, TEXT_TESTS, Test
from .tally import key_digests

__all__ = ["COLUMN_TESTS", "outcomes", "count_batch"]


class _Batch:
    """The columns of one batch, and the test values computed on them so far."""

    def __init__(self, batch: pa.RecordBatch, require: str) -> None:
        self.n = batch.num_rows
        self.columns: dict[str, pa.Array] = dict(zip(batch.schema.names, batch.columns))
        self.require = require
        self.flags = np.zeros(self.n, np.uint8)
        self._values: dict[tuple[str, str, str], np.ndarray] = {}
        self._distinct: dict[str, tuple[pa.Array, int, np.ndarray, np.ndarray]] = {}

    def value(self, test: Test, rows: np.ndarray) -> np.ndarray:
        """Where ``test`` holds, on (at least) the rows in ``rows``."""
        if test.kind in TEXT_TESTS:
            held = self._text(test, rows)
        else:
            key = (test.kind, test.field, test.other)
            held = self._values.get(key)
            if held is None:
                held = self._values[key] = COLUMN_TESTS[test.kind](self, test)
        return ~held if test.negate else held

    def _text(self, test: Test, rows: np.ndarray) -> np.ndarray:
        """A free-text test, run by the walk's own function on the rows in ``rows`` only."""
        held = np.zeros(self.n, bool)
        text = self.columns.get(test.field)
        if text is None:  # the default text, "", states nothing and cites nothing
            return held
        other = self.columns.get(test.other) if test.other else None
        if test.kind == "cites_outside":  # only a text with a "[" can cite a marker
            rows = rows & _bools(pc.and_kleene(text.is_valid(), pc.match_substring(text, "[")))
        where = np.flatnonzero(rows)
        if not len(where):
            return held
        texts = text.take(where).to_pylist()
        others = other.take(where).to_pylist() if other is not None else repeat(FIELDS[test.other].default
                                                                                if test.other else None)
        check = TEXT_TESTS[test.kind]
        held[where] = [check(t, o) for t, o in zip(texts, others)]
        return held

    def distinct(self, name: str) -> tuple[pa.Array, int, np.ndarray, np.ndarray]:
        """The distinct ids of each row of a list column: ``(dictionary, size, keys, counts)``:
        each (row, id) pair as the key ``row * size + the id's index in dictionary``, sorted, and
        the number of distinct ids in each row."""
        got = self._distinct.get(name)
        if got is None:
            rows, values = self.flat(name)
            dictionary = pc.unique(values.dictionary if pa.types.is_dictionary(values.type) else values)
            size = max(len(dictionary), 1)
            keys = _distinct_sorted(rows.astype(np.int64) * size + _lookup(values, dictionary)[1])
            got = self._distinct[name] = (dictionary, size, keys, np.bincount(keys // size, minlength=self.n))
        return got

    def flat(self, name: str) -> tuple[np.ndarray, pa.Array]:
        """Every element of a list column with the row it belongs to (a null or absent list has none)."""
        column = self.columns.get(name)
        if column is None:
            return np.zeros(0, np.int64), pa.nulls(0, pa.string())
        return self.rows_of(column), pc.list_flatten(column)

    def shared(self, name: str, other: str) -> np.ndarray:
        """Per row: how many distinct ids of list ``name`` the list ``other`` holds.

        The ids of ``other`` are numbered by the ids of ``name`` anywhere in the batch (one hash
        lookup each), then matched within their row: by one comparison where the row's ``name``
        holds a single distinct id (the usual gold), by (row, id) keys otherwise.
        """
        _, size, keys, counts = self.distinct(name)
        column = self.columns.get(other)
        if column is None or not len(keys):
            return np.zeros(self.n, np.int64)
        known, code = _lookup(pc.list_flatten(column), self.distinct(name)[0])
        rows = self.rows_of(column)
        single = np.full(self.n, -1, np.int32)
        one = counts[keys // size] == 1
        single[keys[one] // size] = keys[one] % size
        kept = (np.bincount(rows[known & (code == single[rows])], minlength=self.n) > 0).astype(np.int64)
        several = known & (counts > 1)[rows]
        if several.any():
            found = _distinct_sorted(rows[several].astype(np.int64) * size + code[several])
            place = np.minimum(np.searchsorted(keys, found), len(keys) - 1)
            kept += np.bincount(found[keys[place] == found] // size, minlength=self.n)
        return kept

    def rows_of(self, column: pa.Array) -> np.ndarray:
        """The row of each element of ``pc.list_flatten(column)``."""
        offsets = _ints(column.offsets, wide=False)
        lengths = np.diff(offsets) * _bools(column.is_valid())  # a null list holds no element
        return np.repeat(np.arange(self.n, dtype=np.int32), lengths)

    def need(self) -> np.ndarray | int:
        """Gold ids a stage must keep for the question to survive it (``require``)."""
        return 1 if self.require == "any" else self.distinct("gold")[3]


def _distinct_sorted(keys: np.ndarray) -> np.ndarray:
    keys = np.sort(keys)
    return keys[np.concatenate(([True], keys[1:] != keys[:-1]))] if len(keys) else keys


def _lookup(values: pa.Array, dictionary: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """Where each of ``values`` is in ``dictionary`` (``known``) and its index there (``code``, any
    number where not known). Dictionary-encoded values are looked up once per distinct value."""
    if pa.types.is_dictionary(values.type):
        known, code = _lookup(values.dictionary, dictionary)
        indices = _ints(values.indices, wide=False)
        return known[indices], code[indices]
    codes = pc.index_in(values, value_set=dictionary)
    return _bools(codes.is_valid()), _ints(codes, wide=False)


def _ints(column: pa.Array, wide: bool = True) -> np.ndarray:
    """An integer column without nulls as numpy values read from its buffer: int64 if ``wide``, else
    the column's own type, uncopied. (``to_numpy``, like any Python value turned into an Arrow
    scalar, loads pandas: half a second per worker.)"""
    dtype = np.dtype(str(column.type))
    values = np.frombuffer(column.buffers()[1], dtype, count=len(column), offset=column.offset * dtype.itemsize)
    return values.astype(np.int64) if wide else values


def _bools(column: pa.Array) -> np.ndarray:
    """A boolean column without nulls as a numpy array."""
    return _ints(pc.cast(column, pa.uint8()), wide=False).view(np.bool_)


def _given(b: _Batch, test: Test) -> np.ndarray:
    column = b.columns.get(test.field)
    if column is None:
        return np.full(b.n, FIELDS[test.field].default is not None)
    return _bools(column.is_valid())


def _is(value: bool) -> Callable[[_Batch, Test], np.ndarray]:
    def held(b: _Batch, test: Test) -> np.ndarray:
        column = b.columns.get(test.field)
        if column is None:
            return np.full(b.n, FIELDS[test.field].default is value)
        return _bools(pc.and_kleene(column.is_valid(), column if value else pc.invert(column)))
    return held


def _empty(b: _Batch, test: Test) -> np.ndarray:
    column = b.columns.get(test.field)
    if column is None:
        return np.full(b.n, not FIELDS[test.field].default)
    return ~(_bools(column.is_valid()) & (np.diff(_ints(column.offsets)) > 0))


def _lost(b: _Batch, test: Test) -> np.ndarray:
    return b.shared("gold", test.field) < b.need()


def _holds(b: _Batch, test: Test) -> np.ndarray:
    return b.shared("gold", test.field) > 0


def _some_false(b: _Batch, test: Test) -> np.ndarray:
    rows, values = b.flat(test.field)
    if not len(values):
        return np.zeros(b.n, bool)
    return np.bincount(rows[~_bools(values)], minlength=b.n) > 0


def _flag(b: _Batch, test: Test) -> np.ndarray:
    return (b.flags & FLAG_BITS[test.field]) > 0


def _leaves_out(b: _Batch, test: Test) -> np.ndarray:
    return b.distinct(test.field)[3] > b.shared(test.field, test.other)


#: What each kind of test computes on a batch's columns (the free-text kinds run per row, see ``_Batch._text``).
COLUMN_TESTS: dict[str, Callable[[_Batch, Test], np.ndarray]] = {
    "given": _given, "true": _is(True), "false": _is(False), "empty": _empty, "lost": _lost, "holds": _holds,
    "some_false": _some_false, "flag": _flag, "leaves_out": _leaves_out,
}


def _first_match(b: _Batch, rules: Any, rows: np.ndarray) -> np.ndarray:
    """Where all of a rule's tests hold, among ``rows`` (each test run only where the earlier ones held)."""
    for test in rules.tests:
        if not rows.any():
            break
        rows = rows & b.value(test, rows)
    return rows


def outcomes(batch: pa.RecordBatch, require: str = "any") -> tuple[np.ndarray, np.ndarray]:
    """For each row of a plain batch: the index in :data:`RULES` of the rule that decides it, and its
    flags as a bit mask (bit ``i``: ``FLAGS[i]``): what the walk gives each row's trace."""
    b = _Batch(batch, require)
    for rule in FLAG_RULES:
        bit = FLAG_BITS[rule.outcome]
        b.flags[_first_match(b, rule, (b.flags & bit) == 0)] |= bit
    decided = np.full(b.n, -1, np.int16)
    open_rows = np.ones(b.n, bool)
    for i, rule in enumerate(RULES):
        if not open_rows.any():
            break
        hit = _first_match(b, rule, open_rows)
        decided[hit] = i
        open_rows &= ~hit
    return decided, b.flags


#: The index in BUCKETS of each rule's outcome.
_BUCKET_OF_RULE = np.array([BUCKETS.index(rule.outcome.value) for rule in RULES], np.int64)


def count_batch(batch: pa.RecordBatch, by: str | None, require: str, rows: dict[str, list[int]],
                digests: array) -> None:
    """Count a plain batch into ``rows`` ({group: counts per :func:`~ragstage.count_key.count_code`}),
    as :func:`~ragstage.tally.count_rows` does, and its keys' digests into ``digests`` (``array("q")``);
    ``by`` is None or a text field no trace leaves null (see :func:`ragstage.tally.plain_group`)."""
    rule, flags = outcomes(batch, require)
    columns = dict(zip(batch.schema.names, batch.columns))
    n = batch.num_rows
    if by is None:
        names, group = ["all"], np.zeros(n, np.int64)
    elif by in columns:  # the dictionary lists the groups in the order first met
        encoded = pc.dictionary_encode(columns[by])
        names, group = encoded.dictionary.to_pylist(), _ints(encoded.indices)
    else:
        names, group = [FIELDS[by].default], np.zeros(n, np.int64)
    judged = _bools(columns["query_ok"].is_valid()) if "query_ok" in columns else np.zeros(n, bool)
    ranked = _bools(columns["reranked"].is_valid()) if "reranked" in columns else np.zeros(n, bool)
    code = group * CODES + count_code(_BUCKET_OF_RULE[rule], flags.astype(np.int64), judged.astype(np.int64),
                                      ranked.astype(np.int64))
    for value, k in zip(*np.unique(code, return_counts=True)):
        g, c = divmod(int(value), CODES)
        row = rows.get(names[g])
        if row is None:
            row = rows[names[g]] = [0] * CODES
        row[c] += int(k)
    digests.frombytes(_digests(columns.get("query_id"), columns.get("pipeline"), n).tobytes())


def _digests(query_ids: pa.Array, pipelines: pa.Array | None, n: int) -> np.ndarray:
    """The key digests of a batch's rows (:func:`~ragstage.tally.key_digest`), from the text columns' bytes."""
    if pipelines is None:
        default = FIELDS["pipeline"].default.encode()
        parts = [_text_bytes(query_ids), (np.frombuffer(default, np.uint8), np.zeros(n, np.int64),
                                          np.full(n, len(default), np.int64))]
    else:
        parts = [_text_bytes(query_ids), _text_bytes(pipelines)]
    return key_digests(parts)


def _text_bytes(column: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A string column without nulls as ``(data, starts, lengths)`` numpy arrays of its UTF-8 bytes."""
    offsets = np.frombuffer(column.buffers()[1], np.int32, count=len(column) + 1, offset=column.offset * 4)
    data = column.buffers()[2]
    data = np.frombuffer(data, np.uint8) if data is not None else np.zeros(0, np.uint8)
    return data, offsets[:-1].astype(np.int64), np.diff(offsets).astype(np.int64)
