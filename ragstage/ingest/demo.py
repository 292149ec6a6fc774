"""Chapter 7's system: a small LangChain RAG application to attribute, offline, in seconds.

The corpus is the invented mini corpus (``fixtures/mini_scifact/corpus.jsonl``, a stand-in,
not SciFact), split into chunks by LangChain's ``RecursiveCharacterTextSplitter``; the
retriever is langchain-community's ``BM25Retriever``; an optional reranker (LangChain's
``ContextualCompressionRetriever`` around :func:`overlap_rerank`, a rule, not a cross-encoder)
re-orders the retrieved chunks and keeps the best; the prompt packs the chunks in rank order
under a character budget; the model is :func:`extractive_answer`, a **rule**
behind LangChain's chat-model interface, not a language model. The questions and their gold
(a document and a character span, plus a reference answer) are ``fixtures/own_system/labels.jsonl``.

Chunk ids are UUIDs drawn at indexing time, as vector stores assign them: every re-chunking
gives every chunk a new id (seeded by the chunking settings here, so a run reproduces). The
chunk's metadata keeps its source document (``source``), offset (``start_index``) and title
(``section``): what lets a span label find it again. LangChain is imported only when used.
"""

from __future__ import annotations

import json
import random
import re
import uuid
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from ..fixtures import fixture_path
from .gold import Label, read_labels

__all__ = ["DemoSettings", "DemoApp", "MODEL_NAME", "NO_ANSWER", "load_corpus", "load_questions", "chunk_corpus",
           "chunk_locations", "extractive_answer", "overlap_rerank", "pack_context", "run_demo", "words"]

MODEL_NAME = "scripted-extractive (a rule, not an LLM)"
NO_ANSWER = "The passages do not say."
_WORD = re.compile(r"[a-z0-9]+(?:[.,][0-9]+)*")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n{2,}")
# Words too common to say what a question is about (the rule ignores them when matching).
_STOP = frozenset("a an and are as at by did do does for from how in is it many much of on or the to was were what "
                  "when which who with".split())
PASSAGES = "Passages:"


def words(text: str) -> list[str]:
    """Lower-case word tokens (numbers such as ``3.9`` and ``1,200`` stay whole): BM25's tokenizer."""
    return _WORD.findall(text.lower())


@dataclass(frozen=True)
class DemoSettings:
    """The stages a learner can change. ``k``: chunks the retriever returns. ``rerank_top``:
    with a number, the reranker re-orders those ``k`` and keeps that many (None: no reranking
    stage). ``budget``: characters of passages the prompt may hold (None: no limit); chunks are
    packed in rank order and packing stops at the first that does not fit whole, as a token
    budget does."""

    chunk_size: int = 200
    chunk_overlap: int = 0
    k: int = 6
    budget: int | None = 800
    rerank_top: int | None = None

    @property
    def name(self) -> str:
        """The pipeline name the traces carry, e.g. ``chunks200-k6-budget800`` (``-rerank4`` with a reranker)."""
        budget = self.budget if self.budget is not None else "none"
        rerank = f"-rerank{self.rerank_top}" if self.rerank_top is not None else ""
        return f"chunks{self.chunk_size}-k{self.k}{rerank}-budget{budget}"


def load_corpus() -> list[dict[str, str]]:
    """The mini corpus's documents (``_id``, ``title``, ``text``)."""
    path = fixture_path("mini_scifact", "corpus.jsonl")
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def load_questions(path: str | Path | None = None) -> list[Label]:
    """The chapter's labelled questions (default ``fixtures/own_system/labels.jsonl``)."""
    return read_labels(path if path is not None else fixture_path("own_system", "labels.jsonl"))


def chunk_corpus(chunk_size: int, chunk_overlap: int = 0, corpus: list[dict[str, str]] | None = None) -> list[Any]:
    """LangChain ``Document`` chunks of the corpus, each with a fresh UUID and its location."""
    from langchain_core.documents import Document
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    docs = [Document(page_content=d["text"], metadata={"source": d["_id"], "section": d["title"]})
            for d in (corpus if corpus is not None else load_corpus())]
    splitter = RecursiveCharacterTextSplitter(chunk_size=chunk_size, chunk_overlap=chunk_overlap,
                                              add_start_index=True)
    chunks = splitter.split_documents(docs)
    draw = random.Random(f"chunks/{chunk_size}/{chunk_overlap}")
    for chunk in chunks:
        chunk.id = str(uuid.UUID(int=draw.getrandbits(128), version=4))
    return chunks


def chunk_locations(chunks: Iterable[Any]) -> dict[str, tuple[str, int, int]]:
    """``chunk id -> (document, start, end)``: where each chunk sits in its source document."""
    return {c.id: (c.metadata["source"], c.metadata["start_index"], c.metadata["start_index"] + len(c.page_content))
            for c in chunks}


def pack_context(passages: list[str], budget: int | None) -> list[str]:
    """The passages that fit the character budget, in rank order, stopping at the first that does not."""
    if budget is None:
        return list(passages)
    kept, used = [], 0
    for text in passages:
        if used + len(text) > budget:
            break
        kept.append(text)
        used += len(text)
    return kept


