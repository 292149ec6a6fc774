"""Unit and property tests of the ingest parts: recovery, span readers, request reading, gold, Ragas."""

from __future__ import annotations

import string
from dataclasses import replace

import orjson
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragstage import diagnose
from ragstage.ingest import (
    ChunkKeys,
    Label,
    Span,
    SpanError,
    from_phoenix,
    ingest_openinference,
    normalise,
    ragas_to_traces,
    read_labels,
    read_otlp_json,
    recover_prompt_ids,
)
from ragstage.ingest.gold import gold_ids, locate, parse_label
from ragstage.ingest.memo import IngestCache
from ragstage.ingest.otlp import spans_from_request
from ragstage.ingest.recover import MIN_FRAGMENT
from ragstage.ingest.requests import content_id, read_request

# -- prompt-id recovery -------------------------------------------------------------------------


def test_whole_passages_are_in_the_prompt_and_cut_ones_are_truncated():
    contents = {"a": "Alpha passage about fever and aspirin dosage.", "b": "Beta passage  about\nthe hotel cap of "
                "140 euros per night in most cities.", "c": "Gamma passage never shown to the model at all."}
    prompt = "Context:\n" + contents["a"] + "\n\n" + " ".join(contents["b"].split()[:7])
    found = recover_prompt_ids(contents, prompt)
    assert found.prompt == ("a",) and found.truncated == ("b",)


def test_whitespace_is_normalised_both_sides():
    assert normalise("  a\n\tb   c ") == "a b c"
    assert recover_prompt_ids({"x": "one two\nthree"}, "one   two three").prompt == ("x",)


def test_overlap_inside_a_whole_neighbour_is_not_a_cut():
    a = "The first chunk ends with words that the next chunk repeats as its overlap region here."
    b = "the next chunk repeats as its overlap region here. And then it goes on with more text."
    found = recover_prompt_ids({"a": a, "b": b}, "Context: " + a)
    assert found == (("a",), ())


words = st.lists(st.text(string.ascii_lowercase, min_size=3, max_size=8), min_size=12, max_size=20, unique=True)


