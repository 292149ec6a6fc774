"""Stacks read through the conventions they really write, each request in its bucket or said unobservable.

Each app runs offline under a real instrumentor (scripted models, BM25 retrieval), once per test
session; every request is built to lose its evidence at a known stage. Under ``CI=true`` a missing
package fails the test instead of skipping it: the matrix is only worth what it runs.
"""

from __future__ import annotations

import importlib
import os
from typing import Any

import pytest

from ragstage import diagnose
from ragstage.ingest import Label, ingest_spans, otlp_file_exporter


def need(module: str) -> Any:
    """The module, or a skip (a failure under ``CI=true``)."""
    if os.environ.get("CI") == "true":
        return importlib.import_module(module)
    return pytest.importorskip(module)


def capture(folder: Any, instrumentor: Any, run: Any) -> tuple[list[Any], Any]:
    """Run the requests under the instrumentor; spans go to memory and to an OTLP JSON Lines file."""
    need("opentelemetry.sdk")
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    memory = InMemorySpanExporter()
    path = folder / "spans.jsonl"
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    provider.add_span_processor(SimpleSpanProcessor(otlp_file_exporter(path)))
    instrumentor.instrument(tracer_provider=provider)
    try:
        run()
    finally:
        instrumentor.uninstrument()
    return list(memory.get_finished_spans()), path


def buckets(result: Any) -> dict[str, str]:
    return {t.query_id: diagnose(t).stage.value for t in result.traces}


def gold_span(doc: str, phrase: str) -> tuple[tuple[str, int, int]]:
    from ingest_apps import span_of

    span = span_of(doc, phrase)
    return ((span["id"], span["start"], span["end"]),)


LAPTOPS = "How often are laptops replaced and passwords changed?"
WEEKS = "How many weeks of paid parental leave do new parents receive?"
FLIGHTS = "Who approves flights and work from abroad?"

# LlamaIndex with LLMRerank (a CHAIN span whose own LLM call lists every candidate in full) and a
# synthesis that puts the chunks into its template as a Python list (newlines escaped)
LLAMAINDEX_LLM_RERANK = [
    ("kept-then-cut", LAPTOPS, "Every ninety days.", {"llm_rerank": 3, "context_window": 100}, "prompt_assembly"),
    ("reranked-away", FLIGHTS, "A director.", {"llm_rerank": 1}, "reranking"),
    ("kept", WEEKS, "Fourteen weeks.", {"llm_rerank": 3}, "none"),
]
LLAMAINDEX_LINES = [
    ("lines-kept", WEEKS, "Fourteen weeks.", {"mode": "simple_summarize"}, "none"),
]
LLAMAINDEX_LABELS = [
    Label(query_id="kept-then-cut", gold_spans=gold_span("security", "Passwords rotate every ninety days")),
    Label(query_id="reranked-away", gold=("travel",)),
    Label(query_id="kept", gold_spans=gold_span("leave", "fourteen weeks of paid parental leave"), correct=True),
    Label(query_id="lines-kept", gold_spans=gold_span("leave", "fourteen weeks of paid parental leave"),
          correct=True),
]


@pytest.fixture(scope="session")
def llamaindex_openinference(tmp_path_factory: Any) -> tuple[list[Any], Any]:
    need("llama_index.core")
    oi = need("openinference.instrumentation.llama_index")
    from ingest_apps import LlamaIndexApp

    def run() -> None:
        for app, requests in ((LlamaIndexApp(), LLAMAINDEX_LLM_RERANK),
                              (LlamaIndexApp(line_breaks=True), LLAMAINDEX_LINES)):
            for query_id, question, answer, settings, _ in requests:
                app.ask(query_id, question, answer, **settings)

    return capture(tmp_path_factory.mktemp("llamaindex_oi"), oi.LlamaIndexInstrumentor(), run)


@pytest.mark.parametrize("source", ["memory", "otlp"])
def test_llamaindex_llm_reranker_and_list_prompt(llamaindex_openinference: Any, source: str) -> None:
    """LLMRerank's own model call is the reranker's, not the prompt: a passage cut by the
    answering prompt's budget is prompt assembly's loss, not delivered; a chunk of several lines
    put into the template as a Python list is found whole."""
    memory, path = llamaindex_openinference
    result = ingest_spans(memory if source == "memory" else path, LLAMAINDEX_LABELS)
    expected = {q: bucket for q, *_, bucket in LLAMAINDEX_LLM_RERANK + LLAMAINDEX_LINES}
    assert buckets(result) == expected
    kept_cut = next(t for t in result.traces if t.query_id == "kept-then-cut")
    assert "stage_models" in kept_cut.meta["ingest"]


