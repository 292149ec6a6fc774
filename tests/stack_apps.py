"""Small RAG applications on real tracing stacks, for the export tests (offline, scripted answers).

* :class:`HaystackApp`: a Haystack pipeline (``DocumentSplitter`` chunks, BM25 retriever, an
  optional ranker, a ``PromptBuilder`` whose template may slice the documents, a scripted
  generator) under the OpenInference Haystack instrumentor.
* :func:`langchain_ask`: chapter 7's LangChain application (``tests/ingest_apps.py``) with the
  question id as LangChain run metadata, for OpenInference's LangChain instrumentor (the Phoenix
  server test).
* :func:`mlflow_ask`: chapter 7's LangChain application (``tests/ingest_apps.py``) under
  ``mlflow.langchain.autolog()``, each request inside an ``@mlflow.trace`` root span that sets
  the question id as trace metadata.

Each request is built to lose its evidence at a known stage; :data:`CASES` lists them with the
bucket each must land in, and :func:`labels` writes their gold as document and span labels.
"""


from dataclasses import dataclass, field
from typing import Any

from ingest_apps import load_handbook, span_of, words

WEEKS = "How many weeks of paid parental leave do new parents receive?"
HOTEL = "What is the hotel cap per night?"
HOTEL_AGAIN = "What is the nightly hotel cap in most cities?"
LOGIN = "What is the login secret schedule?"
FLIGHTS = "Who approves flights and work from abroad?"
LAPTOPS = "How often are laptops replaced and passwords changed?"
PART_TIME = "How much leave do part-time employees receive?"


@dataclass(frozen=True)
class Case:
    """One request: its id, question, scripted answer, app settings, gold, and expected bucket."""

    query_id: str
    question: str
    answer: str
    expected: str
    gold_doc: str | None = None
    gold_phrase: str | None = None
    settings: dict[str, Any] = field(default_factory=dict)

    def label(self, by_text: bool = False) -> dict[str, Any]:
        """The reviewer's label: gold on document or span, and whether the answer is right."""
        out: dict[str, Any] = {"query": self.question} if by_text else {"query_id": self.query_id}
        if self.expected != "endpoint_unavailable" and "refus" not in self.query_id:
            out["correct"] = self.expected == "none"
        if self.gold_phrase is not None:
            out["gold_spans"] = [span_of(self.gold_doc, self.gold_phrase)]
        elif self.gold_doc is not None:
            out["gold"] = [self.gold_doc]
        return out


def labels(cases: list[Case], by_text: bool = False) -> list[dict[str, Any]]:
    return [c.label(by_text) for c in cases]


#: Requests every stack can build.
CASES = [
    Case("correct", WEEKS, "Fourteen weeks.", "none", "leave", "fourteen weeks of paid parental leave"),
    Case("wrong", HOTEL, "100 euros per night.", "generation", "travel", "capped at 140 euros per night"),
    Case("refused", HOTEL_AGAIN, "I don't know.", "generation", "travel", "capped at 140 euros per night"),
    Case("not-retrieved", LOGIN, "Every month.", "retrieval", "security", "Passwords rotate every ninety days"),
    Case("reranked-away", FLIGHTS, "A director.", "reranking", "travel", None, {"rerank_top": 1}),
    Case("failing", "Does the training budget cover conferences?", "", "endpoint_unavailable", "training", None,
         {"fail": True}),
]
#: LangChain's own: a character budget on the joined passages that evicts the gold passage
#: whole, or cuts it mid-passage (prompt assembly either way).
LANGCHAIN_CASES = CASES + [
    Case("evicted", LAPTOPS, "Every ninety days.", "prompt_assembly", "security", "Passwords rotate",
         {"budget": 150, "mode": "evict"}),
    Case("cut", LAPTOPS, "Every ninety days.", "prompt_assembly", "security", "Passwords rotate",
         {"budget": 180, "mode": "cut"}),
]
#: Haystack's own: a template that slices the documents, a gold span that straddles two word
#: chunks of which only one is retrieved (partial coverage: the prompt does not contain the span).
HAYSTACK_CASES = CASES + [
    Case("sliced", "Who approves flights, and what is the hotel cap?", "A director.", "prompt_assembly", "travel",
         "capped at 140 euros per night", {"template_top": 1}),
    Case("pipeline-fails", "How are laptops replaced?", "", "endpoint_unavailable", "security", None,
         {"bad_input": True}),
    Case("straddle", "When can the leave start before the expected birth?", "Two weeks early.", "prompt_assembly",
         "leave", "start up to two weeks before the expected birth", {"top_k": 1}),
]


_COMPONENTS: dict[str, Any] = {}


