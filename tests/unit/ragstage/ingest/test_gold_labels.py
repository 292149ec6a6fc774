"""Gold on document and span, and the labels file read (ragstage.ingest.gold)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragstage.ingest import (
    ChunkKeys,
    Label,
    SpanError,
    read_labels,
)
from ragstage.ingest.gold import gold_ids, locate, parse_label

DOC = "First sentence here. The gold sentence says fourteen weeks. A closing sentence follows."


def _chunks(size):
    return {f"D@{i}": locate({"source": "D", "start_index": i}, DOC[i:i + size], ChunkKeys())
            for i in range(0, len(DOC), size)}


@given(st.integers(min_value=5, max_value=60))
def test_span_labels_survive_rechunking(size):
    start = DOC.index("fourteen weeks")
    label = Label(query_id="q", gold_spans=(("D", start, start + len("fourteen weeks")),))
    chunks = _chunks(size)
    gold = gold_ids(label, chunks)
    expected = [cid for cid, (_, s, e) in chunks.items() if s < start + 14 and start < e]
    assert list(gold) == expected and gold


def test_document_gold_and_keys_configurable():
    keys = ChunkKeys(doc=("file",), start=("offset",), end=("stop",))
    assert locate({"file": "F", "offset": 3, "stop": 9}, "xxxxxx", keys) == ("F", 3, 9)
    assert gold_ids(Label(query_id="q", gold=("F",)), {"c1": ("F", None, None), "c2": ("G", 0, 5)}) == ("c1",)


BAD_LABELS = {  # the field each bad label line must be blamed on
    "gold": '{"query_id": "q", "gold": "d1"}',
    "gold_spans": '{"query_id": "q", "gold_spans": [{"id": "d", "start": 5, "end": 2}]}',
    "query_id": '{"gold": ["d"]}',
    "golds": '{"query_id": "q", "golds": ["d"]}',
}


@pytest.mark.parametrize("field, line", BAD_LABELS.items())
def test_bad_labels_name_line_and_key(tmp_path, field, line):
    path = tmp_path / "labels.jsonl"
    path.write_text('{"query_id": "ok", "gold": ["d"]}\n' + line + "\n")
    with pytest.raises(SpanError) as info:
        read_labels(path)
    assert info.value.line == 2 and info.value.field == field


_VALUES = st.one_of(st.none(), st.booleans(), st.integers(-2, 60), st.text("ab", max_size=2))


@settings(max_examples=200)
@given(st.lists(st.dictionaries(st.sampled_from(["id", "start", "end", "x"]), _VALUES, max_size=4), max_size=3),
       st.one_of(st.none(), st.booleans()), st.one_of(st.none(), st.sampled_from(["q", 7])))
def test_a_label_read_is_the_label_its_fields_make_or_the_error_its_span_earns(spans, answerable, query_id):
    """A gold span is taken only when it is exactly {id, start, end} with a document id and
    integers 0 <= start < end; anything else is an error on gold_spans."""
    record = {"query_id": query_id, "query": "a question", "gold_spans": spans, "answerable": answerable}

    def good(item):
        s, e, doc = item.get("start"), item.get("end"), item.get("id")
        return (set(item) == {"id", "start", "end"} and all(type(v) is int for v in (s, e)) and 0 <= s < e
                and type(doc) in (str, int))

    if not all(good(item) for item in spans):
        with pytest.raises(SpanError) as info:
            parse_label(record)
        assert info.value.field == "gold_spans"
        return
    label = parse_label(record)
    built = Label(query_id=None if query_id is None else str(query_id), query="a question",
                  gold_spans=tuple((str(i["id"]), i["start"], i["end"]) for i in spans), answerable=answerable)
    assert label == built


def test_read_labels_says_where_each_label_was_read(tmp_path):
    path = tmp_path / "labels.jsonl"
    path.write_text('{"query_id": "a", "gold": ["d"]}\n\n{"query": "b?", "correct": true}\n')
    assert read_labels(path) == [Label(query_id="a", gold=("d",), line=1, path=str(path)),
                                 Label(query="b?", correct=True, line=3, path=str(path))]

_LABEL_VALUES = st.sampled_from([None, [], ["d1", 2], [True], False, 0, "", "x", True, 1, [{"id": "d"}]])


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(st.sampled_from(["gold", "answerable", "correct", "refused"]), _LABEL_VALUES))
def test_a_label_takes_null_absent_and_empty_as_nothing_and_checks_every_other_value(values):
    """gold: null, absent or [] is none, a list of ids is read, anything else is an error naming
    'gold'; answerable, correct, refused: null or absent is None, a boolean is read, anything else
    is an error naming the key."""
    from ragstage.ingest.gold import parse_label

    def ok(key, value):
        if key == "gold":
            return value is None or (isinstance(value, list) and all(
                isinstance(v, (str, int)) and not isinstance(v, bool) for v in value))
        return value is None or type(value) is bool

    bad = sorted(key for key, value in values.items() if not ok(key, value))
    if bad:
        with pytest.raises(SpanError) as error:
            parse_label({"query_id": "q", **values})
        assert error.value.field in bad
        return
    label = parse_label({"query_id": "q", **values})
    assert label.gold == tuple(str(v) for v in values.get("gold") or ())
    assert [getattr(label, k) for k in ("answerable", "correct", "refused")] == [
        values.get(k) for k in ("answerable", "correct", "refused")]
