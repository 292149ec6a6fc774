"""A seeded five-stage RAG system, for the chapters that need more questions than a fixture holds.

:func:`simulate_pipeline` runs a made-up five-stage RAG system (query understanding,
  retrieval, reranking, prompt assembly, generation) over synthetic questions and writes
ordinary :class:`~ragstage.trace.Trace` records, so the attribution, the funnel and the
plots read them exactly as they read real logs. Each stage passes the gold passage on
with a probability you choose; the result also carries the *gold-context oracle* (the
same questions with the gold passage forced into the prompt), so the two oracle
experiments (:mod:`ragstage.oracles`) can be run on it.

Everything is seeded (``numpy.random.default_rng(seed)``): the same call prints the same
numbers on every machine. These are stand-ins for a real system; never read them as
measurements of one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from .attribution import GENERATION_KINDS
from .trace import Trace

__all__ = ["STAGES", "end_to_end", "SimRun", "simulate_pipeline"]

#: The five stages, in the order the evidence passes them.
STAGES: tuple[str, ...] = ("query_understanding", "retrieval", "reranking", "prompt_assembly", "generation")

_DEFAULT_KINDS = {"ignored_context": 0.5, "wrong_passage": 0.3, "partial": 0.2}


def end_to_end(rates: Mapping[str, float]) -> float:
    """The end-to-end success rate of stages in series: the product of their pass rates.

    A stage left out passes everything. Five stages at 0.9 give 0.9**5 = 0.590; retrieval at
    0.7 with the rest perfect gives 0.7, and so does generation at 0.7 with the rest perfect.
    """
    _check_rates(rates)
    return float(math.prod(rates.get(s, 1.0) for s in STAGES))


def _check_rates(rates: Mapping[str, float]) -> None:
    unknown = set(rates) - set(STAGES)
    if unknown:
        raise ValueError(f"unknown stage(s) {sorted(unknown)}; stages: {', '.join(STAGES)}")
    for stage, rate in rates.items():
        if not 0.0 <= float(rate) <= 1.0:
            raise ValueError(f"the pass rate of {stage} must lie in [0, 1], got {rate}")


def _check_kinds(kinds: Mapping[str, float]) -> dict[str, float]:
    unknown = set(kinds) - set(GENERATION_KINDS)
    if unknown:
        raise ValueError(f"unknown generation kind(s) {sorted(unknown)}; kinds: {', '.join(GENERATION_KINDS)}")
    total = float(sum(kinds.values()))
    if total <= 0 or any(w < 0 for w in kinds.values()):
        raise ValueError("generation kind weights must be non-negative and not all zero")
    return {k: float(kinds.get(k, 0.0)) / total for k in GENERATION_KINDS}


@dataclass(frozen=True)
class SimRun:
    """One simulated run: the traces, and the gold-context oracle on the same questions.

    ``oracle`` holds one trace per question in which retrieval, reranking and assembly are
    bypassed: the prompt holds the gold passage (plus the distractors of the real prompt),
    and the *same* simulated generator answers. Its correctness is the ceiling of the
    generation stage; :func:`ragstage.oracles.sufficiency` of ``traces`` is the ceiling of
    the upstream half.
    """

    traces: tuple[Trace, ...]
    oracle: tuple[Trace, ...]
    rates: Mapping[str, Mapping[str, float]]
    seed: int


def _type_specs(rates: Mapping[str, float] | None, types: Mapping[str, Mapping] | None
                ) -> list[tuple[str, float, dict[str, float], dict[str, float]]]:
    if (rates is None) == (types is None):
        raise ValueError("give either rates (one kind of question) or types (several), not both")
    if rates is not None:
        _check_rates(rates)
        return [("all", 1.0, dict(rates), dict(_check_kinds(_DEFAULT_KINDS)))]
    specs = []
    for name, spec in types.items():  # type: ignore[union-attr]
        extra = set(spec) - {"share", "rates", "kinds"}
        if extra:
            raise ValueError(f"question type {name!r}: unknown key(s) {sorted(extra)}")
        _check_rates(spec["rates"])
        specs.append((str(name), float(spec.get("share", 1.0)), dict(spec["rates"]),
                      _check_kinds(spec.get("kinds", _DEFAULT_KINDS))))
    total = sum(s[1] for s in specs)
    if not specs or total <= 0:
        raise ValueError("question type shares must add up to something positive")
    return [(n, s / total, r, k) for n, s, r, k in specs]


def simulate_pipeline(n: int, rates: Mapping[str, float] | None = None, *,
                      types: Mapping[str, Mapping] | None = None, seed: int = 0,
                      pipeline: str = "sim", k: int = 20, top_n: int = 5,
                      corpus_size: int = 5000) -> SimRun:
    """Run ``n`` synthetic questions through a five-stage system with the given pass rates.

    ``rates`` maps a stage to the probability that it passes the gold passage on, *given*
    that it received it (a stage left out passes everything; query understanding is only
    judged, ``query_ok`` set, when you give it a rate). Or give ``types``: question type ->
    ``{"share": ..., "rates": {...}, "kinds": {...}}``, where ``kinds`` weighs the three
    ways generation fails (:data:`GENERATION_KINDS`); the type is stored as
    ``meta["qtype"]`` so a report can be split by it.

    Each question has one gold passage among ``corpus_size`` ids. Retrieval returns ``k``
    candidates, the reranker cuts to ``top_n``, and assembly fits two to ``top_n`` passages
    into the prompt. A stage that fails loses the gold passage; nothing downstream gets it
    back. Generation answers ``ID: <id>``; its failures are labelled so that
    :func:`ragstage.attribution.diagnose` and :func:`~ragstage.attribution.generation_kind`
    can tell the kinds apart.
    """
    if n < 1:
        raise ValueError(f"n must be positive, got {n}")
    if not 2 <= top_n <= k:
        raise ValueError(f"need 2 <= top_n <= k, got top_n={top_n}, k={k}")
    if corpus_size < k + 1:
        raise ValueError(f"corpus_size must exceed k, got {corpus_size}")
    specs = _type_specs(rates, types)
    rng = np.random.default_rng(seed)
    type_index = rng.choice(len(specs), size=n, p=[s[1] for s in specs])
    width = len(str(corpus_size - 1))
    traces: list[Trace] = []
    oracle: list[Trace] = []
    for i in range(n):
        name, _, stage_rates, kinds = specs[int(type_index[i])]
        # Every draw for this question happens here, in a fixed order, whatever the outcome:
        # changing one stage's rate then changes that stage's outcomes and nothing else.
        u = rng.random(len(STAGES))
        ids = rng.choice(corpus_size, size=k + 1, replace=False)
        r_rank = min(int(rng.geometric(0.35)), k)
        n_rank = min(int(rng.geometric(0.6)), top_n)
        budget = int(rng.integers(2, top_n + 1))
        kind = GENERATION_KINDS[int(rng.choice(len(GENERATION_KINDS), p=[kinds[g] for g in GENERATION_KINDS]))]
        gold, others = f"p{ids[0]:0{width}d}", [f"p{j:0{width}d}" for j in ids[1:]]
        passed = {s: bool(u[j] < stage_rates.get(s, 1.0)) for j, s in enumerate(STAGES)}

        query_ok = passed["query_understanding"] if "query_understanding" in stage_rates else None
        alive = passed["query_understanding"]
        retrieved = others[:k]
        if alive and passed["retrieval"]:
            retrieved = others[: r_rank - 1] + [gold] + others[r_rank - 1: k - 1]
        alive = alive and passed["retrieval"]
        non_gold = [d for d in retrieved if d != gold]
        if alive and passed["reranking"]:
            reranked = non_gold[: n_rank - 1] + [gold] + non_gold[n_rank - 1: top_n - 1]
        else:
            reranked = non_gold[:top_n]
        alive = alive and passed["reranking"]
        if alive and passed["prompt_assembly"]:
            prompt = reranked[: max(budget, reranked.index(gold) + 1)]
        else:
            prompt = [d for d in reranked if d != gold][:budget]
        alive = alive and passed["prompt_assembly"]

        meta = {"qtype": name} if types is not None else {}
        base = dict(query_id=f"{pipeline}-{i:04d}", pipeline=pipeline, gold=[gold], retrieved=retrieved,
                    reranked=reranked, query_ok=query_ok, meta=meta)
        if alive:
            answer = _answer(gold, prompt, passed["generation"], kind)
        else:  # the model never saw the gold passage: it names the first passage it did see
            answer = {"answer_ids": prompt[:1], "correct": False}
        traces.append(Trace.from_dict({**base, "prompt": prompt, **_answer_fields(answer)}))

        oracle_prompt = [gold] + [d for d in prompt if d != gold][: budget - 1]
        oracle.append(Trace.from_dict({
            "query_id": base["query_id"], "pipeline": f"{pipeline} + gold-context oracle", "gold": [gold],
            "retrieved": oracle_prompt, "prompt": oracle_prompt, "meta": meta,
            **_answer_fields(_answer(gold, oracle_prompt, passed["generation"], kind))}))
    used = {name: rates_ for name, _, rates_, _ in specs}
    return SimRun(traces=tuple(traces), oracle=tuple(oracle), rates=used, seed=seed)


def _answer(gold: str, prompt: Sequence[str], ok: bool, kind: str) -> dict:
    """The simulated generator, given a prompt that holds the gold passage."""
    if ok:
        return {"answer_ids": [gold], "correct": True}
    wrong = [d for d in prompt if d != gold]
    if kind == "wrong_passage" and wrong:
        return {"answer_ids": wrong[:1], "correct": False}
    if kind == "partial":
        return {"answer_ids": [gold], "correct": False, "complete": False}
    # ignored the context: answered from memory, naming no passage, with an unsupported claim
    return {"answer_ids": [], "correct": False, "claims": [False]}


def _answer_fields(answer: Mapping) -> dict:
    ids = answer["answer_ids"]
    text = "ID: " + (ids[0] if ids else "NONE")
    return {"answer": text, **answer}