@pytest.fixture(scope="session")
def dspy_openinference(tmp_path_factory: Any) -> tuple[list[Any], Any, Any]:
    need("dspy")
    oi = need("openinference.instrumentation.dspy")
    import orjson
    from stack_apps import DSPY_CASES, DSPyApp, text_labels

    folder = tmp_path_factory.mktemp("dspy_oi")
    app = DSPyApp()
    memory, path = capture(folder, oi.DSPyInstrumentor(), lambda: [app.ask(c) for c in DSPY_CASES])
    labels = folder / "labels.jsonl"
    labels.write_bytes(b"".join(orjson.dumps(lb) + b"\n" for lb in text_labels(DSPY_CASES)))
    return memory, path, labels


@pytest.mark.parametrize("source", ["memory", "otlp"])
def test_dspy_requests_land_in_their_buckets(dspy_openinference: Any, source: str) -> None:
    """DSPy under OpenInference: passages with text only (gold found by a copied sentence), a
    reranking module read as the ranking step, the answer field read out of the adapter's markers."""
    from stack_apps import DSPY_CASES

    memory, path, labels = dspy_openinference
    result = ingest_spans(memory if source == "memory" else path, labels)
    assert buckets(result) == {c.query_id: c.expected for c in DSPY_CASES}
    answers = {t.query_id: t.answer for t in result.traces}
    assert answers["unanswerable"] == "I don't know."  # the field, not "[[ ## answer ## ]]\nI don't know."
    assert not result.unlocated and not result.unmatched_labels


def test_field_answer_reads_the_answer_field() -> None:
    from ragstage.ingest.frameworks import field_answer

    assert field_answer("[[ ## answer ## ]]\nI don't know.\n\n[[ ## completed ## ]]") == "I don't know."
    assert field_answer("[[ ## reasoning ## ]]\nsteps\n[[ ## answer ## ]]\nTwo weeks.") == "Two weeks."
    assert field_answer("[[ ## summary ## ]]\nno answer field") == "[[ ## summary ## ]]\nno answer field"
    assert field_answer("Plain text.") == "Plain text."


def test_gold_text_label_is_checked() -> None:
    from ragstage.ingest.gold import parse_label
    from ragstage.ingest.spans import SpanError

    assert parse_label({"query_id": "q", "gold_text": ["A sentence."]}).targets == ("text:A sentence.",)
    for bad in ("A sentence.", [""], [3]):
        with pytest.raises(SpanError) as err:
            parse_label({"query_id": "q", "gold_text": bad})
        assert err.value.field == "gold_text"


@pytest.fixture(scope="session")
def langchain_openllmetry(tmp_path_factory: Any) -> tuple[list[Any], Any, Any]:
    need("langchain_community")
    ollm = need("opentelemetry.instrumentation.langchain")
    import orjson
    from ingest_apps import LangChainApp
    from stack_apps import LANGCHAIN_CASES, labels, langchain_ask

    folder = tmp_path_factory.mktemp("langchain_ollm")
    app = LangChainApp()
    memory, path = capture(folder, ollm.LangchainInstrumentor(),
                           lambda: [langchain_ask(app, c) for c in LANGCHAIN_CASES])
    label_path = folder / "labels.jsonl"
    label_path.write_bytes(b"".join(orjson.dumps(lb) + b"\n" for lb in labels(LANGCHAIN_CASES)))
    return memory, path, label_path


@pytest.mark.parametrize("source", ["memory", "otlp"])
def test_langchain_under_openllmetry(langchain_openllmetry: Any, source: str) -> None:
    """OpenLLMetry's LangChain spans (traceloop.*, gen_ai.*): the question id from the association
    properties, documents from the retriever's entity output, the prompt from the system
    instructions and input messages, the wrapping retriever's cut as the ranking step."""
    from stack_apps import LANGCHAIN_CASES

    memory, path, labels = langchain_openllmetry
    result = ingest_spans(memory if source == "memory" else path, labels)
    assert buckets(result) == {c.query_id: c.expected for c in LANGCHAIN_CASES}
    assert not result.unmatched_labels and not result.incomplete and not result.unlocated
    assert "OpenLLMetry (traceloop.*)" in result.summary()
