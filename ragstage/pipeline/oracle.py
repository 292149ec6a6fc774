"""The gold-context oracle on a real run: how well does generation do when handed the evidence?

The first oracle experiment of *Which RAG component broke?*. For every question of a run, the gold passage(s) go first,
then the run's own prompt passages as the budget allows (the order :mod:`ragstage.simulate`'s
oracle uses), with the same template, the same budget rule and the same generator. The result is
a run of its own, labelled ``<pipeline> + gold-context oracle``, with its prompts and receipt, in
its own folder; like any run it is resumable, since every generation is cached by its exact text
(a question whose oracle prompt equals its original prompt costs nothing).

Its correctness is the ceiling of the generation stage on its own; set beside the run's own
correctness and its retrieved-context sufficiency (:mod:`ragstage.oracles`), it says where the
points are.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Mapping

from ..fixtures import fixture_path
from ..runs.labels import parse_label
from ..runs.layout import RunFiles, oracle_folder
from .answering import chat_texts
from .assembly import AssembledPrompt, assemble_prompt
from .components import generator_from_receipt
from .data import BeirData, DataError, load_beir
from .download import SCIFACT_MD5, default_cache_dir, scifact
from .generation import Generator
from .receipt import Clock, counts, local_path, portable, stand_ins
from .rerun import SavedRun, answer_again
from .run import RunResult

__all__ = ["GOLD_CONTEXT", "gold_context_oracle", "data_for_receipt"]

#: The oracle's name in run labels: ``minilm+ce + gold-context oracle``.
GOLD_CONTEXT = "gold-context oracle"


def data_for_receipt(receipt: Mapping[str, Any], cache_dir: str | Path | None = None) -> BeirData:
    """The corpus and qrels a run was made on, found from its receipt and checked by content hash.

    Tried in order: the folder the receipt names (when it exists on this machine), SciFact from
    the download cache (when the receipt carries its md5), and the bundled mini corpus. A corpus
    whose hash differs from the receipt's is never used: an oracle on other passages would
    measure another run.
    """
    info = receipt["data"]
    split = info.get("split", "test")
    candidates = []
    source = local_path(info.get("source", ""), cache_dir)
    if source and Path(source).is_dir():
        candidates.append(lambda: load_beir(source, split))
    if info.get("md5") == SCIFACT_MD5:
        candidates.append(lambda: scifact(cache_dir or default_cache_dir(), split))
    candidates.append(lambda: load_beir(fixture_path("mini_scifact"), split))
    for load in candidates:
        data = load()
        if data.corpus_hash == info["corpus_hash"]:
            return data
    raise DataError(f"no corpus with hash {info['corpus_hash'][:12]}… found: pass data= explicitly",
                    path=info.get("source", "?"))


def _gold_first(gold: list[str], prompt: tuple[str, ...] | None, data: BeirData, generator: Generator,
                settings: Mapping[str, Any]) -> AssembledPrompt:
    ranked = [*gold, *(d for d in prompt or () if d not in gold)]
    return assemble_prompt(ranked, data.corpus, generator.count_tokens, settings["budget"],
                           max(settings["prompt_top"], len(gold)))


def gold_context_oracle(run_folder: str | Path, generator: Generator | None = None, *,
                        data: BeirData | None = None, out: str | Path | None = None,
                        cache_dir: str | Path | None = None) -> RunResult:
    """Run the gold-context oracle for every question of the run in ``run_folder`` (see the module doc).

    ``generator`` defaults to the one the run's receipt names, ``data`` to the run's own corpus
    (:func:`data_for_receipt`), ``out`` to a folder beside the run's
    (:func:`~ragstage.runs.layout.oracle_folder`), ``cache_dir`` to the default stage cache. The
    oracle traces bypass retrieval and reranking: ``retrieved`` and ``prompt`` both hold the ids
    of the oracle prompt, so attribution sends a wrong answer to ``generation`` (or, if even the
    gold passage did not fit the budget, to ``prompt_assembly``).
    """
    clock = Clock()
    saved = SavedRun.open(run_folder)
    generator = generator or generator_from_receipt(saved.receipt)
    data = data or data_for_receipt(saved.receipt)
    if data.corpus_hash != saved.receipt["data"]["corpus_hash"]:
        raise DataError("this corpus is not the one the run was made on (corpus hashes differ)", path=data.source)
    settings = saved.receipt["settings"]
    label = str(parse_label(saved.receipt["pipeline"]).with_oracle(GOLD_CONTEXT))
    prompts = {t.query_id: _gold_first(list(t.gold), t.prompt, data, generator, settings) for t in saved.traces}
    texts = chat_texts(generator, settings["prompt_version"],
                       {t.query_id: (t.query or "", prompts[t.query_id].context) for t in saved.traces})

    def restage(base: dict[str, Any]) -> dict[str, Any]:
        prompt = prompts[base["query_id"]]
        meta = {"oracle": "gold-context", "prompt_tokens": prompt.tokens, "budget_stopped_at": prompt.stopped_at}
        return {**{k: v for k, v in base.items() if k not in ("reranked", "meta", "error")}, "pipeline": label,
                "retrieved": list(prompt.ids), "prompt": list(prompt.ids), "meta": meta}

    bypassed = dataclasses.replace(saved, traces=[t.replace(error=None) for t in saved.traces])
    traces, generated = answer_again(bypassed, texts, generator, settings["prompt_version"],
                                     saved.cache_dir(cache_dir), restage)
    files = RunFiles(Path(out) if out is not None else oracle_folder(saved.files.folder, GOLD_CONTEXT))
    files.write_prompts({"query_id": t.query_id, "query": t.query, **dataclasses.asdict(prompts[t.query_id])}
                        for t in saved.traces)
    receipt = portable({**saved.receipt, "pipeline": label, **clock.timing(), "generation_only": True,
                        "oracle": {"kind": "gold-context", "run": str(saved.files.folder.resolve()),
                                   "run_pipeline": saved.receipt["pipeline"]},
                        "generator": generator.describe(), "generator_name": generator.name,
                        "stand_ins": stand_ins(saved.receipt["retriever"], saved.receipt["reranker"],
                                               generator.describe()),
                        "counts": counts(traces, len(texts), generated)})
    files.write(traces, receipt)
    return RunResult(files.folder, files.traces, receipt)
