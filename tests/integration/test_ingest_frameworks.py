"""Real instrumented applications, offline: each request loses its evidence at a known stage.

A LangChain retrieval chain and a LlamaIndex query engine (``tests/ingest_apps.py``) run
under their OpenInference instrumentors; the spans are captured through the OpenTelemetry
SDK both in memory and as an OTLP JSON Lines file, ingested with document- and span-level
labels, and every request must land in the bucket its setting was built to produce.
"""

from __future__ import annotations

import pytest

pytest.importorskip("opentelemetry.sdk")
pytest.importorskip("langchain_community")
pytest.importorskip("llama_index.core")

from ingest_apps import LangChainApp, LlamaIndexApp, span_of  # noqa: E402
from stack_apps import capture  # noqa: E402

from ragstage import diagnose  # noqa: E402
from ragstage.ingest import Label, ingest_openinference, judge_contains  # noqa: E402

WEEKS = "How many weeks of paid parental leave do new parents receive?"
HOTEL = "What is the hotel cap per night?"
LOGIN = "What is the login secret schedule?"
FLIGHTS = "Who approves flights and work from abroad?"
LAPTOPS = "How often are laptops replaced and passwords changed?"
TRAINING = "Does the training budget cover conferences?"

def gold_span(doc: str, phrase: str) -> tuple[tuple[str, int, int]]:
    span = span_of(doc, phrase)
    return ((span["id"], span["start"], span["end"]),)


LABELS = [
    Label(query_id="weeks", gold_spans=gold_span("leave", "fourteen weeks of paid parental leave"),
          reference="fourteen weeks"),
    Label(query_id="hotel", gold_spans=gold_span("travel", "capped at 140 euros per night"), reference="140 euros"),
    Label(query_id="login", gold_spans=gold_span("security", "Passwords rotate every ninety days")),
    Label(query_id="flights", gold=("travel",)),
    Label(query_id="laptops-evict", gold_spans=gold_span("security", "Passwords rotate")),
    Label(query_id="laptops-cut", gold_spans=gold_span("security", "Passwords rotate")),
    Label(query_id="down", gold=("leave",)),
    Label(query_id="no-llm", gold=("leave",)),
    # matched by its text, whitespace aside (the request sets no query id)
    Label(query=" " + WEEKS.replace(" ", "\n "), gold=("leave",), reference="fourteen weeks"),
    Label(query_id="ghost", gold=("leave",)),  # matches no request
]


def _buckets(result):
    return {t.query_id: diagnose(t).stage.value for t in result.traces}


# (query id, question, scripted answer, settings): each request loses its evidence at a known
# stage. The evictions and cuts use each framework's own mechanism, so their settings differ.
SHARED_REQUESTS = [
    ("weeks", WEEKS, "Fourteen weeks.", {}),
    ("hotel", HOTEL, "100 euros per night.", {}),
    ("login", LOGIN, "Every month.", {}),
    ("flights", FLIGHTS, "A director.", {"rerank_top": 1}),
]
FAILING_REQUESTS = [("down", WEEKS, "", {"fail": True}), ("no-llm", WEEKS, "", {"llm": False})]
LANGCHAIN_REQUESTS = SHARED_REQUESTS + [
    ("laptops-evict", LAPTOPS, "Every ninety days.", {"budget": 150, "mode": "evict"}),
    ("laptops-cut", LAPTOPS, "Every ninety days.", {"budget": 180, "mode": "cut"}),
] + FAILING_REQUESTS + [("unlabelled", TRAINING, "Yes.", {}), (None, WEEKS, "Fourteen weeks.", {})]
LLAMAINDEX_REQUESTS = SHARED_REQUESTS + [
    ("laptops-evict", LAPTOPS, "Every ninety days.", {"cutoff": 3.0}),
    ("laptops-cut", LAPTOPS, "Every ninety days.", {"context_window": 100}),
] + FAILING_REQUESTS


def _ask_all(app, requests):
    for query_id, question, answer, settings in requests:
        app.ask(query_id, question, answer, **settings)


@pytest.fixture(scope="module")
def langchain_run(tmp_path_factory):
    from openinference.instrumentation.langchain import LangChainInstrumentor

    app = LangChainApp()
    return capture(tmp_path_factory.mktemp("langchain"), LangChainInstrumentor(),
                    lambda: _ask_all(app, LANGCHAIN_REQUESTS))


@pytest.fixture(scope="module")
def llamaindex_run(tmp_path_factory):
    from openinference.instrumentation.llama_index import LlamaIndexInstrumentor

    app = LlamaIndexApp()
    return capture(tmp_path_factory.mktemp("llamaindex"), LlamaIndexInstrumentor(),
                    lambda: _ask_all(app, LLAMAINDEX_REQUESTS))