@settings(max_examples=60, deadline=None)
@given(st.lists(words, min_size=2, max_size=5, unique_by=lambda w: w[0]), st.data())
def test_recovery_property(passages, data):
    """Shown whole: in the prompt; shown as a long enough beginning: truncated; else neither."""
    texts = {f"p{i}": " ".join(w) for i, w in enumerate(passages)}
    ids = list(texts)
    shown = data.draw(st.lists(st.sampled_from(ids), unique=True))
    rest = [i for i in ids if i not in shown]
    cut = data.draw(st.sampled_from(rest)) if rest else None
    parts = [texts[i] for i in shown]
    if cut is not None:
        parts.append(texts[cut][: max(40, len(texts[cut]) // 2)].rstrip())
    found = recover_prompt_ids(texts, "\n\n".join(parts))
    assert set(found.prompt) == set(shown)
    if cut is not None:
        fragment, whole = len(normalise(parts[-1])), len(normalise(texts[cut]))
        long_enough = fragment >= min(MIN_FRAGMENT, max(1, whole // 2))  # rstrip can leave 39 of 40
        assert found.truncated == ((cut,) if long_enough and fragment < whole else ())


def _recover_by_masking_always(contents, prompt, min_fragment):
    """The rule of recover_prompt_ids written plainly: whole candidates masked, then every other
    candidate's beginning and end looked for in what is left."""
    text = normalise(prompt)
    norm = {cid: normalise(c) for cid, c in contents.items()}
    whole = [cid for cid, c in norm.items() if c and c in text]
    masked = text
    for cid in sorted(whole, key=lambda i: -len(norm[i])):
        masked = masked.replace(norm[cid], "\x00")
    cut = []
    for cid, c in norm.items():
        need = min(min_fragment, max(1, len(c) // 2))
        if c and cid not in whole and (c[:need] in masked or c[-need:] in masked):
            cut.append(cid)
    return tuple(whole), tuple(cut)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text("ab \x00", max_size=14) | st.text("ab", min_size=60, max_size=90), min_size=1, max_size=5),
       st.data(), st.integers(min_value=1, max_value=6) | st.sampled_from([31, 32, 40]))
def test_recovery_equals_masking_every_time(passages, data, min_fragment):
    """Recovery masks only when some fragment is in the text: the result is the one masking every
    time gives, on a two-letter alphabet where overlaps, repeats and cut passages are common, with
    passages longer than twice the opening searched first, and with the mask character itself in
    passages and prompt."""
    contents = {f"p{i}": text for i, text in enumerate(passages)}
    pieces = data.draw(st.lists(st.sampled_from(passages).flatmap(
        lambda t: st.integers(0, len(t)).flatmap(lambda k: st.sampled_from([t, t[:k], t[k:]]))), max_size=5))
    prompt = data.draw(st.text("ab \x00", max_size=6)).join(pieces)
    assert recover_prompt_ids(contents, prompt, min_fragment) == _recover_by_masking_always(contents, prompt,
                                                                                           min_fragment)


# -- OTLP JSON ----------------------------------------------------------------------------------

def _otlp(spans, status=None):
    return {"resourceSpans": [{"resource": {}, "scopeSpans": [{"scope": {"name": "t"}, "spans": spans}]}]}


def _raw(name, kind, attrs, span="00000000000000aa", parent=None, start=1, end=2, status=None):
    out = {"traceId": "0" * 31 + "1", "spanId": span, "name": name, "startTimeUnixNano": str(start),
           "endTimeUnixNano": str(end),
           "attributes": [{"key": "openinference.span.kind", "value": {"stringValue": kind}}]
           + [{"key": k, "value": v} for k, v in attrs.items()]}
    if parent:
        out["parentSpanId"] = parent
    if status:
        out["status"] = status
    return out


def test_otlp_values_ids_and_errors_are_decoded():
    raw = _raw("r", "RETRIEVER", {"retrieval.documents.0.document.id": {"stringValue": "d1"},
                                  "retrieval.documents.0.document.score": {"doubleValue": 0.5},
                                  "n": {"intValue": "7"}, "xs": {"arrayValue": {"values": [{"stringValue": "a"}]}}},
               status={"code": "STATUS_CODE_ERROR", "message": "boom"})
    raw["spanId"] = "AAAAAAAAAKo="  # base64 (protobuf's own JSON mapping) is accepted too
    (span,) = spans_from_request(_otlp([raw]))
    assert span.span_id == "00000000000000aa" and span.error == "boom" and span.kind == "RETRIEVER"
    assert span.attributes["n"] == 7 and span.attributes["xs"] == ["a"]


@pytest.mark.parametrize("line, field", [
    ('{"resourceSpans": [', None),
    ('{"spans": []}', "resourceSpans"),
    (orjson.dumps(_otlp([{**_raw("r", "LLM", {}), "traceId": "xyz"}])).decode(), "traceId"),
])
def test_malformed_otlp_names_file_line_and_field(tmp_path, line, field):
    path = tmp_path / "spans.jsonl"
    path.write_text(orjson.dumps(_otlp([_raw("ok", "LLM", {})])).decode() + "\n\n" + line + "\n")
    with pytest.raises(SpanError) as info:
        list(read_otlp_json(path))
    assert info.value.path == str(path) and info.value.line == 3 and info.value.field == field


# -- requests -----------------------------------------------------------------------------------

def _span(sid, kind, attrs=None, parent=None, start=0, end=1, name=None, error=None):
    return Span("t1", sid, parent, name or sid, start, end, {"openinference.span.kind": kind, **(attrs or {})}, error)


def _docs(prefix, ids, contents=None):
    out = {}
    for i, d in enumerate(ids):
        out[f"{prefix}.{i}.document.id"] = d
        out[f"{prefix}.{i}.document.score"] = 1.0 / (i + 1)
        out[f"{prefix}.{i}.document.content"] = (contents or {}).get(d, f"text of {d} " * 8)
    return out


@pytest.mark.parametrize("listed", [["a", "b", "a"], []])
def test_one_retriever_span_is_the_retrieval_whatever_it_lists(listed):
    """One retriever span (wrapped in a chain or not) gives its list, a repeated id kept at its
    first place, and an empty list when it lists nothing; no reranking step is made of it."""
    attrs = _docs("retrieval.documents", listed) if listed else {}
    for parent in (None, "root"):
        root = [_span("root", "CHAIN", {}, None, 0, 9)] if parent else []
        spans = [_span("r", "RETRIEVER", attrs, parent, 1, 2), *root]
        req = read_request("t1", spans)
        assert [i for i, _ in req.retrieved] == (["a", "b"] if listed else [])
        assert req.retrieved[:1] == ([("a", 1.0)] if listed else [])
        assert req.notes["retrieval"] == "one retriever span 'r'" and req.reranked is None


def test_several_retrievers_are_merged_and_the_trace_says_how():
    spans = [_span("root", "CHAIN", {"input.value": "q?"}, start=0, end=9),
             _span("r1", "RETRIEVER", _docs("retrieval.documents", ["a", "b"]), "root", 1, 2),
             _span("r2", "RETRIEVER", _docs("retrieval.documents", ["b", "c"]), "root", 3, 4)]
    req = read_request("t1", spans)
    assert [i for i, _ in req.retrieved] == ["a", "b", "c"] and "union" in req.notes["retrieval"]
    fused = spans + [_span("f", "RETRIEVER", _docs("retrieval.documents", ["c", "a", "b"]), "root", 0, 5)]
    fused[1], fused[2] = replace(fused[1], parent_id="f"), replace(fused[2], parent_id="f")
    req = read_request("t1", fused)
    assert [i for i, _ in req.retrieved] == ["c", "a", "b"] and "fused by 'f'" in req.notes["retrieval"]


def test_reranker_llm_and_error_spans():
    spans = [_span("root", "CHAIN", {"input.value": '{"question": "q?"}', "metadata": '{"query_id": "q7"}'}, end=9),
             _span("r", "RETRIEVER", _docs("retrieval.documents", ["a", "b"]), "root", 1, 2),
             _span("k", "RERANKER", {**_docs("reranker.input_documents", ["a", "b"]),
                                     **_docs("reranker.output_documents", ["b"])}, "root", 3, 4),
             _span("l", "LLM", {"llm.input_messages.0.message.role": "user",
                                "llm.input_messages.0.message.content": "text of b " * 8,
                                "llm.output_messages.0.message.content": "B.", "llm.model_name": "m1"}, "root", 5, 6),
             _span("g", "TOOL", {}, "root", 6, 7, error="guard failed")]
    req = read_request("t1", spans)
    assert req.query == "q?" and req.metadata["query_id"] == "q7"
    assert [i for i, _ in req.reranked] == ["b"] and req.answer == "B." and req.model == "m1"
    assert req.error == {"stage": "tool", "message": "g: guard failed"}


def test_no_llm_span_and_skipped_traces_are_reported():
    spans = [_span("r", "RETRIEVER", {**_docs("retrieval.documents", ["a"]), "metadata": '{"query_id": "t1"}'}),
             Span("t2", "x", None, "index", 0, 1, {"openinference.span.kind": "CHAIN"})]
    result = ingest_openinference(spans, labels=[Label(query_id="t1", gold=("a",))])
    (trace,) = result.traces
    assert result.without_llm == ["t1"] and result.skipped == ["t2"]
    assert trace.prompt is None and diagnose(trace).stage.value == "not_logged"


def test_logged_prompt_ids_win_over_recovery():
    spans = [_span("r", "RETRIEVER", {**_docs("retrieval.documents", ["a", "b"]),
                                      "metadata": '{"prompt_ids": ["b"]}'}),
             _span("l", "LLM", {"llm.prompts": ["nothing relevant"], "output.value": "x"}, start=2, end=3)]
    (trace,) = ingest_openinference(spans).traces
    assert trace.prompt == ("b",) and trace.prompt_source == "logged"


def test_documents_without_ids_get_ids_from_their_text():
    spans = [_span("r", "RETRIEVER", {"retrieval.documents.0.document.content": "Some  passage\ntext."})]
    (trace,) = ingest_openinference(spans).traces
    assert trace.retrieved == (content_id("Some passage text."),)


@pytest.mark.parametrize("text", ['{"source": "a.md", "start_index": 4}', '{"source": "a.md", "pages": [1, 2]}',
                                  '["not", "an", "object"]', "{not json", ""])
def test_each_document_gets_metadata_of_its_own(text):
    """The same metadata text read again (a chunk retrieved for another request) gives an equal
    dict that shares nothing mutable with the first: changing one changes no other."""
    from ragstage.ingest.openinference import documents

    span = _span("r", "RETRIEVER", {"retrieval.documents.0.document.content": "x", "retrieval.documents.0.document"
                                    ".metadata": text})
    first, second = documents(span)[0].metadata, documents(span)[0].metadata
    want = orjson.loads(text) if text.startswith("{\"") else {}
    assert first == second == want
    for metadata in (first, second):
        metadata["source"] = "changed"
        for value in metadata.values():
            if isinstance(value, list):
                value.append(3)
    assert documents(span)[0].metadata == want


# -- Phoenix ------------------------------------------------------------------------------------

def test_phoenix_frame_and_parquet(tmp_path):
    docs = [{"document": {"id": "a", "content": "alpha text " * 6, "score": 0.9, "metadata": {"source": "A"}}},
            {"document": {"id": "b", "content": "beta text " * 6, "score": 0.1}}]
    frame = pd.DataFrame([
        {"context.trace_id": "t", "context.span_id": "r", "parent_id": None, "name": "retrieve",
         "span_kind": "RETRIEVER", "start_time": pd.Timestamp("2025-01-01T00:00:00Z"),
         "end_time": pd.Timestamp("2025-01-01T00:00:01Z"), "status_code": "OK", "status_message": "",
         "attributes.retrieval.documents": docs, "attributes.input.value": "q?",
         "attributes.metadata": {"query_id": "q1"}, "attributes.llm.input_messages": None},
        {"context.trace_id": "t", "context.span_id": "l", "parent_id": None, "name": "llm", "span_kind": "LLM",
         "start_time": pd.Timestamp("2025-01-01T00:00:02Z"), "end_time": pd.Timestamp("2025-01-01T00:00:03Z"),
         "status_code": "OK", "status_message": "", "attributes.retrieval.documents": None,
         "attributes.input.value": None, "attributes.metadata": None,
         "attributes.llm.input_messages": [{"message": {"role": "user", "content": "alpha text " * 6}}]},
    ])
    traces = ingest_openinference(frame, labels=[Label(query_id="q1", gold=("A",))]).traces
    assert traces[0].prompt == ("a",) and traces[0].gold == ("a",) and traces[0].timestamp.startswith("2025-01-01")
    path = tmp_path / "spans.parquet"
    frame.to_parquet(path)
    assert [t.to_dict() for t in ingest_openinference(str(path), labels=[Label(query_id="q1", gold=("A",))]).traces] \
        == [t.to_dict() for t in traces]
    with pytest.raises(SpanError, match="missing column"):
        list(from_phoenix(frame.drop(columns=["context.trace_id"])))


# -- gold on document and span ------------------------------------------------------------------

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


# -- Ragas --------------------------------------------------------------------------------------

def test_ragas_samples_get_stable_ids_and_state_their_assumption(tmp_path):
    samples = [{"user_input": "q1?", "retrieved_contexts": ["Alpha  text.", "Beta text."],
                "reference_contexts": ["Beta text."], "response": "b", "reference": "b"},
               {"user_input": "q2?", "retrieved_contexts": ["Alpha text."], "reference_contexts": ["Gamma."]}]
    one, two = ragas_to_traces(samples)
    assert one.retrieved[0] == two.retrieved[0] == content_id("Alpha text.")
    assert one.gold == (content_id("Beta text."),) and one.prompt == one.retrieved
    assert "reached the prompt" in one.meta["ingest"]["prompt"] and one.meta["reference"] == "b"
    assert diagnose(two).stage.value == "retrieval"
    path = tmp_path / "ragas.jsonl"
    path.write_text(orjson.dumps(samples[0]).decode() + "\n" + '{"user_input": 3}\n')
    with pytest.raises(SpanError) as info:
        ragas_to_traces(path)
    assert info.value.line == 2 and info.value.field == "user_input"


_SHARED_CACHE = IngestCache()  # one ingest's memos, across the examples below


@settings(max_examples=500, deadline=None)
@given(st.integers(1, 2**63 - 1) | st.builds(lambda s, ns: s * 10**9 + ns, st.integers(1_500_000_000, 1_900_000_000),
                                             st.sampled_from([0, 1, 499, 500, 501, 999_499, 999_500, 999_501,
                                                              999_999_499, 999_999_500, 999_999_999])))
def test_a_request_time_is_the_datetime_text_of_its_nanoseconds(ns):
    """The request's timestamp text equals datetime's own (fromtimestamp of the float seconds, to the
    millisecond), at the rounding edges of a microsecond, a millisecond and a second too."""
    from datetime import datetime, timezone

    want = datetime.fromtimestamp(ns / 1e9, tz=timezone.utc).isoformat(timespec="milliseconds")
    spans = [_span("r", "RETRIEVER", start=ns, end=ns + 1)]
    for cache in (None, _SHARED_CACHE):  # a fresh ingest's memo, and one that has seen other times
        assert read_request("t1", spans, cache=cache).timestamp == want.replace("+00:00", "Z")


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