def _components() -> dict[str, Any]:
    """The two custom components, defined once at module level: the instrumentor finds a
    component's ``run`` through its module path."""
    if _COMPONENTS:
        return _COMPONENTS
    from haystack import Document, component

    @component
    class OverlapRanker:
        """Keeps the documents sharing most words with the query (a stand-in for a cross-encoder)."""

        def __init__(self, top_k: int) -> None:
            self.top_k = top_k

        @component.output_types(documents=list[Document])
        def run(self, query: str, documents: list[Document]) -> dict[str, list[Document]]:
            q = set(words(query))
            ranked = sorted(documents, key=lambda d: -len(q & set(words(d.content or ""))))
            return {"documents": ranked[: self.top_k]}

    @component
    class ScriptedGenerator:
        """Answers with a fixed text: an offline stand-in for a model."""

        def __init__(self, text: str, broken: bool) -> None:
            self.text, self.broken = text, broken

        @component.output_types(replies=list[str], meta=list[dict])
        def run(self, prompt: str) -> dict[str, Any]:
            if self.broken:
                raise ConnectionError("model endpoint unreachable")
            return {"replies": [self.text], "meta": [{"model": "scripted-stand-in"}]}

    _COMPONENTS.update(OverlapRanker=OverlapRanker, ScriptedGenerator=ScriptedGenerator)
    globals().update(_COMPONENTS)
    return _COMPONENTS


class HaystackApp:
    """DocumentSplitter → InMemoryBM25Retriever → optional ranker → PromptBuilder → scripted generator."""

    def __init__(self, split_length: int = 12) -> None:
        from haystack import Document
        from haystack.components.preprocessors import DocumentSplitter
        from haystack.document_stores.in_memory import InMemoryDocumentStore

        docs = [Document(id=d["id"], content=d["text"], meta={"section": d["title"]}) for d in load_handbook()]
        splitter = DocumentSplitter(split_by="word", split_length=split_length, split_overlap=0)
        self.chunks = splitter.run(documents=docs)["documents"]
        self.store = InMemoryDocumentStore()
        self.store.write_documents(self.chunks)

    def pipeline(self, answer: str, *, rerank_top: int | None = None, template_top: int | None = None,
                 fail: bool = False, top_k: int = 3) -> Any:
        from haystack import Pipeline
        from haystack.components.builders import PromptBuilder
        from haystack.components.retrievers.in_memory import InMemoryBM25Retriever

        docs = "documents" if template_top is None else f"documents[:{template_top}]"
        template = ("Answer from the handbook passages.\n{% for d in " + docs + " %}{{ d.content }}\n{% endfor %}"
                    "Question: {{ query }}")
        pipe = Pipeline()
        pipe.add_component("retriever", InMemoryBM25Retriever(self.store, top_k=top_k))
        pipe.add_component("prompt_builder", PromptBuilder(template=template, required_variables=["query"]))
        pipe.add_component("llm", _components()["ScriptedGenerator"](answer, fail))
        if rerank_top is not None:
            pipe.add_component("ranker", _components()["OverlapRanker"](rerank_top))
            pipe.connect("retriever.documents", "ranker.documents")
            pipe.connect("ranker.documents", "prompt_builder.documents")
        else:
            pipe.connect("retriever.documents", "prompt_builder.documents")
        pipe.connect("prompt_builder.prompt", "llm.prompt")
        return pipe

    def ask(self, case: Case, tag: bool = True) -> None:
        """Run one request; ``tag``: set its question id as OpenInference metadata."""
        settings = dict(case.settings)
        bad_input = settings.pop("bad_input", False)
        pipe = self.pipeline(case.answer, **settings)
        data: dict[str, Any] = {"retriever": {"query": case.question}, "prompt_builder": {"query": case.question}}
        if bad_input:  # the pipeline refuses the input before any component runs: only its CHAIN span fails
            data["retriever"] = {"query": case.question, "no_such_input": 1}
        if "rerank_top" in settings:
            data["ranker"] = {"query": case.question}
        from openinference.instrumentation import using_metadata

        with using_metadata({"query_id": case.query_id} if tag else {}):
            try:
                pipe.run(data)
            except Exception:  # noqa: BLE001 - the failing case raises; its spans record the failure
                pass


def langchain_ask(app: Any, case: Case) -> None:
    """One request of the LangChain app, its question id in the run's metadata (which
    OpenInference's instrumentor records as span metadata)."""
    app.ask(case.query_id, case.question, case.answer, **case.settings)


def mlflow_ask(app: Any, case: Case) -> None:
    """One request of the LangChain app under ``mlflow.langchain.autolog()``: a root span made by
    ``@mlflow.trace`` holds the question id as trace metadata, as an MLflow user would set it."""
    import mlflow

    @mlflow.trace(name="rag_request", span_type="CHAIN")
    def request(question: str) -> Any:
        mlflow.update_current_trace(metadata={"query_id": case.query_id})
        settings = dict(case.settings)
        return app.ask(None, question, case.answer, **settings)

    request(case.question)


