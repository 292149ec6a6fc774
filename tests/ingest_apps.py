"""Two small RAG applications, instrumented with OpenInference, for the ingest tests.

Both answer from ``fixtures/ingest/handbook.jsonl`` (invented documents) with real framework
parts and offline models: LangChain's BM25 retriever from langchain-community and its fake
chat model; LlamaIndex's query engine with a BM25 retriever (rank-bm25 behind LlamaIndex's
retriever interface) and a scripted LLM. Each ``ask`` can be set to lose the evidence at a
chosen stage (a reranker cut, a context budget that evicts or cuts, a failing retriever, no
LLM call), so a test knows which bucket the request must land in.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
HANDBOOK = REPO / "fixtures" / "ingest" / "handbook.jsonl"
_WORD = re.compile(r"[a-z0-9]+")


def load_handbook() -> list[dict[str, str]]:
    return [json.loads(line) for line in HANDBOOK.read_text(encoding="utf-8").splitlines() if line.strip()]


def span_of(doc_id: str, phrase: str) -> dict[str, Any]:
    """The ``{"id", "start", "end"}`` gold span of a phrase in a handbook document."""
    text = next(d["text"] for d in load_handbook() if d["id"] == doc_id)
    start = text.index(phrase)
    return {"id": doc_id, "start": start, "end": start + len(phrase)}


def words(text: str) -> list[str]:
    """Lower-case word tokens: the BM25 tokenizer of both applications."""
    return _WORD.findall(text.lower())


def overlap(query: str, text: str) -> int:
    """Distinct query words in the text: the toy reranker's score."""
    return len(set(_WORD.findall(query.lower())) & set(_WORD.findall(text.lower())))


def budget_context(texts: list[str], budget: int | None, mode: str) -> str:
    """Join passages under a character budget: ``evict`` drops whole passages that do not fit,
    ``cut`` stops mid-passage at the budget."""
    joined = "\n\n".join(texts)
    if budget is None:
        return joined
    if mode == "cut":
        return joined[:budget]
    kept, used = [], 0
    for t in texts:
        if used + len(t) > budget:
            break
        kept.append(t)
        used += len(t) + 2
    return "\n\n".join(kept)


class LangChainApp:
    """BM25Retriever (langchain-community) → optional reranker → prompt → FakeListChatModel."""

    def __init__(self, chunk_size: int = 120, k: int = 3) -> None:
        from langchain_community.retrievers import BM25Retriever
        from langchain_core.documents import Document
        from langchain_text_splitters import RecursiveCharacterTextSplitter

        docs = [Document(page_content=d["text"], metadata={"source": d["id"], "section": d["title"]})
                for d in load_handbook()]
        splitter = RecursiveCharacterTextSplitter(chunk_size=chunk_size, chunk_overlap=0, add_start_index=True)
        self.chunks = splitter.split_documents(docs)
        for c in self.chunks:
            c.id = f"{c.metadata['source']}@{c.metadata['start_index']}"
        self.retriever = BM25Retriever.from_documents(self.chunks, k=k, preprocess_func=words)

    def chain(self, answer: str, *, budget: int | None = None, mode: str = "evict", rerank_top: int | None = None,
              fail: bool = False) -> Any:
        from langchain_core.callbacks import CallbackManagerForRetrieverRun
        from langchain_core.language_models.fake_chat_models import FakeListChatModel
        from langchain_core.output_parsers import StrOutputParser
        from langchain_core.prompts import ChatPromptTemplate
        from langchain_core.retrievers import BaseRetriever
        from langchain_core.runnables import RunnableLambda, RunnableParallel, RunnablePassthrough

        class OverlapReranker(BaseRetriever):
            """Reranks the base retriever's documents by query-word overlap and keeps the top n."""

            base: Any
            top_n: int

            def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list:
                docs = self.base.invoke(query, config={"callbacks": run_manager.get_child()})
                ranked = sorted(docs, key=lambda d: -overlap(query, d.page_content))
                return ranked[: self.top_n]

        class DownRetriever(BaseRetriever):
            def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list:
                raise ConnectionError("search index unreachable")

        retriever: Any = self.retriever
        if rerank_top is not None:
            retriever = OverlapReranker(base=self.retriever, top_n=rerank_top)
        if fail:
            retriever = DownRetriever()
        prompt = ChatPromptTemplate.from_messages([
            ("system", "Answer from the handbook passages below.\n\n{context}"), ("human", "{question}")])
        context = retriever | RunnableLambda(lambda docs: budget_context([d.page_content for d in docs], budget, mode))
        llm = FakeListChatModel(responses=[answer])
        return RunnableParallel(context=context, question=RunnablePassthrough()) | prompt | llm | StrOutputParser()

    def ask(self, query_id: str | None, question: str, answer: str = "", *, llm: bool = True,
            **settings: Any) -> str | None:
        config = {"metadata": {"query_id": query_id}} if query_id is not None else {}
        if not llm:  # retrieval only: the request has no LLM span
            self.retriever.invoke(question, config=config)
            return None
        try:
            return self.chain(answer, **settings).invoke(question, config=config)
        except ConnectionError:
            return None