LANGCHAIN_EXPECTED = {
    "weeks": "none",
    "hotel": "generation",
    "login": "retrieval",
    "flights": "reranking",
    "laptops-evict": "prompt_assembly",
    "laptops-cut": "prompt_assembly",
    "down": "endpoint_unavailable",
    "no-llm": "not_logged",
    "unlabelled": "label_missing",
}

LLAMAINDEX_EXPECTED = {
    "weeks": "none",
    "hotel": "generation",
    "login": "retrieval",
    "flights": "reranking",
    "laptops-evict": "reranking",
    "laptops-cut": "prompt_assembly",
    "down": "endpoint_unavailable",
    "no-llm": "not_logged",
}


@pytest.mark.parametrize("source", ["memory", "otlp"])
def test_langchain_requests_land_in_their_buckets(langchain_run, source):
    spans, path = langchain_run
    result = ingest_openinference(spans if source == "memory" else path, labels=LABELS, judge=judge_contains)
    buckets = _buckets(result)
    text_matched = [t for t in result.traces if t.query_id not in LANGCHAIN_EXPECTED]
    assert {k: buckets[k] for k in LANGCHAIN_EXPECTED} == LANGCHAIN_EXPECTED
    assert len(text_matched) == 1 and text_matched[0].gold and diagnose(text_matched[0]).stage.value == "none"
    assert [lb.query_id for lb in result.unmatched_labels] == ["ghost"]
    assert result.without_llm == ["down", "no-llm"]  # the failing retriever stopped the chain too


def test_otlp_file_and_memory_give_the_same_traces(langchain_run, llamaindex_run):
    for spans, path in (langchain_run, llamaindex_run):
        a = ingest_openinference(spans, labels=LABELS)
        b = ingest_openinference(path, labels=LABELS)
        assert [t.to_dict() for t in a.traces] == [t.to_dict() for t in b.traces]


@pytest.mark.parametrize("source", ["memory", "otlp"])
def test_llamaindex_requests_land_in_their_buckets(llamaindex_run, source):
    spans, path = llamaindex_run
    result = ingest_openinference(spans if source == "memory" else path, labels=LABELS, judge=judge_contains)
    assert _buckets(result) == LLAMAINDEX_EXPECTED


def _trace(result, qid):
    return next(t for t in result.traces if t.query_id == qid)


def test_langchain_trace_contents(langchain_run):
    result = ingest_openinference(langchain_run[0], labels=LABELS, judge=judge_contains)
    weeks = _trace(result, "weeks")
    assert weeks.prompt_source == "recovered" and weeks.retrieved[0] == "leave@0"
    assert weeks.gold == ("leave@0",) and weeks.prompt == weeks.retrieved
    assert weeks.query == WEEKS and weeks.answer == "Fourteen weeks." and weeks.timestamp
    assert weeks.retrieved_scores is None  # BM25Retriever gives no scores: the sections are kept all the same
    assert weeks.retrieved_sections == ("Parental leave", "Parental leave", "Travel expenses")
    cut = _trace(result, "laptops-cut")
    assert cut.truncated == ("security@0",) and "security@0" not in cut.prompt
    assert "truncated" in diagnose(cut).reason
    evict = _trace(result, "laptops-evict")
    assert evict.truncated == () and evict.prompt == ("equipment@0",)
    flights = _trace(result, "flights")
    assert flights.reranked == ("remote@0",) and "travel@0" in flights.retrieved
    assert "OverlapReranker" in flights.meta["ingest"]["reranking"]
    down = _trace(result, "down")
    assert down.error["stage"] == "retrieval" and "search index unreachable" in down.error["message"]


def test_llamaindex_trace_contents(llamaindex_run):
    result = ingest_openinference(llamaindex_run[0], labels=LABELS, judge=judge_contains)
    weeks = _trace(result, "weeks")
    assert weeks.retrieved_scores is not None and weeks.retrieved_sections[0] == "Parental leave"
    assert weeks.model == "scripted-stand-in" and weeks.prompt_source == "recovered"
    assert len(weeks.gold) == 1 and weeks.gold[0] in weeks.prompt
    flights = _trace(result, "flights")
    assert "reranker" in flights.meta["ingest"]["reranking"] and len(flights.reranked) == 1
    cutoff = _trace(result, "laptops-evict")
    assert "_postprocess_nodes" in cutoff.meta["ingest"]["reranking"]
    cut = _trace(result, "laptops-cut")  # simple_summarize cut the joined context to fit the window
    assert cut.truncated and set(cut.gold) <= set(cut.truncated) and cut.prompt
    assert "truncated" in diagnose(cut).reason
