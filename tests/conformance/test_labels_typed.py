"""The typed label decoder against :func:`parse_label`: the same label, or it leaves the line alone.

:func:`ragstage.ingest.labels_typed.label_values` is a second way to read a label line, kept
only because it is faster. Lines are generated in the usual shape and with every deviation
``parse_label`` rejects or converts (unknown keys, booleans and floats for ids, integers past
64 bits, null and empty lists, spans with extra or missing keys or start >= end, strings where
lists go, a label with neither id nor query); for each, the typed decoder must give exactly
``parse_label``'s label or None (then ``parse_label`` reads the line, and its label or its error
is what the user gets). ``read_labels`` on a file of such lines must equal the reference.
"""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragstage.ingest.gold import Label, new_label, parse_label, read_labels
from ragstage.ingest.labels_typed import label_values
from ragstage.ingest.spans import SpanError


def _reference(line: bytes) -> Label | str:
    """What ``parse_label`` makes of the line, or its error message."""
    try:
        return parse_label(orjson.loads(line))
    except (SpanError, orjson.JSONDecodeError) as exc:
        return str(exc)


ints = st.one_of(st.integers(-5, 2000), st.sampled_from([-(2**63), 2**63 - 1, 2**63, 2**64 - 1, 2**64, -(2**63) - 1]))
odd_ids = st.one_of(ints, st.booleans(), st.floats(allow_nan=False, allow_infinity=False), st.none())
ids = st.one_of(st.text(max_size=6), st.integers(-5, 2000), odd_ids)


def _usually(valid: st.SearchStrategy, odd: st.SearchStrategy) -> st.SearchStrategy:
    """A valid value three times in four, else one ``parse_label`` rejects or converts."""
    return st.integers(0, 3).flatmap(lambda k: valid if k else odd)


def _span(ident: st.SearchStrategy, start: st.SearchStrategy, end: st.SearchStrategy) -> st.SearchStrategy:
    return st.fixed_dictionaries({"id": ident, "start": start, "end": end})


gold_span_items = _usually(
    st.builds(lambda d, s, n: {"id": d, "start": s, "end": s + n}, st.one_of(st.text(max_size=6), st.integers(0, 99)),
              st.integers(0, 5000), st.integers(1, 100)),
    st.one_of(_span(ids, ints, ints), _span(odd_ids, st.integers(0, 5), st.integers(6, 9)),
              st.fixed_dictionaries({"id": ids, "start": ints}),  # a key missing
              _span(ids, ints, ints).map(lambda d: {**d, "doc": "x"}),  # one too many
              st.sampled_from([[], "doc#1-2", None, 3])))
values = {
    "query_id": _usually(st.one_of(st.text(max_size=6), st.integers(-5, 2000)), odd_ids),
    "query": _usually(st.one_of(st.text(max_size=6), st.none()), st.one_of(st.integers(0, 3), st.just([]))),
    "gold": _usually(st.one_of(st.lists(st.one_of(st.text(max_size=6), st.integers(0, 9)), max_size=3), st.none()),
                     st.one_of(st.lists(odd_ids, min_size=1, max_size=2), st.sampled_from(["doc", False, {}]))),
    "gold_spans": _usually(st.one_of(st.lists(gold_span_items, max_size=3), st.none()), st.sampled_from([{}, 0, "d"])),
    "answerable": _usually(st.one_of(st.booleans(), st.none()), st.sampled_from([0, 1, "yes"])),
    "correct": _usually(st.one_of(st.booleans(), st.none()), st.just(0.0)),
    "refused": _usually(st.one_of(st.booleans(), st.none()), st.just("false")),
    "reference": _usually(st.one_of(st.text(max_size=6), st.none()), st.just(["a"])),
    "gold_span": st.just([]),  # a typo of a known key
}