UNANSWERABLE = "What is the company's policy on pets in the office?"

#: DSPy's requests: the gold as sentences copied from the handbook (``gold_text``), since a DSPy
#: ``Retrieve`` span exports only the passages' texts; a refusal of an unanswerable question; a
#: context budget that cuts every passage (prompt assembly).
DSPY_CASES = [c for c in CASES if c.query_id != "reranked-away"] + [
    Case("reranked-away", FLIGHTS, "A director.", "reranking", "travel", "Flights need approval from a director",
         {"rerank_top": 1}),
    Case("unanswerable", UNANSWERABLE, "I don't know.", "correct_refusal"),
    Case("cut", LAPTOPS, "Every ninety days.", "prompt_assembly", "security", "Passwords rotate every ninety days",
         {"budget": 20}),
]


def text_labels(cases: list[Case]) -> list[dict[str, Any]]:
    """Labels naming the gold by a sentence copied from it (for chunks that carry no location)."""
    out = []
    for case in cases:
        label: dict[str, Any] = {"query_id": case.query_id}
        if case.expected == "correct_refusal":
            label["answerable"] = False
        elif case.expected != "endpoint_unavailable":
            label["correct"] = case.expected == "none"
        if case.gold_phrase is not None:
            label["gold_text"] = [case.gold_phrase]
        out.append(label)
    return out


class DSPyApp:
    """``dspy.Retrieve`` over the handbook's sentences (BM25) → optional reranking module → a
    context budget → ``dspy.Predict("context, question -> answer")`` on a scripted ``DummyLM``."""

    def __init__(self, k: int = 3) -> None:
        from rank_bm25 import BM25Okapi

        self.passages = [s.strip().rstrip(".") + "." for d in load_handbook() for s in d["text"].split(". ")]
        self.bm25 = BM25Okapi([words(p) for p in self.passages])
        self.k = k

    def search(self, fail: bool) -> Any:
        from types import SimpleNamespace

        def rm(query: str, k: int = 3, **_: Any) -> list:
            if fail:
                raise ConnectionError("search index unreachable")
            scores = self.bm25.get_scores(words(query))
            order = sorted(range(len(self.passages)), key=lambda i: (-scores[i], i))[:k]
            return [SimpleNamespace(long_text=self.passages[i]) for i in order]

        return rm

    def ask(self, case: Case) -> None:
        import dspy
        from dspy.utils import DummyLM
        from openinference.instrumentation import using_metadata

        settings = dict(case.settings)
        top_n, budget = settings.get("rerank_top"), settings.get("budget")

        class OverlapRerank(dspy.Module):
            """Keeps the passages sharing most words with the question."""

            def forward(self, question: str, passages: list[str]) -> Any:
                ranked = sorted(passages, key=lambda p: -len(set(words(question)) & set(words(p))))
                return dspy.Prediction(passages=ranked[:top_n])

        k = self.k

        class RAG(dspy.Module):
            def __init__(self) -> None:
                super().__init__()
                self.retrieve = dspy.Retrieve(k=k)
                self.rerank = OverlapRerank() if top_n else None
                self.generate = dspy.Predict("context, question -> answer")

            def forward(self, question: str) -> Any:
                passages = self.retrieve(question).passages
                if self.rerank is not None:
                    passages = self.rerank(question=question, passages=passages).passages
                if budget is not None:
                    passages = [p[:budget] for p in passages]
                return self.generate(context=passages, question=question)

        with dspy.context(rm=self.search(settings.get("fail", False)), lm=DummyLM([{"answer": case.answer}])):
            with using_metadata({"query_id": case.query_id}):
                try:
                    RAG()(question=case.question)
                except ConnectionError:
                    pass


#: LlamaIndex's requests: the shared ones, and LLMRerank (a CHAIN span whose own model call lists
#: every candidate in full) keeping one node, or keeping all before a context window cuts the gold.
LLAMAINDEX_CASES = CASES + [
    Case("llm-reranked-away", FLIGHTS, "A director.", "reranking", "travel", None, {"llm_rerank": 1}),
    Case("llm-kept-then-cut", LAPTOPS, "Every ninety days.", "prompt_assembly", "security",
         "Passwords rotate every ninety days", {"llm_rerank": 3, "context_window": 100}),
    Case("similarity-cut", LAPTOPS, "Every ninety days.", "reranking", "security", "Passwords rotate every ninety days",
         {"cutoff": 3.0}),
]
#: A chunk of several lines put into the template as a Python list (``simple_summarize``).
LLAMAINDEX_LINE_CASES = [
    Case("lines-kept", WEEKS, "Fourteen weeks.", "none", "leave", "fourteen weeks of paid parental leave",
         {"mode": "simple_summarize"}),
]


