"""One request's spans read into a trace: retrievers, rerankers, models, errors, ids (ragstage.ingest.requests)."""

from __future__ import annotations

from dataclasses import replace

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragstage import diagnose
from ragstage.ingest import (
    Label,
    Span,
    ingest_openinference,
)
from ragstage.ingest.memo import IngestCache
from ragstage.ingest.requests import content_id, read_request


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