class LlamaIndexApp:
    """A BM25 retriever → optional postprocessors → response synthesizer → scripted LLM."""

    def __init__(self, chunk_size: int = 40, k: int = 3, line_breaks: bool = False) -> None:
        from llama_index.core import Document
        from llama_index.core.node_parser import SentenceSplitter

        from ragstage.ingest import locate_llamaindex_nodes

        # line_breaks: each sentence on a line of its own (". " -> ".\n", offsets unchanged): chunks of several lines
        docs = [Document(text=d["text"].replace(". ", ".\n") if line_breaks else d["text"], id_=d["id"],
                         metadata={"section": d["title"]}) for d in load_handbook()]
        for d in docs:
            d.excluded_llm_metadata_keys.append("section")
        self.nodes = locate_llamaindex_nodes(
            SentenceSplitter(chunk_size=chunk_size, chunk_overlap=0).get_nodes_from_documents(docs))
        self.k = k

    def engine(self, answer: str, *, rerank_top: int | None = None, cutoff: float | None = None,
               context_window: int | None = None, fail: bool = False, llm_rerank: int | None = None,
               mode: str | None = None) -> Any:
        """``llm_rerank``: LlamaIndex's ``LLMRerank`` keeping that many nodes, its model a stand-in that
        ranks them in the retriever's order; ``mode``: the response mode (default: ``simple_summarize``
        with a ``context_window``, else ``compact``)."""
        from llama_index.core.base.llms.types import CompletionResponse, LLMMetadata
        from llama_index.core.instrumentation import get_dispatcher
        from llama_index.core.instrumentation.events.rerank import ReRankEndEvent, ReRankStartEvent
        from llama_index.core.llms import CustomLLM
        from llama_index.core.llms.callbacks import llm_completion_callback
        from llama_index.core.postprocessor import SimilarityPostprocessor
        from llama_index.core.postprocessor.types import BaseNodePostprocessor
        from llama_index.core.query_engine import RetrieverQueryEngine
        from llama_index.core.retrievers import BaseRetriever
        from llama_index.core.schema import NodeWithScore
        from rank_bm25 import BM25Okapi

        nodes, k = self.nodes, self.k
        dispatcher = get_dispatcher(__name__)

        class KeywordRetriever(BaseRetriever):
            def __init__(self) -> None:
                self.bm25 = BM25Okapi([words(n.text) for n in nodes])
                super().__init__()

            def _retrieve(self, query_bundle: Any) -> list:
                if fail:
                    raise ConnectionError("search index unreachable")
                scores = self.bm25.get_scores(words(query_bundle.query_str))
                order = sorted(range(len(nodes)), key=lambda i: (-scores[i], i))[:k]
                return [NodeWithScore(node=nodes[i], score=float(scores[i])) for i in order]

        class OverlapRerank(BaseNodePostprocessor):
            top_n: int = 1

            def _postprocess_nodes(self, nodes: list, query_bundle: Any = None) -> list:
                query = query_bundle.query_str
                dispatcher.event(ReRankStartEvent(query=query_bundle, nodes=nodes, top_n=self.top_n,
                                                  model_name="word-overlap"))
                ranked = sorted(nodes, key=lambda n: -overlap(query, n.node.get_content()))[: self.top_n]
                out = [NodeWithScore(node=n.node, score=float(overlap(query, n.node.get_content()))) for n in ranked]
                dispatcher.event(ReRankEndEvent(nodes=out))
                return out

        class ScriptedLLM(CustomLLM):
            """Answers with a fixed text: an offline stand-in for a model."""

            text: str = ""
            window: int = 3900

            @property
            def metadata(self) -> LLMMetadata:
                return LLMMetadata(context_window=self.window, num_output=16, model_name="scripted-stand-in")

            @llm_completion_callback()
            def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
                return CompletionResponse(text=self.text)

            @llm_completion_callback()
            def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
                yield CompletionResponse(text=self.text, delta=self.text)

        class RankingLLM(CustomLLM):
            """Answers LLMRerank's choice prompt: the first ``keep`` documents, in their order."""

            keep: int = 1

            @property
            def metadata(self) -> LLMMetadata:
                return LLMMetadata(model_name="ranking-stand-in")

            @llm_completion_callback()
            def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
                return CompletionResponse(text="\n".join(f"Doc: {i}, Relevance: {10 - i}"
                                                         for i in range(1, self.keep + 1)))

            @llm_completion_callback()
            def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
                yield self.complete(prompt)

        post: list = []
        if llm_rerank is not None:
            from llama_index.core.postprocessor import LLMRerank

            post.append(LLMRerank(llm=RankingLLM(keep=llm_rerank), top_n=llm_rerank, choice_batch_size=k))
        if cutoff is not None:
            post.append(SimilarityPostprocessor(similarity_cutoff=cutoff))
        if rerank_top is not None:
            post.append(OverlapRerank(top_n=rerank_top))
        llm = ScriptedLLM(text=answer, window=context_window or 3900)
        mode = mode or ("simple_summarize" if context_window else "compact")
        return RetrieverQueryEngine.from_args(KeywordRetriever(), llm=llm, node_postprocessors=post, response_mode=mode)

    def ask(self, query_id: str, question: str, answer: str = "", *, llm: bool = True, **settings: Any) -> str | None:
        from openinference.instrumentation import using_metadata

        with using_metadata({"query_id": query_id}):
            engine = self.engine(answer, **settings)
            if not llm:
                engine.retrieve(question) if hasattr(engine, "retrieve") else None
                return None
            try:
                return str(engine.query(question))
            except ConnectionError:
                return None
