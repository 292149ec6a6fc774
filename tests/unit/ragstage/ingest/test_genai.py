"""Spans in the OpenTelemetry GenAI conventions (``gen_ai.*``), shaped as the conventions specify.

These spans are written by hand from the conventions' attribute names, so each case can be shaped
at will: a ``retrieval`` operation with its documents (id, score, content)
and query text, and a ``chat`` operation with system instructions, input and output messages; and
a retrieval span as OpenLIT's LangChain instrumentation writes one (the first three documents and
their count).
OpenLLMetry's spans, which use the same message attributes, are recorded for real in
``tests/integration/test_ingest_conventions.py``, and OpenLIT's (recorded by OpenLIT 1.45.0 in an
environment of its own: it requires OpenAI 2, the Phoenix server OpenAI 3) are read by
``test_openlit_recorded.py``.
"""

from __future__ import annotations

import orjson

from ragstage import diagnose
from ragstage.ingest import Label, Span, ingest_spans

PASSAGES = {"d1": "Hotel costs are capped at 140 euros per night.", "d2": "Flights need approval from a director.",
            "d3": "Passwords rotate every ninety days."}


def _request(trace: str, question: str, retrieved: list[str], answer: str) -> list[Span]:
    docs = [{"id": d, "score": 1.0 - i / 10, "content": PASSAGES[d]} for i, d in enumerate(retrieved)]
    context = "\n".join(PASSAGES[d] for d in retrieved)
    retrieval = Span(trace, "a" * 16, None, "retrieval handbook", 1, 2, {
        "gen_ai.operation.name": "retrieval", "gen_ai.data_source.id": "handbook",
        "gen_ai.retrieval.query.text": question, "gen_ai.retrieval.documents": orjson.dumps(docs).decode()})
    chat = Span(trace, "b" * 16, None, "chat model", 3, 4, {
        "gen_ai.operation.name": "chat", "gen_ai.request.model": "stand-in",
        "gen_ai.system_instructions": orjson.dumps([{"type": "text", "content": "Answer from:\n" + context}]).decode(),
        "gen_ai.input.messages": orjson.dumps([{"role": "user", "parts": [{"type": "text", "content": question}]}]
                                              ).decode(),
        "gen_ai.output.messages": orjson.dumps([{"role": "assistant", "parts": [{"type": "text", "content": answer}]}]
                                               ).decode()})
    return [retrieval, chat]


def test_genai_retrieval_and_chat_spans_are_read():
    spans = (_request("1" * 32, "What is the hotel cap?", ["d1", "d2"], "140 euros.")
             + _request("2" * 32, "How often do passwords rotate?", ["d1", "d2"], "Monthly.")
             + _request("3" * 32, "When do passwords rotate?", ["d1", "d2"], "Monthly."))
    labels = [Label(query="What is the hotel cap?", gold=("d1",), correct=True),
              # a document the documents' ids do not name, and chunks that carry no location: is "d1" a
              # document or a chunk of one? Not observable, so not blamed on retrieval
              Label(query="How often do passwords rotate?", gold=("d3",), correct=False),
              # the same loss labelled by a sentence of the evidence: found in no retrieved text
              Label(query="When do passwords rotate?", gold_text=("Passwords rotate every ninety days",),
                    correct=False)]
    result = ingest_spans(spans, labels)
    buckets = {t.query: diagnose(t).stage.value for t in result.traces}
    assert buckets == {"What is the hotel cap?": "none", "How often do passwords rotate?": "label_missing",
                       "When do passwords rotate?": "retrieval"}
    assert len(result.unlocated) == 1 and "stage cannot be observed" in result.summary()
    hotel = next(t for t in result.traces if t.query == "What is the hotel cap?")
    assert hotel.retrieved == ("d1", "d2") and hotel.retrieved_scores == (1.0, 0.9)
    assert hotel.prompt == ("d1", "d2") and hotel.model == "stand-in"
    assert "OpenTelemetry GenAI (gen_ai.*)" in result.summary()


def _openlit_request(trace: str, question: str, recorded: list[str], returned: int | str, answer: str) -> list[Span]:
    """A retrieval span as OpenLIT's LangChain instrumentation writes one: the first three
    documents (content and the source as id, no score) and how many the retriever returned."""
    docs = [{"content": PASSAGES[d], "id": d} for d in recorded]
    retrieval = Span(trace, "a" * 16, None, "retrieval BM25Retriever", 1, 2, {
        "gen_ai.operation.name": "retrieval", "gen_ai.retrieval.query.text": question,
        "gen_ai.retrieval.documents": orjson.dumps(docs).decode(), "gen_ai.retrieval.document_count": returned})
    chat = Span(trace, "b" * 16, None, "chat model", 3, 4, {
        "gen_ai.operation.name": "chat", "gen_ai.input.messages": orjson.dumps([{"role": "user", "parts": [
            {"type": "text", "content": "\n".join(PASSAGES[d] for d in recorded) + "\n" + question}]}]).decode(),
        "gen_ai.output.messages": orjson.dumps([{"role": "assistant", "parts": [
            {"type": "text", "content": answer}]}]).decode()})
    return [retrieval, chat]


def test_gold_past_the_documents_recorded_is_not_a_retrieval_loss():
    """OpenLIT records the first three documents: when the retriever returned more, a gold
    sentence in none of those recorded may be in the others, so the stage is not observable
    (label_missing, named on stderr), not a retrieval loss."""
    spans = (_openlit_request("1" * 32, "Who approves flights?", ["d1", "d2"], 5, "A director.")
             + _openlit_request("2" * 32, "How often do passwords rotate?", ["d1", "d2"], "5", "Monthly.")
             + _openlit_request("3" * 32, "When do passwords rotate?", ["d1", "d2"], 2, "Monthly."))
    labels = [Label(query="Who approves flights?", gold_text=("Flights need approval",), correct=True),
              Label(query="How often do passwords rotate?", gold_text=("Passwords rotate",), correct=False),
              Label(query="When do passwords rotate?", gold_text=("Passwords rotate",), correct=False)]
    result = ingest_spans(spans, labels)
    buckets = {t.query: diagnose(t).stage.value for t in result.traces}
    assert buckets == {"Who approves flights?": "none", "How often do passwords rotate?": "label_missing",
                       "When do passwords rotate?": "retrieval"}  # the last: every document returned is recorded
    missing = next(t for t in result.traces if t.query == "How often do passwords rotate?")
    assert result.unrecorded == [missing.query_id] and result.loud and not result.unlocated
    assert f"their stage cannot be observed: written as label_missing, not as a retrieval loss: {missing.query_id}" \
        in result.summary()
