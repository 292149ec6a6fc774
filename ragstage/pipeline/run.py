"""Run questions through retrieval → reranking → prompt assembly → generation, resumably.

Every stage appends each finished question to a JSON Lines cache named by a hash of the
stage's configuration (and of the stages before it), so:

* an interrupted run restarts where it stopped and redoes nothing it had finished;
* pipelines that share a stage share its cache (``bm25`` and ``bm25+ce`` retrieve once);
* a generation is cached under a hash of (model, exact prompt text, decoding settings), so
  the same prompt is never generated twice, whichever pipeline or prompt version asks.

:meth:`Pipeline.run` reads as its steps: check the gold labels, run the three stages before
generation (:meth:`Pipeline.stages`), save the assembled prompts, generate, build one trace per
question, and write the traces and the receipt (the files are named in
:mod:`ragstage.runs.layout`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from ..runs.labels import pipeline_label
from ..runs.layout import RunFiles
from ..trace import Trace
from .answering import answered_trace, chat_texts, chunks, generate_cached, progress
from .assembly import AssembledPrompt, assemble_prompt
from .data import Qrels, hash_corpus
from .download import default_cache_dir
from .generation import Generator, template_for
from .receipt import Clock, counts, now, portable, stand_ins, versions
from .rerank import Reranker, RerankerUnavailable
from .retrieval import Hits, Retriever
from .store import JsonlStore, config_key

__all__ = ["Pipeline", "RunResult", "StageOutputs"]

_RETRIEVAL_CHUNK = 32


@dataclass(frozen=True)
class RunResult:
    """Where a run wrote its files, and how much generation work it actually did."""

    folder: Path
    traces: Path
    receipt: dict[str, Any]

    @property
    def generated(self) -> int:
        """Prompts sent to the model in this call (cache misses)."""
        return int(self.receipt["counts"]["generated"])


@dataclass(frozen=True)
class StageOutputs:
    """What the three stages before generation passed on, per question.

    ``reranked`` holds a :class:`RerankerUnavailable` for a question whose reranker could not
    be loaded; such a question has no entry in ``prompts``.
    """

    keys: dict[str, str]
    corpus_hash: str
    retrieved: dict[str, Hits]
    reranked: dict[str, Hits | RerankerUnavailable]
    prompts: dict[str, AssembledPrompt]


def _qkey(qid: str, text: str) -> str:
    # The query text is part of the key: the same id with an edited claim is a new question.
    return f"{qid}:{config_key(text, 12)}"


def _require_gold(queries: Mapping[str, str], qrels: Qrels) -> None:
    missing = [qid for qid in queries if not qrels.get(qid)]
    if missing:
        raise ValueError(f"{len(missing)} queries have no gold ids in qrels (first: {missing[0]!r})")


class Pipeline:
    """One configuration: retriever → reranker → prompt assembly → generator.

    ``name`` defaults to the run label of the stage short names (:func:`~ragstage.runs.labels.pipeline_label`),
    e.g. ``bm25``, ``bm25+ce``, ``minilm``, ``minilm+rrf``. Stage caches go to ``cache_dir``
    (default ``<RAGSTAGE_CACHE or ~/.cache/ragstage>/stages``); point several pipelines at the
    same folder to let them share work.
    """

    def __init__(self, retriever: Retriever, reranker: Reranker, generator: Generator, *, budget: int = 1024,
                 top_k: int = 100, rerank_n: int = 10, prompt_top: int = 5, prompt_version: str = "original",
                 name: str | None = None, cache_dir: str | Path | None = None) -> None:
        template_for(prompt_version)  # fail now on an unknown version, not after retrieval
        self.retriever, self.reranker, self.generator = retriever, reranker, generator
        self.budget, self.top_k, self.rerank_n, self.prompt_top = budget, top_k, rerank_n, prompt_top
        self.prompt_version = prompt_version
        self.name = name or pipeline_label(retriever.short_name, reranker.short_name)
        self.cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir() / "stages"

    def settings(self) -> dict[str, Any]:
        return {"top_k": self.top_k, "rerank_n": self.rerank_n, "prompt_top": self.prompt_top,
                "budget": self.budget, "prompt_version": self.prompt_version}

    # -- the three stages before generation, each cached --------------------------------------

    def _stage_keys(self, corpus_hash: str) -> dict[str, str]:
        retrieval = config_key({"retriever": self.retriever.describe(), "corpus": corpus_hash, "k": self.top_k})
        rerank = config_key({"after": retrieval, "reranker": self.reranker.describe(), "n": self.rerank_n})
        prompts = config_key({"after": rerank, "top": self.prompt_top, "budget": self.budget,
                              "tokenizer": self.generator.describe()["model"]})
        return {"retrieval": retrieval, "rerank": rerank, "prompts": prompts}

    def _retrieve(self, queries: Mapping[str, str], key: str) -> dict[str, Hits]:
        store = JsonlStore(self.cache_dir / "retrieval" / f"{key}.jsonl")
        todo = [qid for qid in queries if _qkey(qid, queries[qid]) not in store]
        if todo:
            with progress(f"retrieve ({self.retriever.short_name})", len(todo)) as bar:
                for chunk in chunks(todo, _RETRIEVAL_CHUNK):
                    for qid, hits in self.retriever.retrieve({q: queries[q] for q in chunk}, self.top_k).items():
                        store.put(_qkey(qid, queries[qid]), [[d, s] for d, s in hits])
                    bar.update(len(chunk))
        return {qid: [(d, s) for d, s in store[_qkey(qid, queries[qid])]] for qid in queries}

    def _rerank(self, queries: Mapping[str, str], retrieved: Mapping[str, Hits], key: str
                ) -> dict[str, Hits | RerankerUnavailable]:
        store = JsonlStore(self.cache_dir / "rerank" / f"{key}.jsonl")
        corpus = self.retriever.corpus
        out: dict[str, Hits | RerankerUnavailable] = {}
        for qid in progress(f"rerank ({self.reranker.short_name or 'none'})", len(queries), queries):
            qkey = _qkey(qid, queries[qid])
            if qkey not in store:
                try:
                    hits = self.reranker.rerank(queries[qid], retrieved[qid], corpus, self.rerank_n)
                except RerankerUnavailable as exc:  # a service failure: logged on the trace, never cached
                    out[qid] = exc
                    continue
                store.put(qkey, [[d, s] for d, s in hits])
            out[qid] = [(d, s) for d, s in store[qkey]]
        return out

    def _assemble(self, queries: Mapping[str, str], reranked: Mapping[str, Hits], key: str
                  ) -> dict[str, AssembledPrompt]:
        store = JsonlStore(self.cache_dir / "prompts" / f"{key}.jsonl")
        corpus = self.retriever.corpus
        out: dict[str, AssembledPrompt] = {}
        for qid in progress("assemble prompts", len(reranked), reranked):
            qkey = _qkey(qid, queries[qid])
            if qkey not in store:
                ids = [d for d, _ in reranked[qid]]
                prompt = assemble_prompt(ids, corpus, self.generator.count_tokens, self.budget, self.prompt_top)
                store.put(qkey, dataclasses.asdict(prompt))
            saved = store[qkey]
            out[qid] = AssembledPrompt(saved["context"], tuple(saved["ids"]), saved["tokens"], saved["stopped_at"])
        return out

    def stages(self, queries: Mapping[str, str]) -> StageOutputs:
        """Retrieval, reranking and prompt assembly for every query (from the caches where they can)."""
        corpus_hash = hash_corpus(self.retriever.corpus)
        keys = self._stage_keys(corpus_hash)
        retrieved = self._retrieve(queries, keys["retrieval"])
        reranked = self._rerank(queries, retrieved, keys["rerank"])
        ok = {qid: hits for qid, hits in reranked.items() if not isinstance(hits, RerankerUnavailable)}
        return StageOutputs(keys, corpus_hash, retrieved, reranked, self._assemble(queries, ok, keys["prompts"]))

    # -- from stage outputs to a run folder ---------------------------------------------------

    def _trace(self, qid: str, query: str, gold: list[str], stages: StageOutputs,
               outputs: Mapping[str, str]) -> Trace:
        base: dict[str, Any] = {"query_id": qid, "pipeline": self.name, "query": query, "gold": gold,
                                "retrieved": [{"id": d, "score": s} for d, s in stages.retrieved[qid]]}
        hits = stages.reranked[qid]
        if isinstance(hits, RerankerUnavailable):
            return Trace.from_dict({**base, "error": {"stage": "reranking", "message": str(hits)},
                                    "model": self.generator.name, "prompt_version": self.prompt_version,
                                    "timestamp": now()})
        prompt = stages.prompts[qid]
        base.update(reranked=[{"id": d, "score": s} for d, s in hits], prompt=list(prompt.ids),
                    meta={"prompt_tokens": prompt.tokens, "budget_stopped_at": prompt.stopped_at})
        return answered_trace(base, outputs[qid], self.generator, self.prompt_version)

    def _receipt(self, stages: StageOutputs, n_queries: int, data_info: Mapping[str, Any] | None) -> dict[str, Any]:
        """The parts of the receipt that describe the pipeline itself (timing and counts come last)."""
        described = [self.retriever.describe(), self.reranker.describe(), self.generator.describe()]
        return {
            "pipeline": self.name,
            "data": {**dict(data_info or {}), "corpus_hash": stages.corpus_hash,
                     "documents": len(self.retriever.corpus), "queries": n_queries},
            "retriever": described[0], "reranker": described[1],
            "generator": described[2], "generator_name": self.generator.name,
            "stand_ins": stand_ins(*described),
            "settings": self.settings(), "packages": versions(), "cache_dir": str(self.cache_dir.resolve()),
            "stage_keys": stages.keys,
        }

    def run(self, queries: Mapping[str, str], qrels: Qrels, out: str | Path, *,
            data_info: Mapping[str, Any] | None = None) -> RunResult:
        """Run every query; write ``traces.jsonl``, ``prompts.jsonl`` and ``receipt.json`` into ``out``.

        ``qrels`` gives the gold ids (relevance > 0); ``data_info`` (e.g. ``BeirData.meta``: source
        URL and md5) is copied into the receipt.
        """
        clock = Clock()
        _require_gold(queries, qrels)
        stages = self.stages(queries)
        files = RunFiles(Path(out))
        files.write_prompts({"query_id": qid, "query": queries[qid], **dataclasses.asdict(prompt)}
                            for qid, prompt in stages.prompts.items())
        texts = chat_texts(self.generator, self.prompt_version,
                           {qid: (queries[qid], prompt.context) for qid, prompt in stages.prompts.items()})
        outputs, generated = generate_cached(self.generator, texts, self.cache_dir)
        traces = [self._trace(qid, queries[qid], list(qrels[qid]), stages, outputs) for qid in queries]
        receipt = portable({**self._receipt(stages, len(queries), data_info), **clock.timing(),
                            "counts": counts(traces, len(texts), generated)})
        files.write(traces, receipt)
        return RunResult(files.folder, files.traces, receipt)