def extractive_answer(question: str, passages: str) -> str:
    """The scripted model's whole behaviour: answer with the sentence of the passages that shares
    the most distinct words with the question (common words such as "how", "the", "did" do not
    count; the earliest sentence wins a tie), or :data:`NO_ANSWER` when no sentence shares one.

    It never reasons, never combines two sentences and never refuses a passage that merely
    looks relevant: a distractor sentence that repeats the question's words beats the sentence
    that answers it, which is how this model fails at generation.
    """
    asked = set(words(question)) - _STOP
    best, best_score = NO_ANSWER, 0
    for sentence in _SENTENCE_END.split(passages):
        score = len(asked & set(words(sentence)))
        if score > best_score:
            best, best_score = sentence.strip(), score
    return best


def overlap_rerank(question: str, passages: list[str], top: int) -> list[int]:
    """The reranker's rule: the positions of the ``top`` passages sharing the most distinct
    question words (common words aside), best first; the retriever's order breaks ties."""
    asked = set(words(question)) - _STOP
    order = sorted(range(len(passages)), key=lambda i: (-len(asked & set(words(passages[i]))), i))
    return order[:top]


class DemoApp:
    """BM25Retriever over the chunks (→ the reranker, when set) → budgeted prompt → the scripted
    extractive chat model. ``chain`` is the LangChain runnable a request invokes."""

    def __init__(self, settings: DemoSettings | None = None) -> None:
        from langchain_community.retrievers import BM25Retriever

        self.settings = settings or DemoSettings()
        self.chunks = chunk_corpus(self.settings.chunk_size, self.settings.chunk_overlap)
        self.retriever = BM25Retriever.from_documents(self.chunks, k=self.settings.k, preprocess_func=words)
        if self.settings.rerank_top is not None:
            self.retriever = self._with_reranker(self.retriever, self.settings.rerank_top)
        self.chain = self._build_chain()

    @staticmethod
    def _with_reranker(retriever: Any, top: int) -> Any:
        # LangChain's rerankers (Cohere, cross-encoders, FlashRank) are document compressors
        # behind a ContextualCompressionRetriever; the instrumentor writes it as a RETRIEVER span
        # around the BM25 one that returns fewer documents, which the ingest reads as reranking.
        from langchain_classic.retrievers import ContextualCompressionRetriever
        from langchain_core.documents import BaseDocumentCompressor

        class WordOverlapReranker(BaseDocumentCompressor):
            """A document compressor around :func:`overlap_rerank` (a rule, not a cross-encoder)."""

            top_n: int

            def compress_documents(self, documents: Any, query: str, callbacks: Any = None) -> list[Any]:
                docs = list(documents)
                return [docs[i] for i in overlap_rerank(query, [d.page_content for d in docs], self.top_n)]

        return ContextualCompressionRetriever(base_compressor=WordOverlapReranker(top_n=top), base_retriever=retriever)

    def _build_chain(self) -> Any:
        from langchain_core.language_models.chat_models import SimpleChatModel
        from langchain_core.output_parsers import StrOutputParser
        from langchain_core.prompts import ChatPromptTemplate
        from langchain_core.runnables import RunnableLambda, RunnableParallel, RunnablePassthrough

        class ScriptedExtractiveModel(SimpleChatModel):
            """LangChain's chat-model interface around :func:`extractive_answer` (no weights)."""

            @property
            def _llm_type(self) -> str:
                return "scripted-extractive"

            @property
            def _identifying_params(self) -> dict[str, Any]:
                return {"model_name": MODEL_NAME}

            def _call(self, messages: list, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> str:
                system = next(str(m.content) for m in messages if m.type == "system")
                question = next(str(m.content) for m in reversed(messages) if m.type == "human")
                return extractive_answer(question, system.split(PASSAGES, 1)[-1])

        budget = self.settings.budget
        prompt = ChatPromptTemplate.from_messages([
            ("system", "Answer the question with the sentence of the passages that answers it.\n\n"
                       f"{PASSAGES}\n{{context}}"),
            ("human", "{question}")])
        context = self.retriever | RunnableLambda(
            lambda docs: "\n\n".join(pack_context([d.page_content for d in docs], budget)))
        return (RunnableParallel(context=context, question=RunnablePassthrough()) | prompt
                | ScriptedExtractiveModel() | StrOutputParser())

    def ask(self, query_id: str, question: str) -> str:
        """Answer one question; the query id and pipeline name travel in the spans' metadata."""
        return self.chain.invoke(question, config={"metadata": {"query_id": query_id,
                                                                "pipeline": self.settings.name}})


def run_demo(path: str | Path, settings: DemoSettings | None = None, questions: Iterable[Label] | None = None,
             seed: int = 7) -> Path:
    """Ask every question under the OpenInference LangChain instrumentor, exporting the spans to
    ``path`` as OTLP JSON Lines (ids seeded, so the file's ids reproduce); returns the path."""
    from openinference.instrumentation.langchain import LangChainInstrumentor

    from .record import record_spans

    app = DemoApp(settings)
    asked = list(questions) if questions is not None else load_questions()
    with record_spans(path, LangChainInstrumentor(), seed=seed) as out, warnings.catch_warnings():
        # The instrumentor calls a LangChain method LangChain has deprecated: its warning, not ours.
        warnings.filterwarnings("ignore", message=r"Calling \.text\(\) as a method is deprecated")
        for label in asked:
            app.ask(str(label.query_id), str(label.query))
    return out