def llamaindex_ask(app: Any, case: Case) -> None:
    """One request of the LlamaIndex app (``tests/ingest_apps.py``), its question id as OpenInference metadata."""
    app.ask(case.query_id, case.question, case.answer, **case.settings)


def record_langchain_openllmetry(path: Any) -> None:
    """Every LangChain case under OpenLLMetry's LangChain instrumentor, as OTLP JSON Lines at ``path``.

    Run in a process of its own (``python tests/stack_apps.py langchain/openllmetry OUT``): after this instrumentor was
    uninstrumented, a LangChain app recorded later in the same process under OpenInference lost its
    question ids (seen in this test suite), so the instrumentor never runs in the tests' process."""
    from ingest_apps import LangChainApp
    from opentelemetry.instrumentation.langchain import LangchainInstrumentor
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    from ragstage.ingest import otlp_file_exporter

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(otlp_file_exporter(path)))
    instrumentor = LangchainInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    app = LangChainApp()
    for case in LANGCHAIN_CASES:
        langchain_ask(app, case)
    instrumentor.uninstrument()
    provider.shutdown()


def record_llamaindex_openllmetry(path: Any) -> None:
    """Every LlamaIndex case under OpenLLMetry's LlamaIndex instrumentor, as OTLP JSON Lines at ``path``.

    The question id is set as OpenLLMetry documents it, ``Traceloop.set_association_properties``,
    which Traceloop's own span processor (``get_default_span_processor``, added to one's own
    tracer provider) writes on every span that starts after it. Run in a process of its own, as
    :func:`record_langchain_openllmetry` is: the instrumentor leaves a failed request's context
    attached (see ``tests/integration/test_ingest_conventions.py``)."""
    from ingest_apps import LlamaIndexApp
    from opentelemetry.instrumentation.llamaindex import LlamaIndexInstrumentor
    from opentelemetry.sdk.trace import TracerProvider
    from traceloop.sdk import Traceloop
    from traceloop.sdk.tracing.tracing import get_default_span_processor

    from ragstage.ingest import otlp_file_exporter

    provider = TracerProvider()
    provider.add_span_processor(get_default_span_processor(disable_batch=True, exporter=otlp_file_exporter(path)))
    instrumentor = LlamaIndexInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    app, lines = LlamaIndexApp(), LlamaIndexApp(line_breaks=True)
    for case in LLAMAINDEX_CASES + LLAMAINDEX_LINE_CASES:
        Traceloop.set_association_properties({"query_id": case.query_id})
        llamaindex_ask(lines if case in LLAMAINDEX_LINE_CASES else app, case)
    instrumentor.uninstrument()
    provider.shutdown()


#: ``python tests/stack_apps.py ROUTE OUT``: the routes recorded in a process of their own.
RECORDERS = {"langchain/openllmetry": record_langchain_openllmetry,
             "llamaindex/openllmetry": record_llamaindex_openllmetry}

if __name__ == "__main__":
    import sys

    RECORDERS[sys.argv[1]](sys.argv[2])


def capture(folder: Any, instrumentor: Any, run: Any) -> tuple[list[Any], Any]:
    """Run the requests under the instrumentor; spans go to memory and to an OTLP JSON Lines file."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from ragstage.ingest import otlp_file_exporter

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


def mlflow_record(folder: Any, ask: Any, cases: list[Case]) -> tuple[Any, list[Any]]:
    """Every case asked of the LangChain app under ``mlflow.langchain.autolog()`` into a local
    SQLite store: the traces as a ``search_traces`` frame and as ``Trace`` objects."""
    import os

    import mlflow
    from ingest_apps import LangChainApp

    before = os.environ.get("MLFLOW_ENABLE_ASYNC_TRACE_LOGGING")
    os.environ["MLFLOW_ENABLE_ASYNC_TRACE_LOGGING"] = "false"  # every trace stored before search_traces
    mlflow.set_tracking_uri(f"sqlite:///{folder / 'mlflow.db'}")
    experiment = mlflow.create_experiment("rag", artifact_location=(folder / "artifacts").as_uri())
    mlflow.set_experiment(experiment_id=experiment)
    mlflow.langchain.autolog()
    try:
        app = LangChainApp()
        for case in cases:
            ask(app, case)
        frame = mlflow.search_traces(experiment_ids=[experiment])
        traces = mlflow.search_traces(experiment_ids=[experiment], return_type="list")
    finally:
        mlflow.langchain.autolog(disable=True)
        if before is None:
            os.environ.pop("MLFLOW_ENABLE_ASYNC_TRACE_LOGGING", None)
        else:
            os.environ["MLFLOW_ENABLE_ASYNC_TRACE_LOGGING"] = before
    return frame, traces