@st.composite
def label_lines(draw: Any) -> bytes:
    """One label line: the usual shape most of the time, any deviation some of the time."""
    keys = draw(st.lists(st.sampled_from(sorted(values)), unique=True, max_size=5))
    record = {key: draw(values[key]) for key in keys}
    if draw(st.integers(0, 3)):  # usually well formed
        record.pop("gold_span", None)
        record.setdefault("query_id", f"q{draw(st.integers(0, 9))}")
    # the standard library writes integers past 64 bits, which orjson refuses to
    compact = draw(st.booleans())
    return json.dumps(record, ensure_ascii=draw(st.booleans()),
                      separators=(",", ":") if compact else (", ", ": ")).encode("utf-8")


@settings(max_examples=600, deadline=None)
@given(label_lines())
def test_the_typed_decoder_gives_parse_labels_label_or_none(line):
    values_ = label_values(line)
    if values_ is not None:
        assert new_label(*values_) == _reference(line)


@pytest.mark.parametrize("line", [
    b'{"query_id": "q1", "gold_spans": [{"id": "doc", "start": 0, "end": 10}]}',
    b'{"query_id": 7, "gold": ["d", 3], "answerable": true, "correct": null, "refused": false}',
    b'{"query": "what is it?", "reference": "it is", "gold": null, "gold_spans": []}',
])
def test_the_usual_shape_takes_the_typed_decoder(line):
    values_ = label_values(line)
    assert values_ is not None and new_label(*values_) == _reference(line)


@pytest.mark.parametrize("line", [
    b'[1]', b'{"query_id": "q", "gold_span": []}', b'{"query_id": true}', b'{"query_id": 1.0}',
    b'{"query_id": 18446744073709551615}', b'{"query_id": 18446744073709551616}', b'{"gold": ["d"]}',
    b'{"query": ""}', b'{"query_id": "q", "gold_spans": [{"id": "d", "start": 5, "end": 5}]}',
    b'{"query_id": "q", "gold_spans": [{"id": "d", "start": -1, "end": 5}]}',
    b'{"query_id": "q", "gold_spans": [{"id": "d", "start": 0}]}', b'{"query_id": "\\ud800"}', b'{"query_id": ',
    b'{"query_id": "q", "gold_spans": [{"id": true, "start": 0, "end": 1}]}',
    b'{"query_id": "q", "gold_spans": [{"id": "d", "start": 0, "end": 18446744073709551616}]}',
    b'{"query_id": "q", "gold": [18446744073709551616]}',
])
def test_what_the_typed_decoder_leaves_to_parse_label(line):
    assert label_values(line) is None


@settings(max_examples=150, deadline=None)
@given(st.lists(label_lines(), min_size=1, max_size=6))
def test_read_labels_gives_the_references_labels_or_error(tmp_path_factory, lines):
    path = tmp_path_factory.mktemp("labels") / "labels.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    expected: list[Label] | str = []
    for n, line in enumerate(lines, start=1):
        ref = _reference(line)
        if isinstance(ref, str):  # the reference's own message, placed
            expected = f"{path}, line {n}, {ref}"
            break
        assert isinstance(expected, list)
        expected.append(new_label(*[getattr(ref, f) for f in ("query_id", "query", "gold", "gold_spans",
                                                               "answerable", "correct", "refused", "reference")],
                                  line=n, path=str(path)))
    try:
        got: list[Label] | str = read_labels(path)
    except SpanError as exc:
        got = str(exc)
    assert got == expected
    if isinstance(got, list):
        assert [(label.line, label.path) for label in got] == [(n, str(path)) for n in range(1, len(lines) + 1)]


def test_new_label_is_the_dataclass():
    made = new_label("q", None, ("d",), (("d", 0, 4),), True, None, False, "r", line=3, path="p")
    assert made == Label(query_id="q", gold=("d",), gold_spans=(("d", 0, 4),), answerable=True, refused=False,
                         reference="r", line=3, path="p")
    assert hash(made) == hash(Label(query_id="q", gold=("d",), gold_spans=(("d", 0, 4),), answerable=True,
                                    refused=False, reference="r", line=3, path="p"))
    with pytest.raises(AttributeError):
        made.query_id = "other"  # type: ignore[misc]
